// tests/backends/llvm/kernels/element_pad.tsr:24:3: pallas_call of @stencil
module {
  func.func @stencil(%arg0: i32, %arg1: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 8>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 128>, window_kind = #tpu.element_window<[2, 0],[2, 0]>}, {transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}]} {
    %c2 = arith.constant 2 : index
    %c0 = arith.constant 0 : index
    %0 = vector.load %arg1[%c2, %c0] : memref<16x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    %c1 = arith.constant 1 : index
    %c0_1 = arith.constant 0 : index
    %1 = vector.load %arg1[%c1, %c0_1] : memref<16x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    %c3 = arith.constant 3 : index
    %c0_2 = arith.constant 0 : index
    %2 = vector.load %arg1[%c3, %c0_2] : memref<16x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    %s = arith.addf %0, %1 : vector<8x128xf32>
    %t = arith.addf %s, %2 : vector<8x128xf32>
    %c0_3 = arith.constant 0 : index
    %c0_4 = arith.constant 0 : index
    %3 = vector.load %arg2[%c0_3, %c0_4] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    "tpu.vector_store"(%t, %arg2, %c0_3, %c0_4) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 8 : i32
    %r = arith.muli %arg0, %c : i32
    %c_1 = arith.constant 0 : i32
    return %r, %c_1 : i32, i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
}
