// examples/gather_rows.tsr:40:3: pallas_call of @gather_kernel
module {
  func.func @gather_kernel(%arg0: i32, %arg1: memref<16xi32, #tpu.memory_space<smem>>, %arg2: memref<1x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<1x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 16>, scalar_prefetch = 1 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 1, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 1, 128>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg2[%c0, %c0_1] : memref<1x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
    %1 = vector.shape_cast %0 : vector<1x128xf32> to vector<128xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %2 = vector.load %arg3[%c0_2, %c0_3] : memref<1x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
    %3 = vector.shape_cast %2 : vector<1x128xf32> to vector<128xf32>
    %4 = vector.shape_cast %1 : vector<128xf32> to vector<1x128xf32>
    "tpu.vector_store"(%4, %arg3, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<1x128xf32>, memref<1x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: memref<16xi32, #tpu.memory_space<smem>>) -> (i32, i32) {
    %0 = arith.index_cast %arg0 : i32 to index
    %r = memref.load %arg1[%0] : memref<16xi32, #tpu.memory_space<smem>>
    %c = arith.constant 0 : i32
    return %r, %c : i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: memref<16xi32, #tpu.memory_space<smem>>) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
}
