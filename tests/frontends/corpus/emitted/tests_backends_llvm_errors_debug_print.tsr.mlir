// tests/backends/llvm/errors/debug_print.tsr:9:3: pallas_call of @k
module {
  func.func @k(%arg0: i32, %arg1: memref<8xf32, #tpu.memory_space<vmem>>, %arg2: memref<8xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 8>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 8>}]} {
    "tpu.log"(%arg0) <{formatted = true, tag = "step $s0"}> : (i32) -> ()
    %c0 = arith.constant 0 : index
    %0 = vector.load %arg1[%c0] : memref<8xf32, #tpu.memory_space<vmem>>, vector<8xf32>
    %c0_1 = arith.constant 0 : index
    %1 = vector.load %arg2[%c0_1] : memref<8xf32, #tpu.memory_space<vmem>>, vector<8xf32>
    "tpu.vector_store"(%0, %arg2, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<8xf32>, memref<8xf32, #tpu.memory_space<vmem>>, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_1(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
}
