// tests/robustness/fuzz_cases/vjp_numbered_names_reprint.tsr:58:3: pallas_call of @add_kernel_jvp_known
module {
  func.func @add_kernel_jvp_known(%arg0: i32, %arg1: i32, %arg2: memref<128x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<128x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<128x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 8, 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 128, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 128, 128>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg2[%c0, %c0_1] : memref<128x128xf32, #tpu.memory_space<vmem>>, vector<128x128xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %1 = vector.load %arg3[%c0_2, %c0_3] : memref<128x128xf32, #tpu.memory_space<vmem>>, vector<128x128xf32>
    %c = arith.addf %0, %1 : vector<128x128xf32>
    %c0_4 = arith.constant 0 : index
    %c0_5 = arith.constant 0 : index
    %2 = vector.load %arg4[%c0_4, %c0_5] : memref<128x128xf32, #tpu.memory_space<vmem>>, vector<128x128xf32>
    "tpu.vector_store"(%c, %arg4, %c0_4, %c0_5) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: i32) -> (i32, i32) {
    return %arg0, %arg1 : i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: i32) -> (i32, i32) {
    return %arg0, %arg1 : i32, i32
  }
  func.func @transform_2(%arg0: i32, %arg1: i32) -> (i32, i32) {
    return %arg0, %arg1 : i32, i32
  }
}
// -----
// tests/robustness/fuzz_cases/vjp_numbered_names_reprint.tsr:66:3: pallas_call of @add_kernel_jvp_transpose
module {
  func.func @add_kernel_jvp_transpose(%arg0: i32, %arg1: i32, %arg2: memref<128x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<128x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<128x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 8, 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 128, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 128, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 128, 128>}]} {
    %cst = arith.constant 0.000000e+00 : f32
    %0 = vector.broadcast %cst : f32 to vector<128x128xf32>
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %1 = vector.load %arg3[%c0, %c0_1] : memref<128x128xf32, #tpu.memory_space<vmem>>, vector<128x128xf32>
    "tpu.vector_store"(%0, %arg3, %c0, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %cst_1 = arith.constant 0.000000e+00 : f32
    %2 = vector.broadcast %cst_1 : f32 to vector<128x128xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %3 = vector.load %arg4[%c0_2, %c0_3] : memref<128x128xf32, #tpu.memory_space<vmem>>, vector<128x128xf32>
    "tpu.vector_store"(%2, %arg4, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %cst_2 = arith.constant 0.000000e+00 : f32
    %4 = vector.broadcast %cst_2 : f32 to vector<128x128xf32>
    %c0_4 = arith.constant 0 : index
    %c0_5 = arith.constant 0 : index
    %5 = vector.load %arg2[%c0_4, %c0_5] : memref<128x128xf32, #tpu.memory_space<vmem>>, vector<128x128xf32>
    "tpu.vector_store"(%4, %arg2, %c0_4, %c0_5) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %c0_6 = arith.constant 0 : index
    %c0_7 = arith.constant 0 : index
    %6 = vector.load %arg4[%c0_6, %c0_7] : memref<128x128xf32, #tpu.memory_space<vmem>>, vector<128x128xf32>
    %7 = arith.addf %6, %5 : vector<128x128xf32>
    "tpu.vector_store"(%7, %arg4, %c0_6, %c0_7) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %c0_8 = arith.constant 0 : index
    %c0_9 = arith.constant 0 : index
    %8 = vector.load %arg3[%c0_8, %c0_9] : memref<128x128xf32, #tpu.memory_space<vmem>>, vector<128x128xf32>
    %9 = arith.addf %8, %5 : vector<128x128xf32>
    "tpu.vector_store"(%9, %arg3, %c0_8, %c0_9) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<128x128xf32>, memref<128x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c = arith.constant 7 : i32
    %0 = arith.subi %c, %arg0 : i32
    %c_1 = arith.constant 3 : i32
    %1 = arith.subi %c_1, %arg1 : i32
    return %0, %1 : i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c = arith.constant 7 : i32
    %0 = arith.subi %c, %arg0 : i32
    %c_1 = arith.constant 3 : i32
    %1 = arith.subi %c_1, %arg1 : i32
    return %0, %1 : i32, i32
  }
  func.func @transform_2(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c = arith.constant 7 : i32
    %0 = arith.subi %c, %arg0 : i32
    %c_1 = arith.constant 3 : i32
    %1 = arith.subi %c_1, %arg1 : i32
    return %0, %1 : i32, i32
  }
}
