// examples/cumsum.tsr:45:3: pallas_call of @cumsum_kernel
module {
  func.func @cumsum_kernel(%arg0: i32, %arg1: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<8xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 8>, scalar_prefetch = 0 : i64, scratch_operands = 1 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}]} {
    %c = arith.constant 0 : i32
    %first = arith.cmpi eq, %arg0, %c : i32
    %0 = arith.extui %first : i1 to i32
    %c0_i32 = arith.constant 0 : i32
    %1 = arith.cmpi ne, %0, %c0_i32 : i32
    scf.if %1 {
      %cst = arith.constant 0.000000e+00 : f32
      %zeros = vector.broadcast %cst : f32 to vector<8xf32>
      %c0 = arith.constant 0 : index
      %2 = vector.load %arg3[%c0] : memref<8xf32, #tpu.memory_space<vmem>>, vector<8xf32>
      "tpu.vector_store"(%zeros, %arg3, %c0) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<8xf32>, memref<8xf32, #tpu.memory_space<vmem>>, index) -> ()
    } else {
    }
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %2 = vector.load %arg1[%c0, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    %t = "tpu.iota"() <{dimensions = array<i32: 1>}> : () -> vector<8x128xi32>
    %cst = arith.constant dense<0.000000e+00> : vector<8x128xf32>
    %c1_i32 = arith.constant 1 : i32
    %t_1 = "tpu.dynamic_rotate"(%2, %c1_i32) <{dimension = 1 : si32}> : (vector<8x128xf32>, i32) -> vector<8x128xf32>
    %cst_1 = arith.constant dense<1> : vector<8x128xi32>
    %t_2 = arith.cmpi sge, %t, %cst_1 : vector<8x128xi32>
    %t_3 = arith.select %t_2, %t_1, %cst : vector<8x128xi1>, vector<8x128xf32>
    %t_4 = arith.addf %2, %t_3 : vector<8x128xf32>
    %c2_i32 = arith.constant 2 : i32
    %t_5 = "tpu.dynamic_rotate"(%t_4, %c2_i32) <{dimension = 1 : si32}> : (vector<8x128xf32>, i32) -> vector<8x128xf32>
    %cst_2 = arith.constant dense<2> : vector<8x128xi32>
    %t_6 = arith.cmpi sge, %t, %cst_2 : vector<8x128xi32>
    %t_7 = arith.select %t_6, %t_5, %cst : vector<8x128xi1>, vector<8x128xf32>
    %t_8 = arith.addf %t_4, %t_7 : vector<8x128xf32>
    %c4_i32 = arith.constant 4 : i32
    %t_9 = "tpu.dynamic_rotate"(%t_8, %c4_i32) <{dimension = 1 : si32}> : (vector<8x128xf32>, i32) -> vector<8x128xf32>
    %cst_3 = arith.constant dense<4> : vector<8x128xi32>
    %t_10 = arith.cmpi sge, %t, %cst_3 : vector<8x128xi32>
    %t_11 = arith.select %t_10, %t_9, %cst : vector<8x128xi1>, vector<8x128xf32>
    %t_12 = arith.addf %t_8, %t_11 : vector<8x128xf32>
    %c8_i32 = arith.constant 8 : i32
    %t_13 = "tpu.dynamic_rotate"(%t_12, %c8_i32) <{dimension = 1 : si32}> : (vector<8x128xf32>, i32) -> vector<8x128xf32>
    %cst_4 = arith.constant dense<8> : vector<8x128xi32>
    %t_14 = arith.cmpi sge, %t, %cst_4 : vector<8x128xi32>
    %t_15 = arith.select %t_14, %t_13, %cst : vector<8x128xi1>, vector<8x128xf32>
    %t_16 = arith.addf %t_12, %t_15 : vector<8x128xf32>
    %c16_i32 = arith.constant 16 : i32
    %t_17 = "tpu.dynamic_rotate"(%t_16, %c16_i32) <{dimension = 1 : si32}> : (vector<8x128xf32>, i32) -> vector<8x128xf32>
    %cst_5 = arith.constant dense<16> : vector<8x128xi32>
    %t_18 = arith.cmpi sge, %t, %cst_5 : vector<8x128xi32>
    %t_19 = arith.select %t_18, %t_17, %cst : vector<8x128xi1>, vector<8x128xf32>
    %t_20 = arith.addf %t_16, %t_19 : vector<8x128xf32>
    %c32_i32 = arith.constant 32 : i32
    %t_21 = "tpu.dynamic_rotate"(%t_20, %c32_i32) <{dimension = 1 : si32}> : (vector<8x128xf32>, i32) -> vector<8x128xf32>
    %cst_6 = arith.constant dense<32> : vector<8x128xi32>
    %t_22 = arith.cmpi sge, %t, %cst_6 : vector<8x128xi32>
    %t_23 = arith.select %t_22, %t_21, %cst : vector<8x128xi1>, vector<8x128xf32>
    %t_24 = arith.addf %t_20, %t_23 : vector<8x128xf32>
    %c64_i32 = arith.constant 64 : i32
    %t_25 = "tpu.dynamic_rotate"(%t_24, %c64_i32) <{dimension = 1 : si32}> : (vector<8x128xf32>, i32) -> vector<8x128xf32>
    %cst_7 = arith.constant dense<64> : vector<8x128xi32>
    %t_26 = arith.cmpi sge, %t, %cst_7 : vector<8x128xi32>
    %t_27 = arith.select %t_26, %t_25, %cst : vector<8x128xi1>, vector<8x128xf32>
    %local = arith.addf %t_24, %t_27 : vector<8x128xf32>
    %c0_2 = arith.constant 0 : index
    %3 = vector.load %arg3[%c0_2] : memref<8xf32, #tpu.memory_space<vmem>>, vector<8xf32>
    %t_28 = vector.shape_cast %3 : vector<8xf32> to vector<8x1xf32>
    %before_b = vector.broadcast %t_28 : vector<8x1xf32> to vector<8x128xf32>
    %y = arith.addf %local, %before_b : vector<8x128xf32>
    %c0_3 = arith.constant 0 : index
    %c0_4 = arith.constant 0 : index
    %4 = vector.load %arg2[%c0_3, %c0_4] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    "tpu.vector_store"(%y, %arg2, %c0_3, %c0_4) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %c0_5 = arith.constant 0 : index
    %c127 = arith.constant 127 : index
    %5 = vector.load %arg2[%c0_5, %c127] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x1xf32>
    %6 = vector.shape_cast %5 : vector<8x1xf32> to vector<8xf32>
    %c0_6 = arith.constant 0 : index
    %7 = vector.load %arg3[%c0_6] : memref<8xf32, #tpu.memory_space<vmem>>, vector<8xf32>
    "tpu.vector_store"(%6, %arg3, %c0_6) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<8xf32>, memref<8xf32, #tpu.memory_space<vmem>>, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %c, %arg0 : i32, i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %c, %arg0 : i32, i32
  }
}
