// tests/backends/mosaic/regions.tsr:32:3: pallas_call of @region_kernel
module {
  func.func @region_kernel(%arg0: i32, %arg1: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 2>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}]} {
    %0:2 = "tpu.region"() ({
      %1 = arith.index_cast %arg0 : i32 to index
      %c0 = arith.constant 0 : index
      %2 = vector.load %arg1[%1, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
      %3 = vector.shape_cast %2 : vector<1x128xf32> to vector<128xf32>
      "tpu.yield"(%3, %arg0) : (vector<128xf32>, i32) -> ()
    }) : () -> (vector<128xf32>, i32)
    %c = arith.constant 3 : i32
    %1:2 = "tpu.region"() ({
      %2 = arith.index_cast %c : i32 to index
      %c0 = arith.constant 0 : index
      %3 = vector.load %arg1[%2, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
      %4 = vector.shape_cast %3 : vector<1x128xf32> to vector<128xf32>
      "tpu.yield"(%4, %c) : (vector<128xf32>, i32) -> ()
    }) : () -> (vector<128xf32>, i32)
    %d = "tpu.region"() ({
      "tpu.yield"(%1#0) : (vector<128xf32>) -> ()
    }) : () -> (vector<128xf32>)
    %2 = arith.index_cast %0#1 : i32 to index
    %c0 = arith.constant 0 : index
    %3 = vector.load %arg2[%2, %c0] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
    %4 = vector.shape_cast %3 : vector<1x128xf32> to vector<128xf32>
    %5 = vector.shape_cast %0#0 : vector<128xf32> to vector<1x128xf32>
    "tpu.vector_store"(%5, %arg2, %2, %c0) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<1x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %6 = arith.index_cast %1#1 : i32 to index
    %c0_1 = arith.constant 0 : index
    %7 = vector.load %arg2[%6, %c0_1] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
    %8 = vector.shape_cast %7 : vector<1x128xf32> to vector<128xf32>
    %9 = vector.shape_cast %d : vector<128xf32> to vector<1x128xf32>
    "tpu.vector_store"(%9, %arg2, %6, %c0_1) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<1x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    %c_1 = "tpu.region"() ({
      %c7 = arith.constant 7 : index
      %c0_2 = arith.constant 0 : index
      %10 = vector.load %arg1[%c7, %c0_2] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
      %11 = vector.shape_cast %10 : vector<1x128xf32> to vector<128xf32>
      "tpu.yield"(%11) : (vector<128xf32>) -> ()
    }) : () -> (vector<128xf32>)
    %c7 = arith.constant 7 : index
    %c0_2 = arith.constant 0 : index
    %10 = vector.load %arg2[%c7, %c0_2] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<1x128xf32>
    %11 = vector.shape_cast %10 : vector<1x128xf32> to vector<128xf32>
    %12 = vector.shape_cast %c_1 : vector<128xf32> to vector<1x128xf32>
    "tpu.vector_store"(%12, %arg2, %c7, %c0_2) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<1x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index) -> ()
    return
  }
  func.func @transform_0(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_1(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
}
