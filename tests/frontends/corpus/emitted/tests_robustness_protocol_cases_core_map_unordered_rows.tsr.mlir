// tests/robustness/protocol_cases/core_map_unordered_rows.tsr:8:3: core_map over (core)
module {
  func.func @core_map(%arg0: i32, %arg1: memref<4x8xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<core_parallel>], iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = affine_map<(d0) -> (0, 0)>}]} {
    %0 = arith.index_cast %arg0 : i32 to index
    %c0 = arith.constant 0 : index
    %1 = vector.load %arg1[%0, %c0] : memref<4x8xf32, #tpu.memory_space<vmem>>, vector<1x8xf32>
    %2 = vector.shape_cast %1 : vector<1x8xf32> to vector<8xf32>
    %cst = arith.constant 2.000000e+00 : f32
    %t = vector.broadcast %cst : f32 to vector<8xf32>
    %w = arith.mulf %2, %t : vector<8xf32>
    %3 = arith.index_cast %arg0 : i32 to index
    %c0_1 = arith.constant 0 : index
    %4 = vector.load %arg1[%3, %c0_1] : memref<4x8xf32, #tpu.memory_space<vmem>>, vector<1x8xf32>
    %5 = vector.shape_cast %4 : vector<1x8xf32> to vector<8xf32>
    %6 = vector.shape_cast %w : vector<8xf32> to vector<1x8xf32>
    "tpu.vector_store"(%6, %arg1, %3, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<1x8xf32>, memref<4x8xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %c = arith.constant 1 : i32
    %c1 = arith.addi %arg0, %c : i32
    %c_1 = arith.constant 2 : i32
    %n = arith.remsi %c1, %c_1 : i32
    %7 = arith.index_cast %n : i32 to index
    %c0_2 = arith.constant 0 : index
    %8 = vector.load %arg1[%7, %c0_2] : memref<4x8xf32, #tpu.memory_space<vmem>>, vector<1x8xf32>
    %9 = vector.shape_cast %8 : vector<1x8xf32> to vector<8xf32>
    %c_2 = arith.constant 2 : i32
    %row = arith.addi %arg0, %c_2 : i32
    %10 = arith.index_cast %row : i32 to index
    %c0_3 = arith.constant 0 : index
    %11 = vector.load %arg1[%10, %c0_3] : memref<4x8xf32, #tpu.memory_space<vmem>>, vector<1x8xf32>
    %12 = vector.shape_cast %11 : vector<1x8xf32> to vector<8xf32>
    %13 = vector.shape_cast %9 : vector<8xf32> to vector<1x8xf32>
    "tpu.vector_store"(%13, %arg1, %10, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<1x8xf32>, memref<4x8xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
}
