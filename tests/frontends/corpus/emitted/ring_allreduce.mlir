// examples/ring_allreduce.tsr:69:17: pallas_call of @ring_kernel
module {
  func.func @ring_kernel(%arg0: i32, %arg1: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<4x8x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<3x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, %arg5: memref<3x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 3 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}]} {
    %dev = "tpu.device_id"() : () -> i32
    %c = arith.constant 1 : i32
    %me_plus_1 = arith.addi %dev, %c : i32
    %c_1 = arith.constant 4 : i32
    %right = arith.remsi %me_plus_1, %c_1 : i32
    %c_2 = arith.constant 3 : i32
    %me_plus_3 = arith.addi %dev, %c_2 : i32
    %c_3 = arith.constant 4 : i32
    %left = arith.remsi %me_plus_3, %c_3 : i32
    %barrier = "tpu.sem_barrier"() : () -> memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>
    %c_4 = arith.constant 1 : i32
    "tpu.sem_signal"(%barrier, %c_4, %left) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32, i32) -> ()
    %c_5 = arith.constant 1 : i32
    "tpu.sem_signal"(%barrier, %c_5, %right) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32, i32) -> ()
    %c_6 = arith.constant 2 : i32
    "tpu.sem_wait"(%barrier, %c_6) : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> ()
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg1[%c0, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %c0_4 = arith.constant 0 : index
    %1 = vector.load %arg3[%c0_2, %c0_3, %c0_4] : memref<4x8x128xf32, #tpu.memory_space<vmem>>, vector<1x8x128xf32>
    %2 = vector.shape_cast %1 : vector<1x8x128xf32> to vector<8x128xf32>
    %3 = vector.shape_cast %0 : vector<8x128xf32> to vector<1x8x128xf32>
    "tpu.vector_store"(%3, %arg3, %c0_2, %c0_3, %c0_4) <{operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>}> : (vector<1x8x128xf32>, memref<4x8x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> ()
    %c_7 = arith.constant 0 : i32
    %c_8 = arith.constant 3 : i32
    %c1_i32 = arith.constant 1 : i32
    scf.for %s = %c_7 to %c_8 step %c1_i32 : i32 {
      %c_9 = arith.constant 1 : i32
      %s1 = arith.addi %s, %c_9 : i32
      %c0_i32 = arith.constant 0 : i32
      %c0_i32_1 = arith.constant 0 : i32
      %4 = "tpu.memref_slice"(%arg3, %s, %c0_i32, %c0_i32_1) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<4x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<vmem>>
      %5 = "tpu.memref_squeeze"(%4) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> memref<8x128xf32, #tpu.memory_space<vmem>>
      %c0_i32_2 = arith.constant 0 : i32
      %c0_i32_3 = arith.constant 0 : i32
      %6 = "tpu.memref_slice"(%arg3, %s1, %c0_i32_2, %c0_i32_3) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<4x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<vmem>>
      %7 = "tpu.memref_squeeze"(%6) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> memref<8x128xf32, #tpu.memory_space<vmem>>
      %8 = "tpu.memref_slice"(%arg5, %s) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<3x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      %9 = "tpu.memref_squeeze"(%8) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      %10 = "tpu.memref_slice"(%arg4, %s) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<3x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      %11 = "tpu.memref_squeeze"(%10) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      "tpu.enqueue_dma"(%5, %11, %7, %9, %right) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0>, priority = 0 : i32}> : (memref<8x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> ()
      %c0_i32_4 = arith.constant 0 : i32
      %c0_i32_5 = arith.constant 0 : i32
      %12 = "tpu.memref_slice"(%arg3, %s1, %c0_i32_4, %c0_i32_5) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<4x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<vmem>>
      %13 = "tpu.memref_squeeze"(%12) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> memref<8x128xf32, #tpu.memory_space<vmem>>
      %14 = "tpu.memref_slice"(%arg5, %s) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<3x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      %15 = "tpu.memref_squeeze"(%14) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      "tpu.wait_dma2"(%15, %13, %13) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
      %c0_i32_6 = arith.constant 0 : i32
      %c0_i32_7 = arith.constant 0 : i32
      %16 = "tpu.memref_slice"(%arg3, %s, %c0_i32_6, %c0_i32_7) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<4x8x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x8x128xf32, #tpu.memory_space<vmem>>
      %17 = "tpu.memref_squeeze"(%16) : (memref<1x8x128xf32, #tpu.memory_space<vmem>>) -> memref<8x128xf32, #tpu.memory_space<vmem>>
      %18 = "tpu.memref_slice"(%arg4, %s) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<3x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      %19 = "tpu.memref_squeeze"(%18) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      "tpu.wait_dma2"(%19, %17, %17) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
    }
    %c0_5 = arith.constant 0 : index
    %c0_6 = arith.constant 0 : index
    %c0_7 = arith.constant 0 : index
    %4 = vector.load %arg3[%c0_5, %c0_6, %c0_7] : memref<4x8x128xf32, #tpu.memory_space<vmem>>, vector<4x8x128xf32>
    %cst = arith.constant dense<0.000000e+00> : vector<8x128xf32>
    %sum = vector.multi_reduction <add>, %4, %cst [0] : vector<4x8x128xf32> to vector<8x128xf32>
    %c0_8 = arith.constant 0 : index
    %c0_9 = arith.constant 0 : index
    %5 = vector.load %arg2[%c0_8, %c0_9] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    "tpu.vector_store"(%sum, %arg2, %c0_8, %c0_9) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
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
