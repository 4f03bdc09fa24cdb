// The reference interpreter: tessera's executable semantics (seed 002, TPU
// interpret mode). Every transform and backend is checked against it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "interpreter/array.h"
#include "ir/ir.h"

namespace tessera::interp {

struct RunOptions {
  enum class Dma { eager, on_wait } dma = Dma::on_wait;
  enum class Oob { raise, uninitialized } oob = Oob::raise;
  enum class Uninit { nan, zero } uninit = Uninit::nan;
  bool detect_races = false;
  int cores = 1;                      // cores per device
  std::optional<uint64_t> grid_seed;  // random order along parallel axes
  std::string trace_file;             // grid-point recorder output ("" = off)
  bool allow_hbm_scoped = false;
  int64_t max_steps = 0;              // 0 = no limit; else error past this many ops
};

// Runs function `func` of `m` on `inputs` (one Array per parameter, in order)
// and returns its outputs. Throws tessera::Error with a structured message
// (kernel, operand, grid point, block index, op location) on a run-time error.
std::vector<Array> run_function(const Module& m, std::string_view func, const std::vector<Array>& inputs,
                                const RunOptions& opts = {});

}  // namespace tessera::interp
