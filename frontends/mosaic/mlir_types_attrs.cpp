// MLIR types and attribute values, as Mosaic modules print them.
#include <charconv>
#include <cmath>
#include <cstring>

#include "frontends/mosaic/mlir_parser.h"

namespace tessera::mlir_text {
namespace {

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Builtin scalar type keywords: iN, siN, uiN, index, the float types.
bool is_scalar_word(std::string_view w) {
  if (w == "index" || w == "bf16" || w == "tf32" || w == "none") return true;
  if (w.size() >= 2 && w[0] == 'i') return all_digits(w.substr(1));
  if (w.size() >= 3 && (w.substr(0, 2) == "si" || w.substr(0, 2) == "ui")) return all_digits(w.substr(2));
  return w.size() >= 2 && w[0] == 'f' && w[1] >= '1' && w[1] <= '9';  // f16, f32, f64, f8E4M3FN, ...
}

bool is_float_element(std::string_view e) {
  return e == "bf16" || e == "tf32" || (e.size() >= 2 && e[0] == 'f' && e[1] >= '1' && e[1] <= '9');
}

// Bit width of an integer element type (index and unknown: 64).
int int_width(std::string_view e) {
  std::string_view digits = e;
  if (e.substr(0, 2) == "si" || e.substr(0, 2) == "ui") digits = e.substr(2);
  else if (!e.empty() && e[0] == 'i') digits = e.substr(1);
  int w = 64;
  if (all_digits(digits) && digits.size() <= 3) std::from_chars(digits.data(), digits.data() + digits.size(), w);
  return w <= 0 || w > 64 ? 64 : w;
}

// Bytes per element in a `dense<"0x...">` blob.
size_t blob_width(std::string_view e) {
  if (e == "f16" || e == "bf16") return 2;
  if (e == "f32") return 4;
  if (e == "f64") return 8;
  const int w = int_width(e);
  return static_cast<size_t>(w <= 8 ? 1 : (w + 7) / 8);
}

double half_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double v;
  if (exp == 0) v = std::ldexp(frac, -24);
  else if (exp == 31) v = frac ? std::nan("") : INFINITY;
  else v = std::ldexp(frac + 1024, exp - 25);
  return sign ? -v : v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string shaped_text(std::string_view kind, const std::vector<int64_t>& shape, std::string_view element) {
  std::string t(kind);
  t += '<';
  for (int64_t d : shape) t += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  t += element;
  return t + '>';
}

}  // namespace

// ---- Building types and attributes ----------------------------------------------

MType scalar_type(std::string_view name) {
  MType t;
  t.kind = MType::Scalar;
  t.element = std::string(name);
  t.text = std::string(name);
  return t;
}

MType with_element(const MType& t, std::string_view element) {
  if (t.kind != MType::Vector) return scalar_type(element);
  MType v = t;
  v.element = std::string(element);
  v.text = shaped_text("vector", v.shape, element);
  return v;
}

MType element_type(const MType& t) {
  if (t.kind == MType::Vector || t.kind == MType::MemRef) return scalar_type(t.element);
  return t;
}

Attr int_attr(int64_t v, std::string_view type) {
  Attr a;
  a.kind = Attr::Int;
  a.i = v;
  a.type = scalar_type(type);
  return a;
}

Attr string_attr(std::string s) {
  Attr a;
  a.kind = Attr::String;
  a.s = std::move(s);
  return a;
}

Attr dense_array_attr(std::vector<int64_t> values, std::string_view elem) {
  Attr a;
  a.kind = Attr::DenseArray;
  a.ints = std::move(values);
  a.type = scalar_type(elem);
  return a;
}

bool float_from_bits(uint64_t bits, std::string_view type, double& out) {
  if (type == "f32") {
    if (bits > 0xffffffffu) return false;
    const auto b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, sizeof f);
    out = f;
  } else if (type == "f64") {
    std::memcpy(&out, &bits, sizeof out);
  } else if (type == "bf16") {
    if (bits > 0xffff) return false;
    const auto b = static_cast<uint32_t>(bits << 16);
    float f;
    std::memcpy(&f, &b, sizeof f);
    out = f;
  } else if (type == "f16") {
    if (bits > 0xffff) return false;
    out = half_to_double(static_cast<uint16_t>(bits));
  } else {
    return false;
  }
  return true;
}

// ---- Types ------------------------------------------------------------------------

MType Parser::parse_type(std::string_view context) {
  DepthGuard guard(*this);
  const size_t start = tok_.offset;
  if (tok_.kind == MTok::BareId) {
    const std::string_view w = tok_.text;
    if (w == "vector") return parse_shaped_type(MType::Vector, start, context);
    if (w == "memref") return parse_shaped_type(MType::MemRef, start, context);
    if (is_scalar_word(w)) {
      MType t = scalar_type(w);
      advance();
      return t;
    }
    if (w == "tensor" || w == "tuple" || w == "complex")
      fail("type `" + std::string(w) + "` is not supported (Mosaic kernels use scalars, vectors and memrefs)");
  }
  if (tok_.kind == MTok::BangId) {
    const std::string name(tok_.text);
    if (name.find('.') == std::string::npos) {
      const auto it = type_aliases_.find(name);
      if (it == type_aliases_.end()) fail("undefined type alias `!" + name + "`");
      advance();
      return it->second;
    }
    if (lex_.next_char_is('<')) lex_.scan_angle_body();
    advance();
    return scalar_type(source_since(start));  // `!tpu.dma_semaphore`, kept as spelled
  }
  if (at_punct("(")) return parse_function_type(start, context);
  fail_expected("a type", context);
}

MType Parser::parse_shaped_type(MType::Kind kind, size_t start, std::string_view context) {
  const std::string what = kind == MType::Vector ? "`vector<...>`" : "`memref<...>`";
  advance();  // vector / memref
  if (!at_punct("<")) fail_expected("`<`", "after " + what.substr(0, what.size() - 6) + "`");
  if (lex_.next_char_is('*')) fail_at(lex_.loc_here(), "unranked memrefs are not supported");
  if (lex_.next_char_is('[')) fail_at(lex_.loc_here(), "scalable vectors are not supported");
  MType t;
  t.kind = kind;
  t.shape = lex_.scan_dims();
  advance();  // the element type's first token
  const Loc elem_loc = loc();
  const MType elem = parse_type("as the element type of " + what);
  if (elem.kind != MType::Scalar) fail_at(elem_loc, "expected a scalar element type in " + what);
  t.element = elem.element;
  if (kind == MType::MemRef) parse_memref_extras(t, context);
  expect_punct(">", "to close " + what);
  t.text = std::string(source_since(start));
  return t;
}

void Parser::parse_memref_extras(MType& t, std::string_view context) {
  // `, layout` and `, memory space`, in that order, each optional. Layouts
  // (`strided<...>`, `#tpu.tiled<...>`, an affine map) are parsed and dropped.
  while (consume_punct(",")) {
    const Attr a = parse_attr(context);
    if (a.kind == Attr::Dialect && a.s == "tpu.memory_space") {
      const std::string_view body = trim(a.text);
      t.memory_space = std::string(trim(body.substr(0, body.find(','))));
    } else if (a.kind == Attr::Int) {
      t.memory_space = std::to_string(a.i);
    }
  }
}

MType Parser::parse_function_type(size_t start, std::string_view context) {
  MType t;
  t.kind = MType::Function;
  expect_punct("(", context);
  if (!at_punct(")")) t.inputs = parse_type_list(context);
  expect_punct(")", "to close the input types " + std::string(context));
  expect_punct("->", "after the input types " + std::string(context));
  t.results = parse_result_types(context);
  t.text = std::string(source_since(start));
  return t;
}

std::vector<MType> Parser::parse_type_list(std::string_view context) {
  std::vector<MType> out;
  do out.push_back(parse_type(context));
  while (consume_punct(","));
  return out;
}

std::vector<MType> Parser::parse_result_types(std::string_view context) {
  if (!at_punct("(")) return {parse_type(context)};
  // `(T {attrs}, ...)`: a parenthesised list (result attributes dropped).
  advance();
  std::vector<MType> out;
  if (!at_punct(")")) {
    do {
      out.push_back(parse_type(context));
      if (at_punct("{")) parse_attr_dict(context);
      skip_optional_loc();
    } while (consume_punct(","));
  }
  expect_punct(")", "to close the result types " + std::string(context));
  return out;
}

// ---- Attributes ---------------------------------------------------------------------

Attr Parser::parse_attr(std::string_view context) {
  DepthGuard guard(*this);
  last_attr_typed_ = false;
  Attr a;
  switch (tok_.kind) {
    case MTok::BareId: {
      const std::string w(tok_.text);
      if (w == "true" || w == "false") {
        a.kind = Attr::Bool;
        a.b = w == "true";
        a.type = scalar_type("i1");
        advance();
        return a;
      }
      if (w == "unit") {
        advance();
        return a;
      }
      const bool angle = lex_.next_char_is('<');
      if (w == "array" && angle) return parse_dense_array(context);
      if (w == "dense" && angle) return parse_dense(context);
      if ((w == "strided" || w == "affine_map" || w == "affine_set") && angle) {
        a.kind = Attr::Dialect;
        a.s = w;
        a.text = std::string(trim(lex_.scan_angle_body()));
        advance();
        return a;
      }
      if (w == "vector" || w == "memref" || is_scalar_word(w)) {
        a.kind = Attr::TypeAttr;
        a.type = parse_type(context);
        return a;
      }
      fail_expected("an attribute value", context);
    }
    case MTok::Integer:
    case MTok::Float: return parse_number_attr(context);
    case MTok::String:
      a.kind = Attr::String;
      a.s = unescape_mlir_string(tok_.text);
      advance();
      return a;
    case MTok::AtId:
      a.kind = Attr::Symbol;
      a.s = unescape_mlir_string(tok_.text);
      advance();
      while (consume_punct("::")) {  // nested reference `@a::@b`
        if (tok_.kind != MTok::AtId) fail_expected("a symbol", "after `::`");
        a.s += "::@" + unescape_mlir_string(tok_.text);
        advance();
      }
      return a;
    case MTok::HashId: return parse_hash_attr(context);
    case MTok::BangId:
      a.kind = Attr::TypeAttr;
      a.type = parse_type(context);
      return a;
    case MTok::Punct:
      if (at_punct("-")) return parse_number_attr(context);
      if (at_punct("(")) {
        a.kind = Attr::TypeAttr;
        a.type = parse_type(context);
        return a;
      }
      if (at_punct("[")) {
        advance();
        a.kind = Attr::Array;
        if (!at_punct("]")) {
          do a.list.push_back(parse_attr(context));
          while (consume_punct(","));
        }
        expect_punct("]", "to close the array attribute");
        return a;
      }
      if (at_punct("{")) {
        a.kind = Attr::Dict;
        a.dict = parse_attr_dict(context);
        return a;
      }
      break;
    default: break;
  }
  fail_expected("an attribute value", context);
}

Attr Parser::parse_number_attr(std::string_view context) {
  const Loc at = loc();
  const bool negative = consume_punct("-");
  if (tok_.kind != MTok::Integer && tok_.kind != MTok::Float) fail_expected("a number", context);
  const MToken lit = tok_;
  advance();
  Attr a;
  if (consume_punct(":")) {
    a.type = parse_type(context);
    last_attr_typed_ = true;
  } else {
    a.type = scalar_type(lit.kind == MTok::Float ? "f64" : "i64");
  }
  const std::string_view t = lit.text;
  const bool hex = t.size() > 2 && t[1] == 'x';
  if (is_float_element(a.type.element) && a.type.kind == MType::Scalar) {
    a.kind = Attr::Float;
    if (lit.kind == MTok::Float || !hex) {
      const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), a.f);
      (void)ptr;
      if (ec != std::errc()) fail_at(at, "float literal `" + std::string(t) + "` is out of range");
      if (negative) a.f = -a.f;
    } else {
      uint64_t bits = 0;
      const auto [ptr, ec] = std::from_chars(t.data() + 2, t.data() + t.size(), bits, 16);
      (void)ptr;
      if (negative || ec != std::errc() || !float_from_bits(bits, a.type.element, a.f))
        fail_at(at, "hexadecimal float literal `" + std::string(t) + "` does not fit `" + a.type.text + "`");
    }
    return a;
  }
  if (lit.kind == MTok::Float) fail_at(at, "float literal `" + std::string(t) + "` for integer type `" + a.type.text + "`");
  a.kind = Attr::Int;
  uint64_t mag = 0;
  const auto [ptr, ec] = std::from_chars(t.data() + (hex ? 2 : 0), t.data() + t.size(), mag, hex ? 16 : 10);
  (void)ptr;
  const int width = int_width(a.type.element);
  // Signed or unsigned, as MLIR accepts: [-2^(w-1), 2^w - 1], within int64.
  const uint64_t max_pos = width >= 63 ? (uint64_t{1} << 63) - 1 : (uint64_t{1} << width) - 1;
  const uint64_t max_neg = width >= 64 ? uint64_t{1} << 63 : uint64_t{1} << (width - 1);
  if (ec != std::errc() || mag > (negative ? max_neg : max_pos))
    fail_at(at, "integer `" + std::string(negative ? "-" : "") + std::string(t) + "` is out of range for `" +
                    a.type.text + "`");
  a.i = negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
  return a;
}

void Parser::parse_dense_elements(std::vector<Literal>& out, std::string_view context) {
  DepthGuard guard(*this);
  if (consume_punct("[")) {
    if (!at_punct("]")) {
      do parse_dense_elements(out, context);
      while (consume_punct(","));
    }
    expect_punct("]", "to close a list in `dense<...>`");
    return;
  }
  Literal l;
  l.negative = consume_punct("-");
  if (tok_.kind != MTok::Integer && tok_.kind != MTok::Float && !at_word("true") && !at_word("false"))
    fail_expected("a number", "in `dense<...>`");
  l.tok = tok_;
  advance();
  out.push_back(l);
}

Attr Parser::parse_dense(std::string_view context) {
  const Loc at = loc();
  advance();  // dense
  advance();  // <
  std::vector<Literal> lits;
  std::string_view blob;
  if (tok_.kind == MTok::String) {
    blob = tok_.text;
    advance();
  } else if (!at_punct(">")) {
    parse_dense_elements(lits, context);
  }
  expect_punct(">", "to close `dense<...>`");
  expect_punct(":", "after `dense<...>` (its type)");
  Attr a;
  a.kind = Attr::Dense;
  a.type = parse_type(context);
  last_attr_typed_ = true;
  const std::string elem = a.type.element;
  const bool is_float = is_float_element(elem);
  int64_t count = 1;
  for (int64_t d : a.type.shape)  // -1: unknown (a `?` dim) or too large to matter
    count = d < 0 || count < 0 || d > (int64_t{1} << 40) || count > (int64_t{1} << 40) ? -1 : count * d;
  if (!blob.empty()) {
    if (blob.size() < 2 || blob.substr(0, 2) != "0x" || blob.size() % 2 != 0)
      fail_at(at, "expected a hexadecimal string `\"0x...\"` in `dense<...>`");
    const size_t width = blob_width(elem);
    const size_t nbytes = (blob.size() - 2) / 2;
    if (nbytes % width != 0) fail_at(at, "`dense<\"0x...\">` holds a partial element");
    for (size_t e = 0; e < nbytes / width; ++e) {
      uint64_t bits = 0;
      for (size_t b = 0; b < width; ++b) {  // little-endian
        unsigned byte = 0;
        const char* p = blob.data() + 2 + 2 * (e * width + b);
        if (std::from_chars(p, p + 2, byte, 16).ptr != p + 2) fail_at(at, "bad hexadecimal digit in `dense<\"0x...\">`");
        bits |= static_cast<uint64_t>(byte) << (8 * b);
      }
      if (is_float) {
        double f = 0;
        if (!float_from_bits(bits, elem, f)) fail_at(at, "`dense<\"0x...\">` of `" + elem + "` is not supported");
        a.floats.push_back(f);
      } else {
        a.ints.push_back(static_cast<int64_t>(bits));
      }
    }
  }
  for (const Literal& l : lits) {
    const std::string_view t = l.tok.text;
    const bool hex = t.size() > 2 && t[1] == 'x';
    if (l.tok.kind == MTok::BareId) {
      if (is_float) fail_at(lex_.loc(l.tok), "`" + std::string(t) + "` in a `dense<...>` of `" + elem + "`");
      a.ints.push_back(t == "true" ? 1 : 0);
    } else if (is_float) {
      double f = 0;
      if (hex) {
        uint64_t bits = 0;
        const auto r = std::from_chars(t.data() + 2, t.data() + t.size(), bits, 16);
        if (r.ec != std::errc() || l.negative || !float_from_bits(bits, elem, f))
          fail_at(lex_.loc(l.tok), "hexadecimal float literal `" + std::string(t) + "` does not fit `" + elem + "`");
      } else if (std::from_chars(t.data(), t.data() + t.size(), f).ec != std::errc()) {
        fail_at(lex_.loc(l.tok), "float literal `" + std::string(t) + "` is out of range");
      }
      a.floats.push_back(l.negative ? -f : f);
    } else {
      if (l.tok.kind == MTok::Float) fail_at(lex_.loc(l.tok), "float literal in a `dense<...>` of `" + elem + "`");
      uint64_t mag = 0;
      const auto r = std::from_chars(t.data() + (hex ? 2 : 0), t.data() + t.size(), mag, hex ? 16 : 10);
      if (r.ec != std::errc() || mag > (uint64_t{1} << 63) - (l.negative ? 0 : 1))
        fail_at(lex_.loc(l.tok), "integer `" + std::string(t) + "` is out of range");
      a.ints.push_back(l.negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag));
    }
  }
  const auto n = static_cast<int64_t>(is_float ? a.floats.size() : a.ints.size());
  if (n != 1 && count >= 0 && n != count)
    fail_at(at, "`dense<...>` holds " + std::to_string(n) + " values but `" + a.type.text + "` has " +
                    std::to_string(count));
  return a;
}

Attr Parser::parse_dense_array(std::string_view context) {
  advance();  // array
  advance();  // <
  Attr a;
  a.kind = Attr::DenseArray;
  const Loc type_loc = loc();
  a.type = parse_type("as the element type of `array<...>`");
  if (a.type.kind != MType::Scalar) fail_at(type_loc, "expected a scalar element type in `array<...>`");
  const bool is_float = is_float_element(a.type.element);
  if (consume_punct(":")) {
    do {
      if (at_word("true") || at_word("false")) {
        a.ints.push_back(at_word("true") ? 1 : 0);
        advance();
      } else if (is_float) {
        const Attr f = parse_number_attr(context);
        a.floats.push_back(f.kind == Attr::Float ? f.f : static_cast<double>(f.i));
      } else {
        a.ints.push_back(parse_int("in `array<...>`"));
      }
    } while (consume_punct(","));
  }
  expect_punct(">", "to close `array<...>`");
  return a;
}

Attr Parser::parse_hash_attr(std::string_view context) {
  (void)context;
  const std::string name(tok_.text);
  if (name.find('.') == std::string::npos) {  // an alias: dialect attributes always have a `.`
    const auto it = attr_aliases_.find(name);
    if (it == attr_aliases_.end()) fail("undefined attribute alias `#" + name + "`");
    advance();
    return it->second;
  }
  Attr a;
  a.kind = Attr::Dialect;
  a.s = name;
  if (lex_.next_char_is('<')) a.text = std::string(trim(lex_.scan_angle_body()));
  advance();
  return a;
}

std::vector<std::pair<std::string, Attr>> Parser::parse_attr_dict(std::string_view context) {
  DepthGuard guard(*this);
  expect_punct("{", context);
  std::vector<std::pair<std::string, Attr>> out;
  if (!at_punct("}")) {
    do {
      std::string key;
      if (tok_.kind == MTok::BareId) key = std::string(tok_.text);
      else if (tok_.kind == MTok::String) key = unescape_mlir_string(tok_.text);
      else fail_expected("an attribute name", context);
      advance();
      Attr value;  // Unit when no `= value`
      if (consume_punct("=")) value = parse_attr("as the value of `" + key + "`");
      out.emplace_back(std::move(key), std::move(value));
    } while (consume_punct(","));
  }
  expect_punct("}", "to close the attribute dictionary");
  return out;
}

void Parser::parse_optional_attr_dict(Operation& op) {
  if (!at_punct("{")) return;
  auto entries = parse_attr_dict("in the attributes of `" + op.name + "`");
  op.attrs.insert(op.attrs.end(), std::make_move_iterator(entries.begin()), std::make_move_iterator(entries.end()));
}

Attr Parser::parse_bracketed_int_array(std::string_view elem, std::string_view context) {
  expect_punct("[", context);
  std::vector<int64_t> v;
  if (!at_punct("]")) {
    do v.push_back(parse_int(context));
    while (consume_punct(","));
  }
  expect_punct("]", context);
  return dense_array_attr(std::move(v), elem);
}

}  // namespace tessera::mlir_text
