#include "transforms/dma_mirror.h"

#include <algorithm>
#include <map>

#include "ir/builder.h"
#include "ir/clone.h"
#include "ir/control_views.h"
#include "ir/indirect_dma.h"
#include "transforms/dma_trace.h"

namespace tessera::transpose {

DmaMirror::Role DmaMirror::role(const Op& op) const {
  if (starts_.count(&op)) return start_here;
  if (waits_.count(&op)) return wait_here;
  return none;
}

namespace {

using dma_trace::Box;
using dma_trace::Event;
using dma_trace::Region;

// One copy of the trace: its start and its wait (event indices), and which
// side is in VMEM.
struct Copy {
  size_t start = 0, wait = 0;
  bool vmem_is_src = false;
};

// The copy a dma_wait op completes, as the wait recomputes it: the HBM Ref
// (a kernel param) and per dim the start `a * index + b` (index: of the
// wait's innermost loop) and the size; which side the VMEM region is on.
struct WaitPlan {
  int hbm_root = -1;
  std::vector<int64_t> a, b, size;
  bool vmem_is_src = false;
};

const Region& vmem_side(const Event& s, bool vmem_is_src) { return vmem_is_src ? s.src : s.dst; }
const Region& hbm_side(const Event& s, bool vmem_is_src) { return vmem_is_src ? s.dst : s.src; }

class Checker {
 public:
  Checker(const Body& k, const std::vector<Event>& ev, const std::vector<ParamRole>& roles,
          const std::vector<bool>& linear, std::string& why)
      : k_(k), ev_(ev), roles_(roles), linear_(linear), why_(why) {}

  bool run() {
    return aliased_untouched() && pair_waits() && sides() && fit_waits() && hbm_disjoint() && vmem_untouched() &&
           writebacks_overwrite();
  }

  std::map<const Op*, WaitPlan> waits;
  std::unordered_set<const Op*> starts;

 private:
  bool fail(const Op* op, const std::string& what) {
    why_ = what + (op ? " at " + op->loc.str() : std::string());
    return false;
  }

  // Inputs aliased to outputs share the output's buffer: the checks below
  // tell Refs apart by param, so the kernel must not touch them.
  bool aliased_untouched() {
    auto aliased = [&](int root) { return root >= 0 && roles_[static_cast<size_t>(root)] == ParamRole::aliased_input; };
    for (const Event& e : ev_)
      if (aliased(e.src.root) || aliased(e.dst.root))
        return fail(e.op, "an access to an input aliased to an output");
    return true;
  }

  MemSpace space(int root) const { return k_.params()[static_cast<size_t>(root)]->type.mem_space(); }

  // Each wait completes the one copy in flight on its semaphore element.
  bool pair_waits() {
    std::map<std::pair<int, int64_t>, size_t> in_flight;
    for (size_t i = 0; i < ev_.size(); ++i) {
      const Event& e = ev_[i];
      if (e.kind != Event::start && e.kind != Event::wait) continue;
      auto key = std::make_pair(e.sem_root, e.sem_element);
      auto it = in_flight.find(key);
      if (e.kind == Event::start) {
        if (it != in_flight.end()) return fail(e.op, "two copies in flight on one semaphore");
        in_flight[key] = i;
        continue;
      }
      if (it == in_flight.end()) return fail(e.op, "a wait with no copy in flight");
      if (ev_[it->second].bytes != e.bytes) return fail(e.op, "a wait for another byte count than its copy's");
      copies_.push_back({it->second, i, false});
      in_flight.erase(it);
    }
    if (!in_flight.empty()) return fail(ev_[in_flight.begin()->second].op, "a copy never waited for");
    if (copies_.empty()) return fail(nullptr, "no DMAs");
    return true;
  }

  // Between a linear VMEM Ref and a linear Ref in HBM; the wait names the VMEM region.
  bool sides() {
    for (Copy& c : copies_) {
      const Event& s = ev_[c.start];
      bool src_hbm = is_hbm_side(space(s.src.root)), dst_hbm = is_hbm_side(space(s.dst.root));
      if (src_hbm == dst_hbm || space(src_hbm ? s.dst.root : s.src.root) != MemSpace::vmem)
        return fail(s.op, "a copy that is not between VMEM and HBM");
      if (!linear_[static_cast<size_t>(s.src.root)] || !linear_[static_cast<size_t>(s.dst.root)])
        return fail(s.op, "a copy of a Ref that is not linear");
      c.vmem_is_src = dst_hbm;
      const Region& v = vmem_side(s, c.vmem_is_src);
      const Region& w = ev_[c.wait].dst;
      if (w.root != v.root || !(w.box == v.box))
        return fail(ev_[c.wait].op, "a wait that does not name the copy's VMEM region");
      ParamRole hbm = roles_[static_cast<size_t>(hbm_side(s, c.vmem_is_src).root)];
      if (hbm != ParamRole::input && (hbm != ParamRole::output || !c.vmem_is_src))
        return fail(s.op, c.vmem_is_src ? "a write-back into HBM memory that is not an input or output"
                                        : "a fetch from HBM memory that is not an input");
      starts.insert(s.op);
    }
    return true;
  }

  // Per wait op: the same HBM Ref and orientation in every run, the region's
  // starts affine in the loop index.
  bool fit_waits() {
    std::map<const Op*, std::vector<const Copy*>> by_wait;
    for (const Copy& c : copies_) by_wait[ev_[c.wait].op].push_back(&c);
    for (const auto& [op, cs] : by_wait) {
      const Copy& first = *cs[0];
      const Region& h0 = hbm_side(ev_[first.start], first.vmem_is_src);
      WaitPlan p;
      p.hbm_root = h0.root;
      p.vmem_is_src = first.vmem_is_src;
      p.size = h0.box.size;
      size_t rank = h0.box.lo.size();
      p.a.assign(rank, 0);
      p.b = h0.box.lo;
      int64_t i0 = ev_[first.wait].loop_index;
      for (const Copy* c : cs) {
        const Region& h = hbm_side(ev_[c->start], c->vmem_is_src);
        if (h.root != p.hbm_root || c->vmem_is_src != p.vmem_is_src || h.box.size != p.size)
          return fail(op, "a wait that completes copies of different HBM Refs, directions or sizes");
      }
      // The slope from the first run at another index.
      for (const Copy* c : cs) {
        int64_t di = ev_[c->wait].loop_index - i0;
        if (di == 0) continue;
        const Box& box = hbm_side(ev_[c->start], c->vmem_is_src).box;
        for (size_t d = 0; d < rank; ++d) {
          int64_t dl = box.lo[d] - h0.box.lo[d];
          if (dl % di != 0) return fail(op, "a wait whose copy's region is not affine in the loop index");
          p.a[d] = dl / di;
          p.b[d] = h0.box.lo[d] - p.a[d] * i0;
        }
        break;
      }
      for (const Copy* c : cs) {
        const Region& h = hbm_side(ev_[c->start], c->vmem_is_src);
        int64_t i = ev_[c->wait].loop_index;
        bool same = true;
        for (size_t d = 0; d < rank && same; ++d) same = h.box.lo[d] == p.a[d] * i + p.b[d];
        if (!same) return fail(op, "a wait whose copy's region is not affine in the loop index");
      }
      waits[op] = std::move(p);
    }
    return true;
  }

  // Sorted by Ref and first element along dim 0, a region can only meet the
  // regions after it that start before it ends there: a sweep, not all pairs.
  bool hbm_disjoint() {
    auto hbm = [&](size_t x) -> const Region& { return hbm_side(ev_[copies_[x].start], copies_[x].vmem_is_src); };
    auto lo = [](const Region& r) { return r.box.lo.empty() ? int64_t{0} : r.box.lo[0]; };
    auto hi = [](const Region& r) { return r.box.lo.empty() ? int64_t{1} : r.box.lo[0] + r.box.size[0]; };
    std::vector<size_t> order(copies_.size());
    for (size_t x = 0; x < order.size(); ++x) order[x] = x;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return std::make_pair(hbm(x).root, lo(hbm(x))) < std::make_pair(hbm(y).root, lo(hbm(y)));
    });
    for (size_t i = 0; i < order.size(); ++i)
      for (size_t j = i + 1; j < order.size(); ++j) {
        const Region& a = hbm(order[i]);
        const Region& b = hbm(order[j]);
        if (b.root != a.root || lo(b) >= hi(a)) break;
        if (a.box.overlaps(b.box)) return fail(ev_[copies_[std::max(order[i], order[j])].start].op, "two copies of one HBM region");
      }
    return true;
  }

  // Nothing touches a copy's VMEM region while it is in flight: no access of
  // the core, no other copy in flight at the same time. One sweep over the
  // trace, comparing each event with the copies in flight at it.
  bool vmem_untouched() {
    std::vector<const Copy*> starting(ev_.size(), nullptr), ending(ev_.size(), nullptr);
    for (const Copy& c : copies_) starting[c.start] = &c, ending[c.wait] = &c;
    std::vector<const Copy*> in_flight;
    auto meets = [&](const Region& r, const Copy* o) {
      const Region& v = vmem_side(ev_[o->start], o->vmem_is_src);
      return r.root == v.root && r.box.overlaps(v.box);
    };
    for (size_t i = 0; i < ev_.size(); ++i) {
      const Event& e = ev_[i];
      if (const Copy* c = ending[i]) {
        in_flight.erase(std::find(in_flight.begin(), in_flight.end(), c));
      } else if (const Copy* c2 = starting[i]) {
        for (const Copy* o : in_flight)
          if (meets(vmem_side(e, c2->vmem_is_src), o)) return fail(e.op, "two copies of one VMEM region in flight at once");
        in_flight.push_back(c2);
      } else if (e.kind != Event::start && e.kind != Event::wait) {
        for (const Copy* o : in_flight)
          if (meets(e.dst, o)) return fail(e.op, "an access to a VMEM region while a copy of it is in flight");
      }
    }
    return true;
  }

  // A write-back's transpose overwrites the VMEM cotangent at the forward's
  // wait: the next access after it must overwrite the whole region (its
  // transpose zeroes the cotangent), or the cotangent starts at zero.
  bool writebacks_overwrite() {
    for (const Copy& c : copies_) {
      if (!c.vmem_is_src) continue;
      const Region& v = ev_[c.start].src;
      bool settled = false;
      for (size_t i = c.wait + 1; i < ev_.size() && !settled; ++i) {
        const Event& e = ev_[i];
        if (e.kind == Event::wait) continue;
        if (e.kind == Event::start && e.src.root == v.root && e.src.box.overlaps(v.box))
          return fail(e.op, "a copy reads the VMEM region of an earlier write-back");
        if (e.dst.root != v.root || !e.dst.box.overlaps(v.box)) continue;
        if ((e.kind != Event::start && e.kind != Event::overwrite) || !e.dst.box.covers(v.box))
          return fail(e.op, "after a write-back, its VMEM region is read or partly written");
        settled = true;
      }
      ParamRole r = roles_[static_cast<size_t>(v.root)];
      if (!settled && r != ParamRole::scratch && r != ParamRole::input)
        return fail(ev_[c.start].op, "a write-back from a VMEM region whose cotangent does not start at zero");
    }
    return true;
  }

  const Body& k_;
  const std::vector<Event>& ev_;
  const std::vector<ParamRole>& roles_;
  const std::vector<bool>& linear_;
  std::string& why_;
  std::vector<Copy> copies_;
};

}  // namespace

// Rebuilds the kernel with each planned dma_wait as the dma_start of the copy
// it completes, threading the HBM Refs and the loop index into the `for`s and
// `cond`s around it.
class MirrorRewriter {
 public:
  MirrorRewriter(const Body& k, const std::map<const Op*, WaitPlan>& waits, const std::unordered_set<const Op*>& starts)
      : k_(k), waits_(waits), starts_(starts) {
    for (const auto& [op, p] : waits) roots_.push_back(p.hbm_root);
    std::sort(roots_.begin(), roots_.end());
    roots_.erase(std::unique(roots_.begin(), roots_.end()), roots_.end());
  }

  MirroredKernel run() {
    BodyPtr nb = make_body(k_.name(), k_.kind());
    nb->set_loc(k_.loc());
    Builder b(*nb);
    b.set_loc(k_.loc());
    ValueMap map;
    Scope s;
    for (const Var* p : k_.params()) map[p] = b.param(p->type, p->name);
    for (int r : roots_) s.roots.push_back(map[k_.params()[static_cast<size_t>(r)]]);
    copy_ops(k_, *nb, b, map, s);
    b.set_loc(k_.loc());
    b.ret(outputs(k_, map));
    MirroredKernel out{nb, {}};
    for (auto [body, i] : start_at_) out.mirror.starts_.insert(&body->ops()[i]);
    for (auto [body, i] : wait_at_) out.mirror.waits_.insert(&body->ops()[i]);
    // Starts in bodies shared with the source kernel (not rebuilt) keep their ops.
    for (const Op* s_op : starts_)
      if (!copied_starts_.count(s_op)) out.mirror.waits_.insert(s_op);
    return out;
  }

 private:
  // The threaded values in the body being built: the HBM Refs (as roots_)
  // and the index of the innermost loop (absent outside loops).
  struct Scope {
    std::vector<Value> roots;
    std::optional<Value> index;
  };

  static std::vector<Value> outputs(const Body& src, const ValueMap& map) {
    std::vector<Value> outs;
    for (const Value& v : src.outputs()) outs.push_back(remap(v, map));
    return outs;
  }

  bool contains_wait(const Body& body) const {
    for (const Op& op : body.ops()) {
      if (waits_.count(&op)) return true;
      for (const BodyPtr& n : op.nested_bodies())
        if (contains_wait(*n)) return true;
    }
    return false;
  }

  bool threads(const Op& op) const {
    if (op.name() != "for" && op.name() != "cond") return false;
    for (const BodyPtr& n : op.nested_bodies())
      if (contains_wait(*n)) return true;
    return false;
  }

  std::vector<Value> root_params(Builder& b) {
    std::vector<Value> out;
    for (int r : roots_) {
      const Var* p = k_.params()[static_cast<size_t>(r)];
      out.push_back(b.param(p->type, p->name));
    }
    return out;
  }

  void copy_ops(const Body& src, Body& nb, Builder& b, ValueMap& map, const Scope& s) {
    for (const Op& op : src.ops()) {
      b.set_loc(op.loc);
      if (auto w = waits_.find(&op); w != waits_.end()) {
        emit_copy(op, w->second, nb, b, map, s);
      } else if (threads(op) && op.name() == "for") {
        rebuild_for(op, b, map, s);
      } else if (threads(op)) {
        rebuild_cond(op, b, map, s);
      } else {
        if (starts_.count(&op)) {
          wait_at_.push_back({&nb, nb.ops().size()});
          copied_starts_.insert(&op);
        }
        copy_op(op, nb, map);
      }
    }
  }

  void rebuild_for(const Op& op, Builder& b, ValueMap& map, const Scope& s) {
    ForView v(op);
    const Body& body = v.body();
    BodyPtr fb = make_body(body.name(), body.kind());
    fb->set_loc(body.loc());
    Builder fbb(*fb);
    fbb.set_loc(body.loc());
    ValueMap m;
    const auto& P = body.params();
    Scope inner;
    inner.index = m[P[0]] = fbb.param(P[0]->type, P[0]->name);
    for (int q = 0; q < v.num_consts; ++q) m[P[1 + q]] = fbb.param(P[1 + q]->type, P[1 + q]->name);
    inner.roots = root_params(fbb);
    for (int j = 0; j < v.num_carries; ++j) {
      const Var* p = P[1 + v.num_consts + j];
      m[p] = fbb.param(p->type, p->name);
    }
    copy_ops(body, *fb, fbb, m, inner);
    fbb.set_loc(body.loc());
    fbb.ret(outputs(body, m));
    std::vector<Value> consts, carries;
    for (int q = 0; q < v.num_consts; ++q) consts.push_back(remap(op.operands[2 + q], map));
    consts.insert(consts.end(), s.roots.begin(), s.roots.end());
    for (int j = 0; j < v.num_carries; ++j) carries.push_back(remap(op.operands[v.first_carry() + j], map));
    b.set_loc(op.loc);
    std::vector<Value> got = ForView::make(b, remap(v.lo(), map), remap(v.hi(), map), consts, carries, fb);
    for (size_t r = 0; r < op.results.size(); ++r) map[op.results[r]] = got[r];
  }

  void rebuild_cond(const Op& op, Builder& b, ValueMap& map, const Scope& s) {
    CondView v(op);
    std::vector<BodyPtr> branches;
    for (const BodyPtr& br : v.branches()) {
      BodyPtr nb = make_body(br->name(), br->kind());
      nb->set_loc(br->loc());
      Builder bb(*nb);
      bb.set_loc(br->loc());
      ValueMap m;
      for (const Var* p : br->params()) m[p] = bb.param(p->type, p->name);
      Scope inner;
      inner.roots = root_params(bb);
      if (s.index) inner.index = bb.param(s.index->type(), "index");
      copy_ops(*br, *nb, bb, m, inner);
      bb.set_loc(br->loc());
      bb.ret(outputs(*br, m));
      branches.push_back(nb);
    }
    std::vector<Value> args;
    for (const Value& a : v.args()) args.push_back(remap(a, map));
    args.insert(args.end(), s.roots.begin(), s.roots.end());
    if (s.index) args.push_back(*s.index);
    b.set_loc(op.loc);
    std::vector<Value> got = CondView::make(b, remap(v.index(), map), args, branches);
    for (size_t r = 0; r < op.results.size(); ++r) map[op.results[r]] = got[r];
  }

  // Main operand k of `op` (with its indexer), renamed, appended.
  static void append_main(const Op& op, int k, const ValueMap& map, std::vector<Value>& operands,
                          std::vector<Indexer>& indexers) {
    int base = op.main_operand_index(k);
    int at = static_cast<int>(operands.size());
    operands.push_back(remap(op.operands[static_cast<size_t>(base)], map));
    const Indexer* ix = op.indexer_for(base);
    if (!ix) return;
    std::vector<IndexEntry> entries = ix->entries;
    for (IndexEntry& e : entries)
      if (e.is_dynamic()) {
        operands.push_back(remap(op.operands[static_cast<size_t>(e.dyn_start)], map));
        e.dyn_start = static_cast<int>(operands.size()) - 1;
      }
    indexers.push_back(Indexer{at, std::move(entries)});
  }

  // The HBM region of plan `p` at the current loop index, appended.
  void append_hbm(Builder& b, const WaitPlan& p, const Scope& s, std::vector<Value>& operands,
                  std::vector<Indexer>& indexers) {
    size_t r = static_cast<size_t>(std::find(roots_.begin(), roots_.end(), p.hbm_root) - roots_.begin());
    Value ref = s.roots[r];
    int at = static_cast<int>(operands.size());
    operands.push_back(ref);
    const Shape& shape = ref.type().shape();
    std::vector<IndexEntry> entries;
    for (size_t d = 0; d < p.size.size(); ++d) {
      if (p.a[d] == 0 || !s.index) {
        bool whole = p.b[d] == 0 && p.size[d] == shape[d];
        entries.push_back(whole ? IndexEntry::full() : IndexEntry::slice(p.b[d], p.size[d]));
        continue;
      }
      Value i = *s.index;
      DType t = i.type().dtype();
      if (p.a[d] != 1) i = b.binary("mul", i, Builder::literal(t, static_cast<double>(p.a[d])));
      if (p.b[d] != 0) i = b.binary("add", i, Builder::literal(t, static_cast<double>(p.b[d])));
      operands.push_back(i);
      entries.push_back(IndexEntry::dyn_slice(static_cast<int>(operands.size()) - 1, p.size[d]));
    }
    indexers.push_back(Indexer{at, std::move(entries)});
  }

  // `dma_wait sem, vmem` -> `dma_start` of the copy it completes.
  void emit_copy(const Op& wait, const WaitPlan& p, Body& nb, Builder& b, const ValueMap& map, const Scope& s) {
    std::vector<Value> operands;
    std::vector<Indexer> indexers;
    if (p.vmem_is_src) append_main(wait, 1, map, operands, indexers);
    append_hbm(b, p, s, operands, indexers);
    if (!p.vmem_is_src) append_main(wait, 1, map, operands, indexers);
    append_main(wait, 0, map, operands, indexers);
    start_at_.push_back({&nb, nb.ops().size()});
    b.emit("dma_start", std::move(operands), {}, std::move(indexers));
  }

  const Body& k_;
  const std::map<const Op*, WaitPlan>& waits_;
  const std::unordered_set<const Op*>& starts_;
  std::vector<int> roots_;
  std::vector<std::pair<Body*, size_t>> start_at_, wait_at_;
  std::unordered_set<const Op*> copied_starts_;
};

std::optional<MirroredKernel> mirror_dma_pipeline(const Body& kernel, const std::vector<ParamRole>& roles,
                                                  const std::vector<bool>& linear, std::string& why) {
  for (size_t p = 0; p < roles.size(); ++p)
    if (roles[p] == ParamRole::aliased_input && linear[p]) {
      why = "an input aliased to an output is linear";
      return std::nullopt;
    }
  std::optional<std::vector<Event>> trace = dma_trace::trace_kernel(kernel, why);
  if (!trace) return std::nullopt;
  Checker c(kernel, *trace, roles, linear, why);
  if (!c.run()) return std::nullopt;
  return MirrorRewriter(kernel, c.waits, c.starts).run();
}

}  // namespace tessera::transpose
