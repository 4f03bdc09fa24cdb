// tests/backends/mosaic_exec/fixtures/masked_store.tsr:24:3: pallas_call of @masked_kernel
module {
  func.func @masked_kernel(%arg0: i32, %arg1: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<16x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 16, 128>}]} {
    %cst = arith.constant 0.000000e+00 : f32
    %zeros = vector.broadcast %cst : f32 to vector<16x128xf32>
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg2[%c0, %c0_1] : memref<16x128xf32, #tpu.memory_space<vmem>>, vector<16x128xf32>
    "tpu.vector_store"(%zeros, %arg2, %c0, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<16x128xf32>, memref<16x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %1 = vector.load %arg1[%c0_2, %c0_3] : memref<16x128xf32, #tpu.memory_space<vmem>>, vector<16x128xf32>
    %c = "tpu.iota"() <{dimensions = array<i32: 1>}> : () -> vector<16x128xi32>
    %c_1 = arith.constant 16 : i32
    %j16 = arith.muli %arg0, %c_1 : i32
    %c_2 = arith.constant 64 : i32
    %limit = arith.addi %j16, %c_2 : i32
    %t = vector.broadcast %limit : i32 to vector<16x128xi32>
    %m = arith.cmpi slt, %c, %t : vector<16x128xi32>
    %c0_4 = arith.constant 0 : index
    %c0_5 = arith.constant 0 : index
    %2 = vector.load %arg2[%c0_4, %c0_5] : memref<16x128xf32, #tpu.memory_space<vmem>>, vector<16x128xf32>
    "tpu.vector_store"(%1, %arg2, %c0_4, %c0_5, %m) <{operandSegmentSizes = array<i32: 1, 1, 2, 1>, strides = array<i32>}> : (vector<16x128xf32>, memref<16x128xf32, #tpu.memory_space<vmem>>, index, index, vector<16x128xi1>) -> ()
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
