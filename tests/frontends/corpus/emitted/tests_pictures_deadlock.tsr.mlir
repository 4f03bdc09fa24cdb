// tests/pictures/deadlock.tsr:8:3: pallas_call of @k
module {
  func.func @k(%arg0: i32, %arg1: memref<8xf32, #tpu.memory_space<vmem>>, %arg2: memref<1x!tpu.semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 1 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 8>}]} {
    %c0_i32 = arith.constant 0 : i32
    %0 = "tpu.memref_slice"(%arg2, %c0_i32) <{operandSegmentSizes = array<i32: 1, 1, 0>}> : (memref<1x!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> memref<1x!tpu.semaphore, #tpu.memory_space<semaphore_mem>>
    %1 = "tpu.memref_squeeze"(%0) : (memref<1x!tpu.semaphore, #tpu.memory_space<semaphore_mem>>) -> memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>
    %c = arith.constant 1 : i32
    "tpu.sem_wait"(%1, %c) : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
}
