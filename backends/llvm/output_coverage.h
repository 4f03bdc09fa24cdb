// Whether a run of a compiled pallas_call writes every element of an output
// before anything reads it, so that the runner may hand the kernel the output
// array without first filling it with the interpreter's uninitialized values
// (NaN / int max / true): nothing of that fill could be seen.
//
// A conservative syntactic check, never a proof search: it answers true only
// when
//   - the output is not aliased and is blocked (not `any` / HBM), each dim
//     Blocked or Squeezed and without element padding, so its blocks tile the
//     (padded) array as the interpreter's lazily filled outputs do
//     (interpreter/pallas_call.cpp);
//   - the index map visits every block: each dim cut into more than one block
//     returns a grid index directly, a different one per dim, and that grid
//     axis has exactly as many points as the dim has blocks (an index out of
//     range fails the run's block check before anything is returned);
//   - the first op of the kernel that mentions the output's Ref is either a
//     `swap` of the whole block at the kernel's top level whose old contents
//     nobody uses, or a reduction's init (examples/matmul.tsr): a top-level
//     `cond` on `program_id(k) == 0` whose taken branch starts with such a
//     swap, where the index map ignores grid axis k and every axis it ignores
//     is `arbitrary` (then each block's first visit, in grid order, has k = 0).
// Anything else (an init under another condition or in a loop, a partial
// store, a dynamic grid) is false: the output is filled first, as before.
#pragma once

#include "ir/grid_mapping.h"

namespace tessera::backends::llvm_lowering {

bool writes_every_element(const GridMapping& g, int output);

// Whether indexer `ix` selects all of a Ref of `ref_shape` (every entry
// full, or a static slice from 0 of the whole dim with stride 1).
bool whole_ref(const Indexer& ix, const Shape& ref_shape);

}  // namespace tessera::backends::llvm_lowering
