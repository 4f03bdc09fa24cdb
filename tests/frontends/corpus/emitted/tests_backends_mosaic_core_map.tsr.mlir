// tests/backends/mosaic/core_map.tsr:6:3: core_map over (core, sub)
module {
  func.func @core_map(%arg0: i32, %arg1: i32, %arg2: memref<4x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<4x128xf32, #tpu.memory_space<any>>, %arg4: memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<core_parallel>, #tpu.dimension_semantics<core_parallel>], iteration_bounds = array<i64: 2, 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = affine_map<(d0, d1) -> (0, 0)>}, {}, {}]} {
    %c0_i32 = arith.constant 0 : i32
    %0 = "tpu.memref_slice"(%arg3, %arg0, %c0_i32) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<4x128xf32, #tpu.memory_space<any>>, i32, i32) -> memref<2x128xf32, #tpu.memory_space<any>>
    %c0_i32_1 = arith.constant 0 : i32
    %1 = "tpu.memref_slice"(%arg2, %arg1, %c0_i32_1) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<4x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<2x128xf32, #tpu.memory_space<vmem>>
    "tpu.enqueue_dma"(%0, %1, %arg4) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<2x128xf32, #tpu.memory_space<any>>, memref<2x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    %c0_i32_2 = arith.constant 0 : i32
    %2 = "tpu.memref_slice"(%arg2, %arg1, %c0_i32_2) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<4x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<2x128xf32, #tpu.memory_space<vmem>>
    "tpu.wait_dma2"(%arg4, %2, %2) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<2x128xf32, #tpu.memory_space<vmem>>, memref<2x128xf32, #tpu.memory_space<vmem>>) -> ()
    %3 = arith.index_cast %arg0 : i32 to index
    %c0 = arith.constant 0 : index
    %4 = vector.load %arg2[%3, %c0] : memref<4x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
    %5 = vector.shape_cast %4 : vector<1x128xf32> to vector<128xf32>
    %6 = arith.index_cast %arg1 : i32 to index
    %c0_1 = arith.constant 0 : index
    %7 = vector.load %arg2[%6, %c0_1] : memref<4x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
    %8 = vector.shape_cast %7 : vector<1x128xf32> to vector<128xf32>
    %9 = vector.shape_cast %5 : vector<128xf32> to vector<1x128xf32>
    "tpu.vector_store"(%9, %arg2, %6, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<1x128xf32>, memref<4x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
}
