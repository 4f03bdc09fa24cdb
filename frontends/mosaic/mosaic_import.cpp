// `tessera import mosaic`: parse the text, translate each module into index
// maps, a kernel and a func holding one pallas_call, then verify the result.
#include "frontends/mosaic/mosaic_import.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <set>

#include "frontends/mosaic/body_translator.h"
#include "frontends/mosaic/mlir_ast.h"
#include "frontends/mosaic/signature_import.h"
#include "ir/builder.h"
#include "transforms/pass.h"
#include "verify/verify.h"

namespace tessera {

using namespace mlir_text;

namespace {

// The squeezed dims of a window over `full`: Mosaic writes a squeezed block
// dim as a window dim of 1. A dim of 1 over a longer array dim is imported as
// squeezed (the same blocks: its index map gives an element index, which for
// blocks of 1 is the block index), so the kernel's Ref lacks it, as in Pallas.
std::vector<bool> squeezed_dims(const WindowOperand& w, const Type& full) {
  std::vector<bool> sq(w.bounds.size(), false);
  if (w.whole || w.element) return sq;
  for (size_t d = 0; d < w.bounds.size(); ++d) sq[d] = w.bounds[d] == 1 && full.shape().at(d) != 1;
  return sq;
}

// The kernel's Ref of a window: the memref without its squeezed dims.
Type kernel_ref(const WindowOperand& w, const std::vector<bool>& squeezed) {
  Shape s;
  for (size_t d = 0; d < w.ref.shape().size(); ++d)
    if (!squeezed[d]) s.push_back(w.ref.shape()[d]);
  return Type::ref(w.ref.dtype(), s, w.ref.mem_space());
}

// The block spec of one window operand over its full array `full`.
BlockSpec window_spec(const WindowOperand& w, const Type& full, const std::vector<bool>& squeezed, BodyPtr index_map) {
  BlockSpec s;
  s.mem = w.ref.mem_space();
  if (w.whole) return s;
  std::vector<BlockDim> dims;
  for (size_t d = 0; d < w.bounds.size(); ++d)
    dims.push_back(squeezed[d]  ? BlockDim::squeezed()
                   : w.element ? BlockDim::element(w.bounds[d], w.pad_lo[d], w.pad_hi[d])
                               : BlockDim::blocked(w.bounds[d]));
  s.block = std::move(dims);
  s.index_map = std::move(index_map);
  // The emitter marks every trivial window (the whole array at block 0)
  // synchronous: that is the default pipelining of such a block.
  const bool trivial = w.bounds == full.shape() && returns_zeros(*w.transform);
  if (w.pipeline_mode == "synchronous" && !trivial) s.buffer_count = 1;
  if (w.pipeline_mode == "double_buffered") s.buffer_count = 2;
  return s;
}

// Every name an op of `r` (nested regions included) uses.
void collect_uses(const Region& r, std::set<std::string>& out) {
  for (const Block& b : r.blocks)
    for (const Operation& op : b.ops) {
      out.insert(op.operands.begin(), op.operands.end());
      for (const Region& inner : op.regions) collect_uses(inner, out);
    }
}

// ---- kernels that talk to other devices ----------------------------------

// What makes `op` need the device mesh, or "" when it does not: remote DMAs
// and signals name a device, a barrier semaphore synchronises devices, and
// the device id is an index into the mesh.
std::string mesh_need(const Operation& op) {
  if (op.name == "tpu.enqueue_dma" && !op.segment(4).empty()) return "`tpu.enqueue_dma` to another device";
  if (op.name == "tpu.sem_signal" && !operand_groups(op, 2, 5)[2].empty()) return "`tpu.sem_signal` to another device";
  if (op.name == "tpu.sem_barrier") return "`tpu.sem_barrier` (a barrier across devices)";
  if (op.name == "tpu.device_id") return "`tpu.device_id`";
  return "";
}

// The first op of `r`, in text order (nested regions included), that `is`.
template <class Pred>
const Operation* first_op(const Region& r, const Pred& is) {
  for (const Block& b : r.blocks)
    for (const Operation& op : b.ops) {
      if (is(op)) return &op;
      for (const Region& inner : op.regions)
        if (const Operation* found = first_op(inner, is)) return found;
    }
  return nullptr;
}

Type with_device_axis(const Type& t, int64_t devices) {
  Shape s{devices};
  s.insert(s.end(), t.shape().begin(), t.shape().end());
  return Type::array(t.dtype(), s);
}

const Loc& devices_loc() {
  static const Loc loc{std::make_shared<const std::string>("--devices"), 1, 1};
  return loc;
}

// `text` as a whole decimal integer, or none.
std::optional<int64_t> integer(std::string_view text) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return n;
}

// `2x4`, `2,4`: integers joined by `x` or `,` (a mesh shape).
bool is_mesh_shape(std::string_view text) {
  size_t parts = 0;
  for (size_t start = 0; start <= text.size(); ++parts) {
    const size_t end = std::min(text.find_first_of("x,", start), text.size());
    if (!integer(text.substr(start, end - start))) return false;
    start = end + 1;
  }
  return parts > 1;
}

class ModuleTranslator {
 public:
  ModuleTranslator(Module& out, const ModuleAst& ast, const KernelSignature& sig, const CallTypes& types,
                   std::optional<int64_t> devices)
      : out_(out), ast_(ast), sig_(sig), types_(types), devices_(devices) {}

  void translate(const std::string& func_name) {
    const Func& k = *sig_.kernel;
    const size_t n_dyn = static_cast<size_t>(sig_.num_dynamic_axes());
    for (size_t i = 0; i < sig_.prefetch_args.size(); ++i)
      prefetch_.push_back(Type::ref(types_.operands[n_dyn + i].array_type(), MemSpace::smem));
    const size_t n_in = num_inputs(sig_, types_);
    std::vector<BlockSpec> in_specs, out_specs;
    for (size_t w = 0; w < sig_.windows.size(); ++w) {
      const WindowOperand& win = sig_.windows[w];
      const Type& full = w < n_in ? types_.operands[n_dyn + prefetch_.size() + w] : types_.results[w - n_in];
      BodyPtr map = win.transform ? index_map(*win.transform) : nullptr;
      if (full.rank() != win.ref.rank()) throw Error(types_.loc, "a window and its array differ in rank");
      squeezed_.push_back(squeezed_dims(win, full));
      (w < n_in ? in_specs : out_specs).push_back(window_spec(win, full, squeezed_.back(), map));
    }
    BodyPtr kernel = translate_kernel();

    BodyPtr main = make_body(out_.find(func_name) ? out_.unique_name(func_name) : func_name, BodyKind::func);
    main->set_loc(ast_.loc);
    Builder b(*main);
    b.set_loc(k.loc);
    std::vector<Value> operands;
    for (size_t i = 0; i < types_.operands.size(); ++i) {
      const Type t = devices_ ? with_device_axis(types_.operands[i], *devices_) : types_.operands[i];
      operands.push_back(b.param(t, i < n_dyn ? "n" + std::to_string(i) : "x" + std::to_string(i)));
    }
    std::vector<std::string> semantics = sig_.semantics;
    Params params{{"kernel", kernel},
                  {"grid", sig_.grid},
                  {"in_specs", in_specs},
                  {"out_specs", out_specs},
                  {"out_shapes", types_.results},
                  {"num_scalar_prefetch", static_cast<int64_t>(prefetch_.size())},
                  {"scratch", sig_.scratch},
                  {"dimension_semantics", semantics}};
    // JAX passes a barrier's collective id in the custom call, not in the
    // module; the call is the only collective of the program, so 0.
    if (first_op(k.body, [](const Operation& op) { return op.name == "tpu.sem_barrier"; }))
      params.push_back({"collective_id", int64_t{0}});
    b.ret(devices_ ? b.emit("pmap", operands, per_device_params(std::move(params)))
                   : b.emit("pallas_call", operands, std::move(params)));
    out_.add(main);
  }

 private:
  // pmap over the device axis of a body taking each device's slice of the
  // operands and running the pallas_call on it.
  Params per_device_params(Params call_params) {
    BodyPtr body = make_body("per_device", BodyKind::fn);
    body->set_loc(ast_.loc);
    Builder b(*body);
    b.set_loc(sig_.kernel->loc);
    std::vector<Value> slices;
    for (size_t i = 0; i < types_.operands.size(); ++i) slices.push_back(b.param(types_.operands[i], "s" + std::to_string(i)));
    b.ret(b.emit("pallas_call", slices, std::move(call_params)));
    return {{"body", body},
            {"axis_name", std::string(kDeviceAxis)},
            {"axis_size", *devices_},
            {"in_axes", std::vector<int64_t>(types_.operands.size(), 0)},
            {"out_axes", std::vector<int64_t>(types_.results.size(), 0)}};
  }

  BodyPtr index_map(const Func& transform) {
    auto it = maps_.find(transform.name);
    if (it != maps_.end()) return it->second;
    const std::string name = out_.find(transform.name) ? out_.unique_name(transform.name) : transform.name;
    BodyPtr map = import_index_map(transform, sig_, prefetch_, name);
    out_.add(map);
    maps_[transform.name] = map;
    return map;
  }

  BodyPtr translate_kernel() {
    const Func& k = *sig_.kernel;
    const std::string name = out_.find(k.name) ? out_.unique_name(k.name) : k.name;
    BodyPtr kernel = make_body(name, BodyKind::kernel);
    kernel->set_loc(k.loc);
    BodyTranslator t(*kernel);
    Builder& b = t.builder();
    auto ref_param = [&](const BlockArg& a, const Type& type) {
      b.set_loc(a.loc);
      t.bind(a.name, RefView::whole(b.param(type, a.name)));
    };
    for (size_t i = 0; i < sig_.prefetch_args.size(); ++i) ref_param(*sig_.prefetch_args[i], prefetch_[i]);
    for (size_t w = 0; w < sig_.windows.size(); ++w) {
      const BlockArg& a = *sig_.windows[w].arg;
      b.set_loc(a.loc);
      t.bind(a.name, RefView::with_phantoms(b.param(kernel_ref(sig_.windows[w], squeezed_[w]), a.name), squeezed_[w]));
    }
    for (size_t i = 0; i < sig_.scratch_args.size(); ++i) ref_param(*sig_.scratch_args[i], sig_.scratch[i]);
    // The grid arguments are program ids: read the ones the body uses.
    std::set<std::string> used;
    collect_uses(k.body, used);
    b.set_loc(k.loc);
    for (size_t axis = 0; axis < sig_.grid_args.size(); ++axis)
      if (used.count(sig_.grid_args[axis]->name))
        t.bind(sig_.grid_args[axis]->name, b.emit1("program_id", {}, {{"axis", static_cast<int64_t>(axis)}}));
    if (k.body.blocks.size() != 1) throw Error(k.loc, "kernel @" + k.name + " must have one block");
    const Operation* ret = t.translate_ops(k.body.blocks[0]);
    if (ret && !ret->operands.empty()) throw Error(ret->loc, "a kernel returns nothing");
    out_.add(kernel);
    return kernel;
  }

  Module& out_;
  const ModuleAst& ast_;
  const KernelSignature& sig_;
  const CallTypes& types_;
  std::vector<Type> prefetch_;
  std::map<std::string, BodyPtr> maps_;
  std::vector<std::vector<bool>> squeezed_;  // per window
  std::optional<int64_t> devices_;
};

}  // namespace

int64_t parse_devices(std::string_view text) {
  const std::string shown = "`" + std::string(text) + "`";
  if (is_mesh_shape(text))
    throw Error(devices_loc(), shown + ": only 1-D meshes are supported (--devices N, the number of devices)");
  const std::optional<int64_t> n = integer(text);
  if (!n || *n < 1) throw Error(devices_loc(), shown + " is not a number of devices: give --devices N with N >= 1");
  return *n;
}

Module import_mosaic(std::string_view text, const std::string& filename, const MosaicImportOptions& options) {
  const std::vector<ModuleAst> modules = parse_mlir(text, filename);
  std::vector<CallTypes> shapes;
  if (options.shapes) {
    shapes = parse_shapes(*options.shapes);
    if (shapes.size() != modules.size())
      throw Error(shapes.empty() ? Loc{} : shapes[0].loc,
                  "--shapes gives " + std::to_string(shapes.size()) + " signatures (separated by ';') for " +
                      std::to_string(modules.size()) + " modules");
  }
  if (options.devices && *options.devices < 1)
    throw Error(devices_loc(), std::to_string(*options.devices) + " is not a number of devices: give N >= 1");
  Module out;
  for (size_t i = 0; i < modules.size(); ++i) {
    const KernelSignature sig = read_signature(modules[i]);
    if (!options.devices)
      if (const Operation* op = first_op(sig.kernel->body, [](const Operation& o) { return !mesh_need(o).empty(); }))
        throw Error(op->loc, mesh_need(*op) +
                                 ": the Mosaic module does not say how many devices there are; give --devices N");
    CallTypes types;
    if (options.shapes) {
      types = shapes[i];
      check_shapes(sig, types);
    } else {
      types = infer_shapes(sig);
    }
    ModuleTranslator(out, modules[i], sig, types, options.devices).translate(options.func_name);
  }
  // Mosaic text keeps reads whose value is unused (the emitter's old value
  // of a store, accumulator identities a reduction folds away): drop them,
  // so a module imported from emitted text emits the same text again.
  for (const BodyPtr& b : out.symbols()) fold_reshape_chains(*b);
  out = dce_pass(out, {});
  std::vector<Diagnostic> problems = verify_module(out);
  if (!problems.empty()) throw Error(problems[0].loc, problems[0].message);
  return out;
}

}  // namespace tessera
