#include "ir/printer.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

#include "ir/primitive.h"
#include "ir/ssa_names.h"

namespace tessera {
namespace {

std::string float_str(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

template <class T, class F>
std::string join(const std::vector<T>& xs, F f, const char* open = "(", const char* close = ")") {
  std::string out = open;
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + f(xs[i]);
  return out + close;
}

class Printer {
 public:
  explicit Printer(const Module* m) : module_(m) {}

  // Every render appends to one string: returning nested bodies' text to be
  // copied into their parents' would make printing quadratic in the depth.
  void body(const Body& b, int indent, bool top_level, std::string& out) {
    SsaNames scope;  // bodies are closed: each names its values afresh
    scopes_.push_back(&scope);
    if (top_level) {
      Effects fx = compute_effects(b);
      std::vector<std::string> param_names;  // reserve parameter names first
      for (Var* p : b.params()) param_names.push_back(name_of(p));
      if (!fx.empty()) out += pad(indent) + "// effects: " + fx.str(param_names) + "\n";
      out += pad(indent) + std::string(body_kind_name(b.kind())) + " @" + b.name();
    } else {
      for (Var* p : b.params()) name_of(p);
      out += "fn";
    }
    out += join(b.params(), [&](Var* p) { return name_of(p) + ": " + p->type.str(); });
    std::vector<Type> outs = b.output_types();
    if (outs.size() == 1) out += " -> " + outs[0].str();
    else if (!outs.empty()) out += " -> " + join(outs, [](const Type& t) { return t.str(); });
    out += " {\n";
    std::unordered_set<const Var*> used = used_vars(b);
    // Printed values named by a number (`%5`, as text parsed back names them)
    // keep it: naming them first keeps the number given to an unnamed or
    // unprinted value (a discarded swap's) from taking it, so printing what
    // was parsed from printed text gives that text again.
    for (const Op& op : b.ops())
      if (shows_results(op, used))
        for (Var* r : op.results)
          if (!r->name.empty() && std::isdigit(static_cast<unsigned char>(r->name[0]))) name_of(r);
    for (const Op& op : b.ops()) {
      out.append(2 * static_cast<size_t>(indent + 1), ' ');
      op_line(op, indent + 1, used, out);
      out += '\n';
    }
    if (!b.outputs().empty())
      out += pad(indent + 1) + "return " + join(b.outputs(), [&](const Value& v) { return value(v); }, "", "") + "\n";
    out += pad(indent) + "}";
    scopes_.pop_back();
  }

  // Results nobody reads of an effectful op (a discarded swap) are left out.
  static bool shows_results(const Op& op, const std::unordered_set<const Var*>& used) {
    bool any_used = false;
    for (Var* r : op.results) any_used |= used.count(r) > 0;
    return !op.results.empty() && (any_used || !has_side_effects(op));
  }

  void op_line(const Op& op, int indent, const std::unordered_set<const Var*>& used, std::string& out) {
    size_t line_start = out.size();
    if (shows_results(op, used)) {
      out += join(op.results, [&](Var* r) { return name_of(r) + ": " + r->type.str(); }, "", "");
      out += " = ";
    } else {
      for (Var* r : op.results) name_of(r);
    }
    out += op.name();
    // Parameters holding an inline body, and long parameter lists (a
    // pallas_call's grid mapping), get one line each. Which case it is must be
    // known before rendering: rendering nested bodies twice per level would
    // make printing exponential in the nesting depth.
    bool multiline = has_inline_body(op);
    std::string flat;
    if (!multiline) params_str(op, indent, false, flat);
    if (multiline || flat.size() + (out.size() - line_start) + 2 * indent > 100) {
      out += "[\n" + pad(indent + 2);
      params_str(op, indent + 2, true, out);
      out += "\n" + pad(indent) + "]";
    } else if (!flat.empty()) {
      out += "[" + flat + "]";
    }
    std::string operands = operands_str(op);
    if (!operands.empty()) out += " " + operands;
  }

  std::string operands_str(const Op& op) {
    std::string out;
    bool first = true;
    for (int i : op.main_operands()) {
      out += first ? "" : ", ";
      first = false;
      out += value(op.operands[i]);
      if (const Indexer* ix = op.indexer_for(i)) out += indexer(op, *ix);
    }
    return out;
  }

  std::string indexer(const Op& op, const Indexer& ix) {
    return join(ix.entries, [&](const IndexEntry& e) -> std::string {
      auto start = [&]() { return e.is_dynamic() ? value(op.operands[e.dyn_start]) : std::to_string(e.start); };
      switch (e.kind) {
        case IndexEntry::Full: return ":";
        case IndexEntry::Point:
        case IndexEntry::Indirect: return start();
        case IndexEntry::Slice:
          if (!e.is_dynamic() && !e.has_dynamic_size() && e.stride == 1)
            return std::to_string(e.start) + ":" + std::to_string(e.start + e.size);
          return "ds(" + start() + ", " + (e.has_dynamic_size() ? value(op.operands[e.dyn_size]) : std::to_string(e.size)) +
                 (e.stride != 1 ? ", " + std::to_string(e.stride) : "") + ")";
      }
      return ":";
    }, "[", "]");
  }

  void params_str(const Op& op, int indent, bool one_per_line, std::string& out) {
    bool first = true;
    for (const ParamSpec& spec : op.prim->params) {
      const Param& v = op.param(spec.name);
      if (std::holds_alternative<std::monostate>(v)) continue;
      if (!spec.required && v == spec.default_value) continue;
      if (!first) out += one_per_line ? ",\n" + pad(indent) : ", ";
      first = false;
      out += spec.name + "=";
      param(spec.kind, v, indent, out);
    }
  }

  // The parameters that may hold bodies append themselves; the others return
  // short strings.
  void param(ParamKind kind, const Param& v, int indent, std::string& out) {
    auto list = [&](const auto& xs, auto each) {
      out += "[";
      for (size_t i = 0; i < xs.size(); ++i) {
        if (i) out += ", ";
        each(xs[i]);
      }
      out += "]";
    };
    switch (kind) {
      case ParamKind::Body: return body_ref(std::get<BodyPtr>(v), indent, out);
      case ParamKind::Bodies:
        return list(std::get<std::vector<BodyPtr>>(v), [&](const BodyPtr& b) { body_ref(b, indent, out); });
      case ParamKind::Specs:
        return list(std::get<std::vector<BlockSpec>>(v), [&](const BlockSpec& s) { spec(s, indent, out); });
      default: out += plain_param(kind, v);
    }
  }

  std::string plain_param(ParamKind kind, const Param& v) {
    auto ints = [&](const char* neg) {
      return join(std::get<std::vector<int64_t>>(v),
                  [&](int64_t i) { return i < 0 && neg ? std::string(neg) : std::to_string(i); });
    };
    switch (kind) {
      case ParamKind::Int: return std::to_string(std::get<int64_t>(v));
      case ParamKind::Float: return float_str(std::get<double>(v));
      case ParamKind::Bool: return std::get<bool>(v) ? "true" : "false";
      case ParamKind::Str: return quote(std::get<std::string>(v));
      case ParamKind::Ident: return std::get<std::string>(v);
      case ParamKind::DType: return std::string(dtype_name(std::get<DType>(v)));
      case ParamKind::Type: return std::get<Type>(v).str();
      case ParamKind::Ints: return ints(nullptr);
      case ParamKind::Dims: return ints("?");
      case ParamKind::OptInts: return ints("none");
      case ParamKind::Idents: return join(std::get<std::vector<std::string>>(v), [](const std::string& s) { return s; });
      case ParamKind::Types: return join(std::get<std::vector<Type>>(v), [](const Type& t) { return t.str(); }, "[", "]");
      case ParamKind::Body:
      case ParamKind::Bodies:
      case ParamKind::Specs: break;  // param() appends these
      case ParamKind::IntPairs:
        return join(std::get<IntPairs>(v), [](const std::pair<int64_t, int64_t>& p) {
          return "(" + std::to_string(p.first) + ", " + std::to_string(p.second) + ")";
        }, "[", "]");
    }
    return "";
  }

  // A body that prints in place (not a module symbol): it spans lines.
  bool is_inline(const BodyPtr& b) const { return b && !(module_ && module_->is_symbol(b.get())); }

  bool has_inline_body(const Op& op) const {
    for (const NamedParam& p : op.params) {
      const Param& v = p.value;
      if (const auto* b = std::get_if<BodyPtr>(&v); b && is_inline(*b)) return true;
      if (const auto* bs = std::get_if<std::vector<BodyPtr>>(&v))
        for (const BodyPtr& b : *bs)
          if (is_inline(b)) return true;
      if (const auto* specs = std::get_if<std::vector<BlockSpec>>(&v))
        for (const BlockSpec& s : *specs)
          if (is_inline(s.index_map)) return true;
    }
    return false;
  }

  void body_ref(const BodyPtr& b, int indent, std::string& out) {
    if (!b) out += "none";
    else if (!is_inline(b)) out += "@" + b->name();
    else body(*b, indent, false, out);
  }

  void spec(const BlockSpec& s, int indent, std::string& out) {
    std::vector<std::string> parts;
    if (s.block) {
      parts.push_back(join(*s.block, [](const BlockDim& d) -> std::string {
        switch (d.kind) {
          case BlockDimKind::Blocked: return std::to_string(d.size);
          case BlockDimKind::Squeezed: return "squeezed";
          case BlockDimKind::Element:
            return "element(" + std::to_string(d.size) + ", " + std::to_string(d.pad_lo) + ", " + std::to_string(d.pad_hi) + ")";
          case BlockDimKind::BoundedSlice: return "bounded(" + std::to_string(d.size) + ")";
        }
        return "";
      }));
    }
    if (s.index_map) parts.emplace_back();  // placeholder: the map appends itself, in order
    size_t map_part = parts.size() - 1;
    if (s.mem != MemSpace::vmem) parts.push_back("mem=" + std::string(mem_space_name(s.mem)));
    if (s.buffer_count) parts.push_back("buffered=" + std::to_string(s.buffer_count));
    out += "spec(";
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i) out += ", ";
      if (s.index_map && i == map_part) body_ref(s.index_map, indent, out);
      else out += parts[i];
    }
    out += ")";
  }

  std::string value(const Value& v) { return v.is_literal() ? v.literal().str() : name_of(v.var()); }

 private:
  std::string name_of(const Var* v) { return "%" + scopes_.back()->name(v); }

  static std::unordered_set<const Var*> used_vars(const Body& b) {
    std::unordered_set<const Var*> used;
    for (const Op& op : b.ops())
      for (const Value& v : op.operands)
        if (v.is_var()) used.insert(v.var());
    for (const Value& v : b.outputs())
      if (v.is_var()) used.insert(v.var());
    return used;
  }

  static std::string pad(int indent) { return std::string(2 * indent, ' '); }

  const Module* module_;
  std::vector<SsaNames*> scopes_;
};

}  // namespace

std::string print_module(const Module& m) {
  Printer p(&m);
  std::string out;
  for (size_t i = 0; i < m.symbols().size(); ++i) {
    if (i) out += '\n';
    p.body(*m.symbols()[i], 0, true, out);
    out += '\n';
  }
  return out;
}

std::string print_body(const Body& b, const Module* m) {
  std::string out;
  Printer(m).body(b, 0, true, out);
  return out + "\n";
}

}  // namespace tessera
