// Tokens of the text format.
#pragma once

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
  String,   // "abc" (text holds the unescaped contents)
  Punct,    // ( ) [ ] { } < > , : = ? -> -
  End,
};

struct Token {
  Tok kind;
  std::string text;
  Loc loc;
};

// Splits `text` into tokens; `#` and `//` start comments. Throws Error on a
// character that cannot start a token or an unterminated string.
std::vector<Token> lex(std::string_view text, std::shared_ptr<const std::string> file);

}  // namespace tessera
