// Tokens of MLIR's textual syntax, as much of it as Mosaic modules use.
//
// A stream with one token of lookahead, like tessera's own lexer (ir/lexer.h),
// plus the few character-level scans MLIR's grammar needs where tokens do not
// fit: the `8x128x` dimension prefix of a shaped type, and the raw `<...>`
// body of a dialect attribute or type, kept as text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"

namespace tessera::mlir_text {

enum class MTok : uint8_t {
  BareId,   // module, arith.addf, f32, true, loc
  ValueId,  // %x, %5#1 (text holds "x", "5#1")
  CaretId,  // ^bb0 (text holds "bb0")
  HashId,   // #tpu.memory_space, #map (text holds "tpu.memory_space")
  BangId,   // !tpu.dma_semaphore (text holds "tpu.dma_semaphore")
  AtId,     // @transform_0 or @"name" (text holds the name, raw)
  Integer,  // 42, 0xFF800000 (no sign: `-` is its own token)
  Float,    // 1.0, 2.000000e+00
  String,   // "abc" (text holds the raw contents between the quotes)
  Punct,    // ( ) [ ] { } < > , : = ? * + - -> ::
  Error,    // text no token starts with; MLexer::error() says why
  Eof,
};

struct MToken {
  MTok kind = MTok::Eof;
  std::string_view text;
  size_t offset = 0;  // of the token's first character
  int line = 0;
  int col = 0;

  bool is(MTok k, std::string_view t) const { return kind == k && text == t; }
  bool punct(std::string_view t) const { return is(MTok::Punct, t); }
  bool word(std::string_view t) const { return is(MTok::BareId, t); }
};

// A string literal's contents with MLIR's escapes decoded: `\"`, `\\`, `\n`,
// `\t` and `\XX` (two hex digits).
std::string unescape_mlir_string(std::string_view raw);

class MLexer {
 public:
  struct State {
    size_t pos = 0;
    int line = 1;
    int col = 1;
  };

  MLexer(std::string_view text, std::shared_ptr<const std::string> file) : text_(text), file_(std::move(file)) {}

  // The next token (Eof repeatedly at the end). `//` starts a comment. A
  // character no token starts with (a NUL byte, a stray `$`) or an
  // unterminated string gives an Error token rather than throwing: the parser
  // reads one token past the end of a module, into whatever prose follows,
  // and only a token it tries to use may fail.
  MToken next();
  // Why the last Error token is one.
  const std::string& error() const { return error_; }

  // Character-level scans from the current position (just after a token).
  // The dims of a shaped type before its element type: `8x128x` gives
  // {8, 128}, `?x` gives -1; stops at the first character that is not a
  // digit or `?`. Throws on a size that overflows or a missing `x`.
  std::vector<int64_t> scan_dims();
  // True when the very next character (no space between) is `c`.
  bool next_char_is(char c) const { return st_.pos < text_.size() && text_[st_.pos] == c; }
  // At `<` (the next character): the text up to the matching `>`, which is
  // consumed. Nested <>, (), [], {} and strings are skipped over; `->`, `>=`
  // and `<=` do not count as brackets. Throws when the text ends first.
  std::string_view scan_angle_body();
  // At `(` (the next character): skips to the matching `)` (a `loc(...)`).
  void skip_paren_group();

  State state() const { return st_; }
  void set_state(State s) { st_ = s; }
  size_t pos() const { return st_.pos; }
  std::string_view text() const { return text_; }
  Loc loc_here() const { return Loc{file_, st_.line, st_.col}; }
  Loc loc(const MToken& t) const { return Loc{file_, t.line, t.col}; }
  const std::shared_ptr<const std::string>& file() const { return file_; }

 private:
  char peek(size_t ahead = 0) const { return st_.pos + ahead < text_.size() ? text_[st_.pos + ahead] : '\0'; }
  bool at_end() const { return st_.pos >= text_.size(); }
  void advance();  // one character, keeping line and col
  void skip_space_and_comments();
  std::string_view take_while_id_chars(size_t start);
  MToken make(MTok kind, size_t start, int line, int col, std::string_view text) const;
  MToken lex_number(size_t start, int line, int col);
  MToken lex_string(size_t start, int line, int col);
  // Skips a bracketed group from an opening character to its match, with the
  // rules of scan_angle_body. Returns the position of the closing character.
  size_t skip_group(char open, char close);

  std::string_view text_;
  MToken error_token(size_t start, int line, int col, std::string message);

  std::shared_ptr<const std::string> file_;
  State st_;
  std::string error_;
};

}  // namespace tessera::mlir_text
