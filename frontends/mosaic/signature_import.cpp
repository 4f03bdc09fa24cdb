// Kernel signature and attributes -> the pallas_call's structure, and the
// call's full types from `--shapes` or by inference (signature_import.h).
// The forward mapping is the emitter's: backends/mosaic/kernel_signature.cpp
// and window_params.cpp.
#include "frontends/mosaic/signature_import.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <sstream>

#include "frontends/mosaic/body_translator.h"
#include "frontends/mosaic/import_rules.h"
#include "ir/parser.h"

namespace tessera::mlir_text {
namespace {

[[noreturn]] void fail_kernel(const Func& f, const std::string& message) {
  throw Error(f.loc, "kernel @" + f.name + ": " + message);
}

int64_t int_attr(const Func& f, std::string_view key, int64_t fallback) {
  const Attr* a = f.attr(key);
  if (!a) return fallback;
  if (a->kind != Attr::Int) fail_kernel(f, "`" + std::string(key) + "` must be an integer");
  return a->i;
}

// "[0, 8],[0, 8]" -> {{0, 8}, {0, 8}}.
std::vector<std::vector<int64_t>> bracket_lists(const std::string& text) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t>* cur = nullptr;
  std::string num;
  auto flush = [&] {
    if (!num.empty() && cur) cur->push_back(std::stoll(num));
    num.clear();
  };
  for (char c : text) {
    if (c == '[') { out.emplace_back(); cur = &out.back(); }
    else if (c == ']') { flush(); cur = nullptr; }
    else if (c == ',') flush();
    else if (c == '-' || (c >= '0' && c <= '9')) num += c;
  }
  return out;
}

const Func* find_func(const ModuleAst& m, const std::string& name) {
  for (const Func& f : m.funcs)
    if (f.name == name) return &f;
  return nullptr;
}

WindowOperand read_window(const ModuleAst& m, const Func& kernel, const BlockArg& arg, const Attr* entry) {
  WindowOperand w;
  w.arg = &arg;
  w.ref = import_ref_type(arg.type, arg.loc);
  w.bounds = arg.type.shape;
  if (!entry || entry->kind != Attr::Dict || entry->dict.empty()) {
    w.whole = true;
    return w;
  }
  const Attr* t = entry->find("transform_indices");
  if (!t || t->kind != Attr::Symbol)
    fail_kernel(kernel, "the window of %" + arg.name + " has no `transform_indices = @transform_i`");
  w.transform = find_func(m, t->s);
  if (!w.transform) fail_kernel(kernel, "the window of %" + arg.name + " names @" + t->s + ", which the module lacks");
  if (const Attr* b = entry->find("window_bounds")) w.bounds = b->ints;
  if (w.bounds != arg.type.shape)
    fail_kernel(kernel, "the window_bounds of %" + arg.name + " differ from its memref `" + arg.type.text + "`");
  if (const Attr* p = entry->find("pipeline_mode")) w.pipeline_mode = p->text;
  if (const Attr* k = entry->find("window_kind")) {
    std::vector<std::vector<int64_t>> pads = bracket_lists(k->text);
    if (pads.size() != 2 || pads[0].size() != w.bounds.size() || pads[1].size() != w.bounds.size())
      fail_kernel(kernel, "cannot read the window_kind of %" + arg.name + ": `" + k->text + "`");
    w.element = true;
    w.pad_lo = pads[0];
    w.pad_hi = pads[1];
  }
  return w;
}

}  // namespace

int KernelSignature::num_dynamic_axes() const {
  int n = 0;
  for (int64_t g : grid) n += g < 0;
  return n;
}

namespace {

// The signature as the kernel func spells it (read_signature, then, moves
// written scalar prefetch into scratch).
KernelSignature read_structure(const ModuleAst& m) {
  KernelSignature sig;
  for (const Func& f : m.funcs)
    if (f.attr("tpu.core_type")) {
      sig.kernel = &f;
      break;
    }
  if (!sig.kernel) throw Error(m.loc, "no kernel in the module: no func.func has a `tpu.core_type` attribute");
  const Func& k = *sig.kernel;
  const Attr* core = k.attr("tpu.core_type");
  if (core->text != "tc") throw Error(k.loc, "kernel @" + k.name + ": SparseCore kernels are not imported yet");
  if (k.body.blocks.empty()) fail_kernel(k, "has no body");

  const Attr* bounds = k.attr("iteration_bounds");
  sig.has_grid = bounds != nullptr;
  if (bounds)
    for (int64_t b : bounds->ints) sig.grid.push_back(b == INT64_MIN ? -1 : b);
  if (const Attr* sem = k.attr("dimension_semantics"))
    for (const Attr& a : sem->list) sig.semantics.push_back(a.text);
  if (sig.semantics.size() != sig.grid.size())
    fail_kernel(k, "has " + std::to_string(sig.semantics.size()) + " dimension_semantics for " +
                       std::to_string(sig.grid.size()) + " grid axes");

  const size_t n_grid = sig.grid.size();
  const size_t n_prefetch = static_cast<size_t>(int_attr(k, "scalar_prefetch", 0));
  const size_t n_scratch = static_cast<size_t>(int_attr(k, "scratch_operands", 0));
  const Attr* windows = k.attr("window_params");
  if (sig.has_grid && !windows) fail_kernel(k, "has iteration_bounds but no window_params");
  if (n_grid + n_prefetch + n_scratch > k.args.size())
    fail_kernel(k, "has " + std::to_string(k.args.size()) + " arguments, fewer than its grid axes, scalar prefetch and scratch");
  const size_t n_windows = k.args.size() - n_grid - n_prefetch - n_scratch;
  if (windows && windows->list.size() != n_windows)
    fail_kernel(k, "has " + std::to_string(windows->list.size()) + " window_params for " + std::to_string(n_windows) +
                       " windowed operands");

  size_t a = 0;
  for (; a < n_grid; ++a) {
    if (k.args[a].type.element != "i32" || !k.args[a].type.is_scalar())
      fail_kernel(k, "grid argument %" + k.args[a].name + " must be i32");
    sig.grid_args.push_back(&k.args[a]);
  }
  for (size_t i = 0; i < n_prefetch; ++i, ++a) {
    if (k.args[a].type.memory_space != "smem") fail_kernel(k, "scalar prefetch %" + k.args[a].name + " must be an SMEM memref");
    sig.prefetch_args.push_back(&k.args[a]);
  }
  for (size_t i = 0; i < n_windows; ++i, ++a)
    sig.windows.push_back(read_window(m, k, k.args[a], windows ? &windows->list[i] : nullptr));
  for (size_t i = 0; i < n_scratch; ++i, ++a) {
    sig.scratch_args.push_back(&k.args[a]);
    sig.scratch.push_back(import_ref_type(k.args[a].type, k.args[a].loc));
  }
  return sig;
}

}  // namespace

// ---- --shapes ---------------------------------------------------------------

namespace {

Loc shapes_loc(size_t col) {
  static const auto file = std::make_shared<const std::string>("--shapes");
  return Loc{file, 1, static_cast<int>(col) + 1};
}

struct Piece {
  std::string text;
  size_t offset;
};

// Splits text[begin, end) at top-level `sep` (outside brackets).
std::vector<Piece> split_top(const std::string& s, size_t begin, size_t end, char sep) {
  std::vector<Piece> out;
  int depth = 0;
  size_t start = begin;
  for (size_t i = begin; i <= end; ++i) {
    if (i == end || (s[i] == sep && depth == 0)) {
      size_t b = start, e = i;
      while (b < e && isspace(static_cast<unsigned char>(s[b]))) ++b;
      while (e > b && isspace(static_cast<unsigned char>(s[e - 1]))) --e;
      out.push_back({s.substr(b, e - b), b});
      start = i + 1;
    } else if (s[i] == '[' || s[i] == '<' || s[i] == '(') {
      ++depth;
    } else if (s[i] == ']' || (s[i] == '>' && (i == 0 || s[i - 1] != '-')) || s[i] == ')') {
      --depth;
    }
  }
  return out;
}

// Parses each piece as a tessera type: one parameter per line of a small
// func, so a parse error's line names the piece and its column maps back.
std::vector<Type> parse_types(const std::vector<Piece>& pieces) {
  std::string text = "func @shapes(\n";
  std::vector<size_t> prefix;
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::string p = "%t" + std::to_string(i) + ": ";
    prefix.push_back(p.size());
    text += p + pieces[i].text + (i + 1 < pieces.size() ? ",\n" : "\n");
  }
  text += ") {\n}\n";
  Module m;
  try {
    m = parse_module(text, "--shapes");
  } catch (const Error& e) {
    const size_t line = static_cast<size_t>(e.loc().line);
    if (line >= 2 && line - 2 < pieces.size()) {
      const Piece& p = pieces[line - 2];
      const size_t col = static_cast<size_t>(std::max(e.loc().col - 1, 0));
      const size_t in_piece = col >= prefix[line - 2] ? col - prefix[line - 2] : 0;
      throw Error(shapes_loc(p.offset + std::min(in_piece, p.text.size())), e.message());
    }
    throw Error(shapes_loc(pieces.empty() ? 0 : pieces.back().offset), e.message());
  }
  std::vector<Type> out = m.entry("shapes")->param_types();
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].is_ref()) throw Error(shapes_loc(pieces[i].offset), "expected an array type, got " + out[i].str());
  return out;
}

}  // namespace

std::vector<CallTypes> parse_shapes(const std::string& text) {
  std::vector<CallTypes> out;
  for (const Piece& sig : split_top(text, 0, text.size(), ';')) {
    const size_t arrow = text.find("->", sig.offset);
    if (arrow == std::string::npos || arrow >= sig.offset + sig.text.size())
      throw Error(shapes_loc(sig.offset), "expected `operand types -> result types`");
    CallTypes c;
    c.loc = shapes_loc(sig.offset);
    std::vector<Piece> ins = split_top(text, sig.offset, arrow, ',');
    if (ins.size() == 1 && ins[0].text.empty()) ins.clear();
    std::vector<Piece> outs = split_top(text, arrow + 2, sig.offset + sig.text.size(), ',');
    for (const auto* list : {&ins, &outs})
      for (const Piece& p : *list)
        if (p.text.empty()) throw Error(shapes_loc(p.offset), "expected a type");
    c.operands = parse_types(ins);
    c.results = parse_types(outs);
    out.push_back(std::move(c));
  }
  return out;
}

size_t num_inputs(const KernelSignature& sig, const CallTypes& types) {
  const size_t lead = static_cast<size_t>(sig.num_dynamic_axes()) + sig.prefetch_args.size();
  return types.operands.size() >= lead ? types.operands.size() - lead : 0;
}

void check_shapes(const KernelSignature& sig, const CallTypes& t) {
  const size_t n_dyn = static_cast<size_t>(sig.num_dynamic_axes());
  const size_t lead = n_dyn + sig.prefetch_args.size();
  const size_t want = sig.windows.size();
  if (t.operands.size() < lead || t.operands.size() - lead + t.results.size() != want) {
    std::ostringstream m;
    m << "the kernel @" << sig.kernel->name << " has " << n_dyn << " dynamic grid sizes, " << sig.prefetch_args.size()
      << " scalar prefetch and " << want << " windowed operands (inputs and outputs), so --shapes needs " << lead
      << " + inputs operand types and " << want << " - inputs result types; got " << t.operands.size() << " -> "
      << t.results.size();
    throw Error(t.loc, m.str());
  }
  for (size_t i = 0; i < n_dyn; ++i)
    if (!t.operands[i].is_scalar() || !is_int(t.operands[i].dtype()))
      throw Error(t.loc, "operand " + std::to_string(i) + " is a dynamic grid size and must be an integer scalar, got " +
                             t.operands[i].str());
  auto same_dtype = [&](const Type& full, const Type& ref, const std::string& what) {
    if (full.dtype() != ref.dtype())
      throw Error(t.loc, what + " has dtype " + std::string(dtype_name(full.dtype())) + " in --shapes but " +
                             std::string(dtype_name(ref.dtype())) + " in the kernel");
  };
  for (size_t i = 0; i < sig.prefetch_args.size(); ++i) {
    const Type& full = t.operands[n_dyn + i];
    const Type ref = import_ref_type(sig.prefetch_args[i]->type, sig.prefetch_args[i]->loc);
    const std::string what = "operand " + std::to_string(n_dyn + i) + " (scalar prefetch %" + sig.prefetch_args[i]->name + ")";
    same_dtype(full, ref, what);
    if (full.shape() != ref.shape())
      throw Error(t.loc, what + ": its SMEM memref `" + sig.prefetch_args[i]->type.text + "` must be the whole array " + full.str());
  }
  const size_t n_in = t.operands.size() - lead;
  for (size_t w = 0; w < want; ++w) {
    const WindowOperand& win = sig.windows[w];
    const Type& full = w < n_in ? t.operands[lead + w] : t.results[w - n_in];
    const std::string what = (w < n_in ? "operand " + std::to_string(lead + w) : "result " + std::to_string(w - n_in)) +
                             " (%" + win.arg->name + ")";
    same_dtype(full, win.ref, what);
    if (win.whole && full.shape() != win.ref.shape())
      throw Error(t.loc, what + ": its whole-array memref `" + win.arg->type.text + "` must have the shape " + full.str());
    if (!win.whole && full.rank() != win.ref.rank())
      throw Error(t.loc, what + ": its block `" + win.arg->type.text + "` has rank " + std::to_string(win.ref.rank()) +
                             ", the array " + full.str() + " has rank " + std::to_string(full.rank()));
  }
}

// ---- inference ---------------------------------------------------------------

namespace {

// The name `%n` is the result of `arith.constant 0` in `f`'s body.
bool is_zero_constant(const Func& f, const std::string& n) {
  for (const Operation& op : f.body.blocks.at(0).ops)
    if (op.name == "arith.constant" && !op.results.empty() && op.results[0] == n) {
      const Attr* v = op.attr("value");
      return v && v->kind == Attr::Int && v->i == 0;
    }
  return false;
}

const Operation* return_of(const Func& f) {
  if (f.body.blocks.empty() || f.body.blocks[0].ops.empty()) return nullptr;
  const Operation& last = f.body.blocks[0].ops.back();
  return last.name == "func.return" ? &last : nullptr;
}

// The kernel arguments the body writes to (stores, DMA targets), through
// memref_slice / memref_squeeze views, each with its first write.
using Writes = std::map<std::string, const Operation*>;
void collect_writes(const Region& r, std::map<std::string, std::string>& root, Writes& written) {
  auto root_of = [&](const std::string& n) {
    auto it = root.find(n);
    return it == root.end() ? n : it->second;
  };
  for (const Block& b : r.blocks)
    for (const Operation& op : b.ops) {
      if ((op.name == "tpu.memref_slice" || op.name == "tpu.memref_squeeze") && !op.operands.empty() && !op.results.empty())
        root[op.results[0]] = root_of(op.operands[0]);
      if ((op.name == "tpu.vector_store" || op.name == "vector.store" || op.name == "memref.store" ||
           op.name == "tpu.strided_store") && op.operands.size() >= 2)
        written.emplace(root_of(op.operands[1]), &op);
      if (op.name == "tpu.enqueue_dma") {
        std::vector<std::string> target = op.attr("operandSegmentSizes") ? op.segment(2) : std::vector<std::string>{};
        if (!target.empty()) written.emplace(root_of(target[0]), &op);
      }
      for (const Region& inner : op.regions) collect_writes(inner, root, written);
    }
}

}  // namespace

bool returns_zeros(const Func& transform) {
  const Operation* ret = return_of(transform);
  if (!ret) return false;
  for (const std::string& n : ret->operands)
    if (!is_zero_constant(transform, n)) return false;
  return true;
}

CallTypes infer_shapes(const KernelSignature& sig) {
  const Func& k = *sig.kernel;
  auto need = [&](const std::string& why) -> void {
    throw Error(k.loc, "kernel @" + k.name + ": " + why + "; give the full shapes with --shapes");
  };
  if (sig.num_dynamic_axes() > 0) need("the grid has a dynamic size");
  CallTypes c;
  c.loc = k.loc;
  for (const BlockArg* a : sig.prefetch_args) {
    const Type r = import_ref_type(a->type, a->loc);
    c.operands.push_back(Type::array(r.dtype(), r.shape()));
  }
  std::vector<Type> fulls;
  for (size_t w = 0; w < sig.windows.size(); ++w) {
    const WindowOperand& win = sig.windows[w];
    const std::string operand = "operand " + std::to_string(w) + " (%" + win.arg->name + ")";
    if (win.whole) {
      fulls.push_back(Type::array(win.ref.dtype(), win.ref.shape()));
      continue;
    }
    if (win.element) need("the window of " + operand + " has Element dims");
    const Operation* ret = return_of(*win.transform);
    if (!ret || ret->operands.size() != win.bounds.size())
      need("the index map @" + win.transform->name + " of " + operand + " does not return one index per dim");
    Shape full;
    std::set<size_t> axes;
    for (size_t d = 0; d < ret->operands.size(); ++d) {
      const std::string& n = ret->operands[d];
      size_t axis = sig.grid.size();
      for (size_t g = 0; g < sig.grid.size() && g < win.transform->args.size(); ++g)
        if (win.transform->args[g].name == n) axis = g;
      if (axis < sig.grid.size() && axes.insert(axis).second) full.push_back(win.bounds[d] * sig.grid[axis]);
      else if (is_zero_constant(*win.transform, n)) full.push_back(win.bounds[d]);
      else need("the index map @" + win.transform->name + " of " + operand + " is not an identity map of the grid");
    }
    fulls.push_back(Type::array(win.ref.dtype(), full));
  }
  std::map<std::string, std::string> root;
  Writes written;
  collect_writes(k.body, root, written);
  size_t first_out = sig.windows.size();
  while (first_out > 0 && written.count(sig.windows[first_out - 1].arg->name)) --first_out;
  for (size_t w = 0; w < first_out; ++w)
    if (written.count(sig.windows[w].arg->name))
      need("operand " + std::to_string(w) + " (%" + sig.windows[w].arg->name +
           ") is written but is followed by operands the kernel does not write, so the outputs are not a suffix");
  if (first_out == sig.windows.size()) need("the kernel writes none of its operands, so no output is known");
  for (size_t w = 0; w < sig.windows.size(); ++w) (w < first_out ? c.operands : c.results).push_back(fulls[w]);
  return c;
}

// ---- scalar prefetch the kernel writes (read_signature in the header) -----------

namespace {

bool uses(const Region& r, const std::string& name) {
  for (const Block& b : r.blocks)
    for (const Operation& op : b.ops) {
      if (std::find(op.operands.begin(), op.operands.end(), name) != op.operands.end()) return true;
      for (const Region& inner : op.regions)
        if (uses(inner, name)) return true;
    }
  return false;
}

void rename_uses(Region& r, const std::string& from, const std::string& to) {
  for (Block& b : r.blocks)
    for (Operation& op : b.ops) {
      std::replace(op.operands.begin(), op.operands.end(), from, to);
      for (Region& inner : op.regions) rename_uses(inner, from, to);
    }
}

// The positions (among the scalar prefetch) of the Refs the kernel writes.
// A written Ref that an index map reads is a located error at the write.
std::vector<size_t> written_prefetch(const KernelSignature& sig) {
  std::map<std::string, std::string> root;
  Writes written;
  collect_writes(sig.kernel->body, root, written);
  std::vector<size_t> out;
  for (size_t i = 0; i < sig.prefetch_args.size(); ++i) {
    auto w = written.find(sig.prefetch_args[i]->name);
    if (w == written.end()) continue;
    const size_t param = sig.grid.size() + i;  // an index map's params: grid indices, then prefetch
    for (const WindowOperand& win : sig.windows)
      if (win.transform && param < win.transform->args.size() && uses(win.transform->body, win.transform->args[param].name))
        throw Error(w->second->loc, "`" + w->second->name + "`: cannot write to scalar-prefetch Ref %" +
                                        sig.prefetch_args[i]->name + ": the index map @" + win.transform->name +
                                        " reads it, and on a TPU index maps see the kernel's writes to scalar "
                                        "prefetch, which tessera cannot model");
    out.push_back(i);
  }
  return out;
}

// Moves the prefetch Refs `carried` of kernel `k` into new scratch Refs (see
// read_signature in the header).
void carry_in_scratch(Func& k, const KernelSignature& sig, const std::vector<size_t>& carried) {
  std::unordered_set<std::string> names;
  for (const BlockArg& a : k.args) names.insert(a.name);
  collect_defined_names(k.body, names);
  std::vector<int64_t> axes;
  for (size_t a = 0; a < sig.semantics.size(); ++a)
    if (sig.semantics[a] == "arbitrary") axes.push_back(static_cast<int64_t>(a));
  Attr axes_attr;
  axes_attr.kind = Attr::DenseArray;
  axes_attr.ints = axes;
  std::vector<Operation> inits;
  for (size_t i : carried) {
    const BlockArg prefetch = *sig.prefetch_args[i];
    BlockArg state = prefetch;
    state.name = prefetch.name + "_carried";
    for (int n = 2; names.count(state.name); ++n) state.name = prefetch.name + "_carried" + std::to_string(n);
    names.insert(state.name);
    k.args.push_back(state);
    if (!k.arg_attrs.empty()) k.arg_attrs.emplace_back();
    k.body.blocks.at(0).args.push_back(state);
    rename_uses(k.body, prefetch.name, state.name);
    Operation init;
    init.name = std::string(kCarriedPrefetchInit);
    init.loc = prefetch.loc;
    init.operands = {prefetch.name, state.name};
    init.attrs.emplace_back("axes", axes_attr);
    inits.push_back(std::move(init));
  }
  std::vector<Operation>& ops = k.body.blocks.at(0).ops;
  ops.insert(ops.begin(), inits.begin(), inits.end());
  Attr count;
  count.kind = Attr::Int;
  count.i = static_cast<int64_t>(sig.scratch_args.size() + carried.size());
  auto it = std::find_if(k.attrs.begin(), k.attrs.end(), [](const auto& kv) { return kv.first == "scratch_operands"; });
  if (it != k.attrs.end()) it->second = count;
  else k.attrs.emplace_back("scratch_operands", count);
}

}  // namespace

KernelSignature read_signature(const ModuleAst& m) {
  KernelSignature sig = read_structure(m);
  const std::vector<size_t> carried = written_prefetch(sig);
  if (carried.empty()) return sig;
  auto copy = std::make_shared<ModuleAst>(m);
  carry_in_scratch(copy->funcs.at(static_cast<size_t>(sig.kernel - m.funcs.data())), sig, carried);
  KernelSignature out = read_structure(*copy);
  out.rewritten = std::move(copy);
  return out;
}

}  // namespace tessera::mlir_text
