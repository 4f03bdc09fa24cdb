// tests/backends/llvm/kernels/reuse.tsr:40:3: pallas_call of @reuse
module {
  func.func @reuse(%arg0: i32, %arg1: memref<8x64xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x64xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 4>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 64>}, {transform_indices = @transform_1, window_bounds = array<i64: 8, 64>}]} {
    %io = "tpu.iota"() <{dimensions = array<i32: 1>}> : () -> vector<8x64xi32>
    %v = arith.sitofp %io : vector<8x64xi32> to vector<8x64xf32>
    %cst = arith.constant 1.500000e+00 : f32
    %t = vector.broadcast %cst : f32 to vector<8x64xf32>
    %a1 = arith.mulf %v, %t : vector<8x64xf32>
    %cst_1 = arith.constant 2.500000e-01 : f32
    %t_1 = vector.broadcast %cst_1 : f32 to vector<8x64xf32>
    %a2 = arith.addf %a1, %t_1 : vector<8x64xf32>
    %a3 = arith.mulf %a2, %a2 : vector<8x64xf32>
    %a4 = arith.subf %a3, %v : vector<8x64xf32>
    %cst_2 = arith.constant 5.000000e-01 : f32
    %t_2 = vector.broadcast %cst_2 : f32 to vector<8x64xf32>
    %a5 = arith.mulf %a4, %t_2 : vector<8x64xf32>
    %cst_3 = arith.constant 1.000000e+00 : f32
    %t_3 = vector.broadcast %cst_3 : f32 to vector<8x64xf32>
    %a6 = arith.addf %a5, %t_3 : vector<8x64xf32>
    %a7 = arith.mulf %a6, %a1 : vector<8x64xf32>
    %cst_4 = arith.constant 2.000000e+00 : f32
    %t_4 = vector.broadcast %cst_4 : f32 to vector<8x64xf32>
    %a8 = arith.subf %a7, %t_4 : vector<8x64xf32>
    %cst_5 = arith.constant 7.500000e-01 : f32
    %t_5 = vector.broadcast %cst_5 : f32 to vector<8x64xf32>
    %a9 = arith.mulf %a8, %t_5 : vector<8x64xf32>
    %a10 = arith.addf %a9, %a2 : vector<8x64xf32>
    %c = arith.constant 2 : i32
    %odd = arith.remsi %arg0, %c : i32
    %c0_i32 = arith.constant 0 : i32
    %0 = arith.maxsi %odd, %c0_i32 : i32
    %c1_i32 = arith.constant 1 : i32
    %1 = arith.minsi %0, %c1_i32 : i32
    %c0_i32_1 = arith.constant 0 : i32
    %2 = arith.cmpi ne, %1, %c0_i32_1 : i32
    %r = scf.if %2 -> (vector<8x64xf32>) {
      %cst_6 = arith.constant 2.000000e+00 : f32
      %t_6 = vector.broadcast %cst_6 : f32 to vector<8x64xf32>
      %m = arith.mulf %a10, %t_6 : vector<8x64xf32>
      scf.yield %m : vector<8x64xf32>
    } else {
      %cst_6 = arith.constant 0.000000e+00 : f32
      %t_6 = vector.broadcast %cst_6 : f32 to vector<8x64xf32>
      %n = arith.subf %t_6, %a10 : vector<8x64xf32>
      scf.yield %n : vector<8x64xf32>
    }
    %c_1 = arith.constant 0 : i32
    %c_2 = arith.constant 3 : i32
    %c1_i32_1 = arith.constant 1 : i32
    %t_6 = scf.for %k = %c_1 to %c_2 step %c1_i32_1 iter_args(%acc = %r) -> (vector<8x64xf32>) : i32 {
      %acc2 = arith.addf %acc, %a10 : vector<8x64xf32>
      scf.yield %acc2 : vector<8x64xf32>
    }
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %3 = vector.load %arg1[%c0, %c0_1] : memref<8x64xf32, #tpu.memory_space<vmem>>, vector<8x64xf32>
    %s0 = arith.addf %t_6, %a10 : vector<8x64xf32>
    %s = arith.addf %s0, %3 : vector<8x64xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %4 = vector.load %arg2[%c0_2, %c0_3] : memref<8x64xf32, #tpu.memory_space<vmem>>, vector<8x64xf32>
    "tpu.vector_store"(%s, %arg2, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x64xf32>, memref<8x64xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c = arith.constant 0 : i32
    return %arg0, %c : i32, i32
  }
}
