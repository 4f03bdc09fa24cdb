// Pallas kernel-side primitives: grid queries, hints, DMAs, semaphores,
// device ids and debugging.
#include "ir/indirect_dma.h"
#include "ir/prims/shape_util.h"

namespace tessera {
using namespace prims;
namespace {

std::vector<Type> i32_result(const Op& op, size_t operands) {
  expect_operands(op, operands);
  return {Type::scalar(DType::i32)};
}

// The semaphore a main operand selects: a Ref of semaphore dtype indexed down
// to one element.
void expect_semaphore(const Op& op, int k, std::initializer_list<DType> kinds, const char* what) {
  Type r = ref_operand(op, k);
  bool ok = false;
  for (DType d : kinds) ok |= r.dtype() == d;
  if (!ok) fail(op, std::string(what) + " must be a semaphore Ref, got " + r.str());
  const Indexer* ix = op.indexer_for(op.main_operand_index(k));
  if (ix && indirect_entry(*ix)) fail(op, std::string(what) + " cannot be indexed by a Ref of offsets");
  Shape s = ix ? indexed_shape(*ix, r.shape()) : r.shape();
  if (!s.empty()) fail(op, std::string(what) + " must select a single semaphore; index " + r.str() + " down to one element");
}

// The region main operand k selects, one extent per kept dim: a static size,
// or the Var of a dynamic size (`ds(0, %n)`).
struct Extent {
  int64_t size = 0;
  const Var* dyn = nullptr;
  bool operator==(const Extent&) const = default;
};

std::vector<Extent> region(const Op& op, int k) {
  Type r = ref_operand(op, k);
  const Indexer* ix = op.indexer_for(op.main_operand_index(k));
  std::vector<Extent> out;
  for (int d = 0; d < r.rank(); ++d) {
    IndexEntry e = ix && d < static_cast<int>(ix->entries.size()) ? ix->entries[d] : IndexEntry::full();
    if (e.kind == IndexEntry::Point) continue;
    if (e.has_dynamic_size()) {
      const Value& n = op.operands.at(e.dyn_size);
      // A literal size is as good as a static one.
      if (n.is_var()) out.push_back({0, n.var()});
      else out.push_back({n.literal().as_int(), nullptr});
    } else {
      out.push_back({e.kind == IndexEntry::Full ? r.shape()[d] : e.size, nullptr});
    }
  }
  return out;
}

std::string region_str(const std::vector<Extent>& r) {
  std::string s = "(";
  for (size_t i = 0; i < r.size(); ++i) s += (i ? ", " : "") + (r[i].dyn ? "%" + r[i].dyn->name : std::to_string(r[i].size));
  return s + (r.size() == 1 ? ",)" : ")");
}

// dma_start %src[..], %dst[..], %dst_sem[..]                       (local)
// dma_start %src[..], %dst[..], %dst_sem[..], %src_sem[..], %dev   (remote)
// dma_start[add=true] %src[..], %dst[%offsets, :], %dst_sem[..]    (scatter-add; see ir/indirect_dma.h)
std::vector<Type> dma_start(const Op& op) {
  size_t n = op.num_main_operands();
  if (n != 3 && n != 5) fail(op, "expects src, dst, dst_sem (local) or src, dst, dst_sem, src_sem, device_id (remote)");
  Type src = ref_operand(op, 0), dst = ref_operand(op, 1);
  if (src.dtype() != dst.dtype()) fail(op, "source and destination dtypes differ: " + src.str() + " vs " + dst.str());
  check_indirect_dma(op);
  // Dynamic sizes must be the same value in the same dim on both sides, so
  // the copy always has matching shapes (each side is bounds-checked at run time).
  if (region(op, 0) != region(op, 1))
    fail(op, "source region " + region_str(region(op, 0)) + " and destination region " + region_str(region(op, 1)) + " differ");
  expect_semaphore(op, 2, {DType::dma_sem}, "destination semaphore");
  if (n == 5) {
    expect_semaphore(op, 3, {DType::dma_sem}, "source semaphore");
    expect_int_scalar(op, array_operand(op, 4), "device id");
  }
  return {};
}

std::vector<Type> dma_wait(const Op& op) {
  expect_operands(op, 2);
  expect_semaphore(op, 0, {DType::dma_sem}, "semaphore");
  ref_operand(op, 1);
  // The wait counts bytes: the dense VMEM side of a gather / scatter names them as well.
  if (has_indirect_index(op))
    fail(op, "wait for a gather / scatter on its VMEM side (the region without offsets), not on the rows it indexes");
  return {};
}

// semaphore_signal %sem[..], %inc [, %device_id [, %core_index]]
std::vector<Type> semaphore_signal(const Op& op) {
  expect_operands(op, 2, 4);
  expect_semaphore(op, 0, {DType::sem, DType::barrier_sem}, "semaphore");
  for (size_t k = 1; k < op.num_main_operands(); ++k)
    expect_int_scalar(op, array_operand(op, static_cast<int>(k)), k == 1 ? "increment" : k == 2 ? "device id" : "core index");
  return {};
}

std::vector<Type> semaphore_wait(const Op& op) {
  expect_operands(op, 2);
  expect_semaphore(op, 0, {DType::sem, DType::barrier_sem}, "semaphore");
  expect_int_scalar(op, array_operand(op, 1), "decrement");
  return {};
}

std::vector<Type> semaphore_read(const Op& op) {
  expect_operands(op, 1);
  expect_semaphore(op, 0, {DType::sem, DType::dma_sem, DType::barrier_sem}, "semaphore");
  return {Type::scalar(DType::i32)};
}

void comms(const Op&, OpEffects& e) { e.comms = true; }
void io(const Op&, OpEffects& e) { e.io = true; }

void dma_effects(const Op& op, OpEffects& e) {
  auto m = op.main_operands();
  e.comms = true;
  e.add(m[0], kRead);
  e.add(m[1], kWrite);
  for (size_t k = 2; k < m.size() && k < 4; ++k) e.add(m[k], kWrite);
  // A gather / scatter reads its offsets when it starts.
  if (auto ind = indirect_dma(op)) e.add(ind->offsets, kRead);
}

void sem_effects(const Op& op, OpEffects& e) {
  e.comms = true;
  e.add(op.main_operand_index(0), kWrite);
}

}  // namespace

void register_pallas(Registry& r) {
  using K = ParamKind;
  r.add({"program_id", "index of the current grid point along axis", {req("axis", K::Int)},
         [](const Op& op) { return i32_result(op, 0); }, {}, false});
  r.add({"num_programs", "grid size along axis", {req("axis", K::Int)}, [](const Op& op) { return i32_result(op, 0); }, {}, false});
  r.add({"multiple_of", "asserts an integer is a multiple of value (a hint for provers and backends)",
         {req("value", K::Int)},
         [](const Op& op) {
           expect_operands(op, 1);
           Type t = array_operand(op, 0);
           if (!is_int(t.dtype())) fail(op, "applies to integers, got " + t.str());
           if (op.int_param("value") < 1) fail(op, "value must be positive");
           return std::vector<Type>{t};
         },
         {}, false});
  r.add({"dma_start", "starts an async copy src -> dst signalling dst_sem (and src_sem, remotely); rows by offsets with %ref[%offsets, :]",
         {opt("add", K::Bool, false)}, dma_start,
         dma_effects, true, {4, 5}});
  r.add({"dma_wait", "waits until sem has received the bytes of the given Ref region", {}, dma_wait, sem_effects, true});
  r.add({"semaphore_signal", "adds inc to a semaphore, optionally on another device / core", {}, semaphore_signal,
         sem_effects, true, {1, -1}});
  r.add({"semaphore_wait", "blocks until a semaphore holds dec, then subtracts it", {}, semaphore_wait, sem_effects, true, {1, 2}});
  r.add({"semaphore_read", "current value of a semaphore", {}, semaphore_read, comms, true});
  r.add({"get_barrier_semaphore", "the barrier semaphore shared by a collective kernel", {},
         [](const Op& op) {
           expect_operands(op, 0);
           return std::vector<Type>{Type::ref(DType::barrier_sem, {}, MemSpace::semaphore)};
         },
         comms, false});
  r.add({"axis_index", "index of this device along a named mapped axis", {req("axis_name", K::Ident)},
         [](const Op& op) { return i32_result(op, 0); }, {}, false});
  // jax.lax.axis_size: constant once the mesh is known (Pallas folds it when
  // tracing); kept as an op so a kernel can be written for any device count.
  r.add({"axis_size", "number of devices (cores, grid steps) along a named mapped axis", {req("axis_name", K::Ident)},
         [](const Op& op) { return i32_result(op, 0); }, {}, false});
  r.add({"device_id", "flat logical id of this device", {}, [](const Op& op) { return i32_result(op, 0); }, {}, false});
  r.add({"debug_print", "prints fmt with {} replaced by scalar operands", {req("fmt", K::Str)},
         [](const Op& op) {
           for (size_t k = 0; k < op.num_main_operands(); ++k) array_operand(op, static_cast<int>(k));
           return std::vector<Type>{};
         },
         io, false});
  // pltpu.prng_seed / prng_random_bits: a per-core generator, seeded by one
  // or more integers, then drawn from (interpreter/prng.h). Both are ordered
  // (io): the order of draws is the program's.
  r.add({"prng_seed", "seeds this core's random-bit generator with one or more integer scalars", {},
         [](const Op& op) {
           if (op.num_main_operands() < 1) fail(op, "needs at least one seed");
           for (size_t k = 0; k < op.num_main_operands(); ++k)
             expect_int_scalar(op, array_operand(op, static_cast<int>(k)), "seed");
           return std::vector<Type>{};
         },
         io, false, {0, -1}});
  r.add({"prng_random_bits", "the next random i32 bits of this core's generator, in the given shape",
         {req("shape", K::Ints)},
         [](const Op& op) {
           expect_operands(op, 0);
           for (int64_t n : op.ints_param("shape"))
             if (n < 0) fail(op, "shape has a negative size");
           return std::vector<Type>{Type::array(DType::i32, op.ints_param("shape"))};
         },
         io, false});
  // pl.debug_check: `tessera run` stops with msg when the bool scalar is
  // false; `tessera prove` proves it true in kernels (kernel bounds claim).
  r.add({"debug_check", "stops the run with msg when the bool scalar operand is false", {req("msg", K::Str)},
         [](const Op& op) {
           expect_operands(op, 1);
           Type t = array_operand(op, 0);
           if (!is_bool(t.dtype()) || t.rank() != 0) fail(op, "expects a bool scalar, got " + t.str());
           return std::vector<Type>{};
         },
         io, false});
  r.add({"delay", "spins for a number of nanoseconds (ordered)", {},
         [](const Op& op) {
           expect_operands(op, 1);
           expect_int_scalar(op, array_operand(op, 0), "delay");
           return std::vector<Type>{};
         },
         io, false, {0, 1}});
}

}  // namespace tessera
