// tests/backends/mosaic/control.tsr:49:3: pallas_call of @control_kernel
module {
  func.func @control_kernel(%arg0: i32, %arg1: i32, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<1xi32, #tpu.memory_space<smem>>, %arg4: memref<8x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: -9223372036854775808, 3>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 1>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_2, window_bounds = array<i64: 8, 128>}]} {
    %c3_i32 = arith.constant 3 : i32
    %ni = "tpu.iteration_bound"() <{dim = 0 : i32}> : () -> i32
    %c0_i32 = arith.constant 0 : i32
    %0 = arith.maxsi %arg1, %c0_i32 : i32
    %c2_i32 = arith.constant 2 : i32
    %1 = arith.minsi %0, %c2_i32 : i32
    %c0_i32_1 = arith.constant 0 : i32
    %3 = arith.cmpi ne, %1, %c0_i32_1 : i32
    %2:2 = scf.if %3 -> (vector<8x128xf32>, i32) {
      %c1_i32 = arith.constant 1 : i32
      %4 = arith.subi %1, %c1_i32 : i32
      %c0_i32_2 = arith.constant 0 : i32
      %6 = arith.cmpi ne, %4, %c0_i32_2 : i32
      %5:2 = scf.if %6 -> (vector<8x128xf32>, i32) {
        %c0 = arith.constant 0 : index
        %c0_1 = arith.constant 0 : index
        %7 = vector.load %arg2[%c0, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
        scf.yield %7, %c3_i32 : vector<8x128xf32>, i32
      } else {
        %c0 = arith.constant 0 : index
        %c0_1 = arith.constant 0 : index
        %7 = vector.load %arg2[%c0, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
        %c = arith.constant 1 : i32
        scf.yield %7, %c : vector<8x128xf32>, i32
      }
      scf.yield %5#0, %5#1 : vector<8x128xf32>, i32
    } else {
      %c0 = arith.constant 0 : index
      %c0_1 = arith.constant 0 : index
      %4 = vector.load %arg2[%c0, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
      scf.yield %4, %c3_i32 : vector<8x128xf32>, i32
    }
    %c0 = arith.constant 0 : index
    %4 = memref.load %arg3[%c0] : memref<1xi32, #tpu.memory_space<smem>>
    %c = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %w = scf.for %k = %c to %4 step %c1_i32 iter_args(%c_1 = %arg0) -> (i32) : i32 {
      %c0_1 = arith.constant 0 : index
      %c0_2 = arith.constant 0 : index
      %5 = vector.load %arg2[%c0_1, %c0_2] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
      %c0_3 = arith.constant 0 : index
      %c0_4 = arith.constant 0 : index
      %6 = vector.load %arg4[%c0_3, %c0_4] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
      "tpu.vector_store"(%5, %arg4, %c0_3, %c0_4) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
      scf.yield %k : i32
    }
    %c0_i32_2 = arith.constant 0 : i32
    %c3_i32_1 = arith.constant 3 : i32
    %c1_i32_1 = arith.constant 1 : i32
    %s = scf.for %i = %c0_i32_2 to %c3_i32_1 step %c1_i32_1 iter_args(%c_1 = %w) -> (i32) : i32 {
      %c0_1 = arith.constant 0 : index
      %c0_2 = arith.constant 0 : index
      %5 = vector.load %arg2[%c0_1, %c0_2] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
      %6 = vector.shape_cast %5 : vector<1x128xf32> to vector<128xf32>
      scf.yield %c_1 : i32
    }
    %true = arith.constant true
    %done = scf.while (%p = %true) : (i1) -> (i1) {
      scf.condition(%p) %p : i1
    } do {
    ^bb0(%p: i1):
      %c1 = arith.constant 1 : index
      %c0_1 = arith.constant 0 : index
      %5 = vector.load %arg2[%c1, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
      %6 = vector.shape_cast %5 : vector<1x128xf32> to vector<128xf32>
      %false = arith.constant false
      scf.yield %false : i1
    }
    "tpu.region"() ({
      %tmp = memref.alloca() : memref<8x128xf32, #tpu.memory_space<vmem>>
      %sem = "tpu.sem_alloc"() : () -> memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
      %c0_1 = arith.constant 0 : index
      %c0_2 = arith.constant 0 : index
      %5 = vector.load %arg4[%c0_1, %c0_2] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
      %c0_3 = arith.constant 0 : index
      %c0_4 = arith.constant 0 : index
      %6 = vector.load %tmp[%c0_3, %c0_4] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
      "tpu.vector_store"(%5, %tmp, %c0_3, %c0_4) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
      "tpu.enqueue_dma"(%tmp, %arg4, %sem) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
      "tpu.wait_dma2"(%sem, %arg4, %arg4) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<8x128xf32, #tpu.memory_space<vmem>>, memref<8x128xf32, #tpu.memory_space<vmem>>) -> ()
      "tpu.yield"() : () -> ()
    }) : () -> ()
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_2(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
}
