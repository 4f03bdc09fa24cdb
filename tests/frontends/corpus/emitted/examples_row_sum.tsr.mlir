// examples/row_sum.tsr:42:3: pallas_call of @row_sum_kernel
module {
  func.func @row_sum_kernel(%arg0: i32, %arg1: i32, %arg2: memref<128x256xf32, #tpu.memory_space<vmem>>, %arg3: memref<128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 4, 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 256>}, {transform_indices = @transform_1, window_bounds = array<i64: 128>}]} {
    %c = arith.constant 0 : i32
    %first = arith.cmpi eq, %arg1, %c : i32
    %0 = arith.extui %first : i1 to i32
    %c0_i32 = arith.constant 0 : i32
    %1 = arith.cmpi ne, %0, %c0_i32 : i32
    scf.if %1 {
      %cst = arith.constant 0.000000e+00 : f32
      %zeros = vector.broadcast %cst : f32 to vector<128xf32>
      %c0 = arith.constant 0 : index
      %2 = vector.load %arg3[%c0] : memref<128xf32, #tpu.memory_space<vmem>>, vector<128xf32>
      "tpu.vector_store"(%zeros, %arg3, %c0) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<128xf32>, memref<128xf32, #tpu.memory_space<vmem>>, index) -> ()
    } else {
    }
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %2 = vector.load %arg2[%c0, %c0_1] : memref<128x256xf32, #tpu.memory_space<vmem>>, vector<128x256xf32>
    %cst = arith.constant dense<0.000000e+00> : vector<128xf32>
    %partial = vector.multi_reduction <add>, %2, %cst [1] : vector<128x256xf32> to vector<128xf32>
    %c0_2 = arith.constant 0 : index
    %3 = vector.load %arg3[%c0_2] : memref<128xf32, #tpu.memory_space<vmem>>, vector<128xf32>
    %4 = arith.addf %3, %partial : vector<128xf32>
    "tpu.vector_store"(%4, %arg3, %c0_2) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<128xf32>, memref<128xf32, #tpu.memory_space<vmem>>, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: i32) -> (i32, i32) {
    return %arg0, %arg1 : i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: i32) -> (i32) {
    return %arg0 : i32
  }
}
