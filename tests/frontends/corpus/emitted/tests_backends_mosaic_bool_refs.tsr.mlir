// tests/backends/mosaic/bool_refs.tsr:16:3: pallas_call of @bool_kernel
module {
  func.func @bool_kernel(%arg0: i32, %arg1: memref<8x128xi32, #tpu.memory_space<vmem>>, %arg2: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<4xi32, #tpu.memory_space<smem>>, %arg4: memref<8x128xf32, #tpu.memory_space<vmem>>, %arg5: memref<8x128xi32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 1>, scalar_prefetch = 0 : i64, scratch_operands = 0 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_0, window_bounds = array<i64: 8, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_1, window_bounds = array<i64: 8, 128>}, {transform_indices = @transform_2, window_bounds = array<i64: 4>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_3, window_bounds = array<i64: 8, 128>}, {pipeline_mode = #tpu.pipeline_mode<synchronous>, transform_indices = @transform_4, window_bounds = array<i64: 8, 128>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %0 = vector.load %arg1[%c0, %c0_1] : memref<8x128xi32, #tpu.memory_space<vmem>>, vector<8x128xi32>
    %cst = arith.constant dense<0> : vector<8x128xi32>
    %1 = arith.cmpi ne, %0, %cst : vector<8x128xi32>
    %c0_2 = arith.constant 0 : index
    %c0_3 = arith.constant 0 : index
    %2 = vector.load %arg2[%c0_2, %c0_3] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %3 = vector.broadcast %cst_1 : f32 to vector<8x128xf32>
    %v = arith.select %1, %2, %3 : vector<8x128xi1>, vector<8x128xf32>
    %c0_4 = arith.constant 0 : index
    %c0_5 = arith.constant 0 : index
    %4 = vector.load %arg4[%c0_4, %c0_5] : memref<8x128xf32, #tpu.memory_space<vmem>>, vector<8x128xf32>
    "tpu.vector_store"(%v, %arg4, %c0_4, %c0_5, %1) <{operandSegmentSizes = array<i32: 1, 1, 2, 1>, strides = array<i32>}> : (vector<8x128xf32>, memref<8x128xf32, #tpu.memory_space<vmem>>, index, index, vector<8x128xi1>) -> ()
    %c0_6 = arith.constant 0 : index
    %c0_7 = arith.constant 0 : index
    %6 = vector.load %arg5[%c0_6, %c0_7] : memref<8x128xi32, #tpu.memory_space<vmem>>, vector<8x128xi32>
    %cst_2 = arith.constant dense<0> : vector<8x128xi32>
    %7 = arith.cmpi ne, %6, %cst_2 : vector<8x128xi32>
    %8 = arith.extui %1 : vector<8x128xi1> to vector<8x128xi32>
    "tpu.vector_store"(%8, %arg5, %c0_6, %c0_7) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<8x128xi32>, memref<8x128xi32, #tpu.memory_space<vmem>>, index, index) -> ()
    %c0_8 = arith.constant 0 : index
    %c0_9 = arith.constant 0 : index
    %9 = vector.load %arg5[%c0_8, %c0_9] : memref<8x128xi32, #tpu.memory_space<vmem>>, vector<1x1xi32>
    %10 = vector.extract %9[0, 0] : i32 from vector<1x1xi32>
    %c = arith.constant 0 : i32
    %11 = arith.cmpi ne, %10, %c : i32
    %true = arith.constant true
    %12 = arith.extui %true : i1 to i32
    %13 = vector.broadcast %12 : i32 to vector<1x1xi32>
    "tpu.vector_store"(%13, %arg5, %c0_8, %c0_9) <{operandSegmentSizes = array<i32: 1, 1, 2, 0>, strides = array<i32>}> : (vector<1x1xi32>, memref<8x128xi32, #tpu.memory_space<vmem>>, index, index) -> ()
    %c1 = arith.constant 1 : index
    %14 = memref.load %arg3[%c1] : memref<4xi32, #tpu.memory_space<smem>>
    %c_1 = arith.constant 0 : i32
    %15 = arith.cmpi ne, %14, %c_1 : i32
    %c0_10 = arith.constant 0 : index
    %16 = memref.load %arg3[%c0_10] : memref<4xi32, #tpu.memory_space<smem>>
    %c_2 = arith.constant 0 : i32
    %17 = arith.cmpi ne, %16, %c_2 : i32
    %18 = arith.extui %15 : i1 to i32
    memref.store %18, %arg3[%c0_10] : memref<4xi32, #tpu.memory_space<smem>>
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
  func.func @transform_2(%arg0: i32) -> (i32) {
    %c0_i32 = arith.constant 0 : i32
    return %c0_i32 : i32
  }
  func.func @transform_3(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
  func.func @transform_4(%arg0: i32) -> (i32, i32) {
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    return %c0_i32, %c0_i32_1 : i32, i32
  }
}
