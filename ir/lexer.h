// Tokens of the text format.
//
// The lexer is a stream: `Lexer::next()` yields one token at a time, so a
// parse holds one token of lookahead instead of a vector of the whole file.
// A token's text is a view into the source text, which must outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"

namespace tessera {

enum class Tok : uint8_t {
  Ident,    // add, f32, vmem, kernel, true
  Percent,  // %x  (text holds "x")
  At,       // @k  (text holds "k")
  Int,      // 42, -3
  Float,    // 1.5, -2e-3
  String,   // "abc" (text holds the raw contents; unescape_string() decodes them)
  Punct,    // ( ) [ ] { } < > , : = ? -> -
  End,
};

struct Token {
  Tok kind = Tok::End;
  int line = 0;
  int col = 0;
  std::string_view text;  // a view into the source text
};

// The contents of a String token with `\n`, `\t` and `\c` (any c) decoded.
std::string unescape_string(std::string_view raw);

class Lexer {
 public:
  // Where the lexer stands; save and restore it to re-read text.
  struct State {
    size_t pos = 0;
    int line = 1;
    int col = 1;
  };

  Lexer(std::string_view text, std::shared_ptr<const std::string> file) : text_(text), file_(std::move(file)) {}

  // The next token; End (repeatedly) at the end of the text. `#` and `//`
  // start comments. Throws Error on a character that cannot start a token or
  // an unterminated string.
  Token next();

  State state() const { return st_; }
  void set_state(State s) { st_ = s; }
  Loc loc(const Token& t) const { return Loc{file_, t.line, t.col}; }
  const std::shared_ptr<const std::string>& file() const { return file_; }

 private:
  std::string_view text_;
  std::shared_ptr<const std::string> file_;
  State st_;
};

// Splits all of `text` into tokens (the last one End).
std::vector<Token> lex(std::string_view text, std::shared_ptr<const std::string> file);

}  // namespace tessera
