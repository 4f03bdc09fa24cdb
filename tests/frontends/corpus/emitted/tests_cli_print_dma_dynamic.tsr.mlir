// tests/cli/print_dma_dynamic.tsr:23:3: pallas_call of @k
module {
  func.func @k(%arg0: i32, %arg1: memref<1xi32, #tpu.memory_space<smem>>, %arg2: memref<16x128xf32, #tpu.memory_space<any>>, %arg3: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scalar_prefetch = 1 : i64, scratch_operands = 1 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 16, 128>}]} {
    %c0 = arith.constant 0 : index
    %0 = memref.load %arg1[%c0] : memref<1xi32, #tpu.memory_space<smem>>
    %c = arith.constant 16 : i32
    %i = arith.subi %c, %0 : i32
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    %1 = "tpu.memref_slice"(%arg2, %c0_i32, %c0_i32_1, %0) <{operandSegmentSizes = array<i32: 1, 2, 1>}> : (memref<16x128xf32, #tpu.memory_space<any>>, i32, i32, i32) -> memref<?x128xf32, #tpu.memory_space<any>>
    %c0_i32_2 = arith.constant 0 : i32
    %c0_i32_3 = arith.constant 0 : i32
    %2 = "tpu.memref_slice"(%arg3, %c0_i32_2, %c0_i32_3, %0) <{operandSegmentSizes = array<i32: 1, 2, 1>}> : (memref<16x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<?x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_4 = arith.constant 0 : i32
    %3 = "tpu.memref_slice"(%arg4, %c0_i32_4) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %4 = "tpu.memref_squeeze"(%3) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.enqueue_dma"(%1, %2, %4) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<?x128xf32, #tpu.memory_space<any>>, memref<?x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    %c0_i32_5 = arith.constant 0 : i32
    %5 = "tpu.memref_slice"(%arg2, %0, %c0_i32_5, %i) <{operandSegmentSizes = array<i32: 1, 2, 1>}> : (memref<16x128xf32, #tpu.memory_space<any>>, i32, i32, i32) -> memref<?x128xf32, #tpu.memory_space<any>>
    %c0_i32_6 = arith.constant 0 : i32
    %6 = "tpu.memref_slice"(%arg3, %0, %c0_i32_6, %i) <{operandSegmentSizes = array<i32: 1, 2, 1>}> : (memref<16x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<?x128xf32, #tpu.memory_space<vmem>>
    %c1_i32 = arith.constant 1 : i32
    %7 = "tpu.memref_slice"(%arg4, %c1_i32) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %8 = "tpu.memref_squeeze"(%7) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.enqueue_dma"(%5, %6, %8) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<?x128xf32, #tpu.memory_space<any>>, memref<?x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    %c0_i32_7 = arith.constant 0 : i32
    %c0_i32_8 = arith.constant 0 : i32
    %9 = "tpu.memref_slice"(%arg3, %c0_i32_7, %c0_i32_8, %0) <{operandSegmentSizes = array<i32: 1, 2, 1>}> : (memref<16x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<?x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_9 = arith.constant 0 : i32
    %10 = "tpu.memref_slice"(%arg4, %c0_i32_9) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %11 = "tpu.memref_squeeze"(%10) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%11, %9, %9) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<?x128xf32, #tpu.memory_space<vmem>>, memref<?x128xf32, #tpu.memory_space<vmem>>) -> ()
    %c0_i32_10 = arith.constant 0 : i32
    %12 = "tpu.memref_slice"(%arg3, %0, %c0_i32_10, %i) <{operandSegmentSizes = array<i32: 1, 2, 1>}> : (memref<16x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<?x128xf32, #tpu.memory_space<vmem>>
    %c1_i32_1 = arith.constant 1 : i32
    %13 = "tpu.memref_slice"(%arg4, %c1_i32_1) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %14 = "tpu.memref_squeeze"(%13) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%14, %12, %12) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<?x128xf32, #tpu.memory_space<vmem>>, memref<?x128xf32, #tpu.memory_space<vmem>>) -> ()
    return
  }
  func.func @transform_1(%arg0: i32, %arg1: memref<1xi32, #tpu.memory_space<smem>>) -> (i32, i32) {
    %c = arith.constant 0 : i32
    %c_1 = arith.constant 0 : i32
    return %c, %c_1 : i32, i32
  }
}
