// examples/halo_exchange.tsr:74:17: pallas_call of @halo_kernel
module {
  func.func @halo_kernel(%arg0: i32, %arg1: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<2x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, %arg5: memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 3 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}]} {
    %dev = "tpu.device_id"() : () -> i32
    %c4_i32 = arith.constant 4 : i32
    %c = arith.constant 1 : i32
    %me_plus_1 = arith.addi %dev, %c : i32
    %right = arith.remsi %me_plus_1, %c4_i32 : i32
    %c_1 = arith.constant 1 : i32
    %n_minus_1 = arith.subi %c4_i32, %c_1 : i32
    %me_minus_1 = arith.addi %dev, %n_minus_1 : i32
    %left = arith.remsi %me_minus_1, %c4_i32 : i32
    %barrier = "tpu.sem_barrier"() : () -> memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>
    %c_2 = arith.constant 1 : i32
    "tpu.sem_signal"(%barrier, %c_2, %left) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32, i32) -> ()
    %c_3 = arith.constant 1 : i32
    "tpu.sem_signal"(%barrier, %c_3, %right) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32, i32) -> ()
    %c_4 = arith.constant 2 : i32
    "tpu.sem_wait"(%barrier, %c_4) : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> ()
    %c7_i32 = arith.constant 7 : i32
    %c0_i32 = arith.constant 0 : i32
    %0 = "tpu.memref_slice"(%arg1, %c7_i32, %c0_i32) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<8x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<1x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_1 = arith.constant 0 : i32
    %c0_i32_2 = arith.constant 0 : i32
    %1 = "tpu.memref_slice"(%arg3, %c0_i32_1, %c0_i32_2) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<2x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<1x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_3 = arith.constant 0 : i32
    %2 = "tpu.memref_slice"(%arg5, %c0_i32_3) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %3 = "tpu.memref_squeeze"(%2) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %c0_i32_4 = arith.constant 0 : i32
    %4 = "tpu.memref_slice"(%arg4, %c0_i32_4) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %5 = "tpu.memref_squeeze"(%4) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.enqueue_dma"(%0, %5, %1, %3, %right) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>, priority = 0 : i32}> : (memref<1x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<1x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> ()
    %c0_i32_5 = arith.constant 0 : i32
    %c0_i32_6 = arith.constant 0 : i32
    %6 = "tpu.memref_slice"(%arg1, %c0_i32_5, %c0_i32_6) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<8x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<1x128xf32, #tpu.memory_space<vmem>>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32_7 = arith.constant 0 : i32
    %7 = "tpu.memref_slice"(%arg3, %c1_i32, %c0_i32_7) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<2x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<1x128xf32, #tpu.memory_space<vmem>>
    %c1_i32_1 = arith.constant 1 : i32
    %8 = "tpu.memref_slice"(%arg5, %c1_i32_1) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %9 = "tpu.memref_squeeze"(%8) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %c1_i32_2 = arith.constant 1 : i32
    %10 = "tpu.memref_slice"(%arg4, %c1_i32_2) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %11 = "tpu.memref_squeeze"(%10) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.enqueue_dma"(%6, %11, %7, %9, %left) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>, priority = 0 : i32}> : (memref<1x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<1x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> ()
    %c0_i32_8 = arith.constant 0 : i32
    %c0_i32_9 = arith.constant 0 : i32
    %12 = "tpu.memref_slice"(%arg3, %c0_i32_8, %c0_i32_9) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<2x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<1x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_10 = arith.constant 0 : i32
    %13 = "tpu.memref_slice"(%arg5, %c0_i32_10) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %14 = "tpu.memref_squeeze"(%13) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%14, %12, %12) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<1x128xf32, #tpu.memory_space<vmem>>, memref<1x128xf32, #tpu.memory_space<vmem>>) -> ()
    %c1_i32_3 = arith.constant 1 : i32
    %c0_i32_11 = arith.constant 0 : i32
    %15 = "tpu.memref_slice"(%arg3, %c1_i32_3, %c0_i32_11) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<2x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<1x128xf32, #tpu.memory_space<vmem>>
    %c1_i32_4 = arith.constant 1 : i32
    %16 = "tpu.memref_slice"(%arg5, %c1_i32_4) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %17 = "tpu.memref_squeeze"(%16) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%17, %15, %15) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<1x128xf32, #tpu.memory_space<vmem>>, memref<1x128xf32, #tpu.memory_space<vmem>>) -> ()
    %c7_i32_1 = arith.constant 7 : i32
    %c0_i32_12 = arith.constant 0 : i32
    %18 = "tpu.memref_slice"(%arg1, %c7_i32_1, %c0_i32_12) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<8x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<1x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_13 = arith.constant 0 : i32
    %19 = "tpu.memref_slice"(%arg4, %c0_i32_13) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %20 = "tpu.memref_squeeze"(%19) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%20, %18, %18) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<1x128xf32, #tpu.memory_space<vmem>>, memref<1x128xf32, #tpu.memory_space<vmem>>) -> ()
    %c0_i32_14 = arith.constant 0 : i32
    %c0_i32_15 = arith.constant 0 : i32
    %21 = "tpu.memref_slice"(%arg1, %c0_i32_14, %c0_i32_15) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<8x128xf32, #tpu.memory_space<vmem>>, i32, i32) -> memref<1x128xf32, #tpu.memory_space<vmem>>
    %c1_i32_5 = arith.constant 1 : i32
    %22 = "tpu.memref_slice"(%arg4, %c1_i32_5) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %23 = "tpu.memref_squeeze"(%22) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%23, %21, %21) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<1x128xf32, #tpu.memory_space<vmem>>, memref<1x128xf32, #tpu.memory_space<vmem>>) -> ()
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %24 = vector.load %arg1[%c0, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %25 = vector.load %arg3[%c0_2, %c0_3] : memref<2x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
    %c1 = arith.constant 1 : index
    %c0_4 = arith.constant 0 : index
    %26 = vector.load %arg3[%c1, %c0_4] : memref<2x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
    %c0_5 = arith.constant 0 : index
    %c0_6 = arith.constant 0 : index
    %27 = vector.load %arg1[%c0_5, %c0_6] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<7x128xf32>
    %c1_1 = arith.constant 1 : index
    %c0_7 = arith.constant 0 : index
    %28 = vector.load %arg1[%c1_1, %c0_7] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<7x128xf32>
    %up = "tpu.concatenate"(%25, %27) <{dimension = 0 : i32}> : (vector<1x128xf32>, vector<7x128xf32>) -> vector<8x128xf32>
    %down = "tpu.concatenate"(%28, %26) <{dimension = 0 : i32}> : (vector<7x128xf32>, vector<1x128xf32>) -> vector<8x128xf32>
    %s = arith.addf %up, %24 : vector<8x128xf32>
    %t = arith.addf %s, %down : vector<8x128xf32>
    %cst = arith.constant 3.000000e+00 : f32
    %t_1 = vector.broadcast %cst : f32 to vector<8x128xf32>
    %y = arith.divf %t, %t_1 : vector<8x128xf32>
    %c0_8 = arith.constant 0 : index
    %c0_9 = arith.constant 0 : index
    %29 = vector.load %arg2[%c0_8, %c0_9] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    "tpu.vector_store"(%y, %arg2, %c0_8, %c0_9) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
}
