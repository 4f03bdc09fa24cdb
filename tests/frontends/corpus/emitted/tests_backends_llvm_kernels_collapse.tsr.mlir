// tests/backends/llvm/kernels/collapse.tsr:19:3: pallas_call of @bump
module {
  func.func @bump(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: i32, %arg4: i32, %arg5: memref<1x1x1x1x1x16xf32, #tpu.memory_space<vmem>>, %arg6: memref<1x1x1x1x1x16xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 2, 3, 2, 2, 3>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 1, 1, 1, 1, 1, 16>}, {transform_indices = @transform_1, window_bounds = array<i64: 1, 1, 1, 1, 1, 16>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %c0_4 = arith.constant 0 : index
    %c0_5 = arith.constant 0 : index
    %0 = vector.load %arg5[%c0, %c0_1, %c0_2, %c0_3, %c0_4, %c0_5] : memref<1x1x1x1x1x16xf32, #tpu.memory_space<vmem>>, vector<1x1x1x1x1x16xf32>
    %1 = vector.shape_cast %0 : vector<1x1x1x1x1x16xf32> to vector<16xf32>
    %c = arith.constant 10 : i32
    %s = arith.muli %arg0, %c : i32
    %t = arith.addi %s, %arg4 : i32
    %f = arith.sitofp %t : i32 to f32
    %t_1 = vector.broadcast %f : f32 to vector<16xf32>
    %y = arith.addf %1, %t_1 : vector<16xf32>
    %c0_6 = arith.constant 0 : index
    %c0_7 = arith.constant 0 : index
    %c0_8 = arith.constant 0 : index
    %c0_9 = arith.constant 0 : index
    %c0_10 = arith.constant 0 : index
    %c0_11 = arith.constant 0 : index
    %2 = vector.load %arg6[%c0_6, %c0_7, %c0_8, %c0_9, %c0_10, %c0_11] : memref<1x1x1x1x1x16xf32, #tpu.memory_space<vmem>>, vector<1x1x1x1x1x16xf32>
    %3 = vector.shape_cast %2 : vector<1x1x1x1x1x16xf32> to vector<16xf32>
    %4 = vector.shape_cast %y : vector<16xf32> to vector<1x1x1x1x1x16xf32>
    "tpu.vector_store"(%4, %arg6, %c0_6, %c0_7, %c0_8, %c0_9, %c0_10, %c0_11) <{operandSegmentSizes = array<i32: 1, 1, 6, 0>, strides = array<i32>}> : (vector<1x1x1x1x1x16xf32>, memref<1x1x1x1x1x16xf32, #tpu.memory_space<vmem>>, index, index, index, index, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: i32, %arg4: i32) -> (i32, i32, i32, i32, i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %arg1, %arg2, %arg3, %arg4, %c : i32, i32, i32, i32, i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: i32, %arg4: i32) -> (i32, i32, i32, i32, i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %arg1, %arg2, %arg3, %arg4, %c : i32, i32, i32, i32, i32, i32
  }
}
