// The reference interpreter: tessera's executable semantics (Pallas's TPU
// interpret mode). Every transform and backend is checked against it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "ir/op_cost.h"
#include "runtime/array.h"
#include "runtime/memory_limit.h"

namespace tessera::interp {

// What `tessera run --stats` counts as the interpreter does the work: the
// flops and transcendentals of every op run (ir/op_cost.h; index maps are not
// kernel work and are not counted), the bytes of every block copy and DMA.
// Per pallas_call / core_map (the op whose kernel or body ran), and outside them.
class RunStats {
 public:
  struct Scope {
    const Op* op = nullptr;  // the pallas_call or core_map; null: outside any
    int64_t runs = 0;        // how many times it ran (per device of a pmap)
    CostFigures figures;
  };
  void add(const Op* scope, const CostFigures& f);
  void count_run(const Op* scope);
  // In the order first counted.
  std::vector<Scope> scopes() const;
  CostFigures total() const;

 private:
  Scope& at(const Op* scope);  // with mu_ held
  mutable std::mutex mu_;
  std::vector<Scope> scopes_;
};

// Runs one pallas_call some other way than the interpreter (a compiled
// backend: backends/llvm/jit.h), given the op and its operand values (dynamic
// grid sizes, scalar prefetch, inputs); returns its outputs, or nullopt to let
// the interpreter run it. The ops between kernels stay interpreted, so any
// program (vmapped, differentiated, with control flow) can run its kernels
// compiled, and the interpreter itself never depends on a backend.
using PallasCallExecutor =
    std::function<std::optional<std::vector<Array>>(const Op& pallas_call, const std::vector<Array>& operands)>;

// The step limit of a run unless told otherwise: far above what any example
// or test takes (each under a million), and reached in seconds to a minute by
// an endless loop, which then stops with an error naming --max-steps instead
// of running forever.
inline constexpr int64_t kDefaultMaxSteps = 100'000'000;

struct RunOptions {
  enum class Dma { eager, on_wait } dma = Dma::on_wait;
  enum class Oob { raise, uninitialized } oob = Oob::raise;
  enum class Uninit { nan, zero } uninit = Uninit::nan;
  bool detect_races = false;
  bool debug_checks = true;           // false: debug_check ops do nothing
  int cores = 1;                      // cores per device
  std::optional<uint64_t> grid_seed;  // random order along parallel axes
  std::string trace_file;             // grid-point recorder output ("" = off)
  std::string timeline_file;          // Chrome trace-event JSON of the run ("" = off; interpreter/timeline.h)
  bool allow_hbm_scoped = false;
  int64_t max_steps = kDefaultMaxSteps;  // 0 = no limit; else error past this many ops and grid iterations
  int64_t max_work = 0;               // 0 = no limit; else error past this many elements computed or moved
  int64_t max_memory = default_memory_limit();  // bytes of arrays alive at once (0 = no limit)
  RunStats* stats = nullptr;          // where to count flops and bytes moved (null: not counted)
  PallasCallExecutor pallas_call_executor;  // consulted first for every pallas_call (empty: none)
};

// Runs function `func` of `m` on `inputs` (one Array per parameter, in order)
// and returns its outputs. Throws tessera::Error with a structured message
// (kernel, operand, grid point, block index, op location) on a run-time error.
std::vector<Array> run_function(const Module& m, std::string_view func, const std::vector<Array>& inputs,
                                const RunOptions& opts = {});

// Evaluates index map `map` (a body of `m`) at grid points, with `prefetch`
// as its scalar-prefetch Refs in SMEM, exactly as pallas_call does before
// fetching a block. The prover's tests and benchmark enumerate grids with it.
class IndexMapEvaluator {
 public:
  IndexMapEvaluator(const Module& m, const Body& map, const std::vector<Array>& prefetch = {},
                    const RunOptions& opts = {});
  IndexMapEvaluator(IndexMapEvaluator&&) noexcept;
  ~IndexMapEvaluator();
  std::vector<int64_t> operator()(const std::vector<int64_t>& program_ids);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// One grid point (builds an evaluator each call: use the class for many).
std::vector<int64_t> eval_index_map(const Module& m, const Body& map, const std::vector<int64_t>& program_ids,
                                    const std::vector<Array>& prefetch = {}, const RunOptions& opts = {});

// An IndexMapEvaluator as a copyable function of the grid point: what
// analysis/cost takes (cost::CostOptions::index_maps) to count block copies
// where the interpreter makes them.
std::function<std::vector<int64_t>(const std::vector<int64_t>&)> index_map_function(const Module& m, const Body& map,
                                                                                    const std::vector<Array>& prefetch);

}  // namespace tessera::interp
