// The pass manager: parses `vmap{axis_size=3,in_axes=0|none},jvp,dce` and runs
// the named passes in order, optionally printing and verifying after each.
#include <algorithm>
#include <cctype>
#include <functional>
#include <unordered_map>
#include <ostream>

#include "ir/parser.h"
#include "ir/printer.h"
#include "transforms/pass.h"
#include "verify/verify.h"

namespace tessera {

std::string PassOptions::get(std::string_view key, std::string fallback) const {
  auto it = values.find(key);
  return it == values.end() ? fallback : it->second;
}

int64_t PassOptions::get_int(std::string_view key, int64_t fallback) const {
  auto it = values.find(key);
  if (it == values.end()) return fallback;
  const std::string& s = it->second;
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (...) {
    used = 0;
  }
  if (s.empty() || used != s.size()) throw Error("pass option " + std::string(key) + "=" + s + " is not an integer");
  return v;
}

namespace {

// tessera's passes, then whatever register_pass adds.
std::vector<PassInfo>& pass_list() {
  // `func` in every pass: the function it transforms (`--func` sets it for the
  // steps that do not name one).
  auto func = [](const char* default_value, const char* help) {
    return PassOptionInfo{"func", OptionType::Symbol, default_value, help};
  };
  const PassOptionInfo wrt{"wrt", OptionType::List, "every float input", "the inputs to differentiate, e.g. 0|2"};
  static std::vector<PassInfo> passes = {
      {"dce", "remove ops whose results are unused and that have no effects", dce_pass,
       {func("main", "must name a function; dce simplifies every symbol")}},
      {"discharge", "turn Ref effects into pure value threading; pallas_call becomes a loop over its grid",
       discharge_pass,
       {{"pallas_call", OptionType::Choice, "lower",
         "lower: a pallas_call becomes a loop over its grid; keep: it stays, its Ref inputs become aliased outputs",
         "lower|keep"},
        func("main", "must name a function; discharge transforms every function")}},
      {"jvp", "forward-mode differentiation", jvp_pass,
       {wrt, func("main", "the function to differentiate (its jvp takes its name)")}},
      {"vmap", "batching over a new leading axis", vmap_pass,
       {{"axis_size", OptionType::Int, "", "the batch size (required, >= 1)"},
        {"in_axes", OptionType::List, "0 for every input", "per input, the batched axis or none, e.g. 0|none|1"},
        func("main", "the function to batch (its batched form takes its name)")}},
      {"partial_eval", "split into known and unknown parts", partial_eval_pass,
       {{"known", OptionType::List, "", "the inputs known now (required): positions such as 0|2, or all, or none"},
        func("main", "the function to split into NAME_known and NAME_unknown")}},
      {"linearize", "jvp then partial eval into primal and linear tangent functions", linearize_pass,
       {wrt, func("main", "the function to linearize into NAME_primal and NAME_tangent")}},
      {"transpose", "transpose a linear function (after linearize: NAME_tangent) into NAME_transpose", transpose_pass,
       {{"linear", OptionType::List, "the tangent inputs of NAME_tangent", "the inputs the function is linear in, e.g. 2|3"},
        func("main", "NAME: transposes NAME_tangent when linearize made it, else NAME itself")}},
      {"vjp", "reverse-mode differentiation: main(primals..., %ct<i>...) -> (outputs..., input cotangents...)", vjp_pass,
       {wrt, func("main", "the function to differentiate (its vjp takes its name)")}},
  };
  return passes;
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

}  // namespace

const std::vector<PassInfo>& all_passes() { return pass_list(); }

void register_pass(PassInfo pass) {
  std::string_view name = pass.name ? pass.name : "";
  // The pipeline parser reads a pass name as these characters only.
  if (name.empty() || !std::all_of(name.begin(), name.end(), is_name_char))
    throw Error("cannot register pass '" + std::string(name) + "': a pass name is letters, digits, '_' and '-'");
  if (find_pass(name)) throw Error("pass '" + std::string(name) + "' registered twice");
  if (!pass.run) throw Error("pass '" + std::string(name) + "' has no run function");
  pass_list().push_back(std::move(pass));
}

BodyPtr entry_function(const Module& m, const PassOptions& o, std::string_view pass) {
  std::string name = o.get("func", "main");
  BodyPtr f = m.find(name);
  if (!f) throw Error(std::string(pass) + ": no function @" + name + " in module");
  if (f->kind() != BodyKind::func)
    throw Error(f->loc(), std::string(pass) + ": @" + name + " is " + std::string(body_kind_name(f->kind())) +
                              ", not a func; func= names the function to transform");
  return f;
}

const PassOptionInfo* PassInfo::option(std::string_view opt) const {
  for (const PassOptionInfo& o : options)
    if (opt == o.name) return &o;
  return nullptr;
}

std::string option_type_str(const PassOptionInfo& o) {
  switch (o.type) {
    case OptionType::Int: return "N";
    case OptionType::Choice: return o.choices;
    case OptionType::List: return "I|J|...";
    case OptionType::Symbol: return "NAME";
  }
  return "";
}

std::string describe_passes() {
  std::string out;
  for (const PassInfo& p : all_passes()) {
    out += std::string(p.name) + ": " + p.summary + "\n";
    for (const PassOptionInfo& o : p.options) {
      std::string head = "    " + std::string(o.name) + "=" + option_type_str(o);
      head.resize(std::max<size_t>(head.size() + 1, 28), ' ');
      out += head + o.help + (*o.default_value ? std::string(" (default: ") + o.default_value + ")" : "") + "\n";
    }
  }
  return out;
}

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo& p : all_passes())
    if (name == p.name) return &p;
  return nullptr;
}

namespace {

std::string known_passes() {
  std::string s;
  for (const PassInfo& p : all_passes()) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

[[noreturn]] void syntax_error(std::string_view text, size_t pos, const std::string& what) {
  throw Error("bad pipeline '" + std::string(text) + "' at column " + std::to_string(pos + 1) + ": " + what);
}

std::string option_names(const PassInfo& p) {
  std::string s;
  for (const PassOptionInfo& o : p.options) s += (s.empty() ? "" : ", ") + std::string(o.name);
  return s;
}

bool is_integer(const std::string& s) {
  size_t k = s[0] == '-' || s[0] == '+' ? 1 : 0;
  if (k == s.size() || s.size() - k > 18) return false;
  for (; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
  return true;
}

// The types the parser can check without the module: integers and choices.
void check_value(std::string_view text, size_t pos, const PassOptionInfo& o, const std::string& value) {
  if (o.type == OptionType::Int && !is_integer(value))
    syntax_error(text, pos, "option '" + std::string(o.name) + "' takes an integer, got '" + value + "'");
  if (o.type == OptionType::Choice) {
    std::string choices = o.choices;
    std::string padded = "|" + choices + "|";
    if (padded.find("|" + value + "|") == std::string::npos)
      syntax_error(text, pos, "option '" + std::string(o.name) + "' is one of " + choices + ", got '" + value + "'");
  }
}

// The deepest nesting of bodies in `m` (1 for a module of flat bodies); shared
// bodies are measured once.
int nesting_depth(const Module& m) {
  std::unordered_map<const Body*, int> depth;
  std::function<int(const Body&)> of = [&](const Body& b) {
    auto [it, fresh] = depth.emplace(&b, 1);
    if (!fresh) return it->second;
    int d = 1;
    for (const Op& op : b.ops())
      for (const BodyPtr& n : op.nested_bodies()) d = std::max(d, 1 + of(*n));
    return depth[&b] = d;
  };
  int deepest = 0;
  for (const BodyPtr& s : m.symbols()) deepest = std::max(deepest, of(*s));
  return deepest;
}

}  // namespace

std::vector<PipelineStep> parse_pipeline(std::string_view text) {
  std::vector<PipelineStep> steps;
  size_t i = 0, n = text.size();
  auto skip_ws = [&] {
    while (i < n && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip_ws();
  if (i == n) throw Error("empty pipeline: expected pass names separated by commas (" + known_passes() + ")");
  while (true) {
    skip_ws();
    size_t start = i;
    while (i < n && is_name_char(text[i])) ++i;
    if (i == start) syntax_error(text, i, "expected a pass name");
    PipelineStep step;
    step.name = std::string(text.substr(start, i - start));
    if (!find_pass(step.name))
      throw Error("unknown pass '" + step.name + "' in pipeline (known passes: " + known_passes() + ")");
    skip_ws();
    if (i < n && text[i] == '{') {
      ++i;
      skip_ws();
      while (i < n && text[i] != '}') {
        size_t ks = i;
        while (i < n && is_name_char(text[i])) ++i;
        if (i == ks) syntax_error(text, i, "expected an option name");
        std::string key(text.substr(ks, i - ks));
        const PassInfo* pass = find_pass(step.name);
        const PassOptionInfo* decl = pass->option(key);
        if (!decl) syntax_error(text, ks, "pass '" + step.name + "' has no option '" + key + "' (its options: " + option_names(*pass) + ")");
        skip_ws();
        if (i >= n || text[i] != '=') syntax_error(text, i, "expected '=' after option '" + key + "'");
        ++i;
        size_t vs = i;
        while (i < n && text[i] != ',' && text[i] != '}') {
          if (text[i] == '{') syntax_error(text, i, "unexpected '{' in the value of option '" + key + "'");
          ++i;
        }
        std::string value(text.substr(vs, i - vs));
        while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
        while (!value.empty() && std::isspace(static_cast<unsigned char>(value.front()))) value.erase(value.begin());
        if (value.empty()) syntax_error(text, vs, "option '" + key + "' has no value");
        if (step.options.has(key)) syntax_error(text, ks, "option '" + key + "' given twice");
        check_value(text, vs, *decl, value);
        step.options.values[key] = value;
        if (i < n && text[i] == ',') ++i, skip_ws();
      }
      if (i >= n) syntax_error(text, i, "missing '}' closing the options of '" + step.name + "'");
      ++i;  // '}'
    }
    steps.push_back(std::move(step));
    skip_ws();
    if (i == n) break;
    if (text[i] != ',') syntax_error(text, i, std::string("expected ',' between passes, got '") + text[i] + "'");
    ++i;
  }
  return steps;
}

Module run_pipeline(const Module& m, std::string_view pipeline, const PipelineOptions& opts) {
  std::vector<PipelineStep> steps = parse_pipeline(pipeline);
  // The first pass reads `m` itself: no copy of the module (its symbol table)
  // is made up front.
  Module cur;
  const Module* in = &m;
  for (const PipelineStep& step : steps) {
    const PassInfo* p = find_pass(step.name);
    PassOptions o = step.options;
    if (!opts.entry.empty() && !o.has("func")) o.values["func"] = opts.entry;
    Module next = p->run(*in, o);
    // A pass may add a level (vmap's loop around a pallas_call); the parser's
    // limit holds for what the next pass or the printer walks.
    if (int d = nesting_depth(next); d > kMaxBodyNesting)
      throw Error("pass '" + step.name + "' produced bodies nested " + std::to_string(d) + " deep, deeper than " +
                  std::to_string(kMaxBodyNesting) + " (tessera's limit, see docs/ir.md)");
    if (opts.verify_each) {
      std::vector<Diagnostic> diags = verify_module(next);
      if (!diags.empty()) {
        std::string msg = "pass '" + step.name + "' produced ill-formed IR: " + diags[0].str();
        if (diags.size() > 1) msg += " (and " + std::to_string(diags.size() - 1) + " more problem(s))";
        throw Error(msg);
      }
    }
    if (opts.print_after_all && opts.log)
      *opts.log << "// ----- after " << step.name << " -----\n" << print_module(next) << "\n";
    cur = std::move(next);
    in = &cur;
  }
  return cur;
}

}  // namespace tessera
