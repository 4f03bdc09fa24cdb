// examples/sc_gather_scatter.tsr:39:3: pallas_call of @bag_kernel
module {
  func.func @bag_kernel(%arg0: i32, %arg1: memref<8xi32, #tpu.memory_space<vmem>>, %arg2: memref<8xi32, #tpu.memory_space<vmem>>, %arg3: memref<256x128xf32, #tpu.memory_space<hbm>> {sc.persistent}, %arg4: memref<16x128xf32, #tpu.memory_space<hbm>> {sc.persistent}, %arg5: memref<16x128xf32, #tpu.memory_space<hbm>> {sc.persistent}) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 8>, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<sc_vector_subcore>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8>}, {transform_indices = @transform_1, window_bounds = array<i64: 8>}, {transform_indices = @transform_2, window_bounds = array<i64: 256, 128>}, {transform_indices = @transform_3, window_bounds = array<i64: 16, 128>}, {transform_indices = @transform_4, window_bounds = array<i64: 16, 128>}]} {
    "tpu.region"() ({
      %rows = memref.alloca() : memref<8x128xf32, #tpu.memory_space<vmem>>
      %sem = "tpu.sem_alloc"() : () -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      "tpu.enqueue_indirect_dma"(%arg3, %rows, %arg1, %sem) <{add = false}> : (memref<256x128xf32, #tpu.memory_space<hbm>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8xi32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
      "tpu.wait_indirect_dma"(%sem, %arg3, %rows) : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<256x128xf32, #tpu.memory_space<hbm>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
      "tpu.enqueue_indirect_dma"(%rows, %arg5, %arg2, %sem) <{add = true}> : (memref<8x128xf32, #tpu.memory_space<vmem>>, memref<16x128xf32, #tpu.memory_space<hbm>>, memref<8xi32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
      "tpu.wait_indirect_dma"(%sem, %rows, %arg5) : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<16x128xf32, #tpu.memory_space<hbm>>) -> ()
      "tpu.yield"() : () -> ()
    }) : () -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32) {
    return %arg0 : i32
  }
  func.func @transform_1(%arg0: i32) -> (i32) {
    return %arg0 : i32
  }
  func.func @transform_2(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_3(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_4(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
}
