// The grid side of transposing a pallas_call: where the transposed kernel's
// blocks go and in which order it walks the grid.
//
// The tangent kernel's state flows through the grid in program order (an
// output block revisited along an `arbitrary` axis accumulates; scratch
// carries values from step to step), so its transpose walks the grid in
// reverse: program_id(a) of the tangent kernel becomes n_a - 1 - program_id of
// the new grid, in every index map and in the kernel (JAX transposes a `for`
// loop by running it backwards: jax/_src/state/discharge.py).
//
// A cotangent *output* (the forward kernel read that block: a tangent input)
// is written by every grid point that read the block. Where its index map
// ignores some grid axes, those axes are moved innermost and made `arbitrary`,
// so the block is revisited consecutively: zeroed at its first visit, then
// accumulated into. Outputs that need incompatible orders (matmul's x
// cotangent ignores j, y's ignores i) are computed by separate transposed
// calls, one per order. When an index map is not a plain projection of
// program ids (arithmetic, data-dependent through scalar prefetch, Element /
// BoundedSlice dims), or the grid may not be reordered, the output falls back
// to *partial* cotangents: an array with one extra leading axis that gives
// each combination of the ignored axes its own slice (all grid points when
// the map is not a projection), summed outside the kernel.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/grid_mapping.h"
#include "ir/ir.h"
#include "transforms/ad_util.h"
#include "transforms/var_table.h"

namespace tessera::transpose {

// Which grid axes an index map reads, and whether it is a projection: every
// result a literal or a program-id parameter (or one shifted or reflected by
// constants, as the maps of an earlier transpose are), over Blocked /
// Squeezed dims, with no scalar prefetch. A projection sends distinct values
// of the axes it reads to distinct blocks, so the axes it ignores are
// exactly the revisits.
struct AxisUse {
  std::vector<bool> reads;  // per grid axis: some result depends on it
  bool projection = true;
};
AxisUse index_map_axis_use(const BlockSpec& spec, const std::vector<BlockDim>& dims, const std::vector<int64_t>& grid);

// Where one cotangent output's blocks go.
struct OutputPlan {
  int mapping = 0;           // the forward block mapping (an input of the tangent kernel)
  std::vector<int> ignored;  // forward axes whose steps revisit the same block (ascending)
  bool partial = false;      // fall back to partial cotangents
  bool conflict = false;     // needs another grid order: left to another transposed call
  int64_t partial_size = 1;  // extent of the extra leading axis when partial
  bool covers = false;       // every block of the array is visited (else it starts from zeros)
};

struct GridPlan {
  std::vector<int> order;     // new axis p walks forward axis order[p] backwards
  std::vector<int> position;  // forward axis a is new axis position[a]
  std::vector<OutputPlan> outputs;
  std::vector<std::string> notes;  // why an output fell back or was left to another call (--verbose)
  std::string unsupported;         // a stateful input no order can keep consecutive (empty: none)

  // The transposed call's grid, names and semantics: permuted; an axis that
  // revisits some cotangent output block is `arbitrary`.
  std::vector<int64_t> grid(const GridMapping& g) const;
  std::vector<std::string> grid_names(const GridMapping& g) const;
  std::vector<std::string> semantics(const GridMapping& g) const;
};

// Plans the transposed grid for cotangent outputs on the forward block
// mappings `ct_outputs`; those marked `conflict` need another plan.
// `may_reorder`: whether axes may be permuted (not when the kernel carries
// linear state in scratch from step to step, whose transposed flow must be
// the exact reverse of the forward one). `stateful_inputs`: forward output
// mappings whose cotangent blocks the transposed kernel carries from visit to
// visit (it writes them, not only at their last visit): their revisits must
// stay consecutive too, in every call; `unsupported` names one that cannot.
GridPlan plan_grid(const GridMapping& g, const std::vector<int>& ct_outputs, bool may_reorder,
                   const std::vector<int>& stateful_inputs = {});

// The index map of forward mapping `m` on the transposed grid:
// (new program ids..., scalar prefetch...) -> the forward results at the
// reflected grid point; with `partial`, the slice index of the output's extra
// leading axis comes first.
BodyPtr transposed_index_map(ad::SymbolSink& syms, const GridMapping& g, const GridPlan& plan, int m,
                             const OutputPlan* partial);

// The block spec of mapping `m` on the transposed grid (and of its partial
// array, with a leading Squeezed dim, when `partial`).
BlockSpec transposed_spec(ad::SymbolSink& syms, const GridMapping& g, const GridPlan& plan, int m,
                          const OutputPlan* partial);

// `kernel` with every program_id / num_programs of a forward axis rewritten
// for the transposed grid (nested bodies included; unchanged ones shared).
// The transposed call has no vmapped dims: its kernel sees every axis.
// Does `kernel` (or a body nested in it) read program_id or num_programs?
bool uses_grid(const Body& kernel);
BodyPtr reflect_program_ids(const Body& kernel, const GridMapping& g, const GridPlan& plan, const std::string& name);
// The same rewrite fused with a copy: appends the ops of `src` marked in
// `keep` to `dst`, operands renamed through `map` (which gains their results).
void copy_reflected(const Body& src, const std::vector<char>& keep, Body& dst, VarToValue& map, const GridMapping& g,
                    const GridPlan& plan);

// In a kernel on the transposed grid: is this the first visit of output
// `out`'s current block (every ignored axis at its first new step)? nullopt
// when every visit is a first one.
std::optional<Value> first_visit(Builder& b, const GridPlan& plan, const OutputPlan& out);

// Does this step of the transposed grid start a chain of steps that carry
// state (every forward `arbitrary` axis at its first new step)? Forward
// state carried across positions of a parallel axis would race (the prover's
// carried-state claim), so each position's chain starts afresh. nullopt:
// every step does (no `arbitrary` axis).
std::optional<Value> first_step(Builder& b, const GridPlan& plan, const GridMapping& g);

// Where the pallas_call rule reports why a cotangent output fell back to
// partial cotangents (`file:line:col: note: ...`); `tessera opt --verbose`
// prints them. None by default.
void set_pallas_call_note_sink(std::function<void(const std::string&)> sink);

}  // namespace tessera::transpose
