// Transpose rules of data movement inside kernels: dma_start / dma_wait.
//
// A local copy `dma_start src[r], dst[q], sem` overwrites dst[q] with src[r]:
// a linear map, the state form of `dst = src`. Its transpose is that of
// `swap` (jax/_src/state/primitives.py: _swap_transpose) on both sides at once:
//
//   ct_src[r] += ct_dst[q]      (accumulating: the forward may read src[r] more than once)
//   ct_dst[q]  = 0              (the forward overwrote dst[q]: earlier writers get no cotangent)
//
// A scatter-add (`dma_start[add=true] rows, table[offsets, :]`) keeps the old
// rows: its transpose gathers the cotangent rows and resets nothing. A gather
// (`dma_start table[offsets, :], rows`) transposes to a scatter-add into the
// table's cotangent, which sums the cotangents of repeated offsets.
//
// A cotangent Ref in VMEM / SMEM is read and written directly. One in `any`,
// HBM or shared memory is reached, as the forward reached its twin, by DMAs
// between it and the cotangent of the copy's VMEM side, whose region serves
// as the staging buffer (its old contents kept in registers meanwhile), so
// the rule allocates nothing. Every such DMA signals the forward copy's own
// semaphore (dst_sem: the tangent semaphore jvp allocated beside the primal
// one, which nothing else uses in the transposed kernel) and is waited for at
// once: the transposed copies are synchronous, each a balanced start/wait
// pair, and the forward's dma_wait needs no transpose.
//
// A DMA pipeline whose waits can be paired with their starts is instead
// transposed as a pipeline (dma_mirror.h): its waits arrive here rewritten as
// the dma_start of the copy each completes, and `ctx.dma_mirror` says which
// op is which. The transposed copy, `dst -> src` on the cotangents, starts
// at the forward's wait and is waited for at the forward's start, where a
// VMEM destination's cotangent is then reset; the checks that admitted the
// kernel make the copy exact as it stands (no read-add-write of an HBM
// cotangent, which starts at zero and is written once; no reset of one that
// nothing reads again).
//
// Not done (located errors): remote copies (a device id), scatters without
// `add` (where offsets repeat, the last write wins, and which one that is is
// not known), copies between two Refs both in `any` / HBM memory (no VMEM side
// to stage through), and regions with a dynamic size.
#include "ir/indirect_dma.h"
#include "transforms/dma_mirror.h"
#include "transforms/transpose.h"

namespace tessera::transpose {
namespace {

using Vals = std::vector<Value>;
using Cts = std::vector<Cotangent>;
using Mask = std::vector<bool>;

// One side of a copy: a Ref and the region its indexer selects, with the
// indexer's dynamic operands as values (entries number them from 0).
struct Region {
  Value ref;
  std::vector<IndexEntry> entries;
  Vals dyn;
  bool indexed_rows() const { return !entries.empty() && entries[0].is_indirect(); }
  bool direct() const { return !is_hbm_side(ref.type().mem_space()); }
};

// Main operand k of `op`, its operands renamed to `vals`. An operand without
// an indexer selects the whole Ref (every dim Full, as the prover expects).
Region region_of(const Op& op, int k, const Vals& vals) {
  int base = op.main_operand_index(k);
  Region r{vals[static_cast<size_t>(base)], {}, {}};
  const Indexer* ix = op.indexer_for(base);
  if (!ix) {
    r.entries.assign(static_cast<size_t>(r.ref.type().rank()), IndexEntry::full());
    return r;
  }
  auto local = [&](int operand) {
    r.dyn.push_back(vals[static_cast<size_t>(operand)]);
    return static_cast<int>(r.dyn.size()) - 1;
  };
  for (IndexEntry e : ix->entries) {
    if (e.is_dynamic()) e.dyn_start = local(e.dyn_start);
    if (e.has_dynamic_size()) e.dyn_size = local(e.dyn_size);
    r.entries.push_back(e);
  }
  return r;
}

// Appends `r` to an op's operands and indexers.
void append(const Region& r, Vals& operands, std::vector<Indexer>& indexers) {
  int base = static_cast<int>(operands.size());
  operands.push_back(r.ref);
  operands.insert(operands.end(), r.dyn.begin(), r.dyn.end());
  std::vector<IndexEntry> entries = r.entries;
  for (IndexEntry& e : entries) {
    if (e.is_dynamic()) e.dyn_start += base + 1;
    if (e.has_dynamic_size()) e.dyn_size += base + 1;
  }
  if (!entries.empty()) indexers.push_back(Indexer{base, std::move(entries)});
}

// Emits an op on regions (then plain values).
Vals emit_on(Builder& b, const char* prim, std::initializer_list<const Region*> regions, Vals values = {},
             Params params = {}) {
  Vals operands;
  std::vector<Indexer> ix;
  for (const Region* r : regions) append(*r, operands, ix);
  operands.insert(operands.end(), values.begin(), values.end());
  return b.emit(prim, std::move(operands), std::move(params), std::move(ix));
}

// A synchronous DMA from -> to (add: a scatter-add), signalling `sem` and
// waited for on the VMEM side `local`.
void copy_now(Builder& b, const Region& from, const Region& to, const Region& sem, const Region& local,
              bool add = false) {
  Params p;
  if (add) p.push_back({"add", true});
  emit_on(b, "dma_start", {&from, &to, &sem}, {}, std::move(p));
  emit_on(b, "dma_wait", {&sem, &local});
}

Value get(Builder& b, const Region& r) { return emit_on(b, "get", {&r})[0]; }
void put(Builder& b, const Region& r, Value v) { emit_on(b, "swap", {&r}, {std::move(v)}); }

std::string ref_name(const Value& v) {
  return v.is_var() && !v.var()->name.empty() ? "%" + v.var()->name : std::string("a Ref");
}

// The ends of a mirrored copy (see the top of the file): its start where
// the forward waited, its wait (and the reset of a VMEM destination's
// cotangent) where the forward started it.
void mirrored_end(Builder& b, DmaMirror::Role role, const Region& src, const Region& dst, const Region& sem) {
  if (role == DmaMirror::start_here) {
    emit_on(b, "dma_start", {&dst, &src, &sem});
    return;
  }
  const Region& local = dst.direct() ? dst : src;
  emit_on(b, "dma_wait", {&sem, &local});
  if (!dst.direct()) return;
  const Type& ref = dst.ref.type();
  put(b, dst, b.zeros(Type::array(ref.dtype(), indexed_shape(Indexer{0, dst.entries}, ref.shape()))));
}

// dma_start src, dst, dst_sem: the cotangent of dst's region moves into
// src's (see the top of the file). `x` holds the cotangent Refs of the
// linear src and dst in their places.
Cts dma_start_rule(Ctx& c, const Op& op, const Vals& x, const Mask& lin, const Cts&) {
  Cts none(op.operands.size());
  if (DmaMirror::Role role = c.dma_mirror ? c.dma_mirror->role(op) : DmaMirror::none; role != DmaMirror::none) {
    mirrored_end(c.b, role, region_of(op, 0, x), region_of(op, 1, x), region_of(op, 2, x));
    return none;
  }
  std::vector<int> main = op.main_operands();
  bool src_lin = lin[main[0]], dst_lin = lin[main[1]];
  if (!dst_lin) {
    if (src_lin)
      throw Error(op.loc, "transpose: `dma_start` copies the linear " + ref_name(op.operands[main[0]]) + " into " +
                              ref_name(op.operands[main[1]]) + ", which is not linear");
    return none;
  }
  if (main.size() == 5)
    throw Error(op.loc, "transpose: `dma_start` to another device (a remote copy of linear Refs) has no transpose rule "
                        "yet: it would be a remote copy in the opposite direction, with the semaphores mirrored "
                        "(not supported)");
  std::optional<IndirectDma> ind = indirect_dma(op);
  if (ind && !ind->is_gather() && !ind->add)
    throw Error(op.loc, "transpose: a scatter `dma_start` without add=true has no transpose rule: where offsets repeat, "
                        "the last write wins, and which one that is is not known (not supported; a scatter-add is)");
  Region src = region_of(op, 0, x), dst = region_of(op, 1, x), sem = region_of(op, 2, x);
  for (const Region* r : {&src, &dst})
    for (const IndexEntry& e : r->entries)
      if (e.has_dynamic_size())
        throw Error(op.loc, "transpose: `dma_start` of a region with a dynamic size has no transpose rule yet (not "
                            "supported)");
  if (!src.direct() && !dst.direct())
    throw Error(op.loc, "transpose: `dma_start` between two Refs in `any` / HBM memory has no transpose rule yet: its "
                        "cotangent would need a VMEM buffer to pass through (not supported)");
  Builder& b = c.b;
  bool overwrites = !op.param(keys::add);
  Value ct_dst;
  if (dst.direct()) {  // src: direct (a VMEM copy) or in HBM, staged through dst's region
    ct_dst = get(b, dst);
    if (overwrites) put(b, dst, b.zeros(ct_dst.type()));
    if (!src_lin) return none;
    if (src.direct()) {
      emit_on(b, "addupdate", {&src}, {ct_dst});
      return none;
    }
    // src in HBM, staged through dst's region, which ends zeroed.
    if (src.indexed_rows()) {  // a gather's transpose: a scatter-add, repeated offsets add up
      put(b, dst, ct_dst);
      copy_now(b, dst, src, sem, dst, true);
    } else {  // read, add, write back
      copy_now(b, src, dst, sem, dst);
      put(b, dst, b.binary("add", get(b, dst), ct_dst));
      copy_now(b, dst, src, sem, dst);
    }
    put(b, dst, b.zeros(ct_dst.type()));
    return none;
  }
  // dst in HBM (a write-back or a scatter-add), staged through src's VMEM
  // region, whose cotangent is held in registers meanwhile.
  if (!src_lin)
    throw Error(op.loc, "transpose: `dma_start` copies " + ref_name(op.operands[main[0]]) +
                            ", which is not linear, into the linear " + ref_name(op.operands[main[1]]) +
                            " in `any` / HBM memory: resetting its cotangent would need a VMEM buffer (not supported)");
  Value held = get(b, src);
  copy_now(b, dst, src, sem, src);  // a gather of the rows, for a scatter-add
  Value ct_dst_v = get(b, src);
  if (overwrites) {
    put(b, src, b.zeros(ct_dst_v.type()));
    copy_now(b, src, dst, sem, src);
  }
  put(b, src, b.binary("add", held, ct_dst_v));
  return none;
}

// dma_wait sem, ref: the transposed copy waits for itself (dma_start_rule).
Cts dma_wait_rule(Ctx&, const Op& op, const Vals&, const Mask&, const Cts&) { return Cts(op.operands.size()); }

}  // namespace

void add_dma_rules(RuleTable<RuleSet>& t) {
  t.set("dma_start", {dma_start_rule});
  t.set("dma_wait", {dma_wait_rule});
}

}  // namespace tessera::transpose
