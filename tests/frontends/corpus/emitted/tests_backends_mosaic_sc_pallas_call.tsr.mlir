// tests/backends/mosaic/sc_pallas_call.tsr:26:3: pallas_call of @sc_kernel
module {
  func.func @sc_kernel(%arg0: i32, %arg1: memref<16xf32, #tpu.memory_space<vmem>>, %arg2: memref<64x16xf32, #tpu.memory_space<hbm>> {sc.persistent}, %arg3: memref<16xf32, #tpu.memory_space<vmem>>, %arg4: memref<16xf32, #tpu.memory_space<vmem>>, %arg5: memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 128>, scratch_operands = 2 : i64, tpu.core_type = #tpu.core_type<sc_vector_subcore>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16>}, {transform_indices = @transform_1, window_bounds = array<i64: 64, 16>}, {transform_indices = @transform_2, window_bounds = array<i64: 16>}]} {
    %c = arith.constant 64 : i32
    %row = arith.remsi %arg0, %c : i32
    %c0_i32 = arith.constant 0 : i32
    %0 = "tpu.memref_slice"(%arg2, %row, %c0_i32) <{operandSegmentSizes = array<i32: 1, 2, 0>}> : (memref<64x16xf32, #tpu.memory_space<hbm>>, i32, i32) -> memref<1x16xf32, #tpu.memory_space<hbm>>
    %1 = "tpu.memref_squeeze"(%0) : (memref<1x16xf32, #tpu.memory_space<hbm>>) -> memref<16xf32, #tpu.memory_space<hbm>>
    "tpu.enqueue_dma"(%1, %arg4, %arg5) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<16xf32, #tpu.memory_space<hbm>>, memref<16xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    "tpu.wait_dma2"(%arg5, %1, %arg4) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<16xf32, #tpu.memory_space<hbm>>, memref<16xf32, #tpu.memory_space<vmem>>) -> ()
    %c0 = arith.constant 0 : index
    %2 = "tpu.vector_load"(%arg1, %c0) <{operandSegmentSizes = array<i32: 1, 1, 0>, strides = array<i32>}> : (memref<16xf32, #tpu.memory_space<vmem>>, index) -> vector<16xf32>
    %c0_1 = arith.constant 0 : index
    %3 = "tpu.vector_load"(%arg4, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 0>, strides = array<i32>}> : (memref<16xf32, #tpu.memory_space<vmem>>, index) -> vector<16xf32>
    %s = arith.addf %2, %3 : vector<16xf32>
    %c0_2 = arith.constant 0 : index
    %4 = "tpu.vector_load"(%arg3, %c0_2) <{operandSegmentSizes = array<i32: 1, 1, 0>, strides = array<i32>}> : (memref<16xf32, #tpu.memory_space<vmem>>, index) -> vector<16xf32>
    "tpu.vector_store"(%s, %arg3, %c0_2) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<16xf32>, memref<16xf32, #tpu.memory_space<vmem>>, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32) {
    return %arg0 : i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_2(%arg0: i32) -> (i32) {
    return %arg0 : i32
  }
}
