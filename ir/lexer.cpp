#include "ir/lexer.h"

namespace tessera {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
// The characters std::isspace accepts in the "C" locale.
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
bool is_ident_char(char c) { return is_alnum(c) || c == '_' || c == '.'; }
bool is_punct(char c) {
  switch (c) {
    case '(': case ')': case '[': case ']': case '{': case '}': case '<': case '>':
    case ',': case ':': case '=': case '?': case '-': return true;
    default: return false;
  }
}

}  // namespace

std::string unescape_string(std::string_view raw) {
  std::string s;
  s.reserve(raw.size());
  for (size_t j = 0; j < raw.size();) {
    if (raw[j] == '\\' && j + 1 < raw.size()) {
      char e = raw[j + 1];
      s += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      j += 2;
    } else {
      s += raw[j++];
    }
  }
  return s;
}

Token Lexer::next() {
  const std::string_view text = text_;
  const size_t n = text.size();
  size_t i = st_.pos;
  int line = st_.line, col = st_.col;
  // Every token but a string lies on one line: it advances the column only.
  auto finish = [&](Tok kind, size_t start, size_t len, size_t consumed) {
    Token t{kind, line, col, text.substr(start, len)};
    st_.pos = i + consumed;
    st_.line = line;
    st_.col = col + static_cast<int>(consumed);
    return t;
  };
  while (i < n) {
    char c = text[i];
    if (is_space(c)) {
      if (c == '\n') ++line, col = 1;
      else ++col;
      ++i;
      continue;
    }
    if (c == '#' || (c == '/' && i + 1 < n && text[i + 1] == '/')) {
      while (i < n && text[i] != '\n') ++i, ++col;
      continue;
    }
    break;
  }
  if (i >= n) {
    st_ = State{i, line, col};
    return Token{Tok::End, line, col, std::string_view()};
  }
  char c = text[i];
  size_t j = i;
  bool neg_number = c == '-' && i + 1 < n && is_digit(text[i + 1]);
  if (is_digit(c) || neg_number) {
    j = i + 1;
    bool is_float = false;
    while (j < n && is_digit(text[j])) ++j;
    if (j < n && text[j] == '.' && j + 1 < n && is_digit(text[j + 1])) {
      is_float = true;
      for (++j; j < n && is_digit(text[j]); ++j) {}
    } else if (j < n && text[j] == '.' && !(j + 1 < n && text[j + 1] == '.')) {
      is_float = true;  // "1." is a float
      ++j;
    }
    if (j < n && (text[j] == 'e' || text[j] == 'E')) {
      size_t k = j + 1;
      if (k < n && (text[k] == '+' || text[k] == '-')) ++k;
      if (k < n && is_digit(text[k])) {
        is_float = true;
        for (j = k; j < n && is_digit(text[j]); ++j) {}
      }
    }
    return finish(is_float ? Tok::Float : Tok::Int, i, j - i, j - i);
  }
  if (is_alpha(c) || c == '_') {
    while (j < n && (is_alnum(text[j]) || text[j] == '_')) ++j;
    return finish(Tok::Ident, i, j - i, j - i);
  }
  if (c == '%' || c == '@') {
    j = i + 1;
    while (j < n && is_ident_char(text[j])) ++j;
    if (j == i + 1) throw Error(Loc{file_, line, col}, std::string("expected a name after '") + c + "'");
    return finish(c == '%' ? Tok::Percent : Tok::At, i + 1, j - i - 1, j - i);
  }
  if (c == '"') {
    j = i + 1;
    bool newline = false;
    while (j < n && text[j] != '"' && text[j] != '\n') {
      if (text[j] == '\\' && j + 1 < n) {
        newline |= text[j + 1] == '\n';
        j += 2;
      } else {
        ++j;
      }
    }
    if (j >= n || text[j] != '"') throw Error(Loc{file_, line, col}, "unterminated string");
    Token t{Tok::String, line, col, text.substr(i + 1, j - i - 1)};
    if (!newline) {
      st_ = State{j + 1, line, col + static_cast<int>(j + 1 - i)};
    } else {  // an escaped newline: count lines as the text does
      for (size_t k = i; k <= j; ++k) {
        if (text[k] == '\n') ++line, col = 1;
        else ++col;
      }
      st_ = State{j + 1, line, col};
    }
    return t;
  }
  if (c == '-' && i + 1 < n && text[i + 1] == '>') return finish(Tok::Punct, i, 2, 2);
  if (is_punct(c)) return finish(Tok::Punct, i, 1, 1);
  throw Error(Loc{file_, line, col}, std::string("unexpected character '") + c + "'");
}

std::vector<Token> lex(std::string_view text, std::shared_ptr<const std::string> file) {
  Lexer lexer(text, std::move(file));
  std::vector<Token> toks;
  for (;;) {
    toks.push_back(lexer.next());
    if (toks.back().kind == Tok::End) return toks;
  }
}

}  // namespace tessera
