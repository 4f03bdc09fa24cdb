// tests/backends/mosaic/memory.tsr:32:3: pallas_call of @copy_kernel
module {
  func.func @copy_kernel(%arg0: i32, %arg1: memref<4xi32, #tpu.memory_space<smem>>, %arg2: memref<1x16x128xf32, #tpu.memory_space<vmem>>, %arg3: memref<1x16x128xf32, #tpu.memory_space<vmem>>, %arg4: memref<8xi32, #tpu.memory_space<smem>>, %arg5: memref<4x16x128xf32, #tpu.memory_space<vmem>>) attributes {dimension_semantics = [#tpu.dimension_semantics<arbitrary>], iteration_bounds = array<i64: 4>, scalar_prefetch = 1 : i64, scratch_operands = 2 : i64, tpu.core_type = #tpu.core_type<tc>, window_params = [{transform_indices = @transform_0, window_bounds = array<i64: 1, 16, 128>}, {transform_indices = @transform_1, window_bounds = array<i64: 1, 16, 128>}]} {
    %c0 = arith.constant 0 : index
    %c0_1 = arith.constant 0 : index
    %c0_2 = arith.constant 0 : index
    %0 = vector.load %arg2[%c0, %c0_1, %c0_2] : memref<1x16x128xf32, #tpu.memory_space<vmem>>, vector<1x16x128xf32>
    %1 = vector.shape_cast %0 : vector<1x16x128xf32> to vector<16x128xf32>
    %c0_3 = arith.constant 0 : index
    %2 = arith.index_cast %arg0 : i32 to index
    %c0_4 = arith.constant 0 : index
    %3 = vector.load %arg2[%c0_3, %2, %c0_4] : memref<1x16x128xf32, #tpu.memory_space<vmem>>, vector<1x1x128xf32>
    %4 = vector.shape_cast %3 : vector<1x1x128xf32> to vector<128xf32>
    %c0_5 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %5 = vector.load %arg2[%c0_5, %c3, %c5] : memref<1x16x128xf32, #tpu.memory_space<vmem>>, vector<1x1x1xf32>
    %6 = vector.extract %5[0, 0, 0] : f32 from vector<1x1x1xf32>
    %c0_i32 = arith.constant 0 : i32
    %c0_i32_1 = arith.constant 0 : i32
    %c0_i32_2 = arith.constant 0 : i32
    %7 = "tpu.strided_load"(%arg2, %c0_i32, %c0_i32_1, %c0_i32_2) <{strides = array<i32: 1, 2, 1>}> : (memref<1x16x128xf32, #tpu.memory_space<vmem>>, i32, i32, i32) -> vector<1x8x128xf32>
    %8 = vector.shape_cast %7 : vector<1x8x128xf32> to vector<8x128xf32>
    %c0_6 = arith.constant 0 : index
    %c0_7 = arith.constant 0 : index
    %c0_8 = arith.constant 0 : index
    %9 = vector.load %arg3[%c0_6, %c0_7, %c0_8] : memref<1x16x128xf32, #tpu.memory_space<vmem>>, vector<1x16x128xf32>
    %10 = vector.shape_cast %9 : vector<1x16x128xf32> to vector<16x128xf32>
    %11 = vector.shape_cast %1 : vector<16x128xf32> to vector<1x16x128xf32>
    "tpu.vector_store"(%11, %arg3, %c0_6, %c0_7, %c0_8) <{operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>}> : (vector<1x16x128xf32>, memref<1x16x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> ()
    %c0_9 = arith.constant 0 : index
    %12 = arith.index_cast %arg0 : i32 to index
    %c0_10 = arith.constant 0 : index
    %13 = vector.load %arg3[%c0_9, %12, %c0_10] : memref<1x16x128xf32, #tpu.memory_space<vmem>>, vector<1x1x128xf32>
    %14 = vector.shape_cast %13 : vector<1x1x128xf32> to vector<128xf32>
    %15 = vector.shape_cast %4 : vector<128xf32> to vector<1x1x128xf32>
    "tpu.vector_store"(%15, %arg3, %c0_9, %12, %c0_10) <{operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>}> : (vector<1x1x128xf32>, memref<1x16x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> ()
    %c0_11 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %c7 = arith.constant 7 : index
    %16 = vector.load %arg3[%c0_11, %c2, %c7] : memref<1x16x128xf32, #tpu.memory_space<vmem>>, vector<1x1x1xf32>
    %17 = vector.extract %16[0, 0, 0] : f32 from vector<1x1x1xf32>
    %18 = vector.broadcast %6 : f32 to vector<1x1x1xf32>
    "tpu.vector_store"(%18, %arg3, %c0_11, %c2, %c7) <{operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>}> : (vector<1x1x1xf32>, memref<1x16x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> ()
    %c1 = arith.constant 1 : index
    %c0_12 = arith.constant 0 : index
    %c0_13 = arith.constant 0 : index
    %19 = vector.load %arg5[%c1, %c0_12, %c0_13] : memref<4x16x128xf32, #tpu.memory_space<vmem>>, vector<1x16x128xf32>
    %20 = vector.shape_cast %19 : vector<1x16x128xf32> to vector<16x128xf32>
    %21 = vector.shape_cast %1 : vector<16x128xf32> to vector<1x16x128xf32>
    "tpu.vector_store"(%21, %arg5, %c1, %c0_12, %c0_13) <{operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>}> : (vector<1x16x128xf32>, memref<4x16x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> ()
    %c0_14 = arith.constant 0 : index
    %c0_15 = arith.constant 0 : index
    %c0_16 = arith.constant 0 : index
    %22 = vector.load %arg3[%c0_14, %c0_15, %c0_16] : memref<1x16x128xf32, #tpu.memory_space<vmem>>, vector<1x8x128xf32>
    %23 = vector.shape_cast %22 : vector<1x8x128xf32> to vector<8x128xf32>
    %24 = arith.addf %23, %8 : vector<8x128xf32>
    %25 = vector.shape_cast %24 : vector<8x128xf32> to vector<1x8x128xf32>
    "tpu.vector_store"(%25, %arg3, %c0_14, %c0_15, %c0_16) <{operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>}> : (vector<1x8x128xf32>, memref<1x16x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> ()
    %c0_17 = arith.constant 0 : index
    %c0_18 = arith.constant 0 : index
    %c0_19 = arith.constant 0 : index
    %26 = vector.load %arg3[%c0_17, %c0_18, %c0_19] : memref<1x16x128xf32, #tpu.memory_space<vmem>>, vector<1x16x128xf32>
    %27 = vector.shape_cast %26 : vector<1x16x128xf32> to vector<16x128xf32>
    %cst = arith.constant 1.000000e+00 : f32
    %28 = vector.broadcast %cst : f32 to vector<16x128xf32>
    %29 = arith.addf %27, %28 : vector<16x128xf32>
    %30 = vector.shape_cast %29 : vector<16x128xf32> to vector<1x16x128xf32>
    "tpu.vector_store"(%30, %arg3, %c0_17, %c0_18, %c0_19) <{operandSegmentSizes = array<i32: 1, 1, 3, 0>, strides = array<i32>}> : (vector<1x16x128xf32>, memref<1x16x128xf32, #tpu.memory_space<vmem>>, index, index, index) -> ()
    %c0_20 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c0_21 = arith.constant 0 : index
    %31 = vector.load %arg3[%c0_20, %c8, %c0_21] : memref<1x16x128xf32, #tpu.memory_space<vmem>>, vector<1x8x128xf32>
    %32 = vector.shape_cast %31 : vector<1x8x128xf32> to vector<8x128xf32>
    %33 = vector.shape_cast %8 : vector<8x128xf32> to vector<1x8x128xf32>
    %true = arith.constant true
    %34 = vector.broadcast %true : i1 to vector<1x8x128xi1>
    "tpu.vector_store"(%33, %arg3, %c0_20, %c8, %c0_21, %34) <{operandSegmentSizes = array<i32: 1, 1, 3, 1>, strides = array<i32>}> : (vector<1x8x128xf32>, memref<1x16x128xf32, #tpu.memory_space<vmem>>, index, index, index, vector<1x8x128xi1>) -> ()
    %35 = arith.index_cast %arg0 : i32 to index
    %c0_22 = arith.constant 0 : index
    %c0_23 = arith.constant 0 : index
    %36 = vector.load %arg5[%35, %c0_22, %c0_23] : memref<4x16x128xf32, #tpu.memory_space<vmem>>, vector<1x8x128xf32>
    %37 = vector.shape_cast %36 : vector<1x8x128xf32> to vector<8x128xf32>
    %true_1 = arith.constant true
    %38 = vector.broadcast %true_1 : i1 to vector<8x128xi1>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %39 = vector.broadcast %cst_1 : f32 to vector<8x128xf32>
    %m = arith.select %38, %37, %39 : vector<8x128xi1>, vector<8x128xf32>
    %40 = arith.index_cast %arg0 : i32 to index
    %41 = memref.load %arg4[%40] : memref<8xi32, #tpu.memory_space<smem>>
    %c3_1 = arith.constant 3 : index
    %42 = memref.load %arg4[%c3_1] : memref<8xi32, #tpu.memory_space<smem>>
    memref.store %41, %arg4[%c3_1] : memref<8xi32, #tpu.memory_space<smem>>
    %c0_24 = arith.constant 0 : index
    %43 = memref.load %arg4[%c0_24] : memref<8xi32, #tpu.memory_space<smem>>
    %44 = arith.addi %43, %42 : i32
    memref.store %44, %arg4[%c0_24] : memref<8xi32, #tpu.memory_space<smem>>
    return
  }
  func.func @transform_0(%arg0: i32, %arg1: memref<4xi32, #tpu.memory_space<smem>>) -> (i32, i32, i32) {
    %0 = arith.index_cast %arg0 : i32 to index
    %r = memref.load %arg1[%0] : memref<4xi32, #tpu.memory_space<smem>>
    %c = arith.constant 2 : i32
    %q = arith.divsi %r, %c : i32
    %c_1 = arith.constant 0 : i32
    %c_2 = arith.constant 0 : i32
    return %c_1, %q, %c_2 : i32, i32, i32
  }
  func.func @transform_1(%arg0: i32, %arg1: memref<4xi32, #tpu.memory_space<smem>>) -> (i32, i32, i32) {
    %c = arith.constant 0 : i32
    %c_1 = arith.constant 0 : i32
    return %arg0, %c, %c_1 : i32, i32, i32
  }
}
