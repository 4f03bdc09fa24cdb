// tests/robustness/fuzz_cases/vjp_sparse_core.tsr:29:9: pallas_call of @sort_kernel
module {
  func.func @sort_kernel(%arg0: i32, %arg1: i32, %arg2: memref<1x16xf32, #tpu.memory_space<vmem>>, %arg3: memref<1x16xf32, #tpu.memory_space<vmem>>, %arg4: memref<1x16xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<core_parallel>, #tpu.dimension_semantics<subcore_parallel>], iteration_bounds = array<i64: 2, 16>, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<sc_vector_subcore>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 1, 16>}, {transform_indices = @transform_1, window_bounds = array<i64: 1, 16>}, {transform_indices = @transform_2, window_bounds = array<i64: 1, 16>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = "tpu.vector_load"(%arg2, %c0, %c0_1) <{operandSegmentSizes = array<i32: 1, 2, 0>, strides = array<i32>}> : (memref<1x16xf32, #tpu.memory_space<vmem>>, index, index) -> vector<16xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %1 = "tpu.vector_load"(%arg3, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 2, 0>, strides = array<i32>}> : (memref<1x16xf32, #tpu.memory_space<vmem>>, index, index) -> vector<16xf32>
    %mask = arith.constant dense<true> : vector<16xi1>
    %2:3 = "tpu.sort"(%0, %1, %mask) : (vector<16xf32>, vector<16xf32>, vector<16xi1>) -> (vector<16xi1>, vector<16xf32>, vector<16xf32>)
    %c0_4 = arith.constant 0 : index
    %c0_5 = arith.constant 0 : index
    %3 = "tpu.vector_load"(%arg4, %c0_4, %c0_5) <{operandSegmentSizes = array<i32: 1, 2, 0>, strides = array<i32>}> : (memref<1x16xf32, #tpu.memory_space<vmem>>, index, index) -> vector<16xf32>
    "tpu.vector_store"(%2#2, %arg4, %c0_4, %c0_5) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<16xf32>, memref<1x16xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c = arith.constant 16 : i32
    %r = arith.muli %arg0, %c : i32
    %q = arith.addi %r, %arg1 : i32
    %c_1 = arith.constant 0 : i32
    return %q, %c_1 : i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c = arith.constant 16 : i32
    %r = arith.muli %arg0, %c : i32
    %q = arith.addi %r, %arg1 : i32
    %c_1 = arith.constant 0 : i32
    return %q, %c_1 : i32, i32
  }
  func.func @transform_2(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c = arith.constant 16 : i32
    %r = arith.muli %arg0, %c : i32
    %q = arith.addi %r, %arg1 : i32
    %c_1 = arith.constant 0 : i32
    return %q, %c_1 : i32, i32
  }
}
