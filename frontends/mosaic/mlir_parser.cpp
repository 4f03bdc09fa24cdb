// MLIR text -> ModuleAst: the module / func / region / op structure and the
// generic op syntax. Types and attributes are in mlir_types_attrs.cpp, the
// per-op pretty forms in pretty_*.cpp.
#include "frontends/mosaic/mlir_parser.h"

#include <algorithm>
#include <charconv>

namespace tessera::mlir_text {
namespace {

std::string describe(const MToken& t) {
  switch (t.kind) {
    case MTok::Eof: return "the end of the text";
    case MTok::ValueId: return "`%" + std::string(t.text) + "`";
    case MTok::CaretId: return "`^" + std::string(t.text) + "`";
    case MTok::HashId: return "`#" + std::string(t.text) + "`";
    case MTok::BangId: return "`!" + std::string(t.text) + "`";
    case MTok::AtId: return "`@" + std::string(t.text) + "`";
    case MTok::String: return "a string";
    case MTok::Error: return "`" + std::string(t.text) + "`";
    default: return "`" + std::string(t.text) + "`";
  }
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' || c == '-';
}

// Where a line's first word starts, past blanks.
size_t skip_blanks(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

// `module` followed by `{`, `attributes` or `@name`: the start of a module
// (and not the word in prose such as "The Mosaic module for ...").
bool starts_module(std::string_view text, size_t pos) {
  if (text.substr(pos, 6) != "module") return false;
  size_t p = pos + 6;
  if (p < text.size() && is_name_char(text[p])) return false;
  p = skip_blanks(text, p);
  if (p >= text.size()) return false;
  return text[p] == '{' || text[p] == '@' || text.substr(p, 10) == "attributes";
}

// `#name =` or `!name =` at the start of a line: an alias definition.
bool starts_alias(std::string_view text, size_t pos) {
  if (pos >= text.size() || (text[pos] != '#' && text[pos] != '!')) return false;
  size_t p = pos + 1;
  const size_t name = p;
  while (p < text.size() && is_name_char(text[p])) ++p;
  if (p == name) return false;
  p = skip_blanks(text, p);
  return p < text.size() && text[p] == '=';
}

// Attributes in one canonical order (by name), so the generic and the pretty
// form of an op give equal lists; a name given twice is an error.
void sort_attrs(Parser& p, Operation& op) {
  std::stable_sort(op.attrs.begin(), op.attrs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 1; i < op.attrs.size(); ++i)
    if (op.attrs[i].first == op.attrs[i - 1].first)
      p.fail_at(op.loc, "attribute `" + op.attrs[i].first + "` of `" + op.name + "` is given twice");
}

// `#vector.kind<add>` (generic form) and `<add>` (pretty form) are one word.
void normalise_vector_kind(Operation& op) {
  if (op.name.rfind("vector.", 0) != 0) return;
  for (auto& [key, value] : op.attrs)
    if (key == "kind" && value.kind == Attr::Dialect && value.s == "vector.kind") value = string_attr(value.text);
}

}  // namespace

Parser::Parser(std::string_view text, const std::string& filename)
    : lex_(text, std::make_shared<const std::string>(filename)) {}

Parser::DepthGuard::DepthGuard(Parser& p) : p_(p) {
  if (++p_.depth_ > kMaxDepth) {
    --p_.depth_;
    p_.fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
  }
}

// ---- Tokens --------------------------------------------------------------------

void Parser::advance() {
  prev_end_ = lex_.pos();
  tok_ = lex_.next();
}

bool Parser::consume_punct(std::string_view p) {
  if (!tok_.punct(p)) return false;
  advance();
  return true;
}

bool Parser::consume_word(std::string_view w) {
  if (!tok_.word(w)) return false;
  advance();
  return true;
}

void Parser::expect_punct(std::string_view p, std::string_view context) {
  if (!consume_punct(p)) fail_expected("`" + std::string(p) + "`", context);
}

void Parser::expect_word(std::string_view w, std::string_view context) {
  if (!consume_word(w)) fail_expected("`" + std::string(w) + "`", context);
}

void Parser::fail(const std::string& message) const { throw Error(loc(), message); }
void Parser::fail_at(const Loc& where, const std::string& message) const { throw Error(where, message); }

void Parser::fail_expected(std::string_view what, std::string_view context) const {
  if (tok_.kind == MTok::Error) throw Error(loc(), lex_.error());
  std::string m = "expected " + std::string(what);
  if (!context.empty()) m += " " + std::string(context);
  fail(m + ", found " + describe(tok_));
}

std::string Parser::parse_word(std::string_view what, std::string_view context) {
  if (tok_.kind != MTok::BareId) fail_expected(what, context);
  std::string w(tok_.text);
  advance();
  return w;
}

int64_t Parser::parse_int(std::string_view context) {
  const bool negative = consume_punct("-");
  if (tok_.kind != MTok::Integer) fail_expected("an integer", context);
  const std::string_view t = tok_.text;
  const bool hex = t.size() > 2 && t[1] == 'x';
  uint64_t mag = 0;
  const auto [ptr, ec] = std::from_chars(t.data() + (hex ? 2 : 0), t.data() + t.size(), mag, hex ? 16 : 10);
  (void)ptr;
  const uint64_t limit = negative ? (uint64_t{1} << 63) : (uint64_t{1} << 63) - 1;
  if (ec != std::errc() || mag > limit) fail("integer `" + std::string(t) + "` is out of range");
  advance();
  return negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
}

// ---- SSA values ------------------------------------------------------------------

std::string Parser::parse_value_use(std::string_view context) {
  if (tok_.kind != MTok::ValueId) fail_expected("an SSA value (`%name`)", context);
  std::string name(tok_.text);
  advance();
  return name;
}

std::vector<std::string> Parser::parse_value_uses(std::string_view context) {
  std::vector<std::string> out;
  if (!at_value()) return out;
  out.push_back(parse_value_use(context));
  while (consume_punct(",")) out.push_back(parse_value_use(context));
  return out;
}

std::vector<std::string> Parser::parse_bracketed_values(std::string_view context) {
  expect_punct("[", context);
  std::vector<std::string> out = parse_value_uses(context);
  expect_punct("]", "to close the index list " + std::string(context));
  return out;
}

void Parser::skip_optional_loc() {
  if (!tok_.word("loc") || !lex_.next_char_is('(')) return;
  lex_.skip_paren_group();
  advance();
}

// ---- Structure ---------------------------------------------------------------------

BlockArg Parser::parse_block_arg(std::string_view context) {
  BlockArg a;
  a.loc = loc();
  a.name = parse_value_use(context);
  expect_punct(":", "after block argument `%" + a.name + "`");
  a.type = parse_type("of block argument `%" + a.name + "`");
  skip_optional_loc();
  return a;
}

Region Parser::parse_region(std::vector<BlockArg> entry_args, std::string_view implicit_terminator) {
  DepthGuard guard(*this);
  const Loc open = loc();
  expect_punct("{", "to open a region");
  Region region;
  Block block;
  block.args = std::move(entry_args);
  bool started = !block.args.empty();  // the entry block exists even if empty
  auto close_block = [&](const Loc& at) {
    if (!implicit_terminator.empty() && (block.ops.empty() || block.ops.back().name != implicit_terminator)) {
      Operation term;
      term.name = std::string(implicit_terminator);
      term.loc = at;
      block.ops.push_back(std::move(term));
    }
    region.blocks.push_back(std::move(block));
    block = Block{};
  };
  while (!at_punct("}")) {
    if (tok_.kind == MTok::Eof) fail_at(open, "region is not closed: expected `}` before the end of the text");
    if (tok_.kind == MTok::CaretId) {
      if (started) close_block(loc());
      started = true;
      block.label = "^" + std::string(tok_.text);
      advance();
      block.args.clear();
      if (consume_punct("(")) {
        if (!at_punct(")")) {
          block.args.push_back(parse_block_arg("in the arguments of block " + block.label));
          while (consume_punct(",")) block.args.push_back(parse_block_arg("in the arguments of block " + block.label));
        }
        expect_punct(")", "to close the arguments of block " + block.label);
      }
      expect_punct(":", "after block label " + block.label);
      continue;
    }
    started = true;
    block.ops.push_back(parse_operation());
  }
  const Loc close = loc();
  advance();  // `}`
  if (started || !implicit_terminator.empty()) close_block(close);
  return region;
}

void Parser::parse_result_names(Operation& op) {
  do {
    if (tok_.kind != MTok::ValueId) fail_expected("a result name (`%name`)", "");
    const std::string name(tok_.text);
    if (name.find('#') != std::string::npos) fail("a result name cannot have a `#N` suffix: `%" + name + "`");
    advance();
    if (consume_punct(":")) {
      const Loc at = loc();
      const int64_t n = parse_int("as the result count of `%" + name + "`");
      if (n < 1 || n > 4096) fail_at(at, "result count of `%" + name + "` must be between 1 and 4096");
      for (int64_t i = 0; i < n; ++i) op.results.push_back(name + "#" + std::to_string(i));
    } else {
      op.results.push_back(name);
    }
  } while (consume_punct(","));
  expect_punct("=", "after the result names");
}

Operation Parser::parse_operation() {
  Operation op;
  op.loc = loc();
  if (at_value()) parse_result_names(op);
  const MToken name_tok = tok_;
  if (tok_.kind == MTok::String) {
    op.name = unescape_mlir_string(tok_.text);
    advance();
    parse_generic_body(op);
  } else if (tok_.kind == MTok::BareId) {
    parse_pretty_body(op, name_tok);
  } else {
    fail_expected("an operation", "");
  }
  skip_optional_loc();
  finish_operation(op, name_tok);
  return op;
}

void Parser::parse_generic_body(Operation& op) {
  const std::string of = "of `" + op.name + "`";
  expect_punct("(", "to open the operands " + of);
  op.operands = parse_value_uses("in the operands " + of);
  expect_punct(")", "to close the operands " + of);
  if (consume_punct("[")) {
    do {
      if (tok_.kind != MTok::CaretId) fail_expected("a successor block (`^bb1`)", of);
      op.successors.push_back("^" + std::string(tok_.text));
      advance();
      if (at_punct("(")) lex_.skip_paren_group(), advance();  // successor operands: kept out (no importer support)
    } while (consume_punct(","));
    expect_punct("]", "to close the successors " + of);
  }
  if (consume_punct("<")) {
    if (!at_punct("{")) fail_expected("`{` (properties `<{...}>`)", of);
    auto props = parse_attr_dict("in the properties " + of);
    op.attrs.insert(op.attrs.end(), props.begin(), props.end());
    expect_punct(">", "to close the properties " + of);
  }
  if (consume_punct("(")) {
    do op.regions.push_back(parse_region({}));
    while (consume_punct(","));
    expect_punct(")", "to close the regions " + of);
  }
  parse_optional_attr_dict(op);
  expect_punct(":", "before the function type " + of);
  const Loc type_loc = loc();
  MType fn = parse_type("as the function type " + of);
  if (fn.kind != MType::Function) fail_at(type_loc, "expected a function type `(...) -> ...` " + of);
  if (fn.inputs.size() != op.operands.size())
    fail_at(type_loc, "`" + op.name + "` has " + std::to_string(op.operands.size()) + " operands but its type lists " +
                          std::to_string(fn.inputs.size()));
  op.operand_types = std::move(fn.inputs);
  op.result_types = std::move(fn.results);
}

void Parser::parse_pretty_body(Operation& op, const MToken& name_tok) {
  op.name = std::string(name_tok.text);
  if (op.name == "return") op.name = "func.return";  // func's default dialect
  const PrettyForm* form = find_pretty_form(op.name);
  if (form == nullptr)
    fail("unknown op `" + op.name + "` (no import rule; generic form `\"" + op.name + "\"(...)` is accepted)");
  advance();
  (*form)(*this, op);
}

void Parser::finish_operation(Operation& op, const MToken& name_tok) {
  if (op.results.size() != op.result_types.size())
    fail_at(lex_.loc(name_tok), "`" + op.name + "` gives " + std::to_string(op.result_types.size()) +
                                    " results but " + std::to_string(op.results.size()) + " names are bound");
  sort_attrs(*this, op);
  normalise_vector_kind(op);
}

Func Parser::parse_func() {
  Func f;
  f.loc = loc();
  advance();  // func.func
  if (at_word("private") || at_word("public") || at_word("nested")) advance();
  if (tok_.kind != MTok::AtId) fail_expected("the function name (`@name`)", "after `func.func`");
  f.name = unescape_mlir_string(tok_.text);
  advance();
  const std::string of = "of `@" + f.name + "`";
  expect_punct("(", "to open the arguments " + of);
  if (!at_punct(")")) {
    do {
      if (at_value()) {
        f.args.push_back(parse_block_arg("in the arguments " + of));
      } else {  // a declaration lists types only
        BlockArg a;
        a.loc = loc();
        a.type = parse_type("in the arguments " + of);
        f.args.push_back(std::move(a));
      }
      f.arg_attrs.emplace_back();
      if (at_punct("{")) f.arg_attrs.back() = parse_attr_dict("in the argument attributes " + of);
      skip_optional_loc();
    } while (consume_punct(","));
  }
  expect_punct(")", "to close the arguments " + of);
  if (consume_punct("->")) f.results = parse_result_types("as the results " + of);
  if (consume_word("attributes")) {
    if (!at_punct("{")) fail_expected("`{`", "after `attributes` " + of);
    f.attrs = parse_attr_dict("in the attributes " + of);
  }
  if (at_punct("{")) {
    std::vector<BlockArg> entry;
    for (const BlockArg& a : f.args) entry.push_back(a);
    f.body = parse_region(std::move(entry));
  }
  skip_optional_loc();
  return f;
}

ModuleAst Parser::parse_module() {
  ModuleAst m;
  m.loc = loc();
  expect_word("module", "");
  if (tok_.kind == MTok::AtId) advance();  // `module @name`: the name is not used
  if (consume_word("attributes")) {
    if (!at_punct("{")) fail_expected("`{`", "after `module attributes`");
    m.attrs = parse_attr_dict("in the module attributes");
  }
  const Loc open = loc();
  expect_punct("{", "to open the module body");
  while (!at_punct("}")) {
    if (tok_.kind == MTok::Eof) fail_at(open, "module is not closed: expected `}` before the end of the text");
    if (!at_word("func.func")) fail_expected("`func.func` or `}`", "in the module body");
    m.funcs.push_back(parse_func());
  }
  advance();
  skip_optional_loc();
  return m;
}

void Parser::parse_alias_definition() {
  const bool is_type = tok_.kind == MTok::BangId;
  const std::string name(tok_.text);
  advance();
  expect_punct("=", "after the alias name");
  if (is_type) {
    type_aliases_[name] = parse_type("as the definition of `!" + name + "`");
  } else if (at_word("loc") && lex_.next_char_is('(')) {
    skip_optional_loc();  // `#loc = loc(...)`: locations are not kept
  } else {
    attr_aliases_[name] = parse_attr("as the definition of `#" + name + "`");
  }
}

void Parser::reset_to(size_t offset, int line, size_t line_start) {
  lex_.set_state(MLexer::State{offset, line, static_cast<int>(offset - line_start) + 1});
  advance();
}

std::vector<ModuleAst> Parser::parse_all() {
  const std::string_view text = lex_.text();
  std::vector<ModuleAst> modules;
  std::string comment;  // the `//` line just before, if the previous line was one
  size_t pos = 0;
  int line = 1;
  while (pos < text.size()) {
    const size_t eol = std::min(text.find('\n', pos), text.size());
    const size_t first = skip_blanks(text, pos);
    if (starts_module(text, first) || starts_alias(text, first)) {
      reset_to(first, line, pos);
      if (tok_.word("module")) {
        modules.push_back(parse_module());
        modules.back().leading_comment = std::move(comment);
      } else {
        parse_alias_definition();
      }
      comment.clear();
      // Resume at the line after the construct's last token (the lexer has
      // read one token further, which may be prose and is not used).
      const size_t end = prev_end_;
      line = tok_.line - static_cast<int>(std::count(text.begin() + static_cast<std::ptrdiff_t>(end),
                                                     text.begin() + static_cast<std::ptrdiff_t>(tok_.offset), '\n'));
      const size_t next_eol = text.find('\n', end);
      if (next_eol == std::string_view::npos) break;
      pos = next_eol + 1;
      ++line;
      continue;
    }
    if (text.substr(first, 2) == "//") {
      size_t end = eol;
      while (end > first && (text[end - 1] == '\r' || is_space(text[end - 1]))) --end;
      comment = std::string(text.substr(first, end - first));
    } else if (first != eol) {
      comment.clear();
    }
    pos = eol + 1;
    ++line;
  }
  if (modules.empty()) throw Error(Loc{lex_.file(), 1, 1}, "no `module` in the text");
  return modules;
}

std::vector<ModuleAst> parse_mlir(std::string_view text, const std::string& filename) {
  Parser p(text, filename);
  return p.parse_all();
}

}  // namespace tessera::mlir_text
