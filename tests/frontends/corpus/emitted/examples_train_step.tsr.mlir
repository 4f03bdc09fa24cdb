// examples/train_step.tsr:65:3: pallas_call of @layer1
module {
  func.func @layer1(%arg0: i32, %arg1: memref<8x32xf32, #tpu.memory_space<vmem>>, %arg2: memref<32x64xf32, #tpu.memory_space<vmem>>, %arg3: memref<64xf32, #tpu.memory_space<vmem>>, %arg4: memref<8x64xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 32>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 32, 64>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_2, window_bounds = array<i64: 64>}, {transform_indices = @transform_3, window_bounds = array<i64: 8, 64>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg1[%c0, %c0_1] : memref<8x32xf32, #tpu.memory_space<vmem>>, vector<8x32xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %1 = vector.load %arg2[%c0_2, %c0_3] : memref<32x64xf32, #tpu.memory_space<vmem>>, vector<32x64xf32>
    %c0_4 = arith.constant 0 : index
    %2 = vector.load %arg3[%c0_4] : memref<64xf32, #tpu.memory_space<vmem>>, vector<64xf32>
    %cst = arith.constant dense<0.000000e+00> : vector<8x64xf32>
    %z = "tpu.matmul"(%0, %1, %cst) <{dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs_hint = false}> : (vector<8x32xf32>, vector<32x64xf32>, vector<8x64xf32>) -> vector<8x64xf32>
    %t = vector.shape_cast %2 : vector<64xf32> to vector<1x64xf32>
    %bb = vector.broadcast %t : vector<1x64xf32> to vector<8x64xf32>
    %zb = arith.addf %z, %bb : vector<8x64xf32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %t_1 = vector.broadcast %cst_1 : f32 to vector<8x64xf32>
    %r = arith.maximumf %zb, %t_1 : vector<8x64xf32>
    %c0_5 = arith.constant 0 : index
    %c0_6 = arith.constant 0 : index
    %3 = vector.load %arg4[%c0_5, %c0_6] : memref<8x64xf32, #tpu.memory_space<vmem>>, vector<8x64xf32>
    "tpu.vector_store"(%r, %arg4, %c0_5, %c0_6) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x64xf32>, memref<8x64xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_2(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_3(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
}
// -----
// examples/train_step.tsr:70:3: pallas_call of @layer2_loss
module {
  func.func @layer2_loss(%arg0: i32, %arg1: memref<8x64xf32, #tpu.memory_space<vmem>>, %arg2: memref<64x8xf32, #tpu.memory_space<vmem>>, %arg3: memref<8xf32, #tpu.memory_space<vmem>>, %arg4: memref<8x8xf32, #tpu.memory_space<vmem>>, %arg5: memref<1xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 64>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 64, 8>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_2, window_bounds = array<i64: 8>}, {transform_indices = @transform_3, window_bounds = array<i64: 8, 8>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_4, window_bounds = array<i64: 1>}]} {
    %c = arith.constant 0 : i32
    %first = arith.cmpi eq, %arg0, %c : i32
    %0 = arith.extui %first : i1 to i32
    %c0_i32 = arith.constant 0 : i32
    %1 = arith.cmpi ne, %0, %c0_i32 : i32
    scf.if %1 {
      %cst = arith.constant 0.000000e+00 : f32
      %zero = vector.broadcast %cst : f32 to vector<1xf32>
      %c0 = arith.constant 0 : index
      %2 = vector.load %arg5[%c0] : memref<1xf32, #tpu.memory_space<vmem>>, vector<1xf32>
      "tpu.vector_store"(%zero, %arg5, %c0) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<1xf32>, memref<1xf32, #tpu.memory_space<vmem>>, index) -> ()
    } else {
    }
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %2 = vector.load %arg1[%c0, %c0_1] : memref<8x64xf32, #tpu.memory_space<vmem>>, vector<8x64xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %3 = vector.load %arg2[%c0_2, %c0_3] : memref<64x8xf32, #tpu.memory_space<vmem>>, vector<64x8xf32>
    %c0_4 = arith.constant 0 : index
    %4 = vector.load %arg3[%c0_4] : memref<8xf32, #tpu.memory_space<vmem>>, vector<8xf32>
    %c0_5 = arith.constant 0 : index
    %c0_6 = arith.constant 0 : index
    %5 = vector.load %arg4[%c0_5, %c0_6] : memref<8x8xf32, #tpu.memory_space<vmem>>, vector<8x8xf32>
    %cst = arith.constant dense<0.000000e+00> : vector<8x8xf32>
    %y = "tpu.matmul"(%2, %3, %cst) <{dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs_hint = false}> : (vector<8x64xf32>, vector<64x8xf32>, vector<8x8xf32>) -> vector<8x8xf32>
    %t = vector.shape_cast %4 : vector<8xf32> to vector<1x8xf32>
    %bb = vector.broadcast %t : vector<1x8xf32> to vector<8x8xf32>
    %yb = arith.addf %y, %bb : vector<8x8xf32>
    %d = arith.subf %yb, %5 : vector<8x8xf32>
    %sq = arith.mulf %d, %d : vector<8x8xf32>
    %t_1 = vector.shape_cast %sq : vector<8x8xf32> to vector<1x8x8xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : vector<1xf32>
    %t_2 = vector.multi_reduction <add>, %t_1, %cst_1 [1, 2] : vector<1x8x8xf32> to vector<1xf32>
    %s = vector.extract %t_2[0] : f32 from vector<1xf32>
    %cst_2 = arith.constant 5.000000e-01 : f32
    %half = arith.mulf %s, %cst_2 : f32
    %hb = vector.broadcast %half : f32 to vector<1xf32>
    %c0_7 = arith.constant 0 : index
    %6 = vector.load %arg5[%c0_7] : memref<1xf32, #tpu.memory_space<vmem>>, vector<1xf32>
    %7 = arith.addf %6, %hb : vector<1xf32>
    "tpu.vector_store"(%7, %arg5, %c0_7) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<1xf32>, memref<1xf32, #tpu.memory_space<vmem>>, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_2(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_3(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
  func.func @transform_4(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
}
