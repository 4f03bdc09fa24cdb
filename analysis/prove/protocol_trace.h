// The DMA and semaphore protocol of a kernel as a flat trace of events, one
// grid step at a symbolic grid point. Shared by the semaphore-balance and
// DMA-race claims.
//
// The kernel is walked once (kernel_walker.h); each semaphore op, DMA and
// indexed access of a data Ref becomes an event with its path condition.
// `for` loops with static trip counts are then unrolled by substituting their
// induction variable, in program order, so the trace grows with trip counts
// but never with the grid. An event in a loop that depends on a value that
// may change from one iteration to the next (a loop carry, a fresh symbol made
// in the body) is marked `varies`: one symbol cannot stand for all its values.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/prove/kernel_walker.h"

namespace tessera::prove {

// The elements one access touches in one dim, [lo, hi]; `exact` when it
// touches all of them (false for a strided slice or the rows of a gather).
struct SymRange {
  z3::expr lo, hi;
  bool exact = true;
};

struct TraceEvent {
  explicit TraceEvent(z3::context& ctx) : path(ctx.bool_val(true)), cell(ctx.int_val(0)), amount(ctx.int_val(0)) {}

  // branch: a `cond` branch taken (its path), for naming the path of a counterexample.
  enum Kind { sem, access, branch } kind = sem;
  const Op* op = nullptr;
  std::string what;                  // "dma_wait at f.tsr:3:4"
  z3::expr path;
  std::vector<std::string> opaque;   // why it depends on unmodelled values
  std::vector<LoopInfo> loops;       // the loops around it, outermost first (before unrolling)
  std::vector<const Op*> conds;      // the conds around it, outermost first
  std::string iteration;             // "c=3" once unrolled ("" outside loops)
  std::string varies;                // non-empty: a value it depends on changes per iteration
  int instance = 0;                  // events of one op in one iteration share it

  // kind == sem: a change of one semaphore element.
  const void* sem_key = nullptr;     // the semaphore Ref: its root Var, or the barrier semaphore
  std::string sem_name;              // "%in_sem"
  int64_t numel = 1;
  z3::expr cell, amount;             // amount is signed: waits subtract
  bool wait = false;
  std::optional<z3::expr> device;    // remote: the device whose semaphore changes

  // kind == access: an indexed access of a data Ref, by the core or by a DMA.
  int branch_index = 0;              // kind == branch: which branch
  const Var* root = nullptr;
  std::string ref_name;              // "%buf"
  std::vector<SymRange> region;
  bool read = false, write = false;
  enum By { core, dma_source, dma_destination } by = core;
  bool remote = false;               // a DMA destination on another device
};

class ProtocolTrace {
 public:
  // Walks the kernel of `c` at `point` and unrolls its loops; `why()` says
  // why the trace could not be built (a slice of several semaphores, a loop
  // without a static trip count around an event, too many events). A kernel
  // without semaphores or DMAs has an empty trace unless `with_plain_accesses`.
  ProtocolTrace(CallContext& c, const std::vector<Sym>& point, bool with_plain_accesses = false);

  const std::vector<TraceEvent>& events() const { return flat_; }
  const std::string& why() const { return why_; }
  // Non-empty when the accesses could not all be unrolled (the trace then has none).
  const std::string& accesses_why() const { return accesses_why_.empty() ? scoped_why_ : accesses_why_; }
  // Why accesses of Ref `root` are missing from the trace ("" when none is): they sit in loops it could not unroll.
  std::string missing_accesses(const Var* root) const {
    auto it = unrolled_without_.find(root);
    return it == unrolled_without_.end() ? "" : it->second;
  }
  bool any_protocol() const { return protocol_ops_ > 0; }
  IntEncoder& encoder() { return *enc_; }
  // The processes the protocol runs on: the devices of the enclosing pmaps
  // (or the cores of a core_map outside any pmap), numbered flat over the
  // scope's process axes, the outermost major, as the interpreter numbers them.
  int64_t devices() const;           // how many (1 without any)
  int device_axes() const { return static_cast<int>(c_.scope.process_axes.size()); }
  // Whether the kernel reads the index of its own process on some axis.
  bool per_process() const;
  // `x` as process `p` (a flat id) computes it: each axis index replaced by p's coordinate.
  z3::expr on(const z3::expr& x, const z3::expr& p) const;
  // This process's flat id. Axes the kernel never reads the index of get a
  // symbol here, whose range goes to `facts`.
  z3::expr process_id(std::vector<z3::expr>& facts);
  // A core_map outside any pmap: the processes above are its cores (a
  // signal's target is its flat core index), and device ids name this device.
  bool cores_are_processes() const;
  const char* process_word() const { return c_.op.name() == "core_map" ? "core" : "device"; }
  // How messages name process p: "device 3", "core 1", or "device 1 core 0"
  // (a core_map inside pmaps: processes are (device, core) pairs, the core minor).
  std::string process_name(int64_t p) const;

  // How an op enters the trace, per primitive ("prove.protocol"): DMAs and
  // semaphore ops are protocol events; any other op adds the core's own
  // accesses of data Refs.
  using Acc = std::vector<Access>;
  using Rule = std::function<void(ProtocolTrace&, const Op&, const Acc&)>;
  static const RuleTable<Rule>& rules();

 private:
  void on_op(const Op& op, const std::vector<Access>& acc);
  void on_core_accesses(const Op& op, const std::vector<Access>& acc, bool reads_old);
  void on_dma_start(const Op& op, const std::vector<Access>& acc);
  void on_dma_wait(const Op& op, const std::vector<Access>& acc);
  void on_semaphore(const Op& op, const std::vector<Access>& acc, bool wait);
  void note_scoped(const Op& op);
  void add_sem(const Op& op, int operand, const Access* a, z3::expr amount, bool wait, std::optional<Sym> device,
               const std::vector<std::string>& amount_opaque);
  void add_access(const Op& op, const Access& a, bool read, bool write, TraceEvent::By by, bool remote);
  TraceEvent base_event(const Op& op, TraceEvent::Kind kind);
  Sym exact_or_opaque(const Sym& v, const std::string& what);
  Sym on_core(Sym dev, const std::optional<Sym>& core);
  int64_t mesh_cores() const;  // cores of the core_map's mesh (1 for a pallas_call)
  // The flat index over `axes` (outermost major) of this process; axes the
  // kernel never reads the index of get a symbol, whose range goes to `facts`.
  z3::expr flat_index(const std::vector<std::string>& axes, std::vector<z3::expr>& facts);
  bool unroll(size_t b, size_t e, size_t depth, z3::expr_vector& from, z3::expr_vector& to, const std::string& it);
  void mark_varying(const std::vector<Sym>& point);

  CallContext& c_;
  std::unique_ptr<IntEncoder> enc_;
  KernelWalker* walker_ = nullptr;
  std::vector<TraceEvent> events_, flat_;
  std::set<const Var*> barrier_refs_;  // get_barrier_semaphore results
  std::map<const Var*, std::string> scoped_in_loop_;  // Refs run_scoped allocates inside a loop -> the loop
  std::map<const Var*, std::string> unrolled_without_;  // Refs with accesses in loops not unrolled -> why
  std::string scoped_why_;             // an access of such a Ref (the accesses are then incomplete)
  std::string why_, accesses_why_;
  int protocol_ops_ = 0;
  int next_instance_ = 0;
};

// `e` with `from` replaced by `to`, simplified.
z3::expr substituted(z3::expr e, z3::expr_vector& from, z3::expr_vector& to);

// The `cond` branches `taken` says are on a counterexample's path, in program
// order: "branch 1 of cond at f.tsr:3:4 (c=2), ..." ("" when none).
std::string branches_taken(const std::vector<TraceEvent>& events, const std::function<bool(const TraceEvent&)>& taken);

}  // namespace tessera::prove
