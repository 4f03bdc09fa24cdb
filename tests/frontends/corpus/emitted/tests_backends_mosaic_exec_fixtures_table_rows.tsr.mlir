// tests/backends/mosaic_exec/fixtures/table_rows.tsr:36:3: pallas_call of @table_rows_kernel
module {
  func.func @table_rows_kernel(%arg0: i32, %arg1: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<128x16xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 128, 16>}]} {
    %j1 = "tpu.assume_multiple"(%arg0) <{multiple = 1 : i32}> : (i32) -> i32
    %jf = arith.sitofp %j1 : i32 to f32
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg1[%c0, %c0_1] : memref<16x128xf32, #tpu.memory_space<vmem>>, vector<16x128xf32>
    %t = "tpu.transpose"(%0) <{permutation = array<i64: 1, 0>}> : (vector<16x128xf32>) -> vector<128x16xf32>
    %t_1 = "tpu.iota"() <{dimensions = array<i32: 0>}> : () -> vector<128x16xi32>
    %rows = arith.sitofp %t_1 : vector<128x16xi32> to vector<128x16xf32>
    %cst = arith.constant 1.000000e+03 : f32
    %t_2 = vector.broadcast %cst : f32 to vector<128x16xf32>
    %scaled = arith.mulf %rows, %t_2 : vector<128x16xf32>
    %shifted = arith.addf %t, %scaled : vector<128x16xf32>
    %t_3 = vector.broadcast %jf : f32 to vector<128x16xf32>
    %y = arith.addf %shifted, %t_3 : vector<128x16xf32>
    %r = "tpu.region"() ({
      %tmp = memref.alloca() : memref<128x16xf32, #tpu.memory_space<vmem>>
      %c0_2 = arith.constant 0 : index
      %c0_3 = arith.constant 0 : index
      %1 = vector.load %tmp[%c0_2, %c0_3] : memref<128x16xf32, #tpu.memory_space<vmem>>, vector<128x16xf32>
      "tpu.vector_store"(%y, %tmp, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<128x16xf32>, memref<128x16xf32, #tpu.memory_space<vmem>>, index, index) -> ()
      %c0_4 = arith.constant 0 : index
      %c0_5 = arith.constant 0 : index
      %2 = vector.load %tmp[%c0_4, %c0_5] : memref<128x16xf32, #tpu.memory_space<vmem>>, vector<128x16xf32>
      "tpu.yield"(%2) : (vector<128x16xf32>) -> ()
    }) : () -> (vector<128x16xf32>)
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %1 = vector.load %arg2[%c0_2, %c0_3] : memref<128x16xf32, #tpu.memory_space<vmem>>, vector<128x16xf32>
    "tpu.vector_store"(%r, %arg2, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<128x16xf32>, memref<128x16xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %c, %arg0 : i32, i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
}
