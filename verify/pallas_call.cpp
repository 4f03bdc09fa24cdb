// pallas_call calling conventions (ir/grid_mapping.h, after `GridMapping`
// in jax/_src/pallas/core.py): the grid, every block mapping (block shape, index map), the
// aliases, and the kernel's signature. The shape rule has already checked what
// the result types depend on (operand counts, out_specs vs out_shapes).
#include <algorithm>
#include <cstdint>
#include <set>

#include <map>

#include "ir/control_views.h"
#include "ir/effects.h"
#include "ir/grid_mapping.h"
#include "verify/check.h"

namespace tessera::verify_detail {
namespace {

// "(8, ?)": -1 is a dynamic grid size when `dims`.
std::string ints_str(const std::vector<int64_t>& v, bool dims = true) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + (dims && v[i] == -1 ? std::string("?") : std::to_string(v[i]));
  return s + (v.size() == 1 ? ",)" : ")");
}

constexpr int64_t kMaxGridAxisSize = INT32_MAX;

void check_grid(const Op& op, const GridMapping& g, Diags& out) {
  for (int a = 0; a < g.grid_rank(); ++a) {
    int64_t d = g.grid[a];
    if (d == 0 || d < -1)
      report(out, op.loc, "grid size " + std::to_string(d) + " on axis " + std::to_string(a) +
                              " is not a positive integer (write ? for a size given at run time)");
    // Program ids are i32: every index along an axis must fit one.
    if (d > kMaxGridAxisSize)
      report(out, op.loc, "grid size " + std::to_string(d) + " on axis " + std::to_string(a) +
                              " is too large: program ids are i32, so a grid axis has at most 2^31 - 1 points");
  }
  auto per_axis = [&](size_t n, const std::string& what) {
    if (n != 0 && n != g.grid.size())
      report(out, op.loc, what + " has " + std::to_string(n) + " entries, but the grid " + ints_str(g.grid) +
                              " has rank " + std::to_string(g.grid_rank()));
  };
  per_axis(g.dimension_semantics.size(), "dimension_semantics");
  per_axis(g.grid_names.size(), "grid_names");
  std::set<std::string> names;
  for (const std::string& n : g.grid_names)
    if (!names.insert(n).second) report(out, op.loc, "grid_names names axis '" + n + "' twice");
  std::set<int64_t> vmapped;
  for (int64_t d : g.vmapped_dims) {
    if (d < 0 || d >= g.grid_rank())
      report(out, op.loc, "vmapped_dims entry " + std::to_string(d) + " is out of range for a grid of rank " +
                              std::to_string(g.grid_rank()));
    else if (!vmapped.insert(d).second)
      report(out, op.loc, "vmapped_dims lists grid axis " + std::to_string(d) + " twice");
  }
}

void check_block_dims(const Op& op, const GridMapping& g, int m, Diags& out) {
  const std::string what = g.describe(m);
  const std::vector<BlockDim>& dims = *g.spec(m).block;
  for (size_t i = 0; i < dims.size(); ++i) {
    const BlockDim& d = dims[i];
    const std::string dim = "block dim " + std::to_string(i) + " of " + what;
    // A block may be larger than its array dim (it is padded), but never empty.
    if (d.kind != BlockDimKind::Squeezed && d.size < 1)
      report(out, op.loc, dim + " has size " + std::to_string(d.size) + "; block sizes must be at least 1");
    if (d.kind == BlockDimKind::Squeezed && d.size != 1)
      report(out, op.loc, dim + " is squeezed but has size " + std::to_string(d.size) + "; a squeezed dim has size 1");
    if (d.kind == BlockDimKind::Element && (d.pad_lo < 0 || d.pad_hi < 0))
      report(out, op.loc, dim + " has negative element padding (" + std::to_string(d.pad_lo) + ", " +
                              std::to_string(d.pad_hi) + ")");
  }
}

// Index map of mapping m: signature from the grid, one integer per block dim.
void check_index_map(const Op& op, const GridMapping& g, int m, bool nested_ok, Diags& out) {
  const Body* map = g.spec(m).index_map.get();
  if (!map) return;  // all-zero block indices
  const std::string what = body_label(*map) + " of " + g.describe(m);
  std::vector<Type> want = g.expected_index_map_params();
  if (map->param_types() != want)
    report(out, op.loc, what + " takes " + types_str(map->param_types()) + ", but the grid " + ints_str(g.grid) +
                            " passes " + types_str(want) + ": one i32 program id per grid axis" +
                            (g.num_scalar_prefetch() ? ", then the scalar-prefetch Refs" : ""));
  std::vector<BlockDim> dims = g.dims(m);
  int arity = index_map_arity(dims);
  if (static_cast<int>(map->outputs().size()) != arity)
    report(out, op.loc, what + " returns " + std::to_string(map->outputs().size()) + " value(s), but block shape " +
                            block_dims_str(dims) + " needs " + std::to_string(arity) +
                            " (one per array dim, two for a bounded dim)");
  // Index-map bodies check these themselves (types.cpp, effects.cpp).
  if (map->kind() == BodyKind::index_map) return;
  check_index_map_results(*map, what, op.loc, out);
  if (nested_ok) check_read_only(*map, what, "index maps must be pure (they may only read scalar prefetch)", op.loc, out);
}

void check_block_mappings(const Op& op, const GridMapping& g, bool nested_ok, Diags& out) {
  for (int m = 0; m < g.num_inputs() + g.num_outputs(); ++m) {
    const BlockSpec& s = g.spec(m);
    const Type& array = g.array(m);
    if (s.mem == MemSpace::semaphore || s.mem == MemSpace::index)
      report(out, op.loc, g.describe(m) + " has its blocks in memory space " + std::string(mem_space_name(s.mem)) +
                              ", which cannot hold array data");
    if (s.buffer_count < 0)
      report(out, op.loc, g.describe(m) + " has buffered=" + std::to_string(s.buffer_count) + "; it must be at least 1");
    if (s.block) {
      if (static_cast<int>(s.block->size()) != array.rank()) {
        report(out, op.loc, "block shape " + block_dims_str(*s.block) + " of " + g.describe(m) + " has rank " +
                                std::to_string(s.block->size()) + ", but the array " + array.str() + " has rank " +
                                std::to_string(array.rank()));
        continue;  // the index map's arity would only repeat the problem
      }
      check_block_dims(op, g, m, out);
    }
    check_index_map(op, g, m, nested_ok, out);
  }
}

void check_aliases(const Op& op, const GridMapping& g, Diags& out) {
  std::set<int64_t> seen_in, seen_out;
  for (auto [i, o] : g.aliases) {
    // Messages use the param's numbering: scalar-prefetch operands count as inputs (as in JAX).
    int64_t raw = g.alias_param_input(i), nsp = g.num_scalar_prefetch();
    const std::string entry = "input_output_aliases entry (" + std::to_string(raw) + ", " + std::to_string(o) + ")";
    bool in_ok = i >= 0 && i < g.num_inputs(), out_ok = o >= 0 && o < g.num_outputs();
    if (raw >= 0 && raw < nsp)
      report(out, op.loc, entry + ": input " + std::to_string(raw) + " is scalar-prefetch operand " + std::to_string(raw) +
                              ", which cannot be aliased (inputs are numbered as in JAX: the " + std::to_string(nsp) +
                              " scalar-prefetch operand(s) first, then the array inputs)");
    else if (!in_ok)
      report(out, op.loc, entry + ": input index " + std::to_string(raw) + " is out of range [" + std::to_string(nsp) + ", " +
                              std::to_string(nsp + g.num_inputs()) + ")" +
                              (nsp ? " (the " + std::to_string(nsp) + " scalar-prefetch operand(s) count as inputs 0.." + std::to_string(nsp - 1) + ")" : ""));
    if (!out_ok)
      report(out, op.loc, entry + ": output index " + std::to_string(o) + " is out of range [0, " +
                              std::to_string(g.num_outputs()) + ")");
    if (!in_ok || !out_ok) continue;
    if (!seen_out.insert(o).second)
      report(out, op.loc, entry + ": " + g.describe(g.num_inputs() + static_cast<int>(o)) +
                              " is aliased more than once; an output buffer can alias only one input");
    if (!seen_in.insert(i).second)
      report(out, op.loc, entry + ": " + g.describe(static_cast<int>(i)) + " is aliased to more than one output");
    const Type& a = g.in_types[i];
    const Type& b = g.out_types[o];
    if (a.array_type() != b.array_type())
      report(out, op.loc, entry + ": " + g.describe(static_cast<int>(i)) + " is " + a.str() + " but " +
                              g.describe(g.num_inputs() + static_cast<int>(o)) + " is " + b.str() +
                              "; aliased buffers must have the same shape and dtype");
  }
}

// "scalar prefetch 0", "input 1", "output 0", "scratch 2": the role of kernel param p.
std::string role(const GridMapping& g, int p) {
  if (p < g.num_scalar_prefetch()) return "scalar prefetch " + std::to_string(p);
  if (p < g.output_param(0)) return "input " + std::to_string(p - g.input_param(0));
  if (p < g.scratch_param(0)) return "output " + std::to_string(p - g.output_param(0));
  return "scratch " + std::to_string(p - g.scratch_param(0));
}

// Kernel param p is the block of a mapping whose block shape has the wrong
// rank: that is reported once, at the block shape, not again here.
bool block_rank_wrong(const GridMapping& g, int p) {
  int m = p - g.input_param(0);
  if (m < 0 || m >= g.num_inputs() + g.num_outputs()) return false;
  const auto& block = g.spec(m).block;
  return block && static_cast<int>(block->size()) != g.array(m).rank();
}

std::vector<std::string> sorted_strs(const std::vector<Type>& ts) {
  std::vector<std::string> s;
  for (const Type& t : ts) s.push_back(t.str());
  std::sort(s.begin(), s.end());
  return s;
}

void check_kernel_signature(const Op& op, const GridMapping& g, Diags& out) {
  const Body& k = *g.kernel;
  std::vector<Type> want = g.expected_kernel_params();
  std::vector<Type> got = k.param_types();
  if (k.kind() != BodyKind::kernel && !k.outputs().empty())
    report(out, op.loc, body_label(k) + " returns values; a pallas_call kernel returns nothing");
  if (got.size() != want.size()) {
    report(out, op.loc, body_label(k) + " takes " + std::to_string(got.size()) + " parameter(s), but this pallas_call passes " +
                            std::to_string(want.size()) + ": " + std::to_string(g.num_scalar_prefetch()) +
                            " scalar prefetch, " + std::to_string(g.num_inputs()) + " input(s), " +
                            std::to_string(g.num_outputs()) + " output(s) and " + std::to_string(g.scratch_types.size()) +
                            " scratch, in that order: " + types_str(want));
    return;
  }
  if (got == want) return;
  if (sorted_strs(got) == sorted_strs(want)) {
    report(out, op.loc, "the parameters of " + body_label(k) + " are out of order: a kernel takes " +
                            "*scalar_prefetch, *inputs, *outputs, *scratch, here " + types_str(want));
    return;
  }
  for (size_t p = 0; p < got.size(); ++p) {
    if (got[p] == want[p] || block_rank_wrong(g, static_cast<int>(p))) continue;
    report(out, op.loc, "parameter " + std::to_string(p) + " (" + var_label(k.params()[p]) + ") of " + body_label(k) +
                            " is " + got[p].str() + ", but " + role(g, static_cast<int>(p)) + " expects " + want[p].str());
  }
}

void check_scratch(const Op& op, const GridMapping& g, Diags& out) {
  for (size_t s = 0; s < g.scratch_types.size(); ++s) {
    std::string problem = allocation_problem(g.scratch_types[s]);
    if (!problem.empty()) report(out, op.loc, "scratch " + std::to_string(s) + " " + problem);
  }
}

// Kernel writes to a scalar-prefetch Ref are rejected where they happen: the
// index maps read the same SMEM values, and Pallas TPU does not let a kernel's
// writes reach them (the prefetch is read before the grid runs), so the
// values are immutable inputs for the whole call (the prover relies on that).
// `prefetch` maps the Vars of `b` that are prefetch Refs to the kernel
// parameter's name; nested bodies see them through their parameters.
void check_prefetch_writes(const Body& b, const std::map<const Var*, std::string>& prefetch, Diags& out) {
  for (const Op& op : b.ops()) {
    size_t before = out.size();
    for (const BodyPtr& nb : op.nested_bodies()) {
      std::map<const Var*, std::string> inner;
      for (const auto& [param, v] : forwarded_operands(op, *nb))
        if (auto it = v.is_var() ? prefetch.find(v.var()) : prefetch.end(); it != prefetch.end())
          inner[param] = it->second;
      if (!inner.empty()) check_prefetch_writes(*nb, inner, out);
    }
    if (out.size() != before) continue;  // reported inside, where the write is
    for (auto [k, bits] : op_effects(op).on_operand) {
      const Value& v = op.operands.at(k);
      if (!(bits & (kWrite | kAccum)) || !v.is_var()) continue;
      auto it = prefetch.find(v.var());
      if (it == prefetch.end()) continue;
      report(out, op.loc, "cannot write to scalar-prefetch Ref %" + it->second + " (" + op.name() +
                              "): index maps read it, and Pallas TPU cannot observe kernel writes to scalar prefetch");
      break;
    }
  }
}

void check_cost_estimate(const Op& op, Diags& out) {
  const auto& cost = op.param(keys::cost_estimate);
  bool ok = cost.empty() || cost.size() == 3 || cost.size() == 4;
  for (int64_t c : cost) ok &= c >= 0;
  if (!ok)
    report(out, op.loc, "cost_estimate must be (flops, transcendentals, bytes_accessed[, remote_bytes]), all >= 0, got " +
                            ints_str(cost, false));
}

}  // namespace

void check_pallas_call(const Op& op, bool nested_ok, Diags& out) {
  GridMapping g;
  try {
    g = grid_mapping(op);
  } catch (const Error& e) {
    report(out, op.loc, e.message());
    return;
  }
  check_grid(op, g, out);
  check_block_mappings(op, g, nested_ok, out);
  check_aliases(op, g, out);
  check_kernel_signature(op, g, out);
  if (nested_ok && g.kernel && static_cast<int>(g.kernel->params().size()) >= g.num_scalar_prefetch()) {
    std::map<const Var*, std::string> prefetch;
    for (int j = 0; j < g.num_scalar_prefetch(); ++j) prefetch[g.kernel->params()[j]] = g.kernel->params()[j]->name;
    check_prefetch_writes(*g.kernel, prefetch, out);
  }
  check_scratch(op, g, out);
  check_cost_estimate(op, out);
}

}  // namespace tessera::verify_detail
