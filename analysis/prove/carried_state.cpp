// Obligation 5, carried state: no grid step reads persistent state that
// another parallel position left behind (or that no step wrote).
//
// Scratch Refs and output blocks persist from one grid step to the next on a
// core (the grid schedule of ir/grid_schedule.h carries an output block while
// it stays; nothing ever copies one in). The interpreter visits each parallel position's arbitrary suffix in
// order on one core, so a step reads state from the step before it on that
// core. For every step but the first of a parallel position that step shares
// its parallel coordinates; for the first (arbitrary coordinates all 0) it is
// the last step of another parallel position, whichever the seed and the
// core split chose; without a parallel axis it is the grid's first step,
// whose buffers no step wrote. So: at a grid point whose arbitrary
// coordinates are all 0,
// every read of a scratch Ref or an output block (get, load, a swap whose old
// value is used, addupdate, a DMA source) must follow, on its path, a write
// in the same step that covers the read region (swap, store, or a local DMA
// into it, once a dma_wait on its semaphore element has completed it). Writes
// inside a loop the read is not in do not count: which iterations run is
// unknown, so such a read is `unknown`.
//
// A DMA writes the region of its destination operand. The region a dma_wait
// names only says how many bytes it waits for (the interpreter, like
// jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py, takes the byte
// count of the wait's Ref and nothing else), so it is no write: a wait that
// names buf[0] for a copy into buf[1] leaves buf[0] as it was. Every copy
// queued on the element is complete after the wait: eagerly run DMAs copy at
// their start, the others when a wait on their semaphore runs them.
//
// A read whose value only reaches the rest of the kernel through the cases
// of a select_n (a mask such as `iota < n`) may never show what it read: such
// a read is `unknown`, not FAILED. One whose value goes nowhere shows nothing.
//
// The tail of a bounded input block past the size its map returns is state
// too: the copy-in fills only the head.
//
// An input block the kernel writes is state too: its kernel buffer is copied
// in only when the block index changes, so a first step that reads it (before
// writing it) sees the previous step's writes when that step, at another
// parallel position, had an overlapping block. For such reads the query adds
// a second symbolic point on another parallel position whose block overlaps.
//
// The query uses one or two symbolic grid points, so its size does not depend
// on the grid.
#include <algorithm>
#include <map>
#include <set>

#include "analysis/prove/block_region.h"
#include "analysis/prove/kernel_walker.h"
#include "analysis/prove/schedule_terms.h"
#include "ir/effects.h"
#include "ir/primitive.h"

namespace tessera::prove {

namespace {

// A dynamic-size write (`ds(s, %n)`) fills an unknown part of its bound, so
// it covers no later read (sound, maybe `failed` where the exact size would
// prove it).
using Range = AccessRange;

struct StateWrite {
  const Var* state;
  z3::expr path;
  std::vector<std::string> opaque;   // its path or region depends on unmodelled values
  std::vector<Range> region;
  std::vector<int> loops;
  Loc loc;
};

struct StateRead {
  z3::expr bad;                      // the read happens and no earlier write in the step covers it
  std::string what;                  // "get %carry at f.tsr:3:4 reads scratch 0"
  std::vector<std::string> opaque;
  std::string loop_write;            // a write to the state inside a loop the read is not in ("" if none)
  const Var* root = nullptr;         // the state it reads
  std::string mask;                  // its value reaches the kernel only through this select_n ("" if not)
  int input = -1;                    // the input whose block this reads, or -1 (scratch, output)
  z3::expr in_tail;                  // an input read reaching past the filled part of a bounded dim
  bool done = false;
  std::vector<int> loops;            // the loops the read is in (ids, outermost first)
  bool earlier_iteration = false;    // a write in a loop the read is in: an earlier iteration may cover it
};

bool is_prefix(const std::vector<int>& a, const std::vector<int>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// A local DMA into state, started on `path`, not yet completed by a wait.
struct Copy {
  const Var* dst;
  z3::expr path;
  const Var* sem;                    // its destination semaphore Ref
  z3::expr cell;                     // the element of it (row-major)
  std::vector<std::string> opaque;
  std::vector<Range> region;
  std::vector<int> loops;
  Loc loc;
};

// Where the value `reader` reads goes in its body: nowhere, only through the
// cases of select_n ops (which may mask what it read), or into something that
// keeps or decides (a write, an index, a branch, a loop, the body's results).
struct Flow {
  enum Kind { dead, masked, reaches } kind = dead;
  std::string mask;                  // "select_n at f.tsr:3:4" (masked)
};

Flow flow_of(const Body& b, const Op& reader) {
  std::set<const Var*> full(reader.results.begin(), reader.results.end());  // the value, as read
  std::set<const Var*> part;  // what passed through a select_n case
  Flow f;
  bool after = false;
  auto sink = [&](bool uses_full, bool uses_part) {
    if (uses_full) f.kind = Flow::reaches;
    else if (uses_part && f.kind == Flow::dead) f.kind = Flow::masked;
  };
  for (const Op& o : b.ops()) {
    if (&o == &reader) {
      after = true;
      continue;
    }
    if (!after) continue;
    bool uses_full = false, uses_part = false, as_case = false, pure = o.nested_bodies().empty() && !has_side_effects(o);
    for (size_t k = 0; k < o.operands.size(); ++k) {
      const Value& v = o.operands[k];
      pure &= !v.type().is_ref();
      if (!v.is_var()) continue;
      bool is_full = full.count(v.var()) > 0;
      if (is_full && o.name() == "select_n" && k > 0) as_case = true, is_full = false;
      uses_full |= is_full;
      uses_part |= part.count(v.var()) > 0;
    }
    if (!pure) {
      sink(uses_full, uses_part || as_case);
      continue;
    }
    if (as_case && f.mask.empty()) f.mask = o.name() + where(o);
    for (const Var* r : o.results) {
      if (uses_full) full.insert(r);
      else if (uses_part || as_case) part.insert(r);
    }
  }
  for (const Value& v : b.outputs())
    if (v.is_var()) sink(full.count(v.var()) > 0, part.count(v.var()) > 0);
  return f;
}

// The semaphore element main operand `k` of a DMA op names: its Ref and the
// row-major index of the element (0 for a lone semaphore).
std::pair<const Var*, Sym> sem_element(CallContext& c, const KernelWalker& w, const Op& op, int k, const std::vector<Access>& acc) {
  const Value& ref = op.main_operand(k);
  Sym cell{c.ctx.int_val(0), Interval::of(0), {}, {}};
  const Var* root = ref.is_var() ? w.root(ref.var()) : nullptr;
  for (const Access& a : acc) {
    if (a.ix.base != op.main_operand_index(k)) continue;
    const Shape& shape = ref.type().shape();
    z3::expr e = c.ctx.int_val(0);
    for (size_t d = 0; d < shape.size() && d < a.starts.size(); ++d) {
      e = e * c.ctx.int_val(shape[d]) + a.starts[d].e;
      cell.opaque = merge_opaque(cell.opaque, a.starts[d].opaque);
      cell.deps = merge_deps(cell.deps, a.starts[d].deps);
    }
    cell.e = e.simplify();
  }
  return {root, cell};
}

}  // namespace

Obligation prove_carried_state(CallContext& c) {
  Timer timer;
  Obligation ob = obligation(c.name, "kernel", "carried state");
  auto trivial = [&](const std::string& why) {
    ob.verdict = Verdict::proved;
    ob.method = "trivial";
    ob.detail = why;
    ob.millis = timer.millis();
    return ob;
  };
  // Without a parallel axis the one first step is the grid's first point: it
  // reads what no step wrote (uninitialized scratch and output buffers).
  std::vector<int> par = parallel_axes(c);
  const Body& kernel = *c.kernel;
  // The persistent state: scratch Refs holding data, and output blocks.
  std::map<const Var*, std::string> state;
  for (int s = 0; s < static_cast<int>(c.g.scratch_types.size()); ++s) {
    int p = c.g.scratch_param(s);
    if (p < static_cast<int>(kernel.params().size()) && !is_semaphore(c.g.scratch_types[s].dtype()))
      state[kernel.params()[p]] = "scratch " + std::to_string(s);
  }
  for (int o = 0; o < c.g.num_outputs(); ++o) {
    int p = c.g.output_param(o);
    MemSpace mem = c.g.out_specs[o].mem;
    if (p < static_cast<int>(kernel.params().size()) && mem != MemSpace::any && mem != MemSpace::hbm)
      state[kernel.params()[p]] = "the block of out[" + std::to_string(o) + "]";
  }
  std::map<const Var*, int> input_of;
  for (int i = 0; i < c.g.num_inputs(); ++i) {
    int p = c.g.input_param(i);
    MemSpace mem = c.g.in_specs[i].mem;
    if (p < static_cast<int>(kernel.params().size()) && mem != MemSpace::any && mem != MemSpace::hbm) {
      state[kernel.params()[p]] = "the block of in[" + std::to_string(i) + "]";
      input_of[kernel.params()[p]] = i;
    }
  }
  if (state.empty()) return trivial("no scratch Refs or output blocks");

  std::vector<z3::expr> base = c.base_facts;
  std::vector<Sym> point = c.make_point("s", base);
  IntEncoder enc(c.scope, c.ctx.bool_val(true));
  enc.set_grid_point(point);
  for (int j = 0; j < c.g.num_scalar_prefetch() && j < static_cast<int>(kernel.params().size()); ++j)
    enc.bind_prefetch(kernel.params()[j], j);
  // A BoundedSlice dim's copy-in fills only the first `size` elements of the
  // kernel buffer; the rest keeps what an earlier step left there.
  std::map<int, MapAt> input_maps;  // input -> its index map at `point`
  auto map_at_point = [&](int i) -> MapAt& {
    auto it = input_maps.find(i);
    if (it == input_maps.end()) it = input_maps.emplace(i, c.encode_map(i, point)).first;
    return it->second;
  };
  auto past_filled = [&](int i, const std::vector<Range>& region) {
    z3::expr past = c.ctx.bool_val(false);
    std::vector<BlockDim> dims = c.g.dims(i);
    size_t k = 0, kd = 0;  // index-map result, kernel dim (squeezed dims have none)
    for (const BlockDim& d : dims) {
      if (d.kind == BlockDimKind::BoundedSlice) {
        const Sym& size = map_at_point(i).outputs.at(k + 1);
        if (kd < region.size()) past = past || region[kd].hi >= size.e;
      }
      k += d.kind == BlockDimKind::BoundedSlice ? 2 : 1;
      kd += d.kind == BlockDimKind::Squeezed ? 0 : 1;
    }
    return past;
  };
  KernelWalker w(c, enc);
  std::vector<StateWrite> writes;
  std::vector<StateRead> reads;
  std::set<const Var*> written;
  std::vector<Copy> copies;
  std::set<const Var*> remote_into;  // state a remote DMA (another device's, by symmetry) writes
  auto loop_ids = [&] {
    std::vector<int> ids;
    for (const LoopInfo& l : w.loops()) ids.push_back(l.id);
    return ids;
  };
  // A DMA's destination is written once a wait on its semaphore element completes it.
  w.on_op = [&](const Op& op, const std::vector<Access>& acc) {
    const std::string& n = op.name();
    if (n == "dma_start") {
      const Value& dst = op.main_operand(1);
      const Var* root = dst.is_var() ? w.root(dst.var()) : nullptr;
      if (!state.count(root)) return;
      if (op.num_main_operands() >= 5) {
        remote_into.insert(root);
        return;
      }
      const Access* d = nullptr;
      for (const Access& a : acc)
        if (a.ix.base == op.main_operand_index(1)) d = &a;
      std::vector<Range> region;
      std::vector<std::string> opq = w.path_opaque();
      if (d) {
        region = access_ranges(c.ctx, *d, dst.type().shape());
        for (const Sym& s : d->starts) opq = merge_opaque(opq, s.opaque), enc.need(s.deps);
      } else {
        for (int64_t extent : dst.type().shape()) region.push_back({c.ctx.int_val(0), c.ctx.int_val(extent - 1), true});
      }
      auto [sem, cell] = sem_element(c, w, op, 2, acc);
      enc.need(cell.deps);
      enc.need(enc.path_deps());
      copies.push_back({root, enc.path(), sem, cell.e, merge_opaque(opq, cell.opaque), region, loop_ids(), op.loc});
    } else if (n == "dma_wait") {
      auto [sem, cell] = sem_element(c, w, op, 0, acc);
      enc.need(cell.deps);
      enc.need(enc.path_deps());
      std::vector<int> here = loop_ids();
      for (const Copy& cp : copies) {
        if (cp.sem != sem) continue;
        written.insert(cp.dst);
        std::vector<std::string> opq = merge_opaque(merge_opaque(cp.opaque, cell.opaque), w.path_opaque());
        writes.push_back({cp.dst, cp.path && enc.path() && cp.cell == cell.e, opq, cp.region,
                          here.size() > cp.loops.size() ? here : cp.loops, cp.loc});
      }
    }
  };
  w.on_access = [&](const Access& a) {
    auto it = state.find(a.root);
    if (it == state.end()) return;
    const std::string& n = a.op.name();
    // A DMA's destination is written when dma_wait says the copy landed, and
    // a swap whose old value is unused only writes; the rest is what the op's
    // effects declare (addupdate reads the value it adds to).
    bool read, write;
    if (n == "dma_start" || n == "dma_wait") {
      read = n == "dma_start" && a.ix.base == a.op.main_operand_index(0);
      write = false;  // see on_op
    } else if (n == "swap") {
      read = w.result_used(a.op);
      write = true;
    } else {
      uint8_t bits = op_effects(a.op).on(a.ix.base);
      read = bits & (kRead | kAccum);
      write = bits & kWrite;
    }
    // Regions and paths rely on the same exactness guards kernel bounds proves.
    enc.need(enc.path_deps());
    for (const Sym& s : a.starts) enc.need(s.deps);
    const Shape& shape = a.op.operands.at(a.ix.base).type().shape();
    std::vector<Range> region = access_ranges(c.ctx, a, shape);
    // What the core reads into a value (not addupdate's, which stays in the
    // state) shows only where that value goes.
    Flow flow;
    flow.kind = Flow::reaches;
    if (read && (n == "get" || n == "load" || n == "swap") && w.body()) flow = flow_of(*w.body(), a.op);
    if (read && flow.kind != Flow::dead) {
      const Value& ref = a.op.operands.at(a.ix.base);
      std::string name = ref.is_var() ? "%" + ref.var()->name : "a Ref";
      StateRead r{c.ctx.bool_val(true), n + " " + name + where(a.op) + " reads " + it->second, {}, "", a.root,
                  flow.kind == Flow::masked ? flow.mask : "", -1, c.ctx.bool_val(false), false, a.loops, false};
      if (auto in = input_of.find(a.root); in != input_of.end()) {
        r.input = in->second;
        r.in_tail = past_filled(r.input, region);
      }
      z3::expr covered = c.ctx.bool_val(false);
      for (const StateWrite& wr : writes) {
        if (wr.state != a.root) continue;
        if (!is_prefix(wr.loops, a.loops)) {
          if (r.loop_write.empty()) r.loop_write = wr.loc.known() ? wr.loc.str() : "a loop";
          continue;
        }
        z3::expr covers = wr.path;
        for (size_t d = 0; d < region.size(); ++d)
          covers = covers && (wr.region[d].dense ? wr.region[d].lo <= region[d].lo && region[d].hi <= wr.region[d].hi
                                                 : c.ctx.bool_val(false));
        covered = covered || covers;
        r.opaque = merge_opaque(r.opaque, wr.opaque);
      }
      r.bad = enc.path() && !covered;
      r.opaque = merge_opaque(r.opaque, w.path_opaque());
      for (const Sym& s : a.starts) r.opaque = merge_opaque(r.opaque, s.opaque);
      reads.push_back(std::move(r));
    }
    if (write) {
      written.insert(a.root);
      std::vector<std::string> opq = w.path_opaque();
      for (const Sym& s : a.starts) opq = merge_opaque(opq, s.opaque);
      writes.push_back({a.root, enc.path(), opq, region, a.loops, a.op.loc});
    }
  };
  w.walk(kernel);
  for (StateRead& r : reads) {
    for (const StateWrite& wr : writes)
      for (int id : wr.loops)
        r.earlier_iteration |= wr.state == r.root && std::find(r.loops.begin(), r.loops.end(), id) != r.loops.end();
    // Without a parallel axis, such a loop-carried read (a software pipeline
    // filling the next slot in the previous iteration) is not claimed.
    // Nor one of state another device's remote DMA fills (DMA races orders it).
    if (par.empty() && (r.earlier_iteration || remote_into.count(r.root))) r.done = true;
  }
  // An input block the kernel never writes holds what was copied in: no state.
  // One it writes carries state only to a step whose block overlaps: a second
  // point `q` on another parallel position with an overlapping block.
  std::vector<z3::expr> pair_facts;
  std::vector<Sym> q;
  std::map<int, std::pair<z3::expr, std::vector<std::string>>> collides;  // per input: condition, opaque
  for (StateRead& r : reads) {
    if (r.input < 0) continue;
    const Var* root = kernel.params()[c.g.input_param(r.input)];
    z3::expr stale = r.in_tail;
    if (written.count(root)) {
      if (!collides.count(r.input)) {
        if (q.empty()) q = c.make_point("q", pair_facts);
        const MapAt& P = map_at_point(r.input);
        MapAt Q = c.encode_map(r.input, q);
        CallContext::add_facts(*Q.enc, pair_facts, true);
        z3::expr differ = c.ctx.bool_val(false);
        for (int a : par) differ = differ || point[a].e != q[a].e;
        BlockGeometry geo = c.g.geometry(r.input);
        std::vector<std::string> opq;
        for (const MapAt* m : {&P, static_cast<const MapAt*>(&Q)})
          for (const Sym& s : m->outputs) opq = merge_opaque(opq, s.opaque);
        z3::expr overlap = regions_overlap(c.ctx, block_region(c.ctx, geo, P.outputs), block_region(c.ctx, geo, Q.outputs));
        collides.emplace(r.input, std::make_pair(differ && overlap, opq));
      }
      const auto& [collide, opq] = collides.at(r.input);
      stale = stale || collide;
      r.opaque = merge_opaque(r.opaque, opq);
    }
    r.bad = r.bad && stale;
    if (stale.is_false()) r.done = true;
  }
  for (auto& [i, m] : input_maps) CallContext::add_facts(*m.enc, pair_facts, true);
  bool any_read = false;
  for (const StateRead& r : reads) any_read |= !r.done;
  if (!any_read) return trivial("the kernel reads no scratch Ref, output block or input block it writes");

  // The first step of a parallel position (ir/grid_schedule.h): every
  // arbitrary coordinate is 0. There no block is carried in from the step
  // before on this position.
  Z3Algebra alg{c.ctx};
  z3::expr first = first_of_position(alg, terms(point), c.ctx.int_val(0), leading_parallel_axes(c.g));
  ob.method = "z3";
  std::string unknown_reason;
  while (true) {
    std::vector<z3::expr> qs = base;
    qs.insert(qs.end(), pair_facts.begin(), pair_facts.end());
    // The kernel-bounds obligation proves the guards indices and paths rely on.
    CallContext::add_facts(enc, qs, true);
    qs.push_back(first);
    z3::expr any_bad = c.ctx.bool_val(false);
    int open = 0;
    for (const StateRead& r : reads)
      if (!r.done) any_bad = any_bad || r.bad, ++open;
    if (open == 0) break;
    qs.push_back(any_bad);
    QueryResult res = c.solver.check(qs, "carried_state");
    ob.queries++;
    if (res.result == z3::unsat) break;
    if (res.result == z3::unknown) {
      unknown_reason = "(" + res.reason + ")";
      break;
    }
    const z3::model& mo = *res.model;
    bool progress = false;
    for (StateRead& r : reads) {
      if (r.done || !c.eval(mo, r.bad)) continue;
      progress = true;
      r.done = true;
      std::string why = !r.loop_write.empty()         ? "it is written inside a loop at " + r.loop_write
                        : r.earlier_iteration         ? "an earlier iteration of its loop may write it, which is not modelled"
                        : !r.opaque.empty()           ? "it depends on values the prover does not model (" + r.opaque[0] + ")"
                        : remote_into.count(r.root)   ? "another device's remote DMA may write it, which this claim does not model"
                        : !r.mask.empty()             ? "what it reads reaches the kernel only through " + r.mask +
                                                            ", which may mask the stale elements: not modelled"
                                                      : "";
      if (!why.empty()) {
        if (unknown_reason.empty()) unknown_reason = "cannot decide whether " + r.what + " before this grid step writes it: " + why;
        continue;
      }
      std::vector<int64_t> gp = c.eval(mo, point);
      ob.verdict = Verdict::failed;
      ob.grid_points = {gp};
      ob.detail = "at grid point " + tuple_str(gp) + ": " + r.what +
                  (par.empty() ? " before any grid step writes it: the first step of the grid reads uninitialized memory"
                               : " before this grid step writes it, so it reads what the previous step on this core left "
                                 "there: the last step of another position on parallel axis " + std::to_string(par[0]) +
                                     ", which depends on the seed and the number of cores");
      ob.millis = timer.millis();
      return ob;
    }
    if (!progress) {
      unknown_reason = "internal: the counterexample violates no recorded read";
      break;
    }
  }
  if (unknown_reason.empty()) ob.verdict = Verdict::proved;
  else ob.detail = unknown_reason;
  ob.millis = timer.millis();
  return ob;
}

}  // namespace tessera::prove
