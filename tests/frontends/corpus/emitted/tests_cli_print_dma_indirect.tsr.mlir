// tests/cli/print_dma_indirect.tsr:26:3: pallas_call of @k
module {
  func.func @k(%arg0: i32, %arg1: memref<8xi32, #tpu.memory_space<vmem>>, %arg2: memref<64x128xf32, #tpu.memory_space<hbm>> {sc.persistent}, %arg3: memref<64x128xf32, #tpu.memory_space<hbm>> {sc.persistent}, %arg4: memref<64x128xf32, #tpu.memory_space<hbm>> {sc.persistent}) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<sc_vector_subcore>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8>}, {transform_indices = @transform_1, window_bounds = array<i64: 64, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 64, 128>}, {transform_indices = @transform_3, window_bounds = array<i64: 64, 128>}]} {
    "tpu.region"() ({
      %rows = memref.alloca() : memref<8x128xf32, #tpu.memory_space<vmem>>
      %sem = "tpu.sem_alloc"() : () -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      "tpu.enqueue_indirect_dma"(%arg2, %rows, %arg1, %sem) <{add = false}> : (memref<64x128xf32, #tpu.memory_space<hbm>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8xi32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
      "tpu.wait_indirect_dma"(%sem, %arg2, %rows) : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<64x128xf32, #tpu.memory_space<hbm>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
      "tpu.enqueue_indirect_dma"(%rows, %arg4, %arg1, %sem) <{add = true}> : (memref<8x128xf32, #tpu.memory_space<vmem>>, memref<64x128xf32, #tpu.memory_space<hbm>>, memref<8xi32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
      "tpu.wait_indirect_dma"(%sem, %rows, %arg4) : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<64x128xf32, #tpu.memory_space<hbm>>) -> ()
      "tpu.yield"() : () -> ()
    }) : () -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
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
}
