// tests/backends/mosaic/sparse_core.tsr:27:3: pallas_call of @sc_ops
module {
  func.func @sc_ops(%arg0: i32, %arg1: memref<16xf32, #tpu.memory_space<vmem>>, %arg2: memref<16xi32, #tpu.memory_space<vmem>>, %arg3: memref<16xf32, #tpu.memory_space<hbm>> {sc.persistent}, %arg4: memref<16xf32, #tpu.memory_space<vmem>>, %arg5: memref<16xi32, #tpu.memory_space<vmem>>, %arg6: memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scratch_operands = 1 : i64, tpu.core_type = #tpu.core_type<sc_vector_subcore>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 16>}, {transform_indices = @transform_1, window_bounds = array<i64: 16>}, {transform_indices = @transform_2, window_bounds = array<i64: 16>}, {transform_indices = @transform_3, window_bounds = array<i64: 16>}, {transform_indices = @transform_4, window_bounds = array<i64: 16>}]} {
    %c0 = arith.constant 0 : index
    %0 = "tpu.vector_load"(%arg1, %c0) <{operandSegmentSizes = array<i32: 1, 1, 0>, strides = array<i32>}> : (memref<16xf32, #tpu.memory_space<vmem>>, index) -> vector<16xf32>
    %i = "tpu.iota"() <{dimensions = array<i32: 0>}> : () -> vector<16xi32>
    %c15_i32 = arith.constant 15 : i32
    %t = vector.broadcast %c15_i32 : i32 to vector<16xi32>
    %t_1 = "tpu.iota"() <{dimensions = array<i32: 0>}> : () -> vector<16xi32>
    %t_2 = arith.subi %t, %t_1 : vector<16xi32>
    %r = "tpu.dynamic_gather"(%0, %t_2) <{dimensions = array<i32: 0>}> : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
    %mask = arith.constant dense<true> : vector<16xi1>
    %1:3 = "tpu.sort"(%r, %r, %mask) : (vector<16xf32>, vector<16xf32>, vector<16xi1>) -> (vector<16xi1>, vector<16xf32>, vector<16xf32>)
    %mask_1 = arith.constant dense<true> : vector<16xi1>
    %2:3 = "tpu.sort"(%1#1, %i, %mask_1) <{descending = true}> : (vector<16xf32>, vector<16xi32>, vector<16xi1>) -> (vector<16xi1>, vector<16xf32>, vector<16xi32>)
    %g = "tpu.dynamic_gather"(%2#1, %2#2) <{dimensions = array<i32: 0>}> : (vector<16xf32>, vector<16xi32>) -> vector<16xf32>
    %c0_1 = arith.constant 0 : index
    %3 = "tpu.vector_load"(%arg4, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 0>, strides = array<i32>}> : (memref<16xf32, #tpu.memory_space<vmem>>, index) -> vector<16xf32>
    "tpu.vector_store"(%g, %arg4, %c0_1) <{add = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<16xf32>, memref<16xf32, #tpu.memory_space<vmem>>, index) -> ()
    %c = arith.constant 8 : i32
    %t_3 = vector.broadcast %c : i32 to vector<16xi32>
    %m = arith.cmpi slt, %i, %t_3 : vector<16xi32>
    %c0_2 = arith.constant 0 : index
    %4 = "tpu.vector_load"(%arg1, %c0_2, %m) <{operandSegmentSizes = array<i32: 1, 1, 1>, strides = array<i32>}> : (memref<16xf32, #tpu.memory_space<vmem>>, index, vector<16xi1>) -> vector<16xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %5 = vector.broadcast %cst : f32 to vector<16xf32>
    %l = arith.select %m, %4, %5 : vector<16xi1>, vector<16xf32>
    %c0_3 = arith.constant 0 : index
    %6 = "tpu.vector_load"(%arg4, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 0>, strides = array<i32>}> : (memref<16xf32, #tpu.memory_space<vmem>>, index) -> vector<16xf32>
    "tpu.vector_store"(%l, %arg4, %c0_3) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>, strides = array<i32>}> : (vector<16xf32>, memref<16xf32, #tpu.memory_space<vmem>>, index) -> ()
    %c3 = arith.constant 3 : index
    %7 = memref.load %arg2[%c3] : memref<16xi32, #tpu.memory_space<vmem>>
    %c0_4 = arith.constant 0 : index
    %8 = memref.load %arg5[%c0_4] : memref<16xi32, #tpu.memory_space<vmem>>
    memref.store %7, %arg5[%c0_4] : memref<16xi32, #tpu.memory_space<vmem>>
    "tpu.log"(%1#1) <{tag = "sorted"}> : (vector<16xf32>) -> ()
    "tpu.enqueue_dma"(%arg3, %arg4, %arg6) <{operandSegmentSizes = array<i32: 1, 0, 1, 1, 0, 0, 0>, priority = 0 : i32}> : (memref<16xf32, #tpu.memory_space<hbm>>, memref<16xf32, #tpu.memory_space<vmem>>, memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>) -> ()
    "tpu.wait_dma2"(%arg6, %arg1, %arg1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}> : (memref<!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>, memref<16xf32, #tpu.memory_space<vmem>>, memref<16xf32, #tpu.memory_space<vmem>>) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_1(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_2(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_3(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_4(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
}
