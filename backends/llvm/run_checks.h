// The run-time checks of a compiled pallas_call, which keep the compiled
// paths from differing silently from the interpreter:
//
//   - block indices: at every grid step, before the kernel body, each block
//     mapping's index-map values must place its block inside the padded
//     array (ir/block_geometry.h), as the interpreter checks when it copies
//     a block in or out;
//   - dynamic indices inside the kernel (`get %t[%i]`): each must lie in its
//     Ref (LowerOptions::check_indices; the interpreter's out-of-bounds read);
//   - `multiple_of` hints on integer scalars must hold, as the interpreter
//     requires;
//   - revisits: an output block left and visited again later (host side,
//     from the index maps alone, before the launch: revisit_error).
//
// The first violation a grid point meets is written to the kernel's check
// record, a global of kCheckWords i64 named KernelInfo::check_symbol, and
// that grid point (the host thread's range, the CTA on NVPTX) stops. Who wins
// when several grid points fail at once is decided by a compare-and-swap on
// word 0. The runners clear the record before a launch and read it after;
// the executors then hand the call back to the interpreter, whose error (or
// result, e.g. under --oob uninitialized) is the run's: the same words,
// device, core and grid point as an interpreted run. No LLVM here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/array.h"

namespace tessera::backends::llvm_lowering {

// Layout of the check record (i64 words).
enum CheckWord : int {
  kCheckKind = 0,    // CheckKind; 0 while nothing failed
  kCheckWhich = 1,   // block mapping (inputs then outputs) or KernelInfo::checked_ops entry
  kCheckPoint = 2,   // the grid point: kMaxCheckedAxes words
  kCheckValues = 2 + 8,  // the index-map values or the dynamic indices: kMaxCheckedValues words
  kCheckWords = 2 + 8 + 8,
};
constexpr int kMaxCheckedAxes = 8, kMaxCheckedValues = 8;

enum class CheckKind : int64_t { none = 0, block_index = 1, dynamic_index = 2, hint = 3 };

// A run-time check of a compiled kernel failed (the message says which).
// The executors catch it and let the interpreter run the call instead.
class CheckFailure : public Error {
 public:
  explicit CheckFailure(const Error& e) : Error(e.loc(), e.message()) {}
};

// What the record says, in the interpreter's words where it has them, at the
// call (block indices) or the op (dynamic indices): "Out-of-bounds block
// index (2, 0) for input "x" in iteration (1,): reading [16:24, 0:128] but
// input has shape (16, 128) (kernel @k)". `checked_ops` is
// KernelInfo::checked_ops. nullopt when the record holds no violation.
std::optional<Error> check_record_error(const Op& call, const std::vector<const Op*>& checked_ops, const int64_t* record);

// The interpreter's revisiting error for `call` run on one core in row-major
// grid order, from the index maps alone (scalar prefetch from `operands`, as
// the executor gets them), or nullopt when no output block is revisited.
// An index map that only forwards grid indices is decided without a walk.
// Outputs aliased to an input or in `any` / `hbm` memory are not checked, as
// in the interpreter.
std::optional<Error> revisit_error(const Module& m, const Op& call, const std::vector<interp::Array>& operands);

}  // namespace tessera::backends::llvm_lowering
