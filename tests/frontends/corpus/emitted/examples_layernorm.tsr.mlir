// examples/layernorm.tsr:46:3: pallas_call of @layernorm_kernel
module {
  func.func @layernorm_kernel(%arg0: i32, %arg1: memref<16x512xf32, #tpu.memory_space<vmem>>, %arg2: memref<512xf32, #tpu.memory_space<vmem>>, %arg3: memref<512xf32, #tpu.memory_space<vmem>>, %arg4: memref<16x512xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 16>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16, 512>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 512>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_2, window_bounds = array<i64: 512>}, {transform_indices = @transform_3, window_bounds = array<i64: 16, 512>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg1[%c0, %c0_1] : memref<16x512xf32, #tpu.memory_space<vmem>>, vector<16x512xf32>
    %cst = arith.constant dense<0.000000e+00> : vector<16xf32>
    %sum = vector.multi_reduction <add>, %0, %cst [1] : vector<16x512xf32> to vector<16xf32>
    %cst_1 = arith.constant 5.120000e+02 : f32
    %t = vector.broadcast %cst_1 : f32 to vector<16xf32>
    %mean = arith.divf %sum, %t : vector<16xf32>
    %t_1 = vector.shape_cast %mean : vector<16xf32> to vector<16x1xf32>
    %mean_b = vector.broadcast %t_1 : vector<16x1xf32> to vector<16x512xf32>
    %centered = arith.subf %0, %mean_b : vector<16x512xf32>
    %sq = arith.mulf %centered, %centered : vector<16x512xf32>
    %cst_2 = arith.constant dense<0.000000e+00> : vector<16xf32>
    %sq_sum = vector.multi_reduction <add>, %sq, %cst_2 [1] : vector<16x512xf32> to vector<16xf32>
    %cst_3 = arith.constant 5.120000e+02 : f32
    %t_2 = vector.broadcast %cst_3 : f32 to vector<16xf32>
    %var = arith.divf %sq_sum, %t_2 : vector<16xf32>
    %cst_4 = arith.constant 1.000000e-05 : f32
    %t_3 = vector.broadcast %cst_4 : f32 to vector<16xf32>
    %var_eps = arith.addf %var, %t_3 : vector<16xf32>
    %inv_std = math.rsqrt %var_eps : vector<16xf32>
    %t_4 = vector.shape_cast %inv_std : vector<16xf32> to vector<16x1xf32>
    %inv_std_b = vector.broadcast %t_4 : vector<16x1xf32> to vector<16x512xf32>
    %normed = arith.mulf %centered, %inv_std_b : vector<16x512xf32>
    %c0_2 = arith.constant 0 : index
    %1 = vector.load %arg2[%c0_2] : memref<512xf32, #tpu.memory_space<vmem>>, vector<512xf32>
    %c0_3 = arith.constant 0 : index
    %2 = vector.load %arg3[%c0_3] : memref<512xf32, #tpu.memory_space<vmem>>, vector<512xf32>
    %t_5 = vector.shape_cast %1 : vector<512xf32> to vector<1x512xf32>
    %g_b = vector.broadcast %t_5 : vector<1x512xf32> to vector<16x512xf32>
    %t_6 = vector.shape_cast %2 : vector<512xf32> to vector<1x512xf32>
    %b_b = vector.broadcast %t_6 : vector<1x512xf32> to vector<16x512xf32>
    %scaled = arith.mulf %normed, %g_b : vector<16x512xf32>
    %y = arith.addf %scaled, %b_b : vector<16x512xf32>
    %c0_4 = arith.constant 0 : index
    %c0_5 = arith.constant 0 : index
    %3 = vector.load %arg4[%c0_4, %c0_5] : memref<16x512xf32, #tpu.memory_space<vmem>>, vector<16x512xf32>
    "tpu.vector_store"(%y, %arg4, %c0_4, %c0_5) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<16x512xf32>, memref<16x512xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
  func.func @transform_1(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
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
