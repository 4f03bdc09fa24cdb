// tests/robustness/protocol_cases/target_out_of_range_one_device.tsr:17:17: pallas_call of @k
module {
  func.func @k(%arg0: i32, %arg1: memref<4x8xf32, #tpu.memory_space<vmem>>, %arg2: memref<4x8xf32, #tpu.memory_space<vmem>>, %arg3: memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 1 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 4, 8>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 4, 8>}]} {
    %dev = "tpu.device_id"() : () -> i32
    %c = arith.constant 1 : i32
    %next = arith.addi %dev, %c : i32
    %c_1 = arith.constant 1 : i32
    "tpu.sem_signal"(%arg3, %c_1, %next) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.semaphore, #tpu.memory_space<semaphore_mem>>, i32, i32) -> ()
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg1[%c0, %c0_1] : memref<4x8xf32, #tpu.memory_space<vmem>>, vector<4x8xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %1 = vector.load %arg2[%c0_2, %c0_3] : memref<4x8xf32, #tpu.memory_space<vmem>>, vector<4x8xf32>
    "tpu.vector_store"(%0, %arg2, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<4x8xf32>, memref<4x8xf32, #tpu.memory_space<vmem>>, index, index) -> ()
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
