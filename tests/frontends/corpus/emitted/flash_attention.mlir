// examples/flash_attention.tsr:105:3: pallas_call of @flash_kernel
module {
  func.func @flash_kernel(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: memref<1x64x64xf32, #tpu.memory_space<vmem>>, %arg4: memref<1x64x64xf32, #tpu.memory_space<vmem>>, %arg5: memref<1x64x64xf32, #tpu.memory_space<vmem>>, %arg6: memref<1x64x64xf32, #tpu.memory_space<vmem>>, %arg7: memref<64xf32, #tpu.memory_space<vmem>>, %arg8: memref<64xf32, #tpu.memory_space<vmem>>, %arg9: memref<64x64xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<parallel>, #tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 4, 4, 4>, scalar_prefetch = 0 : i64, scratch_operands = 3 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 1, 64, 64>}, {transform_indices = @transform_1, window_bounds = array<i64: 1, 64, 64>}, {transform_indices = @transform_2, window_bounds = array<i64: 1, 64, 64>}, {transform_indices = @transform_3, window_bounds = array<i64: 1, 64, 64>}]} {
    %c4_i32 = arith.constant 4 : i32
    %c = arith.constant 0 : i32
    %first = arith.cmpi eq, %arg2, %c : i32
    %0 = arith.extui %first : i1 to i32
    %c0_i32 = arith.constant 0 : i32
    %1 = arith.cmpi ne, %0, %c0_i32 : i32
    scf.if %1 {
      %cst = arith.constant 0xFF800000 : f32
      %neg_inf = vector.broadcast %cst : f32 to vector<64xf32>
      %cst_1 = arith.constant 0.000000e+00 : f32
      %zero_row = vector.broadcast %cst_1 : f32 to vector<64xf32>
      %cst_2 = arith.constant 0.000000e+00 : f32
      %zero_blk = vector.broadcast %cst_2 : f32 to vector<64x64xf32>
      %c0 = arith.constant 0 : index
      %2 = vector.load %arg7[%c0] : memref<64xf32, #tpu.memory_space<vmem>>, vector<64xf32>
      "tpu.vector_store"(%neg_inf, %arg7, %c0) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<64xf32>, memref<64xf32, #tpu.memory_space<vmem>>, index) -> ()
      %c0_1 = arith.constant 0 : index
      %3 = vector.load %arg8[%c0_1] : memref<64xf32, #tpu.memory_space<vmem>>, vector<64xf32>
      "tpu.vector_store"(%zero_row, %arg8, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<64xf32>, memref<64xf32, #tpu.memory_space<vmem>>, index) -> ()
      %c0_2 = arith.constant 0 : index
      %c0_3 = arith.constant 0 : index
      %4 = vector.load %arg9[%c0_2, %c0_3] : memref<64x64xf32, #tpu.memory_space<vmem>>, vector<64x64xf32>
      "tpu.vector_store"(%zero_blk, %arg9, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<64x64xf32>, memref<64x64xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    } else {
    }
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %c0_2 = arith.constant 0 : index
    %2 = vector.load %arg3[%c0, %c0_1, %c0_2] : memref<1x64x64xf32, #tpu.memory_space<vmem>>, vector<1x64x64xf32>
    %3 = vector.shape_cast %2 : vector<1x64x64xf32> to vector<64x64xf32>
    %c0_3 = arith.constant 0 : index
    %c0_4 = arith.constant 0 : index
    %c0_5 = arith.constant 0 : index
    %4 = vector.load %arg4[%c0_3, %c0_4, %c0_5] : memref<1x64x64xf32, #tpu.memory_space<vmem>>, vector<1x64x64xf32>
    %5 = vector.shape_cast %4 : vector<1x64x64xf32> to vector<64x64xf32>
    %c0_6 = arith.constant 0 : index
    %c0_7 = arith.constant 0 : index
    %c0_8 = arith.constant 0 : index
    %6 = vector.load %arg5[%c0_6, %c0_7, %c0_8] : memref<1x64x64xf32, #tpu.memory_space<vmem>>, vector<1x64x64xf32>
    %7 = vector.shape_cast %6 : vector<1x64x64xf32> to vector<64x64xf32>
    %cst = arith.constant dense<0.000000e+00> : vector<64x64xf32>
    %qk = "tpu.matmul"(%3, %5, %cst) <{dimension_numbers = #tpu.dot_dimension_numbers<[1], [1], [0], [0], [0, 0, 1, 0], [], []>, transpose_lhs_hint = false}> : (vector<64x64xf32>, vector<64x64xf32>, vector<64x64xf32>) -> vector<64x64xf32>
    %cst_1 = arith.constant 1.250000e-01 : f32
    %t = vector.broadcast %cst_1 : f32 to vector<64x64xf32>
    %s = arith.mulf %qk, %t : vector<64x64xf32>
    %c0_9 = arith.constant 0 : index
    %8 = vector.load %arg7[%c0_9] : memref<64xf32, #tpu.memory_space<vmem>>, vector<64xf32>
    %cst_2 = arith.constant dense<0xFF800000> : vector<64xf32>
    %m_blk = vector.multi_reduction <maximumf>, %s, %cst_2 [1] : vector<64x64xf32> to vector<64xf32>
    %m_new = arith.maximumf %8, %m_blk : vector<64xf32>
    %m_shift = arith.subf %8, %m_new : vector<64xf32>
    %alpha = math.exp %m_shift : vector<64xf32>
    %t_1 = vector.shape_cast %m_new : vector<64xf32> to vector<64x1xf32>
    %m_new_b = vector.broadcast %t_1 : vector<64x1xf32> to vector<64x64xf32>
    %s_shift = arith.subf %s, %m_new_b : vector<64x64xf32>
    %p = math.exp %s_shift : vector<64x64xf32>
    %c0_10 = arith.constant 0 : index
    %9 = vector.load %arg8[%c0_10] : memref<64xf32, #tpu.memory_space<vmem>>, vector<64xf32>
    %l_scaled = arith.mulf %alpha, %9 : vector<64xf32>
    %cst_3 = arith.constant dense<0.000000e+00> : vector<64xf32>
    %p_sum = vector.multi_reduction <add>, %p, %cst_3 [1] : vector<64x64xf32> to vector<64xf32>
    %l_new = arith.addf %l_scaled, %p_sum : vector<64xf32>
    %c0_11 = arith.constant 0 : index
    %c0_12 = arith.constant 0 : index
    %10 = vector.load %arg9[%c0_11, %c0_12] : memref<64x64xf32, #tpu.memory_space<vmem>>, vector<64x64xf32>
    %t_2 = vector.shape_cast %alpha : vector<64xf32> to vector<64x1xf32>
    %alpha_b = vector.broadcast %t_2 : vector<64x1xf32> to vector<64x64xf32>
    %acc_scaled = arith.mulf %10, %alpha_b : vector<64x64xf32>
    %cst_4 = arith.constant dense<0.000000e+00> : vector<64x64xf32>
    %pv = "tpu.matmul"(%p, %7, %cst_4) <{dimension_numbers = #tpu.dot_dimension_numbers<[1], [0], [0], [1], [0, 0, 1, 1], [], []>, transpose_lhs_hint = false}> : (vector<64x64xf32>, vector<64x64xf32>, vector<64x64xf32>) -> vector<64x64xf32>
    %acc_new = arith.addf %acc_scaled, %pv : vector<64x64xf32>
    %c0_13 = arith.constant 0 : index
    %11 = vector.load %arg7[%c0_13] : memref<64xf32, #tpu.memory_space<vmem>>, vector<64xf32>
    "tpu.vector_store"(%m_new, %arg7, %c0_13) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<64xf32>, memref<64xf32, #tpu.memory_space<vmem>>, index) -> ()
    %c0_14 = arith.constant 0 : index
    %12 = vector.load %arg8[%c0_14] : memref<64xf32, #tpu.memory_space<vmem>>, vector<64xf32>
    "tpu.vector_store"(%l_new, %arg8, %c0_14) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<64xf32>, memref<64xf32, #tpu.memory_space<vmem>>, index) -> ()
    %c0_15 = arith.constant 0 : index
    %c0_16 = arith.constant 0 : index
    %13 = vector.load %arg9[%c0_15, %c0_16] : memref<64x64xf32, #tpu.memory_space<vmem>>, vector<64x64xf32>
    "tpu.vector_store"(%acc_new, %arg9, %c0_15, %c0_16) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<64x64xf32>, memref<64x64xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %c_1 = arith.constant 1 : i32
    %last_ki = arith.subi %c4_i32, %c_1 : i32
    %last = arith.cmpi eq, %arg2, %last_ki : i32
    %14 = arith.extui %last : i1 to i32
    %c0_i32_1 = arith.constant 0 : i32
    %15 = arith.cmpi ne, %14, %c0_i32_1 : i32
    scf.if %15 {
      %c0_17 = arith.constant 0 : index
      %16 = vector.load %arg8[%c0_17] : memref<64xf32, #tpu.memory_space<vmem>>, vector<64xf32>
      %c0_18 = arith.constant 0 : index
      %c0_19 = arith.constant 0 : index
      %17 = vector.load %arg9[%c0_18, %c0_19] : memref<64x64xf32, #tpu.memory_space<vmem>>, vector<64x64xf32>
      %t_3 = vector.shape_cast %16 : vector<64xf32> to vector<64x1xf32>
      %l_fin_b = vector.broadcast %t_3 : vector<64x1xf32> to vector<64x64xf32>
      %out = arith.divf %17, %l_fin_b : vector<64x64xf32>
      %c0_20 = arith.constant 0 : index
      %c0_21 = arith.constant 0 : index
      %c0_22 = arith.constant 0 : index
      %18 = vector.load %arg6[%c0_20, %c0_21, %c0_22] : memref<1x64x64xf32, #tpu.memory_space<vmem>>, vector<1x64x64xf32>
      %19 = vector.shape_cast %18 : vector<1x64x64xf32> to vector<64x64xf32>
      %20 = vector.shape_cast %out : vector<64x64xf32> to vector<1x64x64xf32>
      "tpu.vector_store"(%20, %arg6, %c0_20, %c0_21, %c0_22) <{operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>}> : (vector<1x64x64xf32>, memref<1x64x64xf32, #tpu.memory_space<vmem>>, index, index, index) -> ()
    } else {
    }
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: i32, %arg2: i32) -> (i32, i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %arg1, %c : i32, i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: i32, %arg2: i32) -> (i32, i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %arg2, %c : i32, i32, i32
  }
  func.func @transform_2(%arg0: i32, %arg1: i32, %arg2: i32) -> (i32, i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %arg2, %c : i32, i32, i32
  }
  func.func @transform_3(%arg0: i32, %arg1: i32, %arg2: i32) -> (i32, i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %arg1, %c : i32, i32, i32
  }
}
