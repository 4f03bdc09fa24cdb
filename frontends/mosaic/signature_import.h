// The pallas_call a Mosaic kernel func describes: its grid, dimension
// semantics, scalar prefetch, windowed operands (block shape, index map,
// memory space, pipelining) and scratch, read from the kernel's signature
// and attributes; and the full operand / result types of the call, given by
// `--shapes` or inferred where the module determines them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/mosaic/mlir_ast.h"
#include "ir/ir.h"

namespace tessera::mlir_text {

// An input or output of the kernel (a `window_params` entry).
struct WindowOperand {
  const BlockArg* arg = nullptr;
  Type ref;                           // the kernel's memref as a tessera Ref
  bool whole = false;                 // `{}` (ANY / HBM) or no grid: the whole array, no index map
  const Func* transform = nullptr;    // the index map (null when `whole`)
  std::vector<int64_t> bounds;        // window_bounds (the memref's shape when absent)
  std::vector<int64_t> pad_lo, pad_hi;  // window_kind = #tpu.element_window<[lo], [hi]>: Element dims
  bool element = false;
  std::string pipeline_mode;          // "synchronous", "double_buffered" or ""
};

struct KernelSignature {
  const Func* kernel = nullptr;
  bool has_grid = false;
  std::vector<int64_t> grid;             // iteration_bounds; -1 for a dynamic axis
  std::vector<std::string> semantics;    // dimension_semantics words
  std::vector<const BlockArg*> grid_args;
  std::vector<const BlockArg*> prefetch_args;
  std::vector<WindowOperand> windows;    // inputs, then outputs
  std::vector<const BlockArg*> scratch_args;
  std::vector<Type> scratch;
  // Set when the kernel writes scalar prefetch (see read_signature): the
  // module, rewritten, that `kernel` and the argument pointers point into.
  std::shared_ptr<const ModuleAst> rewritten;

  int num_dynamic_axes() const;
};

// Reads the kernel func of `m` (the func with `tpu.core_type`). Located
// errors for what the importer does not take (SparseCore kernels, a grid
// without window_params, argument counts that do not add up).
//
// Scalar prefetch the kernel writes is carried state: on a TPU the prefetch
// operands are copied into SMEM once and the kernel's writes persist from
// grid step to grid step on that core (JAX's paged attention,
// jax/experimental/pallas/ops/tpu/paged_attention/paged_attention_kernel.py,
// keeps its buffer index and init flag there). tessera's prefetch values are
// immutable call inputs, so such an operand becomes, in the kernel, one more
// SMEM scratch Ref (argument `%<name>_carried`, after the kernel's scratch):
// every use of the prefetch Ref in the body goes to the scratch, and an op
// `kCarriedPrefetchInit` at the top of the body copies prefetch -> scratch
// at the start of each chain of sequential grid steps (every `arbitrary`
// axis's program id 0). State carried across a `parallel` axis depends on
// the order and core the steps run on anyway (tessera's prover rejects it),
// so the re-initialisation gives the TPU's values wherever the kernel is
// race free. The prefetch operand stays a call operand and index-map
// parameter. A written prefetch Ref an index map reads is a located error at
// the write: on a TPU the index maps would see the kernel's writes, which
// tessera cannot model.
KernelSignature read_signature(const ModuleAst& m);

// The op `read_signature` puts at the top of a kernel that carries state in
// scalar prefetch: operands (prefetch Ref, scratch Ref), attribute `axes`
// (the grid axes whose program ids must all be 0 for the copy). Its name
// cannot be spelled in MLIR text, so no input op is taken for it.
inline constexpr std::string_view kCarriedPrefetchInit = "<copy scalar prefetch into its carried scratch>";

// The pallas_call's operand types (dynamic grid sizes, scalar prefetch,
// inputs) and result types (outputs): full arrays.
struct CallTypes {
  std::vector<Type> operands, results;
  Loc loc;  // where they came from: "--shapes" or the kernel
};

// Splits `--shapes` (`T, ... -> T, ...`, one signature per module separated
// by `;`) and parses each type with tessera's own type syntax. Errors are
// located in the option text ("--shapes:1:COL").
std::vector<CallTypes> parse_shapes(const std::string& text);

// Checks `types` against the module: counts, dtypes, the memrefs of scalar
// prefetch and whole-array operands, window ranks. Located errors.
void check_shapes(const KernelSignature& sig, const CallTypes& types);

// The call's types when the module determines them: every index map returns,
// per dim, a distinct grid argument or 0, and the outputs (the operands the
// kernel writes) are a suffix of the operands. Otherwise a located error at
// the kernel asking for `--shapes` and saying why.
CallTypes infer_shapes(const KernelSignature& sig);

// How many of the kernel's window operands are inputs, given the call's types.
size_t num_inputs(const KernelSignature& sig, const CallTypes& types);

// Whether `transform` returns the constant 0 for every dim.
bool returns_zeros(const Func& transform);

// The index map body of `transform` (index_map_import.cpp): params are the
// grid indices (i32) and the scalar prefetch Refs `prefetch`; results one i32
// per array dim.
BodyPtr import_index_map(const Func& transform, const KernelSignature& sig, const std::vector<Type>& prefetch,
                         const std::string& name);

}  // namespace tessera::mlir_text
