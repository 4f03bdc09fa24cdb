// tests/backends/mosaic/sc_mesh.tsr:9:3: core_map over (c, s)
module {
  func.func @core_map(%arg0: i32, %arg1: i32, %arg2: memref<512xf32, #tpu.memory_space<hbm>>, %arg3: memref<512xf32, #tpu.memory_space<hbm>>, %arg4: memref<16xf32, #tpu.memory_space<vmem>>, %arg5: memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<core_parallel>, #tpu.dimension_semantics<subcore_parallel>], iteration_bounds = array<i64: 2, 16>, scalar_prefetch = 0 : i64, scratch_operands = 2 : i64, tpu.core_type = #tpu.core_type<sc_vector_subcore>, window_params = [{transform_indices = affine_map<(d0, d1) -> (0)>}, {transform_indices = affine_map<(d0, d1) -> (0)>}]} {
    %c = arith.constant 16 : i32
    %cs = arith.muli %arg0, %c : i32
    %flat = arith.addi %cs, %arg1 : i32
    %c_1 = arith.constant 16 : i32
    %start = arith.muli %flat, %c_1 : i32
    %0 = "tpu.memref_slice"(%arg2, %start) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<512xf32, #tpu.memory_space<hbm>>, i32) -> memref<16xf32, #tpu.memory_space<hbm>>
    "tpu.enqueue_dma"(%0, %arg4, %arg5) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<16xf32, #tpu.memory_space<hbm>>, memref<16xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    "tpu.wait_dma2"(%arg5, %0, %arg4) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<16xf32, #tpu.memory_space<hbm>>, memref<16xf32, #tpu.memory_space<vmem>>) -> ()
    %c0 = arith.constant 0 : index
    %1 = "tpu.vector_load"(%arg4, %c0) <{operandSegmentSizes = array<i32: 1, 1, 0>, strides = array<i32>}> : (memref<16xf32, #tpu.memory_space<vmem>>, index) -> vector<16xf32>
    %v2 = arith.addf %1, %1 : vector<16xf32>
    %c0_1 = arith.constant 0 : index
    %2 = "tpu.vector_load"(%arg4, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 0>, strides = array<i32>}> : (memref<16xf32, #tpu.memory_space<vmem>>, index) -> vector<16xf32>
    "tpu.vector_store"(%v2, %arg4, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<16xf32>, memref<16xf32, #tpu.memory_space<vmem>>, index) -> ()
    %3 = "tpu.memref_slice"(%arg3, %start) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<512xf32, #tpu.memory_space<hbm>>, i32) -> memref<16xf32, #tpu.memory_space<hbm>>
    "tpu.enqueue_dma"(%arg4, %3, %arg5) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<16xf32, #tpu.memory_space<vmem>>, memref<16xf32, #tpu.memory_space<hbm>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    "tpu.wait_dma2"(%arg5, %arg4, %3) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<16xf32, #tpu.memory_space<vmem>>, memref<16xf32, #tpu.memory_space<hbm>>) -> ()
    return
  }
}
