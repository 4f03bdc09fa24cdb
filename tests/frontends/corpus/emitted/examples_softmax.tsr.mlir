// examples/softmax.tsr:32:3: pallas_call of @softmax_kernel
module {
  func.func @softmax_kernel(%arg0: i32, %arg1: memref<8x1000xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x1000xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<parallel>], iteration_bounds = array<i64: 32>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 8, 1000>}, {transform_indices = @transform_1, window_bounds = array<i64: 8, 1000>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg1[%c0, %c0_1] : memref<8x1000xf32, #tpu.memory_space<vmem>>, vector<8x1000xf32>
    %cst = arith.constant dense<0xFF800000> : vector<8xf32>
    %m = vector.multi_reduction <maximumf>, %0, %cst [1] : vector<8x1000xf32> to vector<8xf32>
    %t = vector.shape_cast %m : vector<8xf32> to vector<8x1xf32>
    %mb = vector.broadcast %t : vector<8x1xf32> to vector<8x1000xf32>
    %shifted = arith.subf %0, %mb : vector<8x1000xf32>
    %e = math.exp %shifted : vector<8x1000xf32>
    %cst_1 = arith.constant dense<0.000000e+00> : vector<8xf32>
    %s = vector.multi_reduction <add>, %e, %cst_1 [1] : vector<8x1000xf32> to vector<8xf32>
    %t_1 = vector.shape_cast %s : vector<8xf32> to vector<8x1xf32>
    %sb = vector.broadcast %t_1 : vector<8x1xf32> to vector<8x1000xf32>
    %y = arith.divf %e, %sb : vector<8x1000xf32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %1 = vector.load %arg2[%c0_2, %c0_3] : memref<8x1000xf32, #tpu.memory_space<vmem>>, vector<8x1000xf32>
    "tpu.vector_store"(%y, %arg2, %c0_2, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x1000xf32>, memref<8x1000xf32, #tpu.memory_space<vmem>>, index, index) -> ()
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
