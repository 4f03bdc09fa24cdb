#include "ir/parser.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "ir/builder.h"
#include "ir/lexer.h"
#include "ir/primitive.h"

namespace tessera {
namespace {

class Parser {
 public:
  Parser(std::string_view text, const std::string& filename)
      : lexer_(text, std::make_shared<const std::string>(filename)) {}

  Module parse() {
    // Pass 1: find every top-level symbol so `@name` may refer forward. It
    // lexes the whole text, so a lexical error anywhere is reported before
    // any error of structure, as when the text is lexed up front.
    try {
      cur_ = lexer_.next();
      while (!at(Tok::End)) {
        const Token kw = peek();
        if (kw.kind != Tok::Ident || (kw.text != "func" && kw.text != "kernel" && kw.text != "index_map"))
          fail(kw, "expected 'func', 'kernel' or 'index_map' at top level");
        Lexer::State after_kw = lexer_.state();
        next();
        const Token name = expect(Tok::At, "a symbol name like @main");
        std::string key(name.text);
        if (symbols_.count(key)) fail(name, "redefinition of @" + key);
        size_t lines = skip_to_body_end(kw);
        symbols_[key] = Symbol{kw, after_kw, lines, false, nullptr};
        order_.push_back(key);
      }
    } catch (const Error&) {
      while (lexer_.next().kind != Tok::End) {}  // a lexical error further on wins
      throw;
    }
    // Pass 2: parse each body, resolving references on demand.
    for (const std::string& name : order_) {
      const Symbol& s = symbols_.find(name)->second;
      resolve(name, s.kw);
    }
    Module m;
    for (const std::string& name : order_) m.add(symbols_[name].body);
    return m;
  }

 private:
  struct Symbol {
    Token kw;                 // `func`, `kernel` or `index_map`
    Lexer::State after_kw;    // where the lexer stands just after kw
    size_t lines;             // lines that start inside the body's braces: about its op count
    bool parsing;
    BodyPtr body;
  };
  // Names are views into the source text, which outlives the parse.
  using Scope = std::unordered_map<std::string_view, Var*>;

  // ---- token helpers ----
  // One token of lookahead: peek() is the token next() returns. Tokens are
  // returned by value (they are small), so none dangles as the lexer moves on.
  const Token& peek() const { return cur_; }
  bool at(Tok kind) const { return cur_.kind == kind; }
  bool at_punct(std::string_view p) const {
    // Punctuation is one or two characters: test the first before comparing.
    return cur_.kind == Tok::Punct && cur_.text.size() == p.size() && cur_.text[0] == p[0] &&
           (p.size() == 1 || cur_.text == p);
  }
  bool at_ident(std::string_view w) const { return cur_.kind == Tok::Ident && cur_.text == w; }
  Token next() {
    Token t = cur_;
    if (cur_.kind != Tok::End) cur_ = lexer_.next();
    last_line_ = t.line;
    return t;
  }
  bool same_line() const { return cur_.line == last_line_; }
  Loc loc(const Token& t) const { return lexer_.loc(t); }
  [[noreturn]] void fail(const Token& t, const std::string& msg) const { throw Error(loc(t), msg); }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::End: return "end of input";
      case Tok::Percent: return "'%" + std::string(t.text) + "'";
      case Tok::At: return "'@" + std::string(t.text) + "'";
      case Tok::String: return "a string";
      default: return "'" + std::string(t.text) + "'";
    }
  }
  Token expect(Tok kind, const std::string& what) {
    if (!at(kind)) fail(peek(), "expected " + what + ", got " + describe(peek()));
    return next();
  }
  Token expect_punct(std::string_view p) {
    if (!at_punct(p)) fail(peek(), "expected '" + std::string(p) + "', got " + describe(peek()));
    return next();
  }
  bool accept_punct(std::string_view p) {
    if (!at_punct(p)) return false;
    next();
    return true;
  }
  int64_t parse_int(const std::string& what) {
    const Token t = expect(Tok::Int, what);
    int64_t v = 0;
    const char* end = t.text.data() + t.text.size();
    auto [p, ec] = std::from_chars(t.text.data(), end, v);
    if (ec != std::errc() || p != end) fail(t, "integer out of range: " + std::string(t.text));
    return v;
  }

  // A float token; one too large for a double is an error (write `inf`),
  // one too small rounds to zero or a subnormal as C's strtod does.
  double parse_float() {
    const Token t = expect(Tok::Float, "a number");
    std::string text(t.text);
    errno = 0;
    double v = std::strtod(text.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(v)) fail(t, "float literal out of range: " + text + " (write inf)");
    return v;
  }

  // Skips a top-level body; returns how many lines start a statement at the
  // body's own depth, an estimate of its op count to reserve room for.
  size_t skip_to_body_end(const Token& kw) {
    while (!at_punct("{")) {
      if (at(Tok::End)) fail(kw, "expected '{' to start the body of this " + std::string(kw.text));
      next();
    }
    int depth = 0;
    size_t lines = 0;
    int counted_line = 0;
    do {
      if (at(Tok::End)) fail(kw, "unterminated body: missing '}'");
      if (depth == 1 && peek().line != counted_line) ++lines, counted_line = peek().line;
      if (at_punct("{")) ++depth;
      if (at_punct("}")) --depth;
      next();
    } while (depth > 0);
    return lines;
  }

  BodyPtr resolve(const std::string& name, const Token& where) {
    auto it = symbols_.find(name);
    if (it == symbols_.end()) fail(where, "use of undefined symbol @" + name);
    Symbol& s = it->second;
    if (s.body) return s.body;
    if (s.parsing) fail(where, "recursive reference to @" + name + " (bodies may not call themselves)");
    s.parsing = true;
    Token saved_cur = cur_;
    Lexer::State saved_state = lexer_.state();
    int saved_line = last_line_;
    std::vector<Scope> saved_scopes = std::move(scopes_);
    scopes_.clear();
    cur_ = s.kw;
    lexer_.set_state(s.after_kw);
    const Token kw = next();
    BodyKind kind = kw.text == "func" ? BodyKind::func : kw.text == "kernel" ? BodyKind::kernel : BodyKind::index_map;
    next();  // @name
    BodyPtr body = parse_body(name, kind, loc(kw), s.lines);
    scopes_ = std::move(saved_scopes);
    cur_ = saved_cur;
    lexer_.set_state(saved_state);
    last_line_ = saved_line;
    s.parsing = false;
    s.body = body;
    return body;
  }

  // ---- types ----
  DType parse_dtype_tok() {
    const Token t = expect(Tok::Ident, "a dtype");
    auto d = tessera::parse_dtype(t.text);
    if (!d) fail(t, "unknown dtype '" + std::string(t.text) + "'");
    return *d;
  }

  ArrayType parse_array_type() {
    ArrayType a;
    a.dtype = parse_dtype_tok();
    if (!at_punct("[")) return a;  // `i32` is the scalar `i32[]`
    next();
    if (!at_punct("]")) {
      do {
        const Token t = peek();
        int64_t d = parse_int("a dimension size");
        if (d < 0) fail(t, "dimension sizes must be non-negative");
        a.shape.push_back(d);
      } while (accept_punct(","));
    }
    expect_punct("]");
    return a;
  }

  Type parse_type() {
    if (at_ident("ref")) {
      next();
      expect_punct("<");
      ArrayType a = parse_array_type();
      MemSpace space = MemSpace::any;
      if (accept_punct(",")) {
        const Token t = expect(Tok::Ident, "a memory space");
        auto m = parse_mem_space(t.text);
        if (!m) fail(t, "unknown memory space '" + std::string(t.text) + "'");
        space = *m;
      }
      expect_punct(">");
      return Type::ref(a, space);
    }
    if (!at(Tok::Ident)) fail(peek(), "expected a type like f32[8,128] or ref<f32[8], vmem>, got " + describe(peek()));
    return Type::array(parse_array_type());
  }

  // ---- bodies ----
  BodyPtr parse_body(const std::string& name, BodyKind kind, const Loc& loc, size_t expected_ops = 0) {
    // The parser recurses once per body it enters (nested or resolved on
    // demand): bound that first, then the true depth once the body is built.
    if (++parse_depth_ > kMaxBodyNesting) throw Error(loc, too_deep());
    BodyPtr body = make_body(name, kind);
    body->set_loc(loc);
    // Room for the ops up front: growing the vector would move every op built so far.
    body->ops().reserve(expected_ops);
    scopes_.emplace_back();
    expect_punct("(");
    if (!at_punct(")")) {
      do {
        const Token t = expect(Tok::Percent, "a parameter name like %x");
        expect_punct(":");
        Type type = parse_type();
        define(t, body->add_param(type, std::string(t.text), this->loc(t)));
      } while (accept_punct(","));
    }
    expect_punct(")");
    std::vector<Type> declared;
    bool has_declared = false;
    if (accept_punct("->")) {
      has_declared = true;
      if (accept_punct("(")) {
        if (!at_punct(")")) do declared.push_back(parse_type()); while (accept_punct(","));
        expect_punct(")");
      } else {
        declared.push_back(parse_type());
      }
    }
    const Token open = expect_punct("{");
    Builder b(*body);
    bool returned = false;
    while (!at_punct("}")) {
      if (at(Tok::End)) fail(open, "unterminated body: missing '}'");
      if (returned) fail(peek(), "'return' must be the last statement of a body");
      if (at_ident("return")) {
        const Token r = next();
        std::vector<Value> outs;
        if (!at_punct("}")) do outs.push_back(parse_value(nullptr)); while (accept_punct(","));
        body->set_outputs(outs);
        returned = true;
        std::vector<Type> got = body->output_types();
        if (has_declared && got != declared)
          fail(r, "returned types " + types_str(got) + " do not match the declared result types " + types_str(declared));
        continue;
      }
      parse_statement(b);
    }
    next();  // '}'
    if (!returned && has_declared && !declared.empty())
      fail(open, "body declares results " + types_str(declared) + " but has no 'return'");
    scopes_.pop_back();
    --parse_depth_;
    // Every body this one refers to is parsed by now: its depth is known.
    int depth = 1;
    for (const Op& op : body->ops())
      for (const BodyPtr& n : op.nested_bodies())
        if (auto it = depth_of_.find(n.get()); it != depth_of_.end()) depth = std::max(depth, 1 + it->second);
    if (depth > kMaxBodyNesting) throw Error(loc, too_deep());
    depth_of_[body.get()] = depth;
    return body;
  }

  static std::string too_deep() {
    return "bodies nested deeper than " + std::to_string(kMaxBodyNesting) +
           " (counting inline bodies and the symbols they refer to); tessera's limit, see docs/ir.md";
  }

  static std::string types_str(const std::vector<Type>& ts) {
    std::string s = "(";
    for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].str();
    return s + ")";
  }

  void define(const Token& t, Var* v) {
    Scope& s = scopes_.back();
    if (!s.emplace(t.text, v).second) fail(t, "redefinition of %" + std::string(t.text));
  }

  Var* lookup(const Token& t) {
    auto& s = scopes_.back();
    if (auto it = s.find(t.text); it != s.end()) return it->second;
    for (size_t k = scopes_.size() - 1; k-- > 0;) {
      if (scopes_[k].count(t.text))
        fail(t, "%" + std::string(t.text) + " is defined in an enclosing body; bodies are closed, so pass it in as an operand" +
                    (body_kind_stack_.empty() || body_kind_stack_.back() != BodyKind::index_map
                         ? std::string()
                         : " (an index map may use only its program ids and scalar prefetch refs; it must not capture values)"));
    }
    fail(t, "use of undefined value %" + std::string(t.text));
  }

  // ---- statements ----
  struct PendingResult {
    Token name;
    std::optional<Type> type;
  };

  void parse_statement(Builder& b) {
    std::vector<PendingResult> results;
    const Token first = peek();
    if (at(Tok::Percent)) {
      do {
        PendingResult r{expect(Tok::Percent, "a result name"), std::nullopt};
        if (accept_punct(":")) r.type = parse_type();
        results.push_back(std::move(r));
      } while (accept_punct(","));
      expect_punct("=");
    }
    const Token name_tok = expect(Tok::Ident, "a primitive name or 'return'");
    const Primitive* p = registry().find(name_tok.text);
    if (!p) fail(name_tok, "unknown primitive '" + std::string(name_tok.text) + "'");
    Params params;
    if (at_punct("[") && same_line()) params = parse_params(*p);
    std::vector<Value> operands;
    std::vector<Indexer> indexers;
    std::vector<std::pair<int, Token>> untyped;  // operands written as bare literals, where
    if (starts_operand() && same_line()) {
      do parse_operand(*p, operands, indexers, untyped); while (accept_punct(","));
    }
    resolve_untyped_literals(*p, operands, indexers, untyped);
    b.set_loc(loc(results.empty() ? name_tok : first));
    std::vector<std::string> names;
    names.reserve(results.size());
    for (const PendingResult& r : results) names.emplace_back(r.name.text);
    std::vector<Var*> made = b.create(*p, std::move(operands), std::move(params), std::move(indexers), names);
    if (!results.empty() && results.size() != made.size())
      fail(first, std::string(name_tok.text) + " has " + std::to_string(made.size()) + " result(s), but " +
                      std::to_string(results.size()) + " name(s) were given");
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].type && !(*results[i].type == made[i]->type))
        fail(results[i].name, "result %" + std::string(results[i].name.text) + " is declared " +
                                  results[i].type->str() + " but " + std::string(name_tok.text) + " gives " + made[i]->type.str());
      define(results[i].name, made[i]);
    }
  }

  bool starts_operand() const {
    const Token t = peek();
    if (t.kind == Tok::Percent || t.kind == Tok::Int || t.kind == Tok::Float) return true;
    if (t.kind == Tok::Punct && t.text == "-") return true;
    return t.kind == Tok::Ident && (t.text == "true" || t.text == "false" || t.text == "inf" || t.text == "nan");
  }

  // A bare literal (no `:dtype`) takes the dtype of the op's first non-bool
  // variable data operand, so `mul %x, 2.0` means what it says for any float
  // %x. Among the primitive's integer operands (start indices, loop bounds) it
  // takes the dtype of the first integer variable there, else stays i32.
  void resolve_untyped_literals(const Primitive& p, std::vector<Value>& operands, const std::vector<Indexer>& indexers,
                                const std::vector<std::pair<int, Token>>& untyped) {
    if (untyped.empty()) return;
    // Main-operand position of each operand (-1 for a dynamic index entry).
    std::vector<int> main(operands.size(), -1);
    for (int i = 0, k = 0; i < static_cast<int>(operands.size()); ++i)
      if (!is_index_operand(indexers, i)) main[i] = k++;
    auto is_int_operand = [&](int i) { return main[i] >= 0 && p.int_operands.contains(main[i]); };
    std::optional<DType> data, index;
    for (int i = 0; i < static_cast<int>(operands.size()); ++i) {
      if (!operands[i].is_var()) continue;
      DType d = operands[i].type().dtype();
      if (is_int_operand(i)) {
        if (!index && is_int(d)) index = d;
      } else if (!data && !is_bool(d) && !is_semaphore(d)) {
        data = d;
      }
    }
    for (const auto& [i, t] : untyped) {
      Literal l = operands[i].literal();
      std::optional<DType> ctx = is_int_operand(i) ? index : data;
      if (ctx && is_float(*ctx)) {
        operands[i] = Literal::of_float(*ctx, l.as_double());
        continue;
      }
      if (ctx && is_int(*ctx) && !is_float(l.dtype)) operands[i] = Literal::of_int(*ctx, l.i);
      check_int_range(t, operands[i].literal());
    }
  }

  // The values an integer or bool dtype holds, [lo, hi].
  static std::pair<int64_t, int64_t> int_range(DType d) {
    switch (d) {
      case DType::i1: return {0, 1};
      case DType::i8: return {INT8_MIN, INT8_MAX};
      case DType::i16: return {INT16_MIN, INT16_MAX};
      case DType::i32: return {INT32_MIN, INT32_MAX};
      case DType::u8: return {0, UINT8_MAX};
      case DType::u32: return {0, UINT32_MAX};
      default: return {INT64_MIN, INT64_MAX};
    }
  }

  // An integer a value of its dtype cannot hold is an error, not kept as written.
  void check_int_range(const Token& t, const Literal& lit) {
    if (is_float(lit.dtype)) return;
    auto [lo, hi] = int_range(lit.dtype);
    if (lit.i < lo || lit.i > hi)
      fail(t, "integer literal " + std::to_string(lit.i) + " is outside the range of " +
                  std::string(dtype_name(lit.dtype)) + " [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }

  // A value: a variable or a literal (`2.0:f32`, `3`, `true`, `-inf`).
  Value parse_value(bool* untyped) {
    if (at(Tok::Percent)) return lookup(next());
    const Token t = peek();
    Literal lit;
    bool neg = accept_punct("-");
    if (at(Tok::Int)) {
      int64_t v = parse_int("an integer");
      lit = Literal::of_int(DType::i32, neg ? -v : v);
    } else if (at(Tok::Float)) {
      lit = Literal::of_float(DType::f32, (neg ? -1 : 1) * parse_float());
    } else if (at_ident("inf") || at_ident("nan")) {
      double v = next().text == "inf" ? INFINITY : NAN;
      lit = Literal::of_float(DType::f32, neg ? -v : v);
    } else if (!neg && (at_ident("true") || at_ident("false"))) {
      lit = Literal::of_int(DType::i1, next().text == "true");
      return lit;
    } else {
      fail(t, "expected a value (%name or a literal), got " + describe(t));
    }
    if (accept_punct(":")) {
      DType d = parse_dtype_tok();
      // A float written with an integer dtype is truncated; one outside the
      // int64 range (or NaN) has no integer value at all.
      constexpr double kTwo63 = 9223372036854775808.0;
      if (is_float(lit.dtype) && !is_float(d) && !(lit.f >= -kTwo63 && lit.f < kTwo63))
        fail(t, "float literal with no " + std::string(dtype_name(d)) + " value: NaN, infinite or beyond 2^63");
      lit = is_float(d) ? Literal::of_float(d, lit.as_double()) : Literal::of_int(d, lit.as_int());
      check_int_range(t, lit);
    } else if (untyped) {
      *untyped = true;
    }
    return lit;
  }

  void parse_operand(const Primitive& p, std::vector<Value>& operands, std::vector<Indexer>& indexers,
                     std::vector<std::pair<int, Token>>& untyped) {
    bool is_untyped = false;
    Token at_literal = peek();
    Value v = parse_value(&is_untyped);
    int index = static_cast<int>(operands.size());
    operands.push_back(v);
    if (is_untyped) untyped.emplace_back(index, at_literal);
    if (!(at_punct("[") && same_line())) return;
    if (!p.indexed) fail(peek(), p.name + " does not take indexed operands like %ref[...]");
    next();
    // Entries gather in a scratch list (an index entry holds no body, so no
    // nested parse reuses it), then move to a vector of exactly their size.
    entries_.clear();
    if (!at_punct("]")) {
      do entries_.push_back(parse_index_entry(operands)); while (accept_punct(","));
    }
    expect_punct("]");
    indexers.push_back(Indexer{index, std::vector<IndexEntry>(entries_.begin(), entries_.end())});
  }

  IndexEntry parse_index_entry(std::vector<Value>& operands) {
    if (accept_punct(":")) return IndexEntry::full();
    auto dynamic = [&]() {
      Var* v = lookup(next());
      operands.push_back(v);
      return static_cast<int>(operands.size()) - 1;
    };
    if (at_ident("ds")) {
      next();
      expect_punct("(");
      IndexEntry e = IndexEntry::slice(0, 0);
      if (at(Tok::Percent)) e.dyn_start = dynamic();
      else e.start = parse_int("a slice start");
      expect_punct(",");
      if (at(Tok::Percent)) e.dyn_size = dynamic();  // bounded by the Builder
      else e.size = parse_int("a slice size");
      if (accept_punct(",")) e.stride = parse_int("a slice stride");
      expect_punct(")");
      return e;
    }
    if (at(Tok::Percent)) {
      int k = dynamic();
      // A Ref in an index position names rows by offsets (a gather / scatter DMA).
      return operands[k].type().is_ref() ? IndexEntry::indirect(k) : IndexEntry::dyn_point(k);
    }
    int64_t start = parse_int("an index: an integer, %value, a:b, ds(start, size) or ':'");
    if (accept_punct(":")) {
      const Token t = peek();
      int64_t stop = parse_int("the end of a slice a:b");
      if (stop < start) fail(t, "slice end is before its start");
      return IndexEntry::slice(start, stop - start);
    }
    return IndexEntry::point(start);
  }

  // ---- params ----
  Params parse_params(const Primitive& p) {
    Params params;
    expect_punct("[");
    if (!at_punct("]")) {
      do {
        const Token key = expect(Tok::Ident, "a parameter name");
        const ParamSpec* spec = p.find_param(key.text);
        if (!spec) fail(key, "unknown parameter '" + std::string(key.text) + "' for primitive " + p.name);
        for (const NamedParam& np : params)
          if (np.name == key.text) fail(key, "parameter '" + std::string(key.text) + "' given twice");
        expect_punct("=");
        params.push_back({std::string(key.text), parse_param(*spec)});
      } while (accept_punct(","));
    }
    expect_punct("]");
    return params;
  }

  std::vector<int64_t> parse_int_list(const char* neg_word) {
    std::vector<int64_t> out;
    auto one = [&]() {
      if (neg_word && at_ident(neg_word)) { next(); return int64_t{-1}; }
      if (neg_word && std::string(neg_word) == "?" && accept_punct("?")) return int64_t{-1};
      return parse_int("an integer");
    };
    if (!accept_punct("(")) return {one()};
    if (!at_punct(")")) do out.push_back(one()); while (accept_punct(",") && !at_punct(")"));
    expect_punct(")");
    return out;
  }

  template <class F>
  auto parse_list(const char* open, const char* close, F item) {
    std::vector<decltype(item())> out;
    expect_punct(open);
    if (!at_punct(close)) do out.push_back(item()); while (accept_punct(",") && !at_punct(close));
    expect_punct(close);
    return out;
  }

  Param parse_param(const ParamSpec& spec) {
    const Token t = peek();
    switch (spec.kind) {
      case ParamKind::Int: {
        bool neg = accept_punct("-");
        int64_t v = parse_int("an integer for '" + spec.name + "'");
        return neg ? -v : v;
      }
      case ParamKind::Float: {
        Value v = parse_value(nullptr);
        if (!v.is_literal() || is_bool(v.literal().dtype)) fail(t, "expected a number for '" + spec.name + "'");
        return v.literal().as_double();
      }
      case ParamKind::Bool:
        if (at_ident("true") || at_ident("false")) return next().text == "true";
        fail(t, "expected true or false for '" + spec.name + "'");
      case ParamKind::Str: return unescape_string(expect(Tok::String, "a string for '" + spec.name + "'").text);
      case ParamKind::Ident: return std::string(expect(Tok::Ident, "a word for '" + spec.name + "'").text);
      case ParamKind::DType: return parse_dtype_tok();
      case ParamKind::Type: return parse_type();
      case ParamKind::Ints: return parse_int_list(nullptr);
      case ParamKind::Dims: return parse_int_list("?");
      case ParamKind::OptInts: return parse_int_list("none");
      case ParamKind::Idents: {
        if (at(Tok::Ident)) return std::vector<std::string>{std::string(next().text)};
        return parse_list("(", ")", [&] { return std::string(expect(Tok::Ident, "a word").text); });
      }
      case ParamKind::Types: return parse_list("[", "]", [&] { return parse_type(); });
      case ParamKind::Body: return parse_body_ref(spec.name == "kernel" ? BodyKind::kernel : BodyKind::fn);
      case ParamKind::Bodies: return parse_list("[", "]", [&] { return parse_body_ref(BodyKind::fn); });
      case ParamKind::Specs: return parse_list("[", "]", [&] { return parse_spec(); });
      case ParamKind::IntPairs:
        return parse_list("[", "]", [&] {
          expect_punct("(");
          int64_t a = parse_int("an integer");
          expect_punct(",");
          int64_t b = parse_int("an integer");
          expect_punct(")");
          return std::pair<int64_t, int64_t>(a, b);
        });
    }
    fail(t, "cannot parse parameter '" + spec.name + "'");
  }

  BodyPtr parse_body_ref(BodyKind inline_kind) {
    if (at(Tok::At)) {
      const Token t = next();
      return resolve(std::string(t.text), t);
    }
    if (!at_ident("fn")) fail(peek(), "expected @name or an inline fn(...) { ... }, got " + describe(peek()));
    const Token kw = next();
    body_kind_stack_.push_back(inline_kind);
    BodyPtr b = parse_body("", inline_kind, loc(kw));
    body_kind_stack_.pop_back();
    return b;
  }

  BlockSpec parse_spec() {
    const Token kw = expect(Tok::Ident, "spec(...)");
    if (kw.text != "spec") fail(kw, "expected spec(...), got '" + std::string(kw.text) + "'");
    BlockSpec s;
    expect_punct("(");
    bool first = true;
    while (!at_punct(")")) {
      if (!first) expect_punct(",");
      first = false;
      if (at_punct("(")) {
        s.block = parse_list("(", ")", [&] { return parse_block_dim(); });
      } else if (at(Tok::At) || at_ident("fn")) {
        s.index_map = parse_body_ref(BodyKind::index_map);
      } else if (at_ident("mem")) {
        next();
        expect_punct("=");
        const Token t = expect(Tok::Ident, "a memory space");
        auto m = parse_mem_space(t.text);
        if (!m) fail(t, "unknown memory space '" + std::string(t.text) + "'");
        s.mem = *m;
      } else if (at_ident("buffered")) {
        next();
        expect_punct("=");
        const Token t = peek();
        s.buffer_count = parse_int("a buffer count");
        if (s.buffer_count < 1) fail(t, "buffered=k needs k >= 1");
      } else {
        fail(peek(), "expected a block shape (..), an index map, mem=... or buffered=..., got " + describe(peek()));
      }
    }
    next();
    return s;
  }

  BlockDim parse_block_dim() {
    if (at(Tok::Int)) return BlockDim::blocked(parse_int("a block size"));
    const Token t = expect(Tok::Ident, "a block dim: n, squeezed, element(n, lo, hi) or bounded(n)");
    if (t.text == "squeezed") return BlockDim::squeezed();
    if (t.text == "element") {
      expect_punct("(");
      BlockDim d = BlockDim::element(parse_int("a block size"));
      if (accept_punct(",")) {
        d.pad_lo = parse_int("low padding");
        expect_punct(",");
        d.pad_hi = parse_int("high padding");
      }
      expect_punct(")");
      return d;
    }
    if (t.text == "bounded") {
      expect_punct("(");
      BlockDim d = BlockDim::bounded(parse_int("a block size"));
      expect_punct(")");
      return d;
    }
    fail(t, "unknown block dim '" + std::string(t.text) + "'; expected n, squeezed, element(n, lo, hi) or bounded(n)");
  }

  Lexer lexer_;
  Token cur_;
  int last_line_ = 0;
  std::map<std::string, Symbol, std::less<>> symbols_;
  std::vector<std::string> order_;
  std::vector<Scope> scopes_;
  std::vector<BodyKind> body_kind_stack_;
  std::vector<IndexEntry> entries_;  // scratch for parse_operand
  int parse_depth_ = 0;                                // bodies being parsed, one inside the other
  std::unordered_map<const Body*, int> depth_of_;      // of every body parsed: its nesting depth
};

}  // namespace

Module parse_module(std::string_view text, const std::string& filename) { return Parser(text, filename).parse(); }

std::string read_source(const std::string& path) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open file '" + path + "'");
    ss << in.rdbuf();
  }
  return ss.str();
}

std::string source_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

Module parse_file(const std::string& path) { return parse_module(read_source(path), source_name(path)); }

}  // namespace tessera
