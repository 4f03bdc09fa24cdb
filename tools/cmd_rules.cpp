// `tessera rules PRIM`: a primitive's whole stanza in one screen: its schema
// (summary, family, params with kinds, defaults and allowed words, effects)
// and, for every consumer's rule table (ir/rule_table.h), the rule with the
// file:line that registered it, or the reason it has none.
// `tessera rules --all --markdown` writes the primitive x consumer matrix
// (docs/rules.md is its output).
#include <iostream>
#include <map>
#include <sstream>

#include "ir/rule_table.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

std::string_view kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::Int: return "int";
    case ParamKind::Float: return "float";
    case ParamKind::Bool: return "bool";
    case ParamKind::Str: return "string";
    case ParamKind::Ident: return "word";
    case ParamKind::DType: return "dtype";
    case ParamKind::Type: return "type";
    case ParamKind::Ints: return "ints";
    case ParamKind::Dims: return "dims";
    case ParamKind::OptInts: return "optional ints";
    case ParamKind::Idents: return "words";
    case ParamKind::Types: return "types";
    case ParamKind::Body: return "body";
    case ParamKind::Bodies: return "bodies";
    case ParamKind::Specs: return "block specs";
    case ParamKind::IntPairs: return "int pairs";
  }
  return "?";
}

std::string joined(const std::vector<std::string>& xs, const char* sep = ", ") {
  std::string s;
  for (const std::string& x : xs) s += (s.empty() ? "" : sep) + x;
  return s;
}

// A default value as the text format writes it (the simple kinds defaults have).
struct ValueStr {
  std::string operator()(std::monostate) const { return ""; }
  std::string operator()(int64_t i) const { return std::to_string(i); }
  std::string operator()(double d) const {
    std::ostringstream o;
    o << d;
    return o.str();
  }
  std::string operator()(bool b) const { return b ? "true" : "false"; }
  std::string operator()(const std::string& s) const { return s; }
  std::string operator()(DType d) const { return std::string(dtype_name(d)); }
  std::string operator()(const Type& t) const { return t.str(); }
  std::string operator()(const std::vector<int64_t>& xs) const {
    std::vector<std::string> s;
    for (int64_t x : xs) s.push_back(std::to_string(x));
    return "(" + joined(s) + ")";
  }
  std::string operator()(const std::vector<std::string>& xs) const { return "(" + joined(xs) + ")"; }
  template <class T>
  std::string operator()(const T&) const {
    return "...";
  }
};

std::string param_line(const ParamSpec& s) {
  std::string line = s.name + ": " + std::string(kind_name(s.kind));
  if (!s.choices.empty()) line += " in {" + joined(s.choices) + "}";
  if (s.required) return line + ", required";
  std::string d = std::visit(ValueStr{}, s.default_value);
  return line + (d.empty() ? ", optional" : " = " + d);
}

std::string family_line(const Primitive& p) {
  std::vector<std::string> traits;
  if (p.family == Family::elementwise && p.arity > 0) traits.push_back(std::to_string(p.arity) + "-ary");
  if (p.accepts != DTypeClass::any) traits.push_back("takes " + std::string(class_noun(p.accepts)) + " dtype");
  if (p.to_bool) traits.push_back("gives bool");
  if (p.indexed) traits.push_back("indexed Ref operands");
  if (p.tangent) traits.push_back("derivative defined beside it");
  if (p.piecewise_constant) traits.push_back("piecewise constant");
  if (p.transcendental) traits.push_back("transcendental");
  std::string line(family_name(p.family));
  return traits.empty() ? line : line + " (" + joined(traits, "; ") + ")";
}

void print_stanza(const Primitive& p, const std::vector<RegisteredTable>& tables, std::ostream& out) {
  out << p.name << ": " << p.summary << "\n";
  out << "  family:  " << family_line(p) << "\n";
  if (p.params.empty()) out << "  params:  none\n";
  for (size_t i = 0; i < p.params.size(); ++i) out << (i ? "           " : "  params:  ") << param_line(p.params[i]) << "\n";
  out << "  effects: " << (p.effects ? "its effect rule names the Refs and effects of each op" : "pure") << "\n";
  size_t width = 0;
  for (const RegisteredTable& t : tables) width = std::max(width, t.consumer.size());
  for (const RegisteredTable& t : tables)
    out << "  " << t.consumer << std::string(width + 2 - t.consumer.size(), ' ') << t.table->describe(p) << "\n";
}

std::string_view mark(RuleCoverage c) {
  switch (c) {
    case RuleCoverage::rule: return "rule";
    case RuleCoverage::no_rule_needed: return "–";
    case RuleCoverage::unsupported: return "✗";
    case RuleCoverage::pending: return "pending";
    case RuleCoverage::missing: return "MISSING";
  }
  return "?";
}

// Per consumer, each reason once with the primitives it covers; the table's
// default (or pending) reason once for all the rest.
void print_reasons(const RegisteredTable& t, const std::vector<const Primitive*>& prims, std::ostream& out) {
  std::vector<std::pair<std::string, std::vector<std::string>>> stated;
  std::map<std::string, size_t> index;
  bool any_default = false;
  for (const Primitive* p : prims) {
    RuleCoverage c = t.table->coverage(*p);
    if (c == RuleCoverage::rule || c == RuleCoverage::missing) continue;
    std::string why = t.table->stated_reason(*p);
    if (why.empty()) {
      any_default = true;
      continue;
    }
    std::string key = std::string(mark(c)) + " " + why;
    auto [it, fresh] = index.try_emplace(key, stated.size());
    if (fresh) stated.push_back({key, {}});
    stated[it->second].second.push_back("`" + p->name + "`");
  }
  if (stated.empty() && !any_default) return;
  out << "\n### " << t.consumer << "\n\n";
  for (const auto& [why, names] : stated) out << "- " << why << ": " << joined(names) << "\n";
  if (any_default) {
    bool pending = !t.table->pending().empty();
    out << "- " << (pending ? "pending " : "– ") << "every other primitive: "
        << (pending ? t.table->pending() : t.table->default_reason()) << "\n";
  }
}

void print_markdown(const std::vector<const Primitive*>& prims, const std::vector<RegisteredTable>& tables, std::ostream& out) {
  out << "# Rule coverage: every primitive, every consumer\n\n"
         "<!-- Generated by `tessera rules --all --markdown > docs/rules.md`; do not edit by hand\n"
         "     (docs/adding-a-primitive.md checks that it is up to date). -->\n\n"
         "Each consumer of primitives keeps one rule table (`ir/rule_table.h`). A cell\n"
         "says how the consumer's table covers the primitive: `rule` (it has one;\n"
         "`tessera rules PRIM` gives the file:line that registered it), `–` (no rule\n"
         "needed: the consumer handles it without one, for the reason listed below),\n"
         "`✗` (unsupported, for the reason listed below: meeting it is an error that\n"
         "gives the reason) or `pending` (the consumer is unfinished).\n"
         "The sweep test `tests/ir/test_rule_tables.cpp` fails on a primitive with\n"
         "neither a rule nor a reason, and on one with both.\n\n";
  out << "| primitive | family |";
  for (const RegisteredTable& t : tables) out << " " << t.consumer << " |";
  out << "\n|---|---|";
  for (size_t k = 0; k < tables.size(); ++k) out << "---|";
  out << "\n";
  for (const Primitive* p : prims) {
    out << "| `" << p->name << "` | " << family_name(p->family) << " |";
    for (const RegisteredTable& t : tables) out << " " << mark(t.table->coverage(*p)) << " |";
    out << "\n";
  }
  out << "\n## Reasons\n";
  for (const RegisteredTable& t : tables) print_reasons(t, prims, out);
}

}  // namespace

int cmd_rules(const Argv& argv) {
  Args a("rules",
         "Prints the stanza of primitive PRIM: its schema (summary, family, params with their kinds, defaults\n"
         "and allowed words, effects) and, for every consumer (passes, interpreter, backends, prover, cost,\n"
         "verifier), its rule and the file:line that registered it, or the reason it has none.",
         "PRIM...");
  a.toggle("--all", "every primitive");
  a.toggle("--markdown", "the primitive x consumer table in markdown (docs/rules.md is `--all --markdown`)");
  if (!a.parse(argv)) return a.exit_code();
  std::vector<const Primitive*> prims;
  if (a.has("--all")) prims = registry().all();
  for (const std::string& name : a.positionals()) {
    const Primitive* p = registry().find(name);
    if (!p) {
      std::cerr << "tessera rules: unknown primitive '" << name << "'\n";
      return 1;
    }
    prims.push_back(p);
  }
  if (prims.empty()) {
    std::cerr << "tessera rules: name a primitive, or give --all\n" << a.usage();
    return 1;
  }
  std::vector<RegisteredTable> tables = rule_tables();
  if (a.has("--markdown")) {
    print_markdown(prims, tables, std::cout);
    return 0;
  }
  for (size_t i = 0; i < prims.size(); ++i) {
    if (i) std::cout << "\n";
    print_stanza(*prims[i], tables, std::cout);
  }
  return 0;
}

}  // namespace tessera::cli
