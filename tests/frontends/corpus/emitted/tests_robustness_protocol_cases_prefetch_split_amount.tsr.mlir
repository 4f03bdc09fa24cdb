// tests/robustness/protocol_cases/prefetch_split_amount.tsr:21:17: pallas_call of @k
module {
  func.func @k(%arg0: i32, %arg1: memref<1xi32, #tpu.memory_space<smem>>, %arg2: memref<4x8xf32, #tpu.memory_space<vmem>>, %arg3: memref<4x8xf32, #tpu.memory_space<vmem>>, %arg4: memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scalar_prefetch = 1 : i64, scratch_operands = 1 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 4, 8>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 4, 8>}]} {
    %dev = "tpu.device_id"() : () -> i32
    %c = arith.constant 1 : i32
    %me1 = arith.addi %dev, %c : i32
    %c_1 = arith.constant 2 : i32
    %next = arith.remsi %me1, %c_1 : i32
    %c0 = arith.constant 0 : index
    %0 = memref.load %arg1[%c0] : memref<1xi32, #tpu.memory_space<smem>>
    "tpu.sem_signal"(%arg4, %0, %next) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32, i32) -> ()
    "tpu.sem_wait"(%arg4, %0) : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32) -> ()
    %c0_1 = arith.constant 0 : index
    %c0_2 = arith.constant 0 : index
    %1 = vector.load %arg2[%c0_1, %c0_2] : memref<4x8xf32, #tpu.memory_space<vmem>>, vector<4x8xf32>
    %c0_3 = arith.constant 0 : index
    %c0_4 = arith.constant 0 : index
    %2 = vector.load %arg3[%c0_3, %c0_4] : memref<4x8xf32, #tpu.memory_space<vmem>>, vector<4x8xf32>
    "tpu.vector_store"(%1, %arg3, %c0_3, %c0_4) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<4x8xf32>, memref<4x8xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: memref<1xi32, #tpu.memory_space<smem>>) -> (i32, i32) {
    %c = arith.constant 0 : i32
    %c_1 = arith.constant 0 : i32
    return %c, %c_1 : i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: memref<1xi32, #tpu.memory_space<smem>>) -> (i32, i32) {
    %c = arith.constant 0 : i32
    %c_1 = arith.constant 0 : i32
    return %c, %c_1 : i32, i32
  }
}
