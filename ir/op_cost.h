// What one op computes: flops and transcendentals, the two compute figures of
// Pallas's `CostEstimate` (jax/_src/pallas/core.py). `tessera cost` adds them
// up over a kernel statically and `tessera run --stats` counts them as ops
// run; both read this one rule table, so the two can only differ in how often
// an op runs (grid points, loop trips, cond branches), which is what their
// comparison tests.
//
// Conventions (XLA's HloCostAnalysis, which Pallas's estimates follow):
//   elementwise op        1 flop per result element (select_n, comparisons,
//                         bitwise ops and converts included); an op with the
//                         `transcendental` trait (exp, log, tanh, sin, ...)
//                         counts 1 transcendental per element and no flop
//   reduce_*, argmax/min  input elements - output elements (n - 1 per output)
//   cumsum                n - 1 per line along the axis
//   dot_general           2 * result elements * contracted elements (2MNK:
//                         a multiply-add counts 2)
//   addupdate             1 flop per element added
//   everything else       0: data movement (get, swap, broadcast, gather,
//                         sort, DMAs), scalar hints, and control flow, whose
//                         bodies are counted op by op
#pragma once

#include <cstdint>
#include <string>

#include "ir/ir.h"
#include "ir/primitive.h"

namespace tessera {

struct OpCost {
  int64_t flops = 0;
  int64_t transcendentals = 0;
  OpCost& operator+=(const OpCost& o) {
    flops += o.flops;
    transcendentals += o.transcendentals;
    return *this;
  }
};

// The figures of a whole run or kernel: what ops compute, and the bytes moved
// by pallas_call's block copies (HBM -> VMEM before a grid step, VMEM -> HBM
// after one) and by DMAs (each dma_start's source region).
struct CostFigures {
  int64_t flops = 0;
  int64_t transcendentals = 0;
  int64_t bytes_in = 0;   // block copies into the kernel's buffers
  int64_t bytes_out = 0;  // block copies back to HBM
  int64_t bytes_dma = 0;  // dma_start
  int64_t bytes() const { return bytes_in + bytes_out + bytes_dma; }
  CostFigures& operator+=(const OpCost& o) {
    flops += o.flops;
    transcendentals += o.transcendentals;
    return *this;
  }
  CostFigures& operator+=(const CostFigures& o) {
    flops += o.flops;
    transcendentals += o.transcendentals;
    bytes_in += o.bytes_in;
    bytes_out += o.bytes_out;
    bytes_dma += o.bytes_dma;
    return *this;
  }
  bool operator==(const CostFigures&) const = default;
};

// "flops 12, transcendentals 0, bytes in 64, out 32, dma 0": how `run --stats`
// and `cost` print figures, so that their lines compare as text.
std::string figures_str(const CostFigures& f);

using CostRule = OpCost (*)(const Op& op);

// How `run --stats` and `cost` name the op a kernel's figures belong to:
// "pallas_call @matmul_kernel (line 36)", "core_map (line 12)".
std::string cost_scope_name(const Op& op);

// The "cost" rule table: one rule per primitive, filled per family.
const RuleTable<CostRule>& cost_rules();

// The cost of one execution of `op` (its result and operand types give the
// sizes). A primitive added after the table was built (an embedding program's)
// gets its family's rule.
OpCost op_cost(const Op& op);

}  // namespace tessera
