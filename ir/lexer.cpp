#include "ir/lexer.h"

#include <cctype>

namespace tessera {

std::vector<Token> lex(std::string_view text, std::shared_ptr<const std::string> file) {
  std::vector<Token> toks;
  // Typical text has a token per 2-3 bytes. Reserving once avoids regrowing a
  // large vector of Tokens (untouched reserved pages cost no memory).
  toks.reserve(text.size() / 2 + 16);
  size_t i = 0;
  int line = 1, col = 1;
  auto loc = [&]() { return Loc{file, line, col}; };
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < text.size(); ++k, ++i) {
      if (text[i] == '\n') ++line, col = 1;
      else ++col;
    }
  };
  auto is_ident_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  while (i < text.size()) {
    char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) { advance(1); continue; }
    if (c == '#' || (c == '/' && i + 1 < text.size() && text[i + 1] == '/')) {
      while (i < text.size() && text[i] != '\n') advance(1);
      continue;
    }
    Loc start = loc();
    size_t j = i;
    bool neg_number = c == '-' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (std::isdigit(static_cast<unsigned char>(c)) || neg_number) {
      j = i + 1;
      bool is_float = false;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      if (j < text.size() && text[j] == '.' && j + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[j + 1]))) {
        is_float = true;
        for (++j; j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])); ++j) {}
      } else if (j < text.size() && text[j] == '.' && !(j + 1 < text.size() && text[j + 1] == '.')) {
        is_float = true;  // "1." is a float
        ++j;
      }
      if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
        size_t k = j + 1;
        if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
        if (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) {
          is_float = true;
          for (j = k; j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])); ++j) {}
        }
      }
      toks.push_back({is_float ? Tok::Float : Tok::Int, std::string(text.substr(i, j - i)), start});
      advance(j - i);
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      toks.push_back({Tok::Ident, std::string(text.substr(i, j - i)), start});
      advance(j - i);
      continue;
    }
    if (c == '%' || c == '@') {
      j = i + 1;
      while (j < text.size() && is_ident_char(text[j])) ++j;
      if (j == i + 1) throw Error(start, std::string("expected a name after '") + c + "'");
      toks.push_back({c == '%' ? Tok::Percent : Tok::At, std::string(text.substr(i + 1, j - i - 1)), start});
      advance(j - i);
      continue;
    }
    if (c == '"') {
      std::string s;
      j = i + 1;
      while (j < text.size() && text[j] != '"' && text[j] != '\n') {
        if (text[j] == '\\' && j + 1 < text.size()) {
          char e = text[j + 1];
          s += e == 'n' ? '\n' : e == 't' ? '\t' : e;
          j += 2;
        } else {
          s += text[j++];
        }
      }
      if (j >= text.size() || text[j] != '"') throw Error(start, "unterminated string");
      toks.push_back({Tok::String, s, start});
      advance(j + 1 - i);
      continue;
    }
    if (c == '-' && i + 1 < text.size() && text[i + 1] == '>') {
      toks.push_back({Tok::Punct, "->", start});
      advance(2);
      continue;
    }
    if (std::string_view("()[]{}<>,:=?-").find(c) != std::string_view::npos) {
      toks.push_back({Tok::Punct, std::string(1, c), start});
      advance(1);
      continue;
    }
    throw Error(start, std::string("unexpected character '") + c + "'");
  }
  toks.push_back({Tok::End, "", loc()});
  return toks;
}

}  // namespace tessera
