#include "frontends/mosaic/mlir_lexer.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>

namespace tessera::mlir_text {
namespace {

bool is_id_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
// Characters after the first of a bare identifier (`arith.addf`, `f8E4M3FN`).
bool is_bare_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.'; }
// Characters of a `%`, `^`, `#`, `!` suffix: MLIR also allows `-`.
bool is_suffix_char(char c) { return is_bare_char(c) || c == '-'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// How a byte is named in a message: printable ones as themselves.
std::string describe_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x21 && u < 0x7f) return std::string("`") + c + "`";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02X", u);
  return buf;
}

}  // namespace

std::string unescape_mlir_string(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c != '\\' || i + 1 >= raw.size()) {
      out += c;
      continue;
    }
    const char e = raw[++i];
    if (e == 'n') {
      out += '\n';
    } else if (e == 't') {
      out += '\t';
    } else if (i + 1 < raw.size() && is_hex(e) && is_hex(raw[i + 1])) {
      out += static_cast<char>(std::stoi(std::string(raw.substr(i, 2)), nullptr, 16));
      ++i;
    } else {
      out += e;  // \" and \\ (and any other escaped character as itself)
    }
  }
  return out;
}

void MLexer::advance() {
  if (text_[st_.pos] == '\n') {
    ++st_.line;
    st_.col = 1;
  } else {
    ++st_.col;
  }
  ++st_.pos;
}

void MLexer::skip_space_and_comments() {
  while (!at_end()) {
    const char c = peek();
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance();
    } else if (c == '/' && peek(1) == '/') {
      while (!at_end() && peek() != '\n') advance();
    } else {
      return;
    }
  }
}

std::string_view MLexer::take_while_id_chars(size_t start) {
  while (!at_end() && is_suffix_char(peek())) advance();
  return text_.substr(start, st_.pos - start);
}

MToken MLexer::make(MTok kind, size_t start, int line, int col, std::string_view text) const {
  MToken t;
  t.kind = kind;
  t.text = text;
  t.offset = start;
  t.line = line;
  t.col = col;
  return t;
}

MToken MLexer::next() {
  skip_space_and_comments();
  const size_t start = st_.pos;
  const int line = st_.line, col = st_.col;
  if (at_end()) return make(MTok::Eof, start, line, col, {});
  const char c = peek();
  if (is_id_start(c)) {
    advance();
    while (!at_end() && is_bare_char(peek())) advance();
    return make(MTok::BareId, start, line, col, text_.substr(start, st_.pos - start));
  }
  if (is_digit(c)) return lex_number(start, line, col);
  if (c == '"') return lex_string(start, line, col);
  if (c == '%' || c == '^' || c == '#' || c == '!') {
    advance();
    const size_t name_start = st_.pos;
    std::string_view name = take_while_id_chars(name_start);
    if (name.empty()) return error_token(start, line, col, "expected a name after " + describe_char(c));
    if (c == '%' && peek() == '#' && is_digit(peek(1))) {  // `%5#1`: result 1 of `%5:N`
      advance();
      while (!at_end() && is_digit(peek())) advance();
      name = text_.substr(name_start, st_.pos - name_start);
    }
    const MTok kind = c == '%' ? MTok::ValueId : c == '^' ? MTok::CaretId : c == '#' ? MTok::HashId : MTok::BangId;
    return make(kind, start, line, col, name);
  }
  if (c == '@') {
    advance();
    if (peek() == '"') {
      MToken s = lex_string(st_.pos, st_.line, st_.col);
      return s.kind == MTok::Error ? s : make(MTok::AtId, start, line, col, s.text);
    }
    const std::string_view name = take_while_id_chars(st_.pos);
    if (name.empty()) return error_token(start, line, col, "expected a symbol name after `@`");
    return make(MTok::AtId, start, line, col, name);
  }
  if (c == '-' && peek(1) == '>') {
    advance();
    advance();
    return make(MTok::Punct, start, line, col, text_.substr(start, 2));
  }
  if (c == ':' && peek(1) == ':') {
    advance();
    advance();
    return make(MTok::Punct, start, line, col, text_.substr(start, 2));
  }
  static constexpr std::string_view kPunct = "()[]{}<>,:=?*+-";
  if (kPunct.find(c) != std::string_view::npos) {
    advance();
    return make(MTok::Punct, start, line, col, text_.substr(start, 1));
  }
  advance();
  return error_token(start, line, col, "unexpected character " + describe_char(c));
}

MToken MLexer::error_token(size_t start, int line, int col, std::string message) {
  error_ = std::move(message);
  return make(MTok::Error, start, line, col, text_.substr(start, st_.pos - start));
}

MToken MLexer::lex_number(size_t start, int line, int col) {
  if (peek() == '0' && peek(1) == 'x' && is_hex(peek(2))) {
    advance();
    advance();
    while (!at_end() && is_hex(peek())) advance();
    return make(MTok::Integer, start, line, col, text_.substr(start, st_.pos - start));
  }
  while (!at_end() && is_digit(peek())) advance();
  bool is_float = false;
  if (peek() == '.') {
    is_float = true;
    advance();
    while (!at_end() && is_digit(peek())) advance();
  }
  if (is_float && (peek() == 'e' || peek() == 'E')) {
    const size_t sign = (peek(1) == '+' || peek(1) == '-') ? 1 : 0;
    if (is_digit(peek(1 + sign))) {
      for (size_t k = 0; k < 1 + sign; ++k) advance();
      while (!at_end() && is_digit(peek())) advance();
    }
  }
  return make(is_float ? MTok::Float : MTok::Integer, start, line, col, text_.substr(start, st_.pos - start));
}

MToken MLexer::lex_string(size_t start, int line, int col) {
  advance();  // the opening quote
  const size_t body = st_.pos;
  while (true) {
    if (at_end() || peek() == '\n') return error_token(start, line, col, "unterminated string");
    if (peek() == '\\' && st_.pos + 1 < text_.size()) {
      advance();
      if (peek() == '\n') return error_token(start, line, col, "unterminated string");
      advance();
      continue;
    }
    if (peek() == '"') break;
    advance();
  }
  const std::string_view contents = text_.substr(body, st_.pos - body);
  advance();  // the closing quote
  return make(MTok::String, start, line, col, contents);
}

std::vector<int64_t> MLexer::scan_dims() {
  std::vector<int64_t> dims;
  while (!at_end() && (is_digit(peek()) || peek() == '?')) {
    const Loc at = loc_here();
    int64_t d = -1;
    if (peek() == '?') {
      advance();
    } else {
      const size_t s = st_.pos;
      while (!at_end() && is_digit(peek())) advance();
      const auto [ptr, ec] = std::from_chars(text_.data() + s, text_.data() + st_.pos, d);
      (void)ptr;
      if (ec != std::errc()) throw Error(at, "dimension size out of range");
    }
    if (peek() != 'x') throw Error(loc_here(), "expected `x` after a dimension size");
    advance();
    dims.push_back(d);
  }
  return dims;
}

size_t MLexer::skip_group(char open, char close) {
  const Loc start = loc_here();
  advance();  // the opening character
  std::vector<char> closers{close};
  while (!closers.empty()) {
    if (at_end()) throw Error(start, std::string("unterminated `") + open + "`: no matching `" + close + "`");
    const char c = peek();
    if (c == '"') {
      const MToken s = lex_string(st_.pos, st_.line, st_.col);
      if (s.kind == MTok::Error) throw Error(loc(s), error_);
      continue;
    }
    if (c == '-' && peek(1) == '>') {  // the arrow of an affine map
      advance();
      advance();
      continue;
    }
    if ((c == '<' || c == '>') && peek(1) == '=') {  // comparisons in an affine set
      advance();
      advance();
      continue;
    }
    if (c == '<' || c == '(' || c == '[' || c == '{') {
      closers.push_back(c == '<' ? '>' : c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == '>' || c == ')' || c == ']' || c == '}') {
      if (closers.back() == c) {
        closers.pop_back();
        if (closers.empty()) break;
      } else if (c != '>') {
        throw Error(loc_here(), "unbalanced " + describe_char(c) + " inside `" + open + "...`");
      }
    }
    advance();
  }
  const size_t close_pos = st_.pos;
  advance();  // the closing character
  return close_pos;
}

std::string_view MLexer::scan_angle_body() {
  const size_t open = st_.pos;
  const size_t close = skip_group('<', '>');
  return text_.substr(open + 1, close - open - 1);
}

void MLexer::skip_paren_group() { skip_group('(', ')'); }

}  // namespace tessera::mlir_text
