// Inside one kernel: how tessera values and Refs become LLVM IR.
//
// A block value (an array or scalar SSA value of the kernel) is a Block: a
// generator that emits the computation of one element at a multi-index. Rules
// compose generators, so `add(get x, get y)` stored into `o` becomes one loop
// whose body loads x and y, adds and stores: no intermediate buffers. A rule
// that reads an operand many times per element (reduce, dot_general, gather)
// first materializes it: one element loop storing it into the arena.
//
// Element loops run on one thread per grid point on the host and spread over
// the CTA's threads on NVPTX (for_each_element); a barrier follows each loop,
// so every materialized buffer and every Ref write is visible to all threads
// afterwards. Scalars are computed by every thread (each holds the same value).
//
// Laziness (kept simple, and the reason generators stay correct):
//   - a generator that reads a Ref lists the Ref's root in `reads`; before an
//     op writes a root, every live Block reading it is materialized;
//   - before a nested body (cond branch, loop body) is lowered, every Block
//     that reads memory is materialized, so a generator never crosses a write
//     it cannot see;
//   - a scalar Block is evaluated where it is defined (one value, no loop);
//   - a Block whose generator chain costs more than kMaxLazyCost ops and that
//     is used more than once is materialized at its first use;
//   - a Block whose chain is deeper than kMaxChainDepth generators is
//     materialized where it is defined: evaluating an element recurses once
//     per generator, and a kernel of a million chained ops must not overflow
//     the stack (no kernel written by hand comes near the bound).
#pragma once

#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "backends/llvm/run_checks.h"
#include "backends/llvm/table.h"
#include "ir/grid_mapping.h"
#include "ir/ir.h"

namespace tessera::backends::llvm_lowering {

enum class Target { host, nvptx };

struct RefView;
struct ResidentOutput;

// The generator of a Block, shared: a rule's closure captures its operand
// Blocks by value, so copying a Block must not copy the closures of the chain
// below it (that made a chain of n ops cost O(n^2) time and memory). Called
// and assigned like the std::function it holds.
class ElementFn {
 public:
  using Fn = std::function<llvm::Value*(Lowering&, const std::vector<llvm::Value*>& index)>;
  ElementFn() = default;
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, ElementFn> &&
             std::is_invocable_r_v<llvm::Value*, F&, Lowering&, const std::vector<llvm::Value*>&>)
  ElementFn(F f) : fn_(std::make_shared<const Fn>(std::move(f))) {}  // NOLINT: implicit, as std::function's
  llvm::Value* operator()(Lowering& L, const std::vector<llvm::Value*>& index) const { return (*fn_)(L, index); }
  explicit operator bool() const { return fn_ && *fn_; }

 private:
  std::shared_ptr<const Fn> fn_;
};

struct Block {
  Type type;  // tessera type (dtype + shape)
  // The element at a multi-index (one i64 per dim; empty for a scalar), in
  // the compute type of type.dtype() (compute_type()).
  ElementFn element;
  llvm::Value* buffer = nullptr;  // when materialized: row-major, compute type, in the arena
  int cost = 0;                   // ops in the generator chain (a materialized block: 0)
  // The longest path of generators below this one (0: it calls no other
  // Block's element). Evaluating an element recurses this deep, so define()
  // materializes a Block deeper than Lowering::kMaxChainDepth.
  int depth = 0;
  std::vector<const Var*> reads;  // root Refs the generator reads lazily
  // Set when element i is the Ref element i of this view, read in place (a
  // `get` of a unit-stride region): rules that copy whole tiles (the NVPTX
  // dot_general's cp.async staging) read the memory directly.
  std::shared_ptr<const RefView> view;
};

// A Ref: elements at base + sum_d (origin[d] + i[d]) * stride[d]; element i is
// real iff 0 <= origin[d] + i[d] < extent[d] for every d. Reading an element
// that is not real gives the interpreter's padding value (its uninitialized
// memory, RunOptions::Uninit::nan: NaN, the integer's largest value, true);
// writing one is dropped.
struct RefView {
  Type type;                   // ref<dtype[shape], space>
  llvm::Value* base = nullptr; // element pointer (generic address space), storage dtype
  std::vector<llvm::Value*> origin, stride, extent;  // i64, one per dim of the ref
  bool maybe_partial = false;  // false when statically all real: no masks emitted
  const Var* root = nullptr;   // the kernel param / allocation it views (for aliasing)
};

struct Lowering {
  static constexpr int kMaxLazyCost = 8;
  static constexpr int kMaxChainDepth = 256;
  // Consecutive elements one NVPTX thread handles per round of an element
  // loop (for_each_element): 16 bytes of f32.
  static constexpr int64_t kVectorRun = 4;

  Lowering(llvm::IRBuilder<>& builder, llvm::Function* function, Target t, const LlvmTable& rules, int threads);

  llvm::IRBuilder<>& b;
  Target target;
  llvm::LLVMContext& llctx;
  llvm::Module& module;
  llvm::Function* fn;
  const LlvmTable& table;
  int threads;  // per CTA on NVPTX; 1 on the host

  // ---- values and Refs ------------------------------------------------------
  // The Block of `v` (a literal becomes a constant generator). Throws a
  // located error for a value never defined (a rule that forgot `define`).
  const Block& value(const Value& v);
  void define(const Var* var, Block block);
  const RefView& ref(const Value& v);
  void define_ref(const Var* var, RefView view);
  // A constant or already-computed scalar as a Block (value in compute type).
  Block scalar_block(DType dtype, llvm::Value* v) const;
  // A Block backed by a row-major buffer of compute-type elements.
  Block buffer_block(const Type& type, llvm::Value* buffer);
  // The compute-type constant of a literal converted to `dtype`.
  llvm::Value* literal(const Literal& lit, DType dtype);
  // A scalar operand's value (evaluates the Block at the empty index).
  llvm::Value* scalar(const Value& v);

  // ---- loops, buffers, barriers ---------------------------------------------
  // Emits one element loop storing `block` into a fresh arena buffer and
  // returns the buffer-backed Block (unchanged when already materialized).
  Block materialize(const Block& block);
  // One loop nest over the elements of `s`: nested loops on the host, the
  // CTA's threads striding over the linear index on NVPTX; a barrier follows.
  // A scalar shape runs `body` once (thread 0 on NVPTX).
  void for_each_element(const Shape& s, const std::function<void(const std::vector<llvm::Value*>& idx)>& body);
  // A counted loop `for (i = lo; i < hi; i += step)` run by every thread (lo
  // may differ between threads); returns i's value on exit, the first not below hi.
  llvm::Value* for_range(llvm::Value* lo, llvm::Value* hi, const std::function<void(llvm::Value* i)>& body,
                         int64_t step = 1);
  void barrier();  // bar.sync 0 on NVPTX; nothing on the host
  // 64-byte aligned scratch of the calling grid point (host thread / CTA).
  llvm::Value* arena_alloc(int64_t bytes);
  int64_t arena_bytes() const { return arena_high_; }
  // On-chip scratch shared by the CTA's threads, `bytes` rounded up to 16:
  // on NVPTX the kernel's dynamic shared memory (address space 3, as a
  // generic pointer; 16-byte aligned offsets into one `extern .shared` array
  // per kernel); on the host an arena buffer (one thread: no sharing to
  // simulate). For blocks read many times (dot_general operands, reduction
  // inputs) and for cross-warp steps of reductions. Lives until the kernel
  // returns, or until shared_release. Where the kernel's total would pass
  // the sm's limit (shared_limit), the buffer is taken from the arena
  // instead: the same code, slower memory.
  llvm::Value* shared_alloc(int64_t bytes);
  int64_t shared_bytes() const { return shared_high_; }
  // Whether a shared_alloc of `bytes` now lands in shared memory (NVPTX, within the limit).
  bool shared_fits(int64_t bytes) const;
  // Shared offsets allocated after shared_mark() are reused after shared_release(mark).
  int64_t shared_mark() const { return shared_top_; }
  void shared_release(int64_t mark) { shared_top_ = mark; }
  // Dynamic shared memory one CTA may use on `sm` (CUDA's opt-in maximum per
  // block): 227 KiB on sm_90, 163 KiB on sm_80.
  static int64_t shared_limit(int sm) { return sm >= 90 ? 227 * 1024 : 163 * 1024; }
  int sm = 80;  // the NVPTX target's compute capability (LowerOptions::sm)
  // Arena offsets allocated after mark() are reused after release(mark).
  int64_t arena_mark() const { return arena_top_; }
  void arena_release(int64_t mark) { arena_top_ = mark; }

  // ---- types ------------------------------------------------------------------
  // f32 for bf16/f16/f32, double for f64, i1 for bool, iN for integers.
  llvm::Type* compute_type(DType d);
  // How the dtype lies in memory: bfloat/half/float/double, i8 for bool, iN.
  llvm::Type* storage_type(DType d);
  llvm::Value* to_compute(llvm::Value* stored, DType d);
  // bf16 / f16 round to nearest even (NaN stays NaN), as the interpreter does.
  llvm::Value* to_storage(llvm::Value* computed, DType d);
  // What a padding element reads as: NaN, the integer type's largest value,
  // true; 0 when uninit_zero.
  llvm::Value* padding_value(DType d);
  // Stores padding_value into every element of `r`: a buffer the interpreter
  // would allocate uninitialized (scratch, run_scoped), for any dtype.
  void fill_uninitialized(const RefView& r);

  // ---- helpers ----------------------------------------------------------------
  llvm::Value* i64(int64_t v) { return b.getInt64(v); }
  llvm::Value* i32(int32_t v) { return b.getInt32(v); }
  llvm::Function* intrinsic(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Type*> types = {});
  // A math function of compute-type args: "exp", "log", "tanh", "sin", ...
  // Host: an LLVM intrinsic or libm; NVPTX: libdevice (`__nv_expf`).
  // Defined in math.cpp.
  llvm::Value* math_call(std::string_view fn_name, DType dtype, const std::vector<llvm::Value*>& args);
  // "TARGET: MESSAGE" at the op's location.
  Error error(const Op& op, std::string_view message) const;
  // Row-major linear index of `idx` in `shape` (i64).
  llvm::Value* linear_index(const Shape& shape, const std::vector<llvm::Value*>& idx);
  // A load / store of Ref element `idx` in compute type, masked by the Ref's extents.
  llvm::Value* load(const RefView& r, const std::vector<llvm::Value*>& idx);
  void store(const RefView& r, const std::vector<llvm::Value*>& idx, llvm::Value* computed);
  // The storage-type pointer of Ref element `idx` (no mask: the caller knows it is real).
  llvm::Value* address(const RefView& r, const std::vector<llvm::Value*>& idx);
  // Whether `idx` of `r` is a real element (i1); null when statically true.
  llvm::Value* in_bounds(const RefView& r, const std::vector<llvm::Value*>& idx);
  // Emits `then` under condition `c` (i1).
  void if_then(llvm::Value* c, const std::function<void()>& then);

  // ---- run-time checks (run_checks.h) --------------------------------------------
  // Where `ok` (i1) is false: records `kind` / `which` / `values` (i64 or
  // narrower integers) with the grid point in the check record, unless an
  // earlier violation is there, and returns from the kernel (this grid point
  // and every later one of the host thread / CTA are not run). Nothing when
  // the kernel has no check record.
  void check(llvm::Value* ok, CheckKind kind, int64_t which, const std::vector<llvm::Value*>& values);
  // The KernelInfo::checked_ops number of `op` (added on first use).
  int64_t checked_op(const Op& op);
  llvm::GlobalVariable* check_record = nullptr;
  // Set while IR is emitted ahead of its time (the next grid step's index
  // maps): check() then ANDs its condition into *speculating (null: true so
  // far) instead of reporting a violation the run has not reached.
  llvm::Value** speculating = nullptr;
  bool check_indices = true;             // dynamic in-kernel indices (LowerOptions::check_indices)
  bool uninit_zero = false;              // LowerOptions::uninit_zero
  std::vector<const Op*> checked_ops;

  // ---- bodies -----------------------------------------------------------------
  // Lowers the ops of `body` in order through the table (its params must be
  // defined already). Control rules call it for nested bodies.
  void lower_ops(const Body& body);
  // The laziness rules (see the file comment).
  void before_write(const Var* root);
  void before_nested_body();
  const Op& current_op() const { return *current_; }
  // The op lowered after the current one in its body (null after the last).
  const Op* next_op() const { return next_; }
  // The current rule has done the next op's work too (a fusion): lower_ops
  // skips it.
  void fuse_next() { fused_ = next_; }
  // The output block kept in registers, if any (resident_output.h): lower_ops
  // stores it to memory before each op that reads or writes it directly and
  // loads it back after.
  ResidentOutput* resident = nullptr;
  // Whether `v` is still read by an op not lowered yet (or a body output).
  bool used_later(const Var* v) const;
  // How many of those reads are left.
  int uses_left(const Var* v) const;

  // ---- the grid point (set by lower_kernel.cpp) --------------------------------
  std::vector<llvm::Value*> program_ids;  // i32, one per grid axis
  std::vector<int64_t> grid;              // static grid sizes
  // The grid axis that program_id / num_programs[axis=k] names: axes added by
  // vmap (GridMapping::vmapped_dims) are skipped, as the interpreter does.
  std::vector<int> kernel_axes;
  llvm::Value* arena_base = nullptr;      // this grid point's arena (i8 pointer)
  llvm::Value* thread_id = nullptr;       // i64: tid.x on NVPTX, 0 on the host
  // A block addressed ahead of its grid step, and whether it is valid there
  // (i1, the same in every thread).
  struct BlockAhead {
    RefView view;
    llvm::Value* valid;
  };
  // Input param `root`'s block at the next step of the grid's one sequential
  // loop (its IR emitted where called); valid when that step exists and its
  // block index is in range. Unset outside such a loop; none for an input
  // that is not addressed in place.
  std::function<std::optional<BlockAhead>(const Var* root)> next_step_block;
  // The Ref defined for `v` (a Ref param or allocation), or null.
  const RefView* ref_of(const Var* v) const {
    auto it = refs_.find(v);
    return it == refs_.end() ? nullptr : &it->second;
  }

 private:
  std::unordered_map<const Var*, Block> values_;
  std::unordered_map<const Var*, RefView> refs_;
  std::unordered_map<const Var*, int> uses_;  // remaining uses of each Var
  // value() of a literal: one Block per constant and dtype, at a stable address
  // (a kernel of n ops with literals would otherwise keep n copies).
  std::map<std::pair<llvm::Value*, DType>, Block> literal_blocks_;
  std::vector<const Var*> lazy_;        // Vars whose Block reads memory lazily, in definition order
  std::unordered_map<const Op*, int64_t> checked_op_numbers_;  // index of each op in checked_ops
  const Op* current_ = nullptr;
  const Op* next_ = nullptr;
  const Op* fused_ = nullptr;
  bool touches_resident(const Op& op) const;
  int64_t arena_top_ = 0, arena_high_ = 0;
  int64_t shared_top_ = 0, shared_high_ = 0;  // NVPTX: dynamic shared memory bytes in use / at most
  llvm::Constant* shared_base_ = nullptr;       // NVPTX: the kernel's extern shared array (generic pointer)
};

}  // namespace tessera::backends::llvm_lowering
