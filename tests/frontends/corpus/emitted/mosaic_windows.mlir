// tests/backends/mosaic/windows.tsr:31:3: pallas_call of @window_kernel
module {
  func.func @window_kernel(%arg0: i32, %arg1: i32, %arg2: memref<16x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<64x256xf32, #tpu.memory_space<vmem>>, %arg5: memref<4xi32, #tpu.memory_space<smem>>, %arg6: memref<64x256xf32, #tpu.memory_space<any>>, %arg7: memref<8x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>, #tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 8, 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 128>, window_kind = #tpu.element_window<[2, 0],[2, 0]>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_2, window_bounds = array<i64: 64, 256>}, {transform_indices = @transform_3, window_bounds = array<i64: 4>}, {}, {pipeline_mode = #tpu.pipeline_mode<double_buffered>, transform_indices = @transform_5, window_bounds = array<i64: 8, 128>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg3[%c0, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %1 = vector.load %arg7[%c0_2, %c0_3] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    "tpu.vector_store"(%0, %arg7, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c = arith.constant 8 : i32
    %r = arith.muli %arg0, %c : i32
    %c_1 = arith.constant 2 : i32
    %s = arith.subi %r, %c_1 : i32
    %c_2 = arith.constant 2 : i32
    %t = arith.remsi %arg1, %c_2 : i32
    %c_3 = arith.constant 0 : i32
    %u = arith.maxsi %s, %c_3 : i32
    %c_4 = arith.constant 100 : i32
    %v = arith.minsi %u, %c_4 : i32
    %w = arith.addi %v, %t : i32
    %c_5 = arith.constant 0 : i32
    return %w, %c_5 : i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: i32) -> (i32, i32) {
    return %arg0, %arg1 : i32, i32
  }
  func.func @transform_2(%arg0: i32, %arg1: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_3(%arg0: i32, %arg1: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_5(%arg0: i32, %arg1: i32) -> (i32, i32) {
    return %arg0, %arg1 : i32, i32
  }
}
// -----
// tests/backends/mosaic/windows.tsr:37:3: pallas_call of @copy
module {
  func.func @copy(%arg0: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg1: memref<8x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [], scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg0[%c0, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %1 = vector.load %arg1[%c0_2, %c0_3] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    "tpu.vector_store"(%0, %arg1, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
}
