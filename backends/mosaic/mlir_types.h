// How tessera types are spelled in Mosaic MLIR text: the one place every
// Mosaic lowering rule asks (../../docs/backends.md, "Types").
//
//   f32[8,128]              -> vector<8x128xf32>      (a value)
//   f32[]                   -> f32                    (a scalar value)
//   ref<f32[8,128], vmem>   -> memref<8x128xf32, #tpu.memory_space<vmem>>
//   ref<dma_sem[2], semaphore> -> memref<2x!tpu.dma_semaphore, #tpu.memory_space<semaphore_mem>>
//
// Mosaic's rules (jax/_src/pallas/mosaic/lowering.py, `_dtype_to_ir_type` and
// `_memory_space_to_tpu_memory_space`): unsigned integers become signless
// (u32 -> i32), bool is i1 as a value and i32 in memory, regular and barrier
// semaphores are `!tpu.semaphore`, DMA semaphores `!tpu.dma_semaphore`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/type.h"

namespace tessera::backends::mosaic {

// The element type of a value: f32, bf16, i32, i1 (u32 -> i32).
std::string element_type(DType d);
// The element type of memory holding `d`: as element_type, but bool is i32
// and semaphores are !tpu.semaphore / !tpu.dma_semaphore.
std::string memory_element_type(DType d);
// `vector<8x128xf32>`, or the scalar element type for rank 0.
std::string value_type(const ArrayType& a);
std::string value_type(const Type& t);  // of an array type
// `vector<8x128xf32>`; rank 0 has no vector type here (MLIR's `vector<f32>`
// is not what Mosaic uses), so a rank-0 shape is a caller error.
std::string vector_type(const Shape& shape, DType d);
// `#tpu.memory_space<vmem>`; `semaphore` is `semaphore_mem`. Spaces Mosaic
// does not have (index, host) throw std::logic_error.
std::string memory_space(MemSpace m);
// `memref<8x128xf32, #tpu.memory_space<vmem>>`, `memref<!tpu.semaphore, ...>`
// for rank 0.
std::string memref_type(const Shape& shape, DType d, MemSpace m);
std::string memref_type(const Type& ref);  // of a Ref type

// The dimension list "8x128x" that precedes an element type.
std::string dims_prefix(const Shape& shape);

// The body of an MLIR string literal holding `s` (quotes, backslashes and
// non-printable bytes escaped).
std::string mlir_string_body(std::string_view s);

}  // namespace tessera::backends::mosaic

namespace tessera::backends::mosaic {

// `memref<?x128xf32, #tpu.memory_space<any>>`: `shape` with `?` where
// `dynamic` holds (a DMA slice of run-time size).
std::string memref_type(const Shape& shape, const std::vector<bool>& dynamic, DType d, MemSpace m);

}  // namespace tessera::backends::mosaic
