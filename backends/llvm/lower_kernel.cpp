#include "backends/llvm/lower_kernel.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include <llvm/IR/IntrinsicsNVPTX.h>

#include "backends/llvm/codegen.h"
#include "backends/llvm/resident_output.h"
#include "backends/llvm/run_checks.h"
#include "ir/effects.h"
#include "ir/grid_schedule.h"
#include "ir/primitive.h"

namespace tessera::backends::llvm_lowering {
namespace {

// A symbol made of the kernel's name ([A-Za-z0-9_] only), unique in `module`.
std::string kernel_symbol(const llvm::Module& module, const std::string& name) {
  std::string base;
  for (char c : name) base += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "k_" + base;
  std::string sym = base;
  for (int n = 1; module.getFunction(sym); ++n) sym = base + "_" + std::to_string(n);
  return sym;
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// How the parallel axes map to the CUDA launch grid (Pallas-Triton's
// `_process_grid_to_3d_grid`): up to 3 axes keep their order as x, y, z;
// with more, or when y / z would pass CUDA's 65535, the leading axes are
// collapsed into x.
struct LaunchMapping {
  int collapsed = 1;              // how many leading parallel axes x holds
  std::vector<int64_t> launch;    // x, y, z
};

LaunchMapping launch_mapping(const std::vector<int64_t>& par) {
  LaunchMapping lm;
  int n = static_cast<int>(par.size());
  if (n == 0) {
    lm.launch = {1, 1, 1};
    return lm;
  }
  lm.collapsed = std::max(1, n - 2);
  // A trailing axis over CUDA's y / z limit joins x as well.
  while (lm.collapsed < n) {
    bool fits = true;
    for (int a = lm.collapsed; a < n; ++a) fits = fits && par[a] <= 65535;
    if (fits) break;
    ++lm.collapsed;
  }
  int64_t x = 1;
  for (int a = 0; a < lm.collapsed; ++a) x *= par[a];
  lm.launch = {x};
  for (int a = lm.collapsed; a < n; ++a) lm.launch.push_back(par[a]);
  while (lm.launch.size() < 3) lm.launch.push_back(1);
  return lm;
}

// Splits a row-major linear index over `sizes` into one index per axis (i64).
std::vector<llvm::Value*> delinearize(Lowering& L, llvm::Value* lin, const std::vector<int64_t>& sizes) {
  std::vector<llvm::Value*> out(sizes.size());
  for (size_t a = sizes.size(); a-- > 0;) {
    if (sizes[a] == 1) {
      out[a] = L.i64(0);
    } else if (a == 0) {
      out[a] = lin;
    } else {
      out[a] = L.b.CreateURem(lin, L.i64(sizes[a]));
      lin = L.b.CreateUDiv(lin, L.i64(sizes[a]));
    }
  }
  return out;
}

class KernelBuilder {
 public:
  KernelBuilder(llvm::Module& module, const Op& call, const LowerOptions& o)
      : module_(module), call_(call), o_(o), g_(grid_mapping(call)), b_(module.getContext()) {}

  KernelInfo build();

 private:
  llvm::Module& module_;
  const Op& call_;
  const LowerOptions& o_;
  GridMapping g_;
  llvm::IRBuilder<> b_;
  llvm::Function* fn_ = nullptr;
  std::vector<llvm::Value*> arrays_;  // generic pointers: prefetch, inputs, outputs
  llvm::GlobalVariable* check_record_ = nullptr;
  // Per input: its staged copy (stage_inputs), or none: addressed in place.
  struct Staged {
    RefView local;          // the kernel's block buffer in the arena
    llvm::Value* last;      // alloca of the index-map values last copied in (i64 each)
    int from_pointer;       // the array it is copied from (an aliased output's, else its own)
  };
  std::vector<std::optional<Staged>> staged_;
  // Per output: its block buffer (stage_outputs), or none: addressed in place.
  // `last` holds the index-map values of the block it holds (INT64_MIN: none
  // yet); `from_pointer` is the output's own array.
  std::vector<std::optional<Staged>> staged_out_;
  // The output block kept in registers over the sequential axes, if any
  // (resident_output.h), and which output it is.
  std::optional<ResidentOutput> resident_;
  int resident_output_ = -1;
  int threads_ = 1;  // per CTA on NVPTX (choose_threads), 1 on the host

  const LlvmTable& table() const {
    return o_.rules ? *o_.rules : o_.target == Target::nvptx ? ptx_table() : llvm_table();
  }
  void make_function(const std::string& symbol);
  void lower_grid_point(Lowering& L, const std::vector<RefView>& scratch);
  void choose_resident(Lowering& L);
  int choose_threads() const;
  void hold_resident(Lowering& L);
  RefView block_view(Lowering& L, int m, std::vector<llvm::Value*> index = {});
  RefView in_place_view(Lowering& L, int m, const std::vector<llvm::Value*>& index, llvm::Value** base_offset);
  void check_block_index(Lowering& L, int m, const std::vector<llvm::Value*>& index);
  llvm::Value* block_index_ok(Lowering& L, int m, const std::vector<llvm::Value*>& index);
  Lowering::BlockAhead block_ahead(Lowering& L, int m, std::vector<llvm::Value*> ids);
  std::optional<Lowering::BlockAhead> next_step_block(Lowering& L, int a, const Var* root);
  void stage_inputs(Lowering& L);
  void stage_outputs(Lowering& L);
  void copy_out_pending(Lowering& L, int o, const std::vector<llvm::Value*>* moved_to);
  void copy_in_if_moved(Lowering& L, int m, const Staged& s, const RefView& in_place,
                        const std::vector<llvm::Value*>& index);
  std::vector<llvm::Value*> index_map_values(Lowering& L, int m);
  RefView whole_array(Lowering& L, llvm::Value* base, const Type& array, const Type& ref_type, const Var* root);
};

// Ops of `body` and of every body nested in them.
int64_t count_ops(const Body& body) {
  int64_t n = static_cast<int64_t>(body.ops().size());
  for (const Op& op : body.ops())
    for (const BodyPtr& nested : op.nested_bodies()) n += count_ops(*nested);
  return n;
}

// Whether the kernel gets the linear passes instead of O3 (codegen.h).
bool past_o3_bound(const Body& kernel) { return count_ops(kernel) > kMaxO3Ops; }

void KernelBuilder::make_function(const std::string& symbol) {
  llvm::LLVMContext& ctx = module_.getContext();
  bool gpu = o_.target == Target::nvptx;
  llvm::Type* ptr = llvm::PointerType::get(ctx, gpu ? 1 : 0);
  int npointers = g_.num_scalar_prefetch() + g_.num_inputs() + g_.num_outputs() + 1;
  std::vector<llvm::Type*> params(npointers, ptr);
  if (!gpu) params.insert(params.end(), {b_.getInt64Ty(), b_.getInt64Ty()});
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), params, false);
  fn_ = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, symbol, module_);
  if (gpu) fn_->setCallingConv(llvm::CallingConv::PTX_Kernel);
  if (past_o3_bound(*g_.kernel)) fn_->addFnAttr(kLinearPassesAttr);
  // Without input_output_aliases no two pointers overlap: `noalias` lets the
  // host loops vectorize and NVPTX use the read-only cache for inputs.
  // An input the kernel writes (a transposed kernel zeroing the cotangent
  // block it has read) is not `readonly`: LLVM would be free to drop the
  // writes. The runner gives such an input a private copy (kernel_args.h).
  bool distinct = g_.aliases.empty();
  int nread = g_.num_scalar_prefetch() + g_.num_inputs();  // pointer p is kernel param p
  Effects fx = compute_effects(*g_.kernel);
  for (int p = 0; p < npointers; ++p) {
    if (distinct || p == npointers - 1) fn_->addParamAttr(p, llvm::Attribute::NoAlias);
    if (p < nread && !fx.writes(p) && !fx.accums(p)) fn_->addParamAttr(p, llvm::Attribute::ReadOnly);
    // Arrays on a GPU come from the driver's allocator (256-byte aligned):
    // 16 bytes lets element loops use vector loads and stores.
    int64_t array_align = o_.target == Target::nvptx ? 16 : 4;
    fn_->addParamAttr(p, llvm::Attribute::getWithAlignment(ctx, llvm::Align(p == npointers - 1 ? 64 : array_align)));
  }
  std::vector<std::string> names;
  for (int j = 0; j < g_.num_scalar_prefetch(); ++j) names.push_back(g_.kernel->params()[j]->name);
  for (int i = 0; i < g_.num_inputs(); ++i) names.push_back(g_.kernel->params()[g_.input_param(i)]->name);
  for (int i = 0; i < g_.num_outputs(); ++i) names.push_back(g_.kernel->params()[g_.output_param(i)]->name);
  names.push_back("workspace");
  if (!gpu) names.insert(names.end(), {"begin", "end"});
  for (size_t p = 0; p < names.size(); ++p) fn_->getArg(static_cast<unsigned>(p))->setName(names[p]);
  // The check record (run_checks.h), in global memory on NVPTX.
  auto* record_type = llvm::ArrayType::get(b_.getInt64Ty(), kCheckWords);
  check_record_ = new llvm::GlobalVariable(module_, record_type, false, llvm::GlobalValue::ExternalLinkage,
                                           llvm::Constant::getNullValue(record_type), symbol + "_check", nullptr,
                                           llvm::GlobalValue::NotThreadLocal, gpu ? 1 : 0, /*isExternallyInitialized=*/true);
  check_record_->setAlignment(llvm::Align(8));
  if (gpu) {
    // `.maxntid THREADS, 1, 1`: the launch always uses `threads` threads.
    llvm::NamedMDNode* ann = module_.getOrInsertNamedMetadata("nvvm.annotations");
    ann->addOperand(llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx, "maxntidx"),
                                            llvm::ConstantAsMetadata::get(b_.getInt32(threads_))}));
  }
}

RefView KernelBuilder::whole_array(Lowering& L, llvm::Value* base, const Type& array, const Type& ref_type,
                                   const Var* root) {
  RefView r;
  r.type = ref_type;
  r.base = base;
  r.root = root;
  std::vector<int64_t> st = row_major_strides(array.shape());
  for (size_t d = 0; d < array.shape().size(); ++d) {
    r.origin.push_back(L.i64(0));
    r.stride.push_back(L.i64(st[d]));
    r.extent.push_back(L.i64(array.shape()[d]));
  }
  return r;
}

// Block mapping m's index map at the current grid point, lowered through the
// same rules as the kernel: one i64 per value it returns.
std::vector<llvm::Value*> KernelBuilder::index_map_values(Lowering& L, int m) {
  const BlockSpec& spec = g_.spec(m);
  BlockGeometry geo = g_.geometry(m);
  std::vector<llvm::Value*> out;
  if (!spec.index_map) {
    out.assign(geo.index_arity(), L.i64(0));
    return out;
  }
  const Body& im = *spec.index_map;
  const auto& params = im.params();
  for (int a = 0; a < g_.grid_rank(); ++a) L.define(params[a], L.scalar_block(DType::i32, L.program_ids[a]));
  for (int j = 0; j < g_.num_scalar_prefetch(); ++j) {
    const Var* p = params[g_.grid_rank() + j];
    L.define_ref(p, whole_array(L, arrays_[j], g_.scalar_prefetch_types[j], p->type, p));
  }
  L.lower_ops(im);
  for (const Value& v : im.outputs()) {
    llvm::Value* x = L.scalar(v);
    out.push_back(L.b.CreateSExtOrTrunc(x, L.b.getInt64Ty()));
  }
  return out;
}

// The kernel's Ref of block mapping m at the current grid point: the block
// addressed in place in the whole array (ir/block_geometry.h says where),
// squeezed dims folded into the base, masks where a block may be partial.
RefView KernelBuilder::in_place_view(Lowering& L, int m, const std::vector<llvm::Value*>& index,
                                     llvm::Value** base_offset_out) {
  BlockGeometry geo = g_.geometry(m);
  const Var* param = g_.kernel->params()[m < g_.num_inputs() ? g_.input_param(m) : g_.output_param(m - g_.num_inputs())];
  const Shape& shape = g_.array(m).shape();
  std::vector<int64_t> st = row_major_strides(shape);
  RefView r;
  r.type = param->type;
  r.root = param;
  llvm::Value* base_offset = L.i64(0);
  size_t k = 0;
  for (size_t d = 0; d < geo.dims.size(); ++d) {
    const DimGeometry& dg = geo.dims[d];
    llvm::Value* v = index[k++];
    llvm::Value* start = dg.dim.kind == BlockDimKind::Blocked ? L.b.CreateMul(v, L.i64(dg.dim.size)) : v;
    llvm::Value* extent = L.i64(dg.extent);
    if (dg.dim.kind == BlockDimKind::BoundedSlice) {
      // Elements past the slice's size are not the block's.
      llvm::Value* size = index[k++];
      llvm::Value* end = L.b.CreateAdd(start, size);
      extent = L.b.CreateSelect(L.b.CreateICmpSLT(end, extent), end, extent);
    }
    // Padded coordinates -> array coordinates (Element dims' low padding).
    llvm::Value* origin = dg.pad_lo ? L.b.CreateSub(start, L.i64(dg.pad_lo)) : start;
    if (dg.dim.kind == BlockDimKind::Squeezed) {
      base_offset = L.b.CreateAdd(base_offset, L.b.CreateMul(origin, L.i64(st[d])));
      continue;
    }
    bool partial = dg.dim.kind == BlockDimKind::BoundedSlice || dg.pad_lo != 0 || dg.padded != dg.extent;
    r.maybe_partial = r.maybe_partial || partial;
    r.origin.push_back(origin);
    r.stride.push_back(L.i64(st[d]));
    r.extent.push_back(extent);
  }
  *base_offset_out = base_offset;
  return r;
}

RefView KernelBuilder::block_view(Lowering& L, int m, std::vector<llvm::Value*> index) {
  if (index.empty()) index = index_map_values(L, m);
  int pointer = g_.num_scalar_prefetch() + m;
  llvm::Value* base_offset = nullptr;
  RefView r = in_place_view(L, m, index, &base_offset);
  check_block_index(L, m, index);
  int nin = g_.num_inputs();
  if (m >= nin && staged_out_[static_cast<size_t>(m - nin)]) return staged_out_[static_cast<size_t>(m - nin)]->local;
  const std::optional<Staged>& staged = m < nin ? staged_[static_cast<size_t>(m)] : std::nullopt;
  r.base = L.b.CreateGEP(L.storage_type(g_.array(m).dtype()), arrays_[staged ? staged->from_pointer : pointer], {base_offset});
  if (!staged) return r;
  copy_in_if_moved(L, m, *staged, r, index);
  return staged->local;
}

// The block must lie in the padded array (ir/block_geometry.h), as the
// interpreter requires when it copies the block in or out.
void KernelBuilder::check_block_index(Lowering& L, int m, const std::vector<llvm::Value*>& index) {
  MemSpace mem = g_.spec(m).mem;
  if (mem == MemSpace::any || mem == MemSpace::hbm) return;
  L.check(block_index_ok(L, m, index), CheckKind::block_index, m, index);
}

llvm::Value* KernelBuilder::block_index_ok(Lowering& L, int m, const std::vector<llvm::Value*>& index) {
  BlockGeometry geo = g_.geometry(m);
  llvm::Value* ok = L.b.getTrue();
  size_t k = 0;
  for (const DimGeometry& dg : geo.dims) {
    DimGeometry::Range valid = dg.valid_index();
    llvm::Value* v = index[k++];
    ok = L.b.CreateAnd(ok, L.b.CreateAnd(L.b.CreateICmpSGE(v, L.i64(valid.lo)), L.b.CreateICmpSLE(v, L.i64(valid.hi))));
    if (dg.dim.kind != BlockDimKind::BoundedSlice) continue;
    llvm::Value* size = index[k++];
    ok = L.b.CreateAnd(ok, L.b.CreateAnd(L.b.CreateICmpSGE(size, L.i64(0)), L.b.CreateICmpSLE(size, L.i64(dg.dim.size))));
    ok = L.b.CreateAnd(ok, L.b.CreateICmpSLE(size, L.b.CreateSub(L.i64(dg.padded), v)));
  }
  return ok;
}

// Mapping m's block (addressed in place) at the grid point `ids`, emitted
// ahead of that point's step: valid when its index map's run-time checks
// hold (speculated: nothing is reported) and its block index is in range.
Lowering::BlockAhead KernelBuilder::block_ahead(Lowering& L, int m, std::vector<llvm::Value*> ids) {
  std::swap(L.program_ids, ids);
  llvm::Value* speculated = nullptr;
  L.speculating = &speculated;
  std::vector<llvm::Value*> index = index_map_values(L, m);
  L.speculating = nullptr;
  std::swap(L.program_ids, ids);
  llvm::Value* valid = speculated ? speculated : L.b.getTrue();
  if (MemSpace mem = g_.spec(m).mem; mem != MemSpace::any && mem != MemSpace::hbm)
    valid = L.b.CreateAnd(valid, block_index_ok(L, m, index));
  llvm::Value* base_offset = nullptr;
  RefView r = in_place_view(L, m, index, &base_offset);
  r.base = L.b.CreateGEP(L.storage_type(g_.array(m).dtype()), arrays_[static_cast<size_t>(g_.num_scalar_prefetch() + m)],
                         {base_offset});
  return {r, valid};
}

// Input `root`'s block at the next step of sequential axis `a` (the loop
// whose body is being lowered), for prefetching; valid only if that step
// exists. None for an input staged in the arena or not cut into blocks.
std::optional<Lowering::BlockAhead> KernelBuilder::next_step_block(Lowering& L, int a, const Var* root) {
  int m = -1;
  for (int i = 0; i < g_.num_inputs(); ++i)
    if (g_.kernel->params()[static_cast<size_t>(g_.input_param(i))] == root) m = i;
  if (m < 0 || staged_[static_cast<size_t>(m)] || g_.spec(m).mem == MemSpace::any || g_.spec(m).mem == MemSpace::hbm)
    return std::nullopt;
  std::vector<llvm::Value*> ids = L.program_ids;
  llvm::Value*& axis = ids[static_cast<size_t>(a)];
  axis = L.b.CreateAdd(axis, L.i32(1));
  llvm::Value* exists = L.b.CreateICmpSLT(axis, L.i32(static_cast<int32_t>(g_.grid[static_cast<size_t>(a)])));
  Lowering::BlockAhead next = block_ahead(L, m, std::move(ids));
  next.valid = L.b.CreateAnd(exists, next.valid);
  return next;
}

// Inputs that cannot be addressed in place: one aliased to an output (the
// kernel may write the output block before it has read the input block, and
// later input blocks must see earlier output blocks: they share the buffer)
// and one the kernel writes (the write lives in the block buffer until the
// next copy-in replaces it). Each gets a block buffer in the arena, refilled
// from the (shared) array when its index-map values change, as the
// interpreter copies an input block in (interpreter/pallas_call.cpp).
void KernelBuilder::stage_inputs(Lowering& L) {
  Effects fx = compute_effects(*g_.kernel);
  staged_.assign(static_cast<size_t>(g_.num_inputs()), std::nullopt);
  for (int i = 0; i < g_.num_inputs(); ++i) {
    int param = g_.input_param(i);
    int from = g_.num_scalar_prefetch() + i;
    bool aliased = false;
    for (auto [in, out] : g_.aliases)
      if (in == i) {
        aliased = true;
        from = g_.num_scalar_prefetch() + g_.num_inputs() + static_cast<int>(out);
      }
    MemSpace mem = g_.spec(i).mem;
    if ((!aliased && !fx.writes(param) && !fx.accums(param)) || mem == MemSpace::any || mem == MemSpace::hbm) continue;
    BlockGeometry geo = g_.geometry(i);
    const Var* p = g_.kernel->params()[param];
    const Shape& shape = p->type.shape();
    int64_t bytes = num_elements(shape) *
                    static_cast<int64_t>(module_.getDataLayout().getTypeAllocSize(L.storage_type(p->type.dtype())));
    Staged s{whole_array(L, L.arena_alloc(std::max<int64_t>(bytes, 1)), Type::array(p->type.dtype(), shape), p->type, p),
             nullptr, from};
    // Past a bounded slice's size, a block buffer keeps what it held: at first
    // the uninitialized values it was allocated with.
    bool bounded = false;
    for (const DimGeometry& dg : geo.dims) bounded = bounded || dg.dim.kind == BlockDimKind::BoundedSlice;
    if (bounded) L.fill_uninitialized(s.local);
    // Nothing copied in yet: values no index map returns (they are i32).
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    auto* type = llvm::ArrayType::get(entry.getInt64Ty(), static_cast<uint64_t>(geo.index_arity()));
    s.last = entry.CreateAlloca(type, nullptr, "last.block");
    for (int k = 0; k < geo.index_arity(); ++k)
      entry.CreateStore(entry.getInt64(INT64_MIN), entry.CreateConstInBoundsGEP2_64(type, s.last, 0, static_cast<uint64_t>(k)));
    staged_[static_cast<size_t>(i)] = std::move(s);
  }
}

// Outputs aliased to an input get a block buffer too, as the interpreter's
// output block: it keeps what the kernel wrote (and what the previous step
// left, uninitialized at first) and is copied out when the output's block
// changes and after the last step, not at every write. Addressed in place, the
// aliased input's next copy-in would see writes the interpreter has not yet
// copied out (an input block read back while the output block stays).
void KernelBuilder::stage_outputs(Lowering& L) {
  staged_out_.assign(static_cast<size_t>(g_.num_outputs()), std::nullopt);
  for (auto [in, out] : g_.aliases) {
    int o = static_cast<int>(out);
    int m = g_.num_inputs() + o;
    if (o < 0 || o >= g_.num_outputs() || staged_out_[static_cast<size_t>(o)]) continue;
    MemSpace mem = g_.spec(m).mem;
    if (mem == MemSpace::any || mem == MemSpace::hbm) continue;
    BlockGeometry geo = g_.geometry(m);
    const Var* p = g_.kernel->params()[g_.output_param(o)];
    const Shape& shape = p->type.shape();
    int64_t bytes = num_elements(shape) *
                    static_cast<int64_t>(module_.getDataLayout().getTypeAllocSize(L.storage_type(p->type.dtype())));
    Staged s{whole_array(L, L.arena_alloc(std::max<int64_t>(bytes, 1)), Type::array(p->type.dtype(), shape), p->type, p),
             nullptr, g_.num_scalar_prefetch() + m};
    L.fill_uninitialized(s.local);
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    auto* type = llvm::ArrayType::get(entry.getInt64Ty(), static_cast<uint64_t>(std::max(geo.index_arity(), 1)));
    s.last = entry.CreateAlloca(type, nullptr, "out.block");
    for (int k = 0; k < std::max(geo.index_arity(), 1); ++k)
      entry.CreateStore(entry.getInt64(INT64_MIN), entry.CreateConstInBoundsGEP2_64(type, s.last, 0, static_cast<uint64_t>(k)));
    staged_out_[static_cast<size_t>(o)] = std::move(s);
  }
}

// Copies output o's block buffer out to the block it holds, if it holds one:
// when `moved_to` (the current step's index-map values) differs from that
// block, which then becomes the one held, or unconditionally at the end.
void KernelBuilder::copy_out_pending(Lowering& L, int o, const std::vector<llvm::Value*>* moved_to) {
  const Staged& s = *staged_out_[static_cast<size_t>(o)];
  int m = g_.num_inputs() + o;
  int arity = g_.geometry(m).index_arity();
  auto* type = llvm::ArrayType::get(L.b.getInt64Ty(), static_cast<uint64_t>(std::max(arity, 1)));
  auto slot = [&](int k) { return L.b.CreateConstInBoundsGEP2_64(type, s.last, 0, static_cast<uint64_t>(k)); };
  llvm::Value* held = L.b.CreateICmpNE(L.b.CreateLoad(L.b.getInt64Ty(), slot(0)), L.i64(INT64_MIN));
  llvm::Value* moved = L.b.getTrue();
  if (moved_to) {
    moved = L.b.getFalse();
    for (int k = 0; k < arity; ++k)
      moved = L.b.CreateOr(moved, L.b.CreateICmpNE(L.b.CreateLoad(L.b.getInt64Ty(), slot(k)), (*moved_to)[static_cast<size_t>(k)]));
    if (arity == 0) moved = L.b.CreateNot(held);
  }
  // Every thread decides alike (each holds the index values in its own alloca).
  L.if_then(L.b.CreateAnd(held, moved), [&] {
    std::vector<llvm::Value*> last;
    for (int k = 0; k < arity; ++k) last.push_back(L.b.CreateLoad(L.b.getInt64Ty(), slot(k)));
    llvm::Value* base_offset = nullptr;
    RefView dst = in_place_view(L, m, last, &base_offset);
    dst.base = L.b.CreateGEP(L.storage_type(g_.array(m).dtype()), arrays_[s.from_pointer], {base_offset});
    // Elements outside the array (padding, past a partial block or a bounded
    // slice's size) are masked by the view's bounds.
    L.for_each_element(s.local.type.shape(), [&](const std::vector<llvm::Value*>& idx) {
      L.store(dst, idx, L.load(s.local, idx));
    });
  });
  if (!moved_to) return;
  L.if_then(moved, [&] {
    for (int k = 0; k < arity; ++k) L.b.CreateStore((*moved_to)[static_cast<size_t>(k)], slot(k));
    if (arity == 0) L.b.CreateStore(L.i64(0), slot(0));
  });
}

void KernelBuilder::copy_in_if_moved(Lowering& L, int m, const Staged& s, const RefView& in_place,
                                     const std::vector<llvm::Value*>& index) {
  auto* type = llvm::ArrayType::get(L.b.getInt64Ty(), index.size());
  auto slot = [&](size_t k) { return L.b.CreateConstInBoundsGEP2_64(type, s.last, 0, k); };
  llvm::Value* moved = L.b.getFalse();
  for (size_t k = 0; k < index.size(); ++k)
    moved = L.b.CreateOr(moved, L.b.CreateICmpNE(L.b.CreateLoad(L.b.getInt64Ty(), slot(k)), index[k]));
  // A bounded slice fills only its leading `size` elements (the second
  // index-map value of its dim), as the interpreter's copy-in does.
  std::vector<llvm::Value*> filled;  // per kernel dim: the bound, or null
  size_t k = 0;
  for (const DimGeometry& dg : g_.geometry(m).dims) {
    ++k;
    if (dg.dim.kind == BlockDimKind::Squeezed) continue;
    filled.push_back(dg.dim.kind == BlockDimKind::BoundedSlice ? index[k++] : nullptr);
  }
  // Every thread decides alike (each holds the index values in its own alloca).
  L.if_then(moved, [&] {
    for (size_t v = 0; v < index.size(); ++v) L.b.CreateStore(index[v], slot(v));
    L.for_each_element(s.local.type.shape(), [&](const std::vector<llvm::Value*>& idx) {
      llvm::Value* inside = nullptr;
      for (size_t d = 0; d < filled.size(); ++d)
        if (filled[d]) {
          llvm::Value* c = L.b.CreateICmpSLT(idx[d], filled[d]);
          inside = inside ? L.b.CreateAnd(inside, c) : c;
        }
      auto copy = [&] { L.store(s.local, idx, L.load(in_place, idx)); };
      if (inside)
        L.if_then(inside, copy);
      else
        copy();
    });
  });
}

// At most one output block in registers (they are many registers): the
// first that qualifies. Its slots are allocated once per kernel.
void KernelBuilder::choose_resident(Lowering& L) {
  int npar = 0;
  while (npar < g_.grid_rank() && L.program_ids[static_cast<size_t>(npar)]) ++npar;
  for (int o = 0; o < g_.num_outputs() && !resident_; ++o) {
    if (staged_out_[static_cast<size_t>(o)]) continue;
    resident_ = find_resident_output(g_, o, npar, o_.target, threads_, o_.sm);
    resident_output_ = o;
  }
  if (resident_) make_slots(L, *resident_);
}

// The resident block of this parallel grid point (the sequential axes do
// not move it), loaded into the registers before the first step. Its block
// index is checked first, as that step will check it (sequential axes at 0,
// the staged outputs' index maps, then the blocks before it in operand
// order): the same error for the same program, and the load never leaves
// the array. (Loading under a validity test instead made ptxas spill the
// f32 matmul's registers.)
void KernelBuilder::hold_resident(Lowering& L) {
  std::vector<llvm::Value*> ids = L.program_ids;
  for (llvm::Value*& id : L.program_ids)
    if (!id) id = L.i32(0);
  int nin = g_.num_inputs(), held = nin + resident_output_;
  for (int o = 0; o < g_.num_outputs(); ++o)
    if (staged_out_[static_cast<size_t>(o)]) index_map_values(L, nin + o);
  for (int m = 0; m < held; ++m) check_block_index(L, m, index_map_values(L, m));
  resident_->block = block_view(L, held);
  L.program_ids = std::move(ids);
  begin_resident(L, *resident_);
  L.resident = &*resident_;
}

// Everything one grid point does, the arbitrary axes as inner loops: the
// interpreter's row-major grid order restricted to one parallel point.
void KernelBuilder::lower_grid_point(Lowering& L, const std::vector<RefView>& scratch) {
  int rank = g_.grid_rank();
  if (!resident_) choose_resident(L);
  if (resident_) hold_resident(L);
  // The resident product prefetches across the steps of the one sequential
  // axis of more than one step, if there is exactly one.
  int prefetch_axis = -1, sequential = 0;
  for (int a = 0; a < rank; ++a)
    if (!L.program_ids[static_cast<size_t>(a)] && g_.grid[static_cast<size_t>(a)] > 1) prefetch_axis = a, ++sequential;
  if (!resident_ || sequential != 1) prefetch_axis = -1;
  std::function<void(int)> loop = [&](int a) {
    if (a < rank && L.program_ids[a]) return loop(a + 1);  // a parallel axis, already set
    if (a < rank) {
      if (g_.grid[a] == 1) {
        L.program_ids[a] = L.i32(0);
        loop(a + 1);
        L.program_ids[a] = nullptr;
        return;
      }
      L.for_range(L.i32(0), L.i32(static_cast<int32_t>(g_.grid[a])), [&](llvm::Value* i) {
        L.program_ids[a] = i;
        if (a == prefetch_axis) L.next_step_block = [&, a](const Var* root) { return next_step_block(L, a, root); };
        loop(a + 1);
        L.next_step_block = nullptr;
      });
      L.program_ids[a] = nullptr;
      return;
    }
    const Body& k = *g_.kernel;
    for (int j = 0; j < g_.num_scalar_prefetch(); ++j) {
      const Var* p = k.params()[j];
      L.define_ref(p, whole_array(L, arrays_[j], g_.scalar_prefetch_types[j], p->type, p));
    }
    // A staged output's block copied out before this step's copy-ins, as the
    // interpreter copies it out at the end of the step before.
    int nin = g_.num_inputs();
    std::vector<std::vector<llvm::Value*>> out_index(static_cast<size_t>(g_.num_outputs()));
    bool any_staged_out = false;
    for (int o = 0; o < g_.num_outputs(); ++o) {
      if (!staged_out_[static_cast<size_t>(o)]) continue;
      any_staged_out = true;
      out_index[static_cast<size_t>(o)] = index_map_values(L, nin + o);
      copy_out_pending(L, o, &out_index[static_cast<size_t>(o)]);
    }
    if (any_staged_out) L.barrier();
    for (int m = 0; m < nin + g_.num_outputs(); ++m) {
      const Var* p = k.params()[m < nin ? g_.input_param(m) : g_.output_param(m - nin)];
      L.define_ref(p, block_view(L, m, m < nin ? std::vector<llvm::Value*>{} : out_index[static_cast<size_t>(m - nin)]));
    }
    for (size_t s = 0; s < scratch.size(); ++s) L.define_ref(k.params()[g_.scratch_param(static_cast<int>(s))], scratch[s]);
    int64_t mark = L.arena_mark();
    L.lower_ops(k);
    L.arena_release(mark);
    // The next grid step's writes must not overtake this one's reads.
    L.barrier();
  };
  loop(0);
  if (resident_) store_resident(L, *resident_);
  L.resident = nullptr;
}

// The largest value or Ref block of `body` and its nested bodies, in elements.
int64_t largest_value(const Body& body) {
  int64_t n = 1;
  for (const Var* p : body.params()) n = std::max(n, num_elements(p->type.shape()));
  for (const Op& op : body.ops()) {
    for (const Var* r : op.results) n = std::max(n, num_elements(r->type.shape()));
    for (const BodyPtr& nested : op.nested_bodies()) n = std::max(n, largest_value(*nested));
  }
  return n;
}

// Threads per CTA: a power of two from 32 (one warp) up to
// LowerOptions::threads, the fewest that give every thread one run of the
// kernel's largest value (for_each_element: kVectorRun elements, or one in a
// kernel past kMaxO3Ops, whose element loops have no runs); so only kernels
// of small blocks (under 1,024 elements at the default 256) launch fewer
// threads, and more of their CTAs fit on an SM.
int KernelBuilder::choose_threads() const {
  if (o_.target != Target::nvptx) return 1;
  int64_t run = past_o3_bound(*g_.kernel) ? 1 : Lowering::kVectorRun;
  int64_t runs = (largest_value(*g_.kernel) + run - 1) / run;
  int threads = 32;
  while (threads < runs && threads < o_.threads) threads *= 2;
  return std::min(threads, o_.threads);
}

KernelInfo KernelBuilder::build() {
  for (int64_t s : g_.grid)
    if (s < 0) throw Error(call_.loc, table().target() + ": dynamic grids are not supported yet");
  if (o_.target == Target::nvptx && (o_.threads < 1 || o_.threads > 1024))
    throw Error(call_.loc, table().target() + ": a CTA has 1 to 1024 threads, not " + std::to_string(o_.threads));
  int rank = g_.grid_rank();
  // The grid's order (ir/grid_schedule.h): the parallel axes are launched as
  // CTAs, each running the arbitrary suffix in order.
  if (!parallel_axes_form_prefix(g_))
    throw Error(call_.loc, table().target() + ": parallel grid axes must form a prefix of the grid");
  int npar = leading_parallel_axes(g_);
  std::vector<int64_t> par(g_.grid.begin(), g_.grid.begin() + npar);

  KernelInfo info;
  info.symbol = kernel_symbol(module_, g_.kernel->name());
  info.op = &call_;
  threads_ = choose_threads();
  info.threads = threads_;
  for (int64_t s : par) info.parallel_points *= s;
  LaunchMapping lm = launch_mapping(par);
  info.launch_grid = lm.launch;
  for (int j = 0; j < g_.num_scalar_prefetch(); ++j) info.operand_of_pointer.push_back(g_.scalar_prefetch_operand(j));
  for (int i = 0; i < g_.num_inputs(); ++i) info.operand_of_pointer.push_back(g_.input_operand(i));
  for (int o = 0; o < g_.num_outputs(); ++o) info.operand_of_pointer.push_back(-1);

  make_function(info.symbol);
  llvm::BasicBlock* entry = llvm::BasicBlock::Create(module_.getContext(), "entry", fn_);
  b_.SetInsertPoint(entry);
  Lowering L(b_, fn_, o_.target, table(), threads_);
  L.check_record = check_record_;
  L.check_indices = o_.check_indices;
  L.uninit_zero = o_.uninit_zero;
  L.sm = o_.sm;
  info.check_symbol = check_record_->getName().str();
  L.grid = g_.grid;
  L.kernel_axes = g_.kernel_axes();
  L.program_ids.assign(rank, nullptr);
  bool gpu = o_.target == Target::nvptx;
  int narrays = g_.num_scalar_prefetch() + g_.num_inputs() + g_.num_outputs();
  llvm::Type* generic = llvm::PointerType::get(module_.getContext(), 0);
  for (int p = 0; p < narrays; ++p) {
    if (!gpu) {
      arrays_.push_back(fn_->getArg(p));
      continue;
    }
    // The generic pointer keeps the parameter's alignment for LLVM's
    // alignment inference (an address space cast hides it).
    arrays_.push_back(b_.CreateAddrSpaceCast(fn_->getArg(p), generic));
    b_.CreateAlignmentAssumption(module_.getDataLayout(), arrays_.back(), 16);
  }
  llvm::Value* workspace = gpu ? b_.CreateAddrSpaceCast(fn_->getArg(narrays), generic) : fn_->getArg(narrays);
  if (gpu) b_.CreateAlignmentAssumption(module_.getDataLayout(), workspace, 64);

  llvm::Instruction* arena_stride = nullptr;  // CTA arena offset: its size is known at the end
  // After the last step: the blocks still held by staged outputs.
  auto copy_out_all = [&] {
    for (int o = 0; o < g_.num_outputs(); ++o)
      if (staged_out_[static_cast<size_t>(o)]) copy_out_pending(L, o, nullptr);
  };
  auto set_parallel_ids = [&](const std::vector<llvm::Value*>& ids) {
    for (int a = 0; a < npar; ++a) L.program_ids[a] = b_.CreateTrunc(ids[a], b_.getInt32Ty());
  };
  auto scratch_views = [&] {
    std::vector<RefView> views;
    for (size_t s = 0; s < g_.scratch_types.size(); ++s) {
      const Type& t = g_.scratch_types[s];
      const Var* p = g_.kernel->params()[g_.scratch_param(static_cast<int>(s))];
      int64_t bytes = num_elements(t.shape()) *
                      static_cast<int64_t>(module_.getDataLayout().getTypeAllocSize(L.storage_type(t.dtype())));
      views.push_back(whole_array(L, L.arena_alloc(std::max<int64_t>(bytes, 1)), Type::array(t.dtype(), t.shape()), p->type, p));
      // The interpreter allocates scratch uninitialized once per call (per core).
      L.fill_uninitialized(views.back());
    }
    stage_inputs(L);
    stage_outputs(L);
    return views;
  };

  if (gpu) {
    L.thread_id = b_.CreateZExt(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {}), b_.getInt64Ty());
    llvm::Intrinsic::ID ctaid[3] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                    llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
    std::vector<llvm::Value*> cta(3);
    for (int d = 0; d < 3; ++d)
      cta[d] = lm.launch[d] == 1 ? L.i64(0)
                                 : b_.CreateZExt(b_.CreateIntrinsic(ctaid[d], {}, {}), b_.getInt64Ty(), "ctaid");
    std::vector<int64_t> lead(par.begin(), par.begin() + std::min<int>(lm.collapsed, npar));
    std::vector<llvm::Value*> ids = delinearize(L, cta[0], lead);
    for (int a = lm.collapsed; a < npar; ++a) ids.push_back(cta[1 + a - lm.collapsed]);
    set_parallel_ids(ids);
    llvm::Value* linear_cta = b_.CreateAdd(cta[0], b_.CreateMul(L.i64(lm.launch[0]),
                                                                b_.CreateAdd(cta[1], b_.CreateMul(L.i64(lm.launch[1]), cta[2]))));
    arena_stride = llvm::BinaryOperator::CreateMul(linear_cta, L.i64(0), "arena.offset");
    b_.Insert(arena_stride);
    L.arena_base = b_.CreateInBoundsGEP(b_.getInt8Ty(), workspace, {arena_stride}, "arena.cta");
    lower_grid_point(L, scratch_views());
    copy_out_all();
  } else {
    L.thread_id = L.i64(0);
    L.arena_base = workspace;
    std::vector<RefView> scratch = scratch_views();
    L.for_range(fn_->getArg(narrays + 1), fn_->getArg(narrays + 2), [&](llvm::Value* lin) {
      set_parallel_ids(delinearize(L, lin, par));
      lower_grid_point(L, scratch);
    });
    copy_out_all();
  }
  b_.CreateRetVoid();
  info.arena_bytes = L.arena_bytes();
  info.shared_bytes = L.shared_bytes();
  info.checked_ops = L.checked_ops;
  if (resident_) {
    info.resident_output = resident_->root->name;
    info.resident_elements = owned_elements(resident_->tiles.plan);
  }
  if (arena_stride) arena_stride->setOperand(1, L.i64(info.arena_bytes));
  return info;
}

// Every pallas_call reached from `body`, in program order, each once.
void collect_calls(const Body& body, std::vector<const Op*>& calls, std::set<const Body*>& seen) {
  if (!seen.insert(&body).second) return;
  for (const Op& op : body.ops()) {
    if (op.name() == "pallas_call") {
      calls.push_back(&op);
      continue;
    }
    for (const BodyPtr& nested : op.nested_bodies()) collect_calls(*nested, calls, seen);
  }
}

}  // namespace

KernelInfo lower_pallas_call(llvm::Module& module, const Module&, const Op& call, const LowerOptions& o) {
  return KernelBuilder(module, call, o).build();
}

std::vector<std::string> describe_kernel(const KernelInfo& k) {
  auto list = [](const std::vector<int64_t>& v) {
    std::string out = "(";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return out + ")";
  };
  GridMapping g = grid_mapping(*k.op);
  std::string semantics;
  for (int a = 0; a < g.grid_rank(); ++a)
    semantics += std::string(a ? ", " : "") + (!g.dimension_semantics.empty() && g.is_parallel(a) ? "parallel" : "arbitrary");
  std::string pointers;
  for (int j = 0; j < g.num_scalar_prefetch(); ++j) pointers += g.kernel->params()[j]->name + ", ";
  for (int i = 0; i < g.num_inputs(); ++i) pointers += g.kernel->params()[g.input_param(i)]->name + ", ";
  for (int o = 0; o < g.num_outputs(); ++o) pointers += g.kernel->params()[g.output_param(o)]->name + ", ";
  std::vector<std::string> lines = {
      k.symbol + ": pallas_call at " + k.op->loc.str() + ", grid " + list(g.grid) + " (" + semantics + ")",
      k.symbol + ": pointers (" + pointers + "workspace); arena " + std::to_string(k.arena_bytes) + " bytes per grid point",
      k.symbol + ": launch " + list(k.launch_grid) + " x " + std::to_string(k.threads) + " threads, " +
          std::to_string(k.shared_bytes) + " bytes dynamic shared memory; " + std::to_string(k.parallel_points) +
          " parallel points, arbitrary axes looped inside",
      k.symbol + ": check record " + k.check_symbol + " (" + std::to_string(kCheckWords) +
          " x i64: kind, operand or op, grid point, indices; 0 while no check failed)",
  };
  if (!k.resident_output.empty())
    lines.push_back(k.symbol + ": output " + k.resident_output + " held in registers over the arbitrary axes, " +
                    std::to_string(k.resident_elements) + " f32 per thread; dot_general adds into it");
  return lines;
}

LoweredModule lower_module(const Module& m, const Body& entry, const LowerOptions& o) {
  LoweredModule out;
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>(entry.name(), *out.context);
  auto tm = target_machine(o.target, o.sm);
  configure_module(*out.module, *tm);
  std::vector<const Op*> calls;
  std::set<const Body*> seen;
  collect_calls(entry, calls, seen);
  for (const Op* call : calls) out.kernels.push_back(lower_pallas_call(*out.module, m, *call, o));
  return out;
}

}  // namespace tessera::backends::llvm_lowering
