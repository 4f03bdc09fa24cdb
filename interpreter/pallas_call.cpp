// pallas_call as Pallas's TPU interpret mode runs it
// (jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py): the call's
// inputs and outputs live in HBM buffers (padded to whole blocks); each core
// walks its share of the grid, and copies blocks between the HBM buffers and
// the kernel buffers as the grid schedule of ir/grid_schedule.h says (an
// input block in at the core's first step and whenever it moves, an output
// block out whenever it is about to move and after the core's last step).
// Refs in `any` / `hbm` memory are the HBM buffers themselves. Errors name
// the kernel, the operand, the grid point and the block index.
#include <algorithm>
#include <fstream>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "interpreter/axis_order.h"
#include "interpreter/eval.h"
#include "ir/grid_mapping.h"
#include "ir/grid_schedule.h"

namespace tessera::interp {
namespace {

bool is_hbm(MemSpace s) { return s == MemSpace::any || s == MemSpace::hbm; }

struct VecHash {
  size_t operator()(const std::vector<int64_t>& v) const {
    size_t h = 1469598103934665603ull;
    for (int64_t x : v) h = (h ^ static_cast<size_t>(x)) * 1099511628211ull;
    return h;
  }
};

// One block of one operand at one grid point.
struct Block {
  std::vector<int64_t> index;  // what the index map returned
  Region region;               // in the padded HBM buffer
  std::vector<int64_t> place;  // (start, size) per dim: what the grid schedule compares
};

struct Mapping {
  std::vector<BlockDim> dims;
  BlockGeometry geo;             // where blocks lie (ir/block_geometry.h)
  Shape array_shape, padded_shape;
  std::vector<int64_t> offset;  // where the array starts inside the padded buffer
  std::string name;             // `input "x"`
  std::string short_name;       // `"x"` or `0`
  bool is_input = true;
  bool any = false;             // kernel sees the HBM buffer itself
  bool bounded = false;         // has a BoundedSlice dim
  bool aliased = false;         // output aliased to an input
  int param = 0;                // kernel parameter index
  // An output whose HBM buffer is filled with uninitialized values only where
  // no block was copied out, at exit, instead of all of it up front. Safe when
  // nothing reads the buffer during the kernel (not aliased, not `any`) and
  // its blocks tile it without overlap (Blocked / Squeezed dims, no padding
  // offset): then the blocks copied out are exactly what was written.
  bool lazy_fill = false;
  int64_t num_tiles = 1;        // with lazy_fill: how many distinct blocks tile the buffer
};

// Marks the kernel frame as running an index map for the scope's duration.
class IndexMapScope {
 public:
  explicit IndexMapScope(KernelFrame* f) : f_(f) {
    if (f_) f_->in_index_map = true;
  }
  ~IndexMapScope() {
    if (f_) f_->in_index_map = false;
  }
  IndexMapScope(const IndexMapScope&) = delete;
  IndexMapScope& operator=(const IndexMapScope&) = delete;

 private:
  KernelFrame* f_;
};

std::string pad_note(const Mapping& m) {
  if (m.padded_shape == m.array_shape) return "";
  return " (padded to " + shape_str(m.padded_shape) + ")";
}

// Whether block b of mapping mp lies in its padded buffer, as the block
// geometry defines it (the prover proves the same condition). The buffer's own
// extent must agree: a disagreement is a bug in tessera, reported as one
// rather than read or written out of bounds.
bool block_in_bounds(const Mapping& mp, const Block& b, const Shape& buffer) {
  bool ok = mp.geo.in_bounds(b.index);
  if (ok != region_in_bounds(b.region, buffer))
    throw Error("internal error: the block geometry of " + mp.name + " disagrees with its buffer " + shape_str(buffer) +
                " at block index " + ints_str(b.index));
  return ok;
}

class PallasRun {
 public:
  PallasRun(Interp& in, const Op& op, const std::vector<Val>& operands, Ctx& ctx)
      : in_(in), m_(in.machine()), op_(op), operands_(operands), ctx_(ctx), g_(grid_mapping(op)) {}

  std::vector<Val> run();

 private:
  void setup_grid();
  void setup_mappings();
  void allocate();
  // The initial contents of a new buffer (uninitialized values, or unfilled
  // when `fill` is false); past the memory limit, the error names `what`.
  Array new_buffer(DType d, const Shape& shape, bool fill, const std::string& what) const;
  void run_core(int core);
  KernelFrame kernel_frame() const;
  void run_kernel(std::vector<Val>& args, Ctx& cc, const std::vector<int64_t>& point);
  // Revisiting: per output, where each block's visit began and ended.
  struct Visit {
    std::vector<int64_t> first, last;
  };
  using Visits = std::unordered_map<std::vector<int64_t>, Visit, VecHash>;
  void check_revisit(int j, const Block& b, bool carried, const std::vector<int64_t>& point, Visits& seen) const;
  std::vector<Block> blocks_at(const std::vector<int64_t>& point, Ctx& cc);
  void copy_in(int j, const Block& b, Ctx& cc, const std::vector<int64_t>& point);
  void copy_out(int j, const Block& b, Ctx& cc, const std::vector<int64_t>& point);
  std::string at(const std::vector<int64_t>& point, const Ctx& cc) const {
    std::string s = " in iteration " + ints_str(point);
    if (ctx_.num_devices() > 1 || m_.cores() > 1)
      s += " on device " + std::to_string(cc.device) + " (core " + std::to_string(cc.core) + ")";
    return s;
  }
  std::string kernel_note() const { return " (kernel @" + g_.kernel->name() + ")"; }
  // Throws when a semaphore of this device has a non-zero count (`when` ends the message).
  void check_semaphores_zero(const std::string& when);
  tpu::BufferRef for_core(const tpu::BufferRef& b, int core) const {
    if (!b || is_hbm(b->space) || b->is_semaphore() || core == b->core) return b;
    return m_.find(b->device, core, b->space, b->id);
  }

  Interp& in_;
  tpu::Machine& m_;
  const Op& op_;
  const std::vector<Val>& operands_;
  Ctx& ctx_;
  GridMapping g_;

  std::vector<int64_t> grid_;
  GridOrder order_;              // ir/grid_schedule.h
  std::vector<AxisOrder> perm_;  // per grid axis
  std::vector<Mapping> maps_;
  std::vector<tpu::BufferRef> hbm_;          // per mapping: its HBM buffer
  std::vector<tpu::BufferRef> kernel_bufs_;  // per kernel param (core 0's; others by id)
  std::vector<tpu::BufferRef> owned_;        // freed at the end
  std::vector<tpu::BufferRef> scalar_bufs_;  // SMEM scalar prefetch (core 0's)
  // Per mapping with lazy_fill: the places of the blocks copied out.
  std::vector<std::unordered_set<std::vector<int64_t>, VecHash>> written_;

  void fill_unwritten(int j);
};

void PallasRun::setup_grid() {
  grid_ = g_.grid;
  int dyn = 0;
  for (int64_t& s : grid_) {
    if (s >= 0) continue;
    s = operands_.at(dyn).arr.get_int(0);
    if (s < 0) throw Error(op_.loc, "pallas_call: dynamic grid size " + std::to_string(dyn) + " is negative (" + std::to_string(s) + ")");
    ++dyn;
  }
  // Program ids are i32 (the verifier rejects such grids; this guards unverified modules).
  for (size_t d = 0; d < grid_.size(); ++d)
    if (grid_[d] > INT32_MAX)
      throw Error(op_.loc, "pallas_call: grid size " + std::to_string(grid_[d]) + " on axis " + std::to_string(d) +
                               " does not fit the i32 program ids" + kernel_note());
  if (!parallel_axes_form_prefix(g_))
    throw Error(op_.loc, "pallas_call: Dimensions with parallel semantics must form a prefix of the grid" + kernel_note());
  std::optional<GridOrder> order = grid_order(g_, grid_);
  if (!order) throw Error(op_.loc, "pallas_call: the grid " + ints_str(grid_) + " has more than 2^63 points" + kernel_note());
  order_ = std::move(*order);
  int rank = static_cast<int>(grid_.size());
  perm_.assign(rank, {});
  if (in_.opts().grid_seed) {
    std::mt19937_64 rng(*in_.opts().grid_seed);
    for (int d = 0; d < order_.parallel; ++d) perm_[d] = AxisOrder(grid_[d], rng);
  }
}

void PallasRun::setup_mappings() {
  int total = g_.num_inputs() + g_.num_outputs();
  std::vector<bool> aliased_out(g_.num_outputs(), false);
  for (auto [i, o] : g_.aliases) aliased_out[o] = true;
  for (int mi = 0; mi < total; ++mi) {
    Mapping mp;
    mp.is_input = mi < g_.num_inputs();
    mp.dims = g_.dims(mi);
    mp.array_shape = g_.array(mi).shape();
    mp.name = g_.describe(mi);
    mp.short_name = mp.name.substr(mp.name.find(' ') + 1);
    mp.param = mp.is_input ? g_.input_param(mi) : g_.output_param(mi - g_.num_inputs());
    mp.any = is_hbm(g_.spec(mi).mem);
    mp.aliased = !mp.is_input && aliased_out[mi - g_.num_inputs()];
    if (mp.dims.size() != mp.array_shape.size())
      throw Error(op_.loc, "pallas_call: the block of " + mp.name + " has rank " + std::to_string(mp.dims.size()) +
                               " but the array has rank " + std::to_string(mp.array_shape.size()));
    mp.geo = g_.geometry(mi);
    mp.padded_shape = mp.geo.padded_shape();
    mp.offset = mp.geo.pad_lo();
    for (const BlockDim& b : mp.dims) mp.bounded |= b.kind == BlockDimKind::BoundedSlice;
    mp.lazy_fill = !mp.is_input && !mp.any && !mp.aliased;
    for (size_t d = 0; d < mp.dims.size() && mp.lazy_fill; ++d) {
      const BlockDim& b = mp.dims[d];
      int64_t size = b.kind == BlockDimKind::Squeezed ? 1 : b.size;
      mp.lazy_fill = (b.kind == BlockDimKind::Blocked || b.kind == BlockDimKind::Squeezed) && size > 0 &&
                     mp.padded_shape[d] % size == 0 && mp.offset[d] == 0;
      if (mp.lazy_fill) mp.num_tiles *= mp.padded_shape[d] / size;
    }
    maps_.push_back(std::move(mp));
  }
  written_.resize(maps_.size());
}

Array PallasRun::new_buffer(DType d, const Shape& shape, bool fill, const std::string& what) const {
  try {
    return fill ? uninitialized_array(d, shape, m_.uninit_zero()) : Array::uninitialized(d, shape);
  } catch (const Error& e) {
    throw Error(op_.loc, "pallas_call: " + what + ": " + e.message() + kernel_note());
  }
}

void PallasRun::allocate() {
  int dev = ctx_.device;
  const Body& k = *g_.kernel;
  // Scalar prefetch: SMEM, one copy per core.
  for (int j = 0; j < g_.num_scalar_prefetch(); ++j) {
    const Val& v = operands_.at(g_.scalar_prefetch_operand(j));
    std::string pname = j < static_cast<int>(k.params().size()) ? k.params()[j]->name : std::to_string(j);
    auto b = m_.allocate(dev, -1, MemSpace::smem, v.is_ref() ? v.ref->data : v.arr, "scalar prefetch \"" + pname + "\"");
    scalar_bufs_.push_back(b);
    owned_.push_back(b);
  }
  // HBM buffers of the inputs (padded) and outputs (aliased ones share).
  for (int i = 0; i < g_.num_inputs(); ++i) {
    const Mapping& mp = maps_[i];
    const Val& v = operands_.at(g_.input_operand(i));
    if (v.is_ref()) {
      if (mp.padded_shape != mp.array_shape)
        throw Error(op_.loc, "pallas_call: " + mp.name + " is passed as a Ref but its blocks do not tile it exactly (it would need padding to " +
                                 shape_str(mp.padded_shape) + "); not supported");
      hbm_.push_back(v.ref);
      continue;
    }
    Array a = v.arr;
    if (mp.padded_shape != mp.array_shape) {
      Array p = new_buffer(a.dtype(), mp.padded_shape, true, "the HBM buffer of " + mp.name + pad_note(mp));
      Region r = full_region(mp.array_shape);
      for (size_t d = 0; d < r.size(); ++d) r[d].start = mp.offset[d];
      write_region(p, r, a);
      a = p;
    }
    auto b = m_.allocate(dev, -1, MemSpace::any, a, mp.name);
    hbm_.push_back(b);
    owned_.push_back(b);
  }
  for (int o = 0; o < g_.num_outputs(); ++o) {
    const Mapping& mp = maps_[g_.num_inputs() + o];
    int alias = -1;
    for (auto [i, oo] : g_.aliases)
      if (oo == o) alias = static_cast<int>(i);
    if (alias >= 0) {
      if (maps_[alias].padded_shape != mp.padded_shape)
        throw Error(op_.loc, "pallas_call: " + mp.name + " is aliased to " + maps_[alias].name +
                                 " but their blocks pad them differently");
      hbm_.push_back(hbm_[alias]);
      continue;
    }
    const Type& t = g_.out_types[o];
    Array init = new_buffer(t.dtype(), mp.padded_shape, !mp.lazy_fill, "the HBM buffer of " + mp.name + pad_note(mp));
    auto b = m_.allocate(dev, -1, MemSpace::any, init, mp.name);
    hbm_.push_back(b);
    owned_.push_back(b);
  }
  // Kernel parameters.
  kernel_bufs_.assign(k.params().size(), nullptr);
  for (int j = 0; j < g_.num_scalar_prefetch(); ++j) kernel_bufs_[j] = scalar_bufs_[j];
  for (size_t mi = 0; mi < maps_.size(); ++mi) {
    const Mapping& mp = maps_[mi];
    if (mp.param >= static_cast<int>(k.params().size())) throw Error(op_.loc, "pallas_call: the kernel has too few parameters");
    const Type& t = k.params()[mp.param]->type;
    if (mp.any) {
      kernel_bufs_[mp.param] = hbm_[mi];
      continue;
    }
    auto b = m_.allocate(dev, -1, t.mem_space(), new_buffer(t.dtype(), t.shape(), true, "the block of " + mp.name),
                         mp.name + " block");
    kernel_bufs_[mp.param] = b;
    owned_.push_back(b);
  }
  for (size_t s = 0; s < g_.scratch_types.size(); ++s) {
    int p = g_.scratch_param(static_cast<int>(s));
    if (p >= static_cast<int>(k.params().size())) throw Error(op_.loc, "pallas_call: the kernel has too few parameters");
    const Type& t = g_.scratch_types[s];
    std::string name = "scratch \"" + k.params()[p]->name + "\"";
    if (t.mem_space() == MemSpace::semaphore || is_semaphore(t.dtype())) {
      kernel_bufs_[p] = m_.allocate_semaphores(dev, -1, t.dtype(), t.shape(), name);
      continue;
    }
    auto b = m_.allocate(dev, -1, t.mem_space(), new_buffer(t.dtype(), t.shape(), true, name), name);
    kernel_bufs_[p] = b;
    owned_.push_back(b);
  }
}

std::vector<Block> PallasRun::blocks_at(const std::vector<int64_t>& point, Ctx& cc) {
  std::vector<Block> out(maps_.size());
  std::vector<Val> base;
  for (int64_t p : point) base.push_back(Val{Array::scalar(DType::i32, static_cast<double>(p)), nullptr});
  for (const auto& b : scalar_bufs_) base.push_back(Val{Array(), for_core(b, cc.core)});
  for (size_t mi = 0; mi < maps_.size(); ++mi) {
    const Mapping& mp = maps_[mi];
    Block& blk = out[mi];
    if (mp.any) continue;
    const BlockSpec& spec = g_.spec(static_cast<int>(mi));
    std::vector<int64_t> idx;
    if (spec.index_map) {
      std::vector<Val> r;
      IndexMapScope scope(cc.kernel);
      try {
        r = in_.eval(*spec.index_map, base, cc);
      } catch (const tpu::TaskFailure&) {
        throw;
      } catch (const Error& e) {
        throw Error(e.loc(), e.message() + " (in index map @" + spec.index_map->name() + " of " + mp.name + at(point, cc) + ")");
      }
      for (const Val& v : r) idx.push_back(v.arr.get_int(0));
    } else {
      idx.assign(index_map_arity(mp.dims), 0);
    }
    if (static_cast<int>(idx.size()) != index_map_arity(mp.dims))
      throw Error(op_.loc, "pallas_call: the index map of " + mp.name + " returned " + std::to_string(idx.size()) +
                               " values, expected " + std::to_string(index_map_arity(mp.dims)));
    std::vector<BlockGeometry::Extent> extent = mp.geo.block_at(idx);
    for (size_t d = 0; d < extent.size(); ++d) {
      const BlockDim& dim = mp.geo.dims[d].dim;
      if (dim.kind == BlockDimKind::BoundedSlice && (extent[d].size < 0 || extent[d].size > dim.size))
        throw Error(op_.loc, "pallas_call: the index map of " + mp.name + " returned a slice of size " +
                                 std::to_string(extent[d].size) + " for a BoundedSlice(" + std::to_string(dim.size) + ") dim" +
                                 at(point, cc) + kernel_note());
      blk.region.push_back(Sel{extent[d].start, extent[d].size, 1, dim.kind != BlockDimKind::Squeezed});
      blk.place.insert(blk.place.end(), {extent[d].start, extent[d].size});
    }
    blk.index = std::move(idx);
  }
  return out;
}

// The part of a kernel buffer a block fills: all of it, except for
// BoundedSlice dims (the leading `size` elements).
Region kernel_region(const Block& b, const Shape& kernel_shape) {
  Region r = full_region(kernel_shape);
  size_t k = 0;
  for (const Sel& s : b.region) {
    if (!s.keep) continue;
    if (k < r.size()) r[k].size = s.size;
    ++k;
  }
  return r;
}

// Opens `event`, a block copy on the timeline (one tick long), when there is one.
void copy_event(std::optional<Timeline::Span>& event, Interp& in, const Ctx& cc, const char* verb,
                const std::string& operand, const Block& b, DType d) {
  Timeline* tl = in.timeline();
  if (!tl) return;
  event.emplace(*tl, in.global_core(cc), verb + operand, "copy",
                TraceArgs{arg("block", b.index), arg("region", region_str(b.region)),
                          arg("bytes", region_elements(b.region) * dtype_bytes(d))});
  tl->tick();
}

void PallasRun::copy_in(int j, const Block& b, Ctx& cc, const std::vector<int64_t>& point) {
  const Mapping& mp = maps_[j];
  tpu::MemBuffer& src = *hbm_[j];
  std::optional<Timeline::Span> event;
  copy_event(event, in_, cc, "copy in ", mp.short_name, b, src.data.dtype());
  tpu::BufferRef dst = for_core(kernel_bufs_[mp.param], cc.core);
  bool ok = block_in_bounds(mp, b, src.data.shape());
  if (!ok && in_.opts().oob == RunOptions::Oob::raise)
    throw Error(op_.loc, "Out-of-bounds block index " + ints_str(b.index) + " for input " + mp.short_name + at(point, cc) +
                             ": reading " + region_str(b.region) + " but input has shape " + shape_str(mp.array_shape) +
                             pad_note(mp) + kernel_note());
  CostFigures moved;
  moved.bytes_in = region_elements(b.region) * dtype_bytes(src.data.dtype());
  in_.count(cc, moved);
  in_.charge(op_.loc, region_elements(b.region));
  int gc = in_.global_core(cc);
  m_.on_read(src, b.region, gc, "the copy-in of " + mp.name + at(point, cc), op_.loc);
  m_.on_write(*dst, full_region(dst->data.shape()), gc, "the copy-in of " + mp.name + at(point, cc), op_.loc);
  // Into the kernel buffer itself when nothing else holds it: one buffer per
  // operand for the whole grid, warm in cache.
  if (ok && !mp.bounded && !dst->data.shared() && dst->data.dtype() == src.data.dtype() &&
      dst->data.size() == region_elements(b.region)) {
    read_region_into(src.data, b.region, dst->data);
    return;
  }
  Array data = read_region(src.data, b.region, true, m_.uninit_zero());
  if (!mp.bounded) dst->data = data.reshaped(dst->data.shape());
  else write_region(dst->writable(), kernel_region(b, dst->data.shape()), data);
}

void PallasRun::copy_out(int j, const Block& b, Ctx& cc, const std::vector<int64_t>& point) {
  const Mapping& mp = maps_[j];
  tpu::MemBuffer& dst = *hbm_[j];
  tpu::BufferRef src = for_core(kernel_bufs_[mp.param], cc.core);
  std::optional<Timeline::Span> event;
  copy_event(event, in_, cc, "copy out ", mp.short_name, b, dst.data.dtype());
  if (!region_in_bounds(b.region, dst.data.shape()))
    throw Error(op_.loc, "Out-of-bounds block index " + ints_str(b.index) + " for output " + mp.short_name + at(point, cc) +
                             ": writing " + region_str(b.region) + " but output has shape " + shape_str(mp.array_shape) +
                             pad_note(mp) + kernel_note());
  CostFigures moved;
  moved.bytes_out = region_elements(b.region) * dtype_bytes(dst.data.dtype());
  in_.count(cc, moved);
  in_.charge(op_.loc, region_elements(b.region));
  int gc = in_.global_core(cc);
  Region kr = kernel_region(b, src->data.shape());
  m_.on_read(*src, kr, gc, "the copy-out of " + mp.name + at(point, cc), op_.loc);
  m_.on_write(dst, b.region, gc, "the copy-out of " + mp.name + at(point, cc), op_.loc);
  Array data = mp.bounded ? read_region(src->data, kr) : src->data;
  if (region_is_full(b.region, dst.data.shape())) dst.data = data.reshaped(dst.data.shape());
  else write_region(dst.writable(), b.region, data.reshaped(region_shape(b.region)));
  if (mp.lazy_fill) written_[j].insert(b.place);
}

// At exit: a lazily filled output gets uninitialized values wherever no block
// was copied out. When the blocks copied out tile the buffer, nothing is left.
void PallasRun::fill_unwritten(int j) {
  const Mapping& mp = maps_[j];
  tpu::MemBuffer& buf = *hbm_[j];
  if (static_cast<int64_t>(written_[j].size()) == mp.num_tiles) return;
  Array filled = uninitialized_array(buf.data.dtype(), buf.data.shape(), m_.uninit_zero());
  for (const std::vector<int64_t>& key : written_[j]) {
    Region r(key.size() / 2);
    for (size_t d = 0; d < r.size(); ++d) r[d] = Sel{key[2 * d], key[2 * d + 1], 1, true};
    write_region(filled, r, read_region(buf.data, r));
  }
  buf.data = filled;
}

KernelFrame PallasRun::kernel_frame() const {
  KernelFrame frame;
  frame.kernel = "@" + g_.kernel->name();
  frame.grid = grid_;
  frame.kernel_axes = g_.kernel_axes();
  frame.grid_names = &g_.grid_names;
  frame.collective_id = op_.has(keys::collective_id) && std::holds_alternative<int64_t>(op_.param("collective_id"))
                            ? op_.param(keys::collective_id)
                            : -1;
  return frame;
}

void PallasRun::run_kernel(std::vector<Val>& args, Ctx& cc, const std::vector<int64_t>& point) {
  try {
    in_.eval(*g_.kernel, args, cc);
  } catch (const tpu::TaskFailure&) {
    throw;
  } catch (const Error& e) {
    throw Error(e.loc(), e.message() + " (in kernel @" + g_.kernel->name() + at(point, cc) + ")");
  }
}

// A carried block continues its visit; a new one must not have been visited
// before on this core (on a TPU it would start from a block already written
// back).
void PallasRun::check_revisit(int j, const Block& b, bool carried, const std::vector<int64_t>& point, Visits& seen) const {
  if (carried) {
    seen[b.place].last = point;
    return;
  }
  auto f = seen.find(b.place);
  if (f != seen.end())
    throw Error(op_.loc, "Revisited block " + region_str(b.region) + " of output " + maps_[j].short_name + " in iteration " +
                             ints_str(point) + ". The block was previously visited in iterations " +
                             ints_str(f->second.first) + " through " + ints_str(f->second.last) + " ." + kernel_note());
  seen[b.place] = Visit{point, point};
}

void PallasRun::run_core(int core) {
  GridOrder::Range steps = order_.core_steps(core, m_.cores());
  int64_t first = steps.first, last = steps.last;
  if (first >= last) return;
  Ctx cc = ctx_;
  cc.core = core;
  cc.scope = &op_;
  KernelFrame frame = kernel_frame();
  cc.kernel = &frame;
  int rank = static_cast<int>(grid_.size());
  std::vector<int64_t> loop = order_.coords(first);
  auto point_of = [&](const std::vector<int64_t>& l) {
    std::vector<int64_t> p(rank);
    for (int d = 0; d < rank; ++d) p[d] = perm_[d].at(l[d]);
    return p;
  };
  std::vector<Val> args(kernel_bufs_.size());
  for (size_t p = 0; p < kernel_bufs_.size(); ++p) args[p] = Val{Array(), for_core(kernel_bufs_[p], core)};
  for (size_t p = 0; p < args.size(); ++p)
    if (!args[p].ref) throw Error(op_.loc, "pallas_call: no buffer for kernel parameter " + std::to_string(p));

  int nin = g_.num_inputs();
  std::vector<Visits> visited(g_.num_outputs());

  Timeline* tl = in_.timeline();
  std::optional<Timeline::Span> call_event;
  if (tl)
    call_event.emplace(*tl, in_.global_core(cc), "pallas_call " + frame.kernel, "pallas_call",
                       TraceArgs{arg("grid", grid_), arg("first_iteration", first), arg("iterations", last - first)});
  std::vector<int64_t> point = point_of(loop);
  std::vector<Block> cur = blocks_at(point, cc), prev;
  bool trace = !in_.opts().trace_file.empty();
  for (int64_t it = first; it < last; ++it) {
    if (in_.sched().multi()) in_.sched().maybe_yield();
    std::optional<Timeline::Span> step_event;
    if (tl)
      step_event.emplace(*tl, in_.global_core(cc), "step " + ints_str(point), "grid",
                         TraceArgs{arg("point", point), arg("iteration", it), arg("kernel", frame.kernel)});
    in_.step(op_.loc);
    if (trace) m_.record(cc.device, core, point);
    frame.point = point;
    bool has_next = it + 1 < last;
    std::vector<int64_t> next_loop = loop, next_point;
    std::vector<Block> next;
    if (has_next) {
      order_.advance(next_loop);
      next_point = point_of(next_loop);
      next = blocks_at(next_point, cc);
    }
    // What the grid schedule does with each block at this step (ir/grid_schedule.h).
    auto residency = [&](int j) {
      static const std::vector<int64_t> none;
      return residency_at(it == first, !has_next, it == first ? none : prev[j].place, cur[j].place,
                          has_next ? next[j].place : none);
    };
    for (int j = 0; j < nin; ++j)
      if (!maps_[j].any && residency(j).copy_in) copy_in(j, cur[j], cc, point);
    run_kernel(args, cc, point);
    for (int o = 0; o < g_.num_outputs(); ++o) {
      int j = nin + o;
      if (maps_[j].any) continue;
      StepResidency r = residency(j);
      if (r.copy_out) copy_out(j, cur[j], cc, point);
      if (!maps_[j].aliased) check_revisit(j, cur[j], r.carried, point, visited[o]);
    }
    prev = std::move(cur);
    cur = std::move(next);
    loop = std::move(next_loop);
    point = std::move(next_point);
  }
}

void PallasRun::check_semaphores_zero(const std::string& when) {
  int dev = ctx_.device;
  auto left = m_.nonzero_semaphores(dev);
  if (left.empty()) return;
  auto& [name, gc, count] = left.front();
  throw Error(op_.loc, "Semaphore " + name + " has non-zero count " + std::to_string(count) + " for device " +
                           std::to_string(dev) + " (global core " + std::to_string(gc) + ")" + when + kernel_note() +
                           ": every signal (and DMA) must be matched by a wait");
}

std::vector<Val> PallasRun::run() {
  if (in_.opts().stats) in_.opts().stats->count_run(&op_);
  setup_grid();
  setup_mappings();
  int64_t sem_mark = m_.semaphore_mark(ctx_.device);
  allocate();
  auto& sched = in_.sched();
  int dev = ctx_.device;
  int cores = m_.cores();
  bool has_collective = op_.has(keys::collective_id) && std::holds_alternative<int64_t>(op_.param("collective_id"));
  // Every device has its buffers before any kernel starts (unless the kernel
  // synchronizes itself through its barrier semaphore).
  if (ctx_.devices && ctx_.devices->size > 1 && !has_collective)
    m_.barrier(*ctx_.devices, m_.global_core(dev, 0), "the other devices to reach pallas_call @" + g_.kernel->name());
  std::vector<int> cores_gc;
  for (int c = 0; c < cores; ++c) cores_gc.push_back(m_.global_core(dev, c));
  m_.fork_clocks(cores_gc[0], cores_gc);
  std::vector<int> tasks;
  for (int c = 1; c < cores; ++c)
    tasks.push_back(sched.spawn("device " + std::to_string(dev) + " core " + std::to_string(c), [this, c] { run_core(c); }));
  run_core(0);
  sched.join(tasks);
  m_.join_clocks(cores_gc[0], cores_gc);
  // The semaphore check comes before the finish barrier, as in
  // jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py: past the
  // barrier, a faster device may already run its next call of a collective
  // kernel and signal this device's barrier semaphore (one fixed id per
  // collective), which is not a count this call left behind.
  m_.run_pending_dma_work(dev);
  check_semaphores_zero(" at kernel exit");
  if (ctx_.devices && ctx_.devices->size > 1) {
    m_.barrier(*ctx_.devices, m_.global_core(dev, 0), "the other devices to finish pallas_call @" + g_.kernel->name());
    // A device that finished first may still be signalled by one finishing
    // later: once every device is past its kernel, look again. Without a
    // collective id no device can signal this one before it reaches the next
    // call's start barrier, so what is left now is this call's.
    if (!has_collective) check_semaphores_zero(" once every device finished the kernel");
  }
  std::vector<Val> results;
  for (int o = 0; o < g_.num_outputs(); ++o) {
    int j = g_.num_inputs() + o;
    const Mapping& mp = maps_[j];
    if (mp.lazy_fill) fill_unwritten(j);
    const tpu::MemBuffer& b = *hbm_[j];
    Region r = full_region(mp.array_shape);
    for (size_t d = 0; d < r.size(); ++d) r[d].start = mp.offset[d];
    results.push_back(Val{read_region(b.data, r), nullptr});
  }
  for (auto& b : owned_) m_.free(b, true);
  m_.release_semaphores(sem_mark);
  return results;
}

}  // namespace

std::vector<Val> run_pallas_call(Interp& in, const Op& op, const std::vector<Val>& operands, Ctx& ctx) {
  PallasRun run(in, op, operands, ctx);
  return run.run();
}

}  // namespace tessera::interp
