// examples/dma_pipeline.tsr:82:3: pallas_call of @double_kernel
module {
  func.func @double_kernel(%arg0: i32, %arg1: memref<2048x128xf32, #tpu.memory_space<any>>, %arg2: memref<2048x128xf32, #tpu.memory_space<any>>, %arg3: memref<2x128x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<2x128x128xf32, #tpu.memory_space<vmem>>, %arg5: memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, %arg6: memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 4 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{}, {}]} {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    %0 = "tpu.memref_slice"(%arg1, %c0_i32, %c0_i32_1) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<2048x128xf32, #tpu.memory_space<any>>, i32, i32) -> memref<128x128xf32, #tpu.memory_space<any>>
    %c0_i32_2 = arith.constant 0 : i32
    %c0_i32_3 = arith.constant 0 : i32
    %c0_i32_4 = arith.constant 0 : i32
    %1 = "tpu.memref_slice"(%arg3, %c0_i32_2, %c0_i32_3, %c0_i32_4) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x128x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x128x128xf32, #tpu.memory_space<vmem>>
    %2 = "tpu.memref_squeeze"(%1) : (memref<1x128x128xf32, #tpu.memory_space<vmem>>) -> memref<128x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_5 = arith.constant 0 : i32
    %3 = "tpu.memref_slice"(%arg5, %c0_i32_5) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %4 = "tpu.memref_squeeze"(%3) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.enqueue_dma"(%0, %2, %4) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<128x128xf32, #tpu.memory_space<any>>, memref<128x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    %c = arith.constant 0 : i32
    %c_1 = arith.constant 16 : i32
    %c1_i32 = arith.constant 1 : i32
    scf.for %c_2 = %c to %c_1 step %c1_i32 : i32 {
      %c_3 = arith.constant 2 : i32
      %slot = arith.remsi %c_2, %c_3 : i32
      %c_4 = arith.constant 1 : i32
      %next = arith.addi %c_2, %c_4 : i32
      %c_5 = arith.constant 16 : i32
      %has_next = arith.cmpi slt, %next, %c_5 : i32
      %5 = arith.extui %has_next : i1 to i32
      %c0_i32_6 = arith.constant 0 : i32
      %6 = arith.cmpi ne, %5, %c0_i32_6 : i32
      scf.if %6 {
        %c_6 = arith.constant 1 : i32
        %other = arith.subi %c_6, %slot : i32
        %c_7 = arith.constant 128 : i32
        %next_row = arith.muli %next, %c_7 : i32
        %c0_i32_7 = arith.constant 0 : i32
        %7 = "tpu.memref_slice"(%arg1, %next_row, %c0_i32_7) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<2048x128xf32, #tpu.memory_space<any>>, i32, i32) -> memref<128x128xf32, #tpu.memory_space<any>>
        %c0_i32_8 = arith.constant 0 : i32
        %c0_i32_9 = arith.constant 0 : i32
        %8 = "tpu.memref_slice"(%arg3, %other, %c0_i32_8, %c0_i32_9) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x128x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x128x128xf32, #tpu.memory_space<vmem>>
        %9 = "tpu.memref_squeeze"(%8) : (memref<1x128x128xf32, #tpu.memory_space<vmem>>) -> memref<128x128xf32, #tpu.memory_space<vmem>>
        %10 = "tpu.memref_slice"(%arg5, %other) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
        %11 = "tpu.memref_squeeze"(%10) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
        "tpu.enqueue_dma"(%7, %9, %11) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<128x128xf32, #tpu.memory_space<any>>, memref<128x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
      } else {
      }
      %c0_i32_7 = arith.constant 0 : i32
      %c0_i32_8 = arith.constant 0 : i32
      %7 = "tpu.memref_slice"(%arg3, %slot, %c0_i32_7, %c0_i32_8) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x128x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x128x128xf32, #tpu.memory_space<vmem>>
      %8 = "tpu.memref_squeeze"(%7) : (memref<1x128x128xf32, #tpu.memory_space<vmem>>) -> memref<128x128xf32, #tpu.memory_space<vmem>>
      %9 = "tpu.memref_slice"(%arg5, %slot) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      %10 = "tpu.memref_squeeze"(%9) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      "tpu.wait_dma2"(%10, %8, %8) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<128x128xf32, #tpu.memory_space<vmem>>, memref<128x128xf32, #tpu.memory_space<vmem>>) -> ()
      %c_6 = arith.constant 2 : i32
      %reused = arith.cmpi sge, %c_2, %c_6 : i32
      %11 = arith.extui %reused : i1 to i32
      %c0_i32_9 = arith.constant 0 : i32
      %12 = arith.cmpi ne, %11, %c0_i32_9 : i32
      scf.if %12 {
        %c0_i32_10 = arith.constant 0 : i32
        %c0_i32_11 = arith.constant 0 : i32
        %13 = "tpu.memref_slice"(%arg4, %slot, %c0_i32_10, %c0_i32_11) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x128x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x128x128xf32, #tpu.memory_space<vmem>>
        %14 = "tpu.memref_squeeze"(%13) : (memref<1x128x128xf32, #tpu.memory_space<vmem>>) -> memref<128x128xf32, #tpu.memory_space<vmem>>
        %15 = "tpu.memref_slice"(%arg6, %slot) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
        %16 = "tpu.memref_squeeze"(%15) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
        "tpu.wait_dma2"(%16, %14, %14) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<128x128xf32, #tpu.memory_space<vmem>>, memref<128x128xf32, #tpu.memory_space<vmem>>) -> ()
      } else {
      }
      %13 = arith.index_cast %slot : i32 to index
      %c0 = arith.constant 0 : index
      %c0_1 = arith.constant 0 : index
      %14 = vector.load %arg3[%13, %c0, %c0_1] : memref<2x128x128xf32, #tpu.memory_space<vmem>>, vector<1x128x128xf32>
      %15 = vector.shape_cast %14 : vector<1x128x128xf32> to vector<128x128xf32>
      %cst = arith.constant 2.000000e+00 : f32
      %t = vector.broadcast %cst : f32 to vector<128x128xf32>
      %b = arith.mulf %15, %t : vector<128x128xf32>
      %16 = arith.index_cast %slot : i32 to index
      %c0_2 = arith.constant 0 : index
      %c0_3 = arith.constant 0 : index
      %17 = vector.load %arg4[%16, %c0_2, %c0_3] : memref<2x128x128xf32, #tpu.memory_space<vmem>>, vector<1x128x128xf32>
      %18 = vector.shape_cast %17 : vector<1x128x128xf32> to vector<128x128xf32>
      %19 = vector.shape_cast %b : vector<128x128xf32> to vector<1x128x128xf32>
      "tpu.vector_store"(%19, %arg4, %16, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>}> : (vector<1x128x128xf32>, memref<2x128x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> ()
      %c_7 = arith.constant 128 : i32
      %row = arith.muli %c_2, %c_7 : i32
      %c0_i32_10 = arith.constant 0 : i32
      %c0_i32_11 = arith.constant 0 : i32
      %20 = "tpu.memref_slice"(%arg4, %slot, %c0_i32_10, %c0_i32_11) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x128x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x128x128xf32, #tpu.memory_space<vmem>>
      %21 = "tpu.memref_squeeze"(%20) : (memref<1x128x128xf32, #tpu.memory_space<vmem>>) -> memref<128x128xf32, #tpu.memory_space<vmem>>
      %c0_i32_12 = arith.constant 0 : i32
      %22 = "tpu.memref_slice"(%arg2, %row, %c0_i32_12) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<2048x128xf32, #tpu.memory_space<any>>, i32, i32) -> memref<128x128xf32, #tpu.memory_space<any>>
      %23 = "tpu.memref_slice"(%arg6, %slot) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      %24 = "tpu.memref_squeeze"(%23) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      "tpu.enqueue_dma"(%21, %22, %24) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<128x128xf32, #tpu.memory_space<vmem>>, memref<128x128xf32, #tpu.memory_space<any>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    }
    %c0_i32_6 = arith.constant 0 : i32
    %c0_i32_7 = arith.constant 0 : i32
    %c0_i32_8 = arith.constant 0 : i32
    %5 = "tpu.memref_slice"(%arg4, %c0_i32_6, %c0_i32_7, %c0_i32_8) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x128x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x128x128xf32, #tpu.memory_space<vmem>>
    %6 = "tpu.memref_squeeze"(%5) : (memref<1x128x128xf32, #tpu.memory_space<vmem>>) -> memref<128x128xf32, #tpu.memory_space<vmem>>
    %c0_i32_9 = arith.constant 0 : i32
    %7 = "tpu.memref_slice"(%arg6, %c0_i32_9) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %8 = "tpu.memref_squeeze"(%7) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%8, %6, %6) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<128x128xf32, #tpu.memory_space<vmem>>, memref<128x128xf32, #tpu.memory_space<vmem>>) -> ()
    %c1_i32_1 = arith.constant 1 : i32
    %c0_i32_10 = arith.constant 0 : i32
    %c0_i32_11 = arith.constant 0 : i32
    %9 = "tpu.memref_slice"(%arg4, %c1_i32_1, %c0_i32_10, %c0_i32_11) <{operandSegmentSizes = array<i32: 1, 3, 0>}> : (memref<2x128x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> memref<1x128x128xf32, #tpu.memory_space<vmem>>
    %10 = "tpu.memref_squeeze"(%9) : (memref<1x128x128xf32, #tpu.memory_space<vmem>>) -> memref<128x128xf32, #tpu.memory_space<vmem>>
    %c1_i32_2 = arith.constant 1 : i32
    %11 = "tpu.memref_slice"(%arg6, %c1_i32_2) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    %12 = "tpu.memref_squeeze"(%11) : (memref<1x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
    "tpu.wait_dma2"(%12, %10, %10) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<128x128xf32, #tpu.memory_space<vmem>>, memref<128x128xf32, #tpu.memory_space<vmem>>) -> ()
    return
  }
}
