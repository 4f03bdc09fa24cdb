// tests/backends/mosaic/dma_sem_ops.tsr:39:29: pallas_call of @dma_kernel
module {
  func.func @dma_kernel(%arg0: i32, %arg1: memref<4x8x128xf32, #tpu.memory_space<any>>, %arg2: memref<4x8x128xf32, #tpu.memory_space<any>>, %arg3: memref<2x8x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, %arg5: memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 3 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{}, {}]} {
    %c4_i32 = arith.constant 4 : i32
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    %0 = "tpu.memref_slice"(%arg1, %arg0, %c0_i32, %c0_i32_1) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<4x8x128xf32, #tpu.memory_space<any>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<any>>
    %1 = "tpu.memref_squeeze"(%0) : (memref<1x8x128xf32, #tpu.memory_space<any>>) -> memref<8x128xf32, #tpu.memory_space<any>>
    %c0_i32_2 = arith.constant 0 : i32
    %c0_i32_3 = arith.constant 0 : i32
    %c0_i32_4 = arith.constant 0 : i32
    %2 = "tpu.memref_slice"(%arg3, %c0_i32_2, %c0_i32_3, %c0_i32_4) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<vmem>>
    %3 = "tpu.memref_squeeze"(%2) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> memref<8x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_5 = arith.constant 0 : i32
    %4 = "tpu.memref_slice"(%arg4, %c0_i32_5) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %5 = "tpu.memref_squeeze"(%4) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.enqueue_dma"(%1, %3, %5) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<8x128xf32, #tpu.memory_space<any>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    %c0_i32_6 = arith.constant 0 : i32
    %c0_i32_7 = arith.constant 0 : i32
    %c0_i32_8 = arith.constant 0 : i32
    %6 = "tpu.memref_slice"(%arg3, %c0_i32_6, %c0_i32_7, %c0_i32_8) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<vmem>>
    %7 = "tpu.memref_squeeze"(%6) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> memref<8x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_9 = arith.constant 0 : i32
    %8 = "tpu.memref_slice"(%arg4, %c0_i32_9) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %9 = "tpu.memref_squeeze"(%8) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%9, %7, %7) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
    %dev = "tpu.device_id"() : () -> i32
    %c2_i32 = arith.constant 2 : i32
    %10 = arith.remsi %dev, %c2_i32 : i32
    %dev_1 = "tpu.device_id"() : () -> i32
    %c2_i32_1 = arith.constant 2 : i32
    %11 = arith.divsi %dev_1, %c2_i32_1 : i32
    %dev_2 = "tpu.device_id"() : () -> i32
    %c0_i32_10 = arith.constant 0 : i32
    %c0_i32_11 = arith.constant 0 : i32
    %c0_i32_12 = arith.constant 0 : i32
    %12 = "tpu.memref_slice"(%arg3, %c0_i32_10, %c0_i32_11, %c0_i32_12) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<vmem>>
    %13 = "tpu.memref_squeeze"(%12) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> memref<8x128xf32, #tpu.memory_space<vmem>>
    %c1_i32 = arith.constant 1 : i32
    %c0_i32_13 = arith.constant 0 : i32
    %c0_i32_14 = arith.constant 0 : i32
    %14 = "tpu.memref_slice"(%arg3, %c1_i32, %c0_i32_13, %c0_i32_14) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<vmem>>
    %15 = "tpu.memref_squeeze"(%14) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> memref<8x128xf32, #tpu.memory_space<vmem>>
    %c1_i32_1 = arith.constant 1 : i32
    %16 = "tpu.memref_slice"(%arg4, %c1_i32_1) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %17 = "tpu.memref_squeeze"(%16) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %c0_i32_15 = arith.constant 0 : i32
    %18 = "tpu.memref_slice"(%arg4, %c0_i32_15) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %19 = "tpu.memref_squeeze"(%18) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.enqueue_dma"(%13, %19, %15, %17, %11) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>, priority = 0 : i32}> : (memref<8x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> ()
    %c1_i32_2 = arith.constant 1 : i32
    %c0_i32_16 = arith.constant 0 : i32
    %c0_i32_17 = arith.constant 0 : i32
    %20 = "tpu.memref_slice"(%arg3, %c1_i32_2, %c0_i32_16, %c0_i32_17) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<vmem>>
    %21 = "tpu.memref_squeeze"(%20) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> memref<8x128xf32, #tpu.memory_space<vmem>>
    %c1_i32_3 = arith.constant 1 : i32
    %22 = "tpu.memref_slice"(%arg4, %c1_i32_3) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %23 = "tpu.memref_squeeze"(%22) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%23, %21, %21) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
    %c0_i32_18 = arith.constant 0 : i32
    %c0_i32_19 = arith.constant 0 : i32
    %24 = "tpu.memref_slice"(%arg1, %arg0, %c0_i32_18, %c0_i32_19, %arg0) <{operandSegmentSizes = array<i32: 1, 3, 1>}> : (memref<4x8x128xf32, #tpu.memory_space<any>>, i32, i32, i32, i32) -> memref<1x?x128xf32, #tpu.memory_space<any>>
    %25 = "tpu.memref_squeeze"(%24) : (memref<1x?x128xf32, #tpu.memory_space<any>>) -> memref<?x128xf32, #tpu.memory_space<any>>
    %c1_i32_4 = arith.constant 1 : i32
    %c0_i32_20 = arith.constant 0 : i32
    %c0_i32_21 = arith.constant 0 : i32
    %26 = "tpu.memref_slice"(%arg3, %c1_i32_4, %c0_i32_20, %c0_i32_21, %arg0) <{operandSegmentSizes = array<i32: 1, 3, 1>}> : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32, i32) -> memref<1x?x128xf32, #tpu.memory_space<vmem>>
    %27 = "tpu.memref_squeeze"(%26) : (memref<1x?x128xf32, #tpu.memory_space<vmem>>) -> memref<?x128xf32, #tpu.memory_space<vmem>>
    %c1_i32_5 = arith.constant 1 : i32
    %28 = "tpu.memref_slice"(%arg4, %c1_i32_5) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %29 = "tpu.memref_squeeze"(%28) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.enqueue_dma"(%25, %27, %29) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<?x128xf32, #tpu.memory_space<any>>, memref<?x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    %c1_i32_6 = arith.constant 1 : i32
    %c0_i32_22 = arith.constant 0 : i32
    %c0_i32_23 = arith.constant 0 : i32
    %30 = "tpu.memref_slice"(%arg3, %c1_i32_6, %c0_i32_22, %c0_i32_23, %arg0) <{operandSegmentSizes = array<i32: 1, 3, 1>}> : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32, i32) -> memref<1x?x128xf32, #tpu.memory_space<vmem>>
    %31 = "tpu.memref_squeeze"(%30) : (memref<1x?x128xf32, #tpu.memory_space<vmem>>) -> memref<?x128xf32, #tpu.memory_space<vmem>>
    %c1_i32_7 = arith.constant 1 : i32
    %32 = "tpu.memref_slice"(%arg4, %c1_i32_7) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %33 = "tpu.memref_squeeze"(%32) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%33, %31, %31) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<?x128xf32, #tpu.memory_space<vmem>>, memref<?x128xf32, #tpu.memory_space<vmem>>) -> ()
    %c0_i32_24 = arith.constant 0 : i32
    %c0_i32_25 = arith.constant 0 : i32
    %c0_i32_26 = arith.constant 0 : i32
    %34 = "tpu.memref_slice"(%arg2, %c0_i32_24, %c0_i32_25, %c0_i32_26) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<4x8x128xf32, #tpu.memory_space<any>>, i32, i32, i32) -> memref<2x8x128xf32, #tpu.memory_space<any>>
    %c0_i32_27 = arith.constant 0 : i32
    %35 = "tpu.memref_slice"(%arg4, %c0_i32_27) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %36 = "tpu.memref_squeeze"(%35) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.enqueue_dma"(%arg3, %34, %36) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<2x8x128xf32, #tpu.memory_space<vmem>>, memref<2x8x128xf32, #tpu.memory_space<any>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    %c0_i32_28 = arith.constant 0 : i32
    %37 = "tpu.memref_slice"(%arg4, %c0_i32_28) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %38 = "tpu.memref_squeeze"(%37) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%38, %arg3, %arg3) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<2x8x128xf32, #tpu.memory_space<vmem>>, memref<2x8x128xf32, #tpu.memory_space<vmem>>) -> ()
    %barrier = "tpu.sem_barrier"() : () -> memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>
    %c = arith.constant 1 : i32
    "tpu.sem_signal"(%barrier, %c, %dev_2) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32, i32) -> ()
    %c_1 = arith.constant 2 : i32
    "tpu.sem_signal"(%arg5, %c_1, %10, %c4_i32) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32, i32, i32) -> ()
    %c_2 = arith.constant 2 : i32
    "tpu.sem_wait"(%arg5, %c_2) : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> ()
    %c1_i32_8 = arith.constant 1 : i32
    %39 = "tpu.memref_slice"(%arg4, %c1_i32_8) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %40 = "tpu.memref_squeeze"(%39) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %v = "tpu.sem_read"(%40) : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> i32
    %c_3 = arith.constant 100 : i32
    "tpu.delay"(%c_3) : (i32) -> ()
    "tpu.log"(%arg0, %c4_i32, %v) <{formatted = true, tag = "program $s0 of $s1: sem $s2"}> : (i32, i32, i32) -> ()
    "tpu.log"() <{formatted = false, tag = "done"}> : () -> ()
    %c1 = arith.constant 1 : index
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %41 = vector.load %arg3[%c1, %c0, %c0_1] : memref<2x8x128xf32, #tpu.memory_space<vmem>>, vector<1x8x128xf32>
    %42 = vector.shape_cast %41 : vector<1x8x128xf32> to vector<8x128xf32>
    "tpu.region"() ({
      %buf = memref.alloca() : memref<8x128xf32, #tpu.memory_space<vmem>>
      %c0_2 = arith.constant 0 : index
      %c0_3 = arith.constant 0 : index
      vector.store %42, %buf[%c0_2, %c0_3] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
      "tpu.log_buffer"(%buf) <{shape = array<i64: 8, 128>, tag = "rows = "}> : (memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
      "tpu.yield"() : () -> ()
    }) : () -> ()
    return
  }
}
