// The MLIR text parser's internals, shared by the generic syntax
// (mlir_parser.cpp, mlir_types_attrs.cpp) and the per-op pretty forms
// (pretty_*.cpp). Users call parse_mlir() (mlir_ast.h).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/mosaic/mlir_ast.h"
#include "frontends/mosaic/mlir_lexer.h"

namespace tessera::mlir_text {

class Parser {
 public:
  // Regions, attributes and types nest at most this deep; deeper input is an
  // error (the parser recurses, so a bound keeps any input from exhausting
  // the stack).
  static constexpr int kMaxDepth = 256;

  Parser(std::string_view text, const std::string& filename);

  // Every module of the text (see parse_mlir).
  std::vector<ModuleAst> parse_all();

  // ---- Tokens ----------------------------------------------------------------
  const MToken& tok() const { return tok_; }
  Loc loc() const { return lex_.loc(tok_); }
  void advance();
  bool at_punct(std::string_view p) const { return tok_.punct(p); }
  bool at_word(std::string_view w) const { return tok_.word(w); }
  bool at_value() const { return tok_.kind == MTok::ValueId; }
  bool consume_punct(std::string_view p);
  bool consume_word(std::string_view w);
  // "expected `p` <context>" at the current token unless it is `p`.
  void expect_punct(std::string_view p, std::string_view context);
  void expect_word(std::string_view w, std::string_view context);
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_at(const Loc& where, const std::string& message) const;
  // "expected <what> <context>, found `tok`".
  [[noreturn]] void fail_expected(std::string_view what, std::string_view context) const;
  // A bare word (`eq`, `to`, `source`), or an error.
  std::string parse_word(std::string_view what, std::string_view context);
  // A non-negative or negative integer literal that fits int64.
  int64_t parse_int(std::string_view context);

  // ---- SSA values ------------------------------------------------------------
  std::string parse_value_use(std::string_view context);
  // `%a, %b, ...`: empty when the current token is not a value.
  std::vector<std::string> parse_value_uses(std::string_view context);
  // `[%a, %b]` (possibly `[]`).
  std::vector<std::string> parse_bracketed_values(std::string_view context);

  // ---- Types and attributes (mlir_types_attrs.cpp) ------------------------------
  MType parse_type(std::string_view context);
  // `T, T, ...` (at least one).
  std::vector<MType> parse_type_list(std::string_view context);
  // `(T, ...)` or a single type: a function's or an op's result list.
  std::vector<MType> parse_result_types(std::string_view context);
  Attr parse_attr(std::string_view context);
  // Whether the last Int / Float / Dense parse_attr() gave had its `: type`.
  bool last_attr_had_type() const { return last_attr_typed_; }
  // `{k = v, ...}` entries (the current token is `{`).
  std::vector<std::pair<std::string, Attr>> parse_attr_dict(std::string_view context);
  // An optional `{...}` appended to op.attrs.
  void parse_optional_attr_dict(Operation& op);
  // `array<i64: 1, 2>`'s integer list alone, printed as `[1, 2]` in pretty
  // forms (tpu.transpose's permutation): a DenseArray of `elem`.
  Attr parse_bracketed_int_array(std::string_view elem, std::string_view context);

  // ---- Structure ----------------------------------------------------------------
  // `{ ... }`. `entry_args` become the first block's arguments. When
  // `implicit_terminator` is given (`scf.yield`), a block that does not end
  // in it gets it (operands none), as MLIR's parser adds it to an op whose
  // pretty form elides it; an empty region then gets one block.
  Region parse_region(std::vector<BlockArg> entry_args, std::string_view implicit_terminator = {});
  // `%x: T` (with an optional `loc(...)`).
  BlockArg parse_block_arg(std::string_view context);
  // Skips `loc(...)` if it is next.
  void skip_optional_loc();

 private:
  struct DepthGuard {
    explicit DepthGuard(Parser& p);
    ~DepthGuard() { --p_.depth_; }
    DepthGuard(const DepthGuard&) = delete;
    DepthGuard& operator=(const DepthGuard&) = delete;
    Parser& p_;
  };

  ModuleAst parse_module();
  Func parse_func();
  Operation parse_operation();
  void parse_result_names(Operation& op);
  void parse_generic_body(Operation& op);
  void parse_pretty_body(Operation& op, const MToken& name_tok);
  void finish_operation(Operation& op, const MToken& start);
  void parse_alias_definition();
  // Positions the lexer at `offset` (line `line`) and reads the first token.
  void reset_to(size_t offset, int line, size_t line_start);

  // mlir_types_attrs.cpp
  MType parse_shaped_type(MType::Kind kind, size_t start, std::string_view context);
  MType parse_function_type(size_t start, std::string_view context);
  void parse_memref_extras(MType& t, std::string_view context);
  Attr parse_number_attr(std::string_view context);
  Attr parse_dense(std::string_view context);
  Attr parse_dense_array(std::string_view context);
  Attr parse_hash_attr(std::string_view context);
  struct Literal {
    MToken tok;
    bool negative = false;
  };
  void parse_dense_elements(std::vector<Literal>& out, std::string_view context);
  std::string_view source_since(size_t start) const { return lex_.text().substr(start, prev_end_ - start); }

  MLexer lex_;
  MToken tok_;
  size_t prev_end_ = 0;  // end offset of the last consumed token
  int depth_ = 0;
  bool last_attr_typed_ = false;
  std::map<std::string, Attr, std::less<>> attr_aliases_;
  std::map<std::string, MType, std::less<>> type_aliases_;
};

// ---- Building types and attributes for derived operands and results -------------
MType scalar_type(std::string_view name);
// `t` with its element replaced: i32 -> i1, vector<8xf32> -> vector<8xi1>.
MType with_element(const MType& t, std::string_view element);
// The element (scalar) type of a vector or memref, or `t` itself.
MType element_type(const MType& t);
Attr int_attr(int64_t v, std::string_view type);
Attr string_attr(std::string s);
Attr dense_array_attr(std::vector<int64_t> values, std::string_view elem);
// A float literal's value from its bits (`0xFF800000 : f32`); false when the
// width does not fit the type.
bool float_from_bits(uint64_t bits, std::string_view type, double& out);

// ---- Pretty forms (pretty_forms.cpp) ----------------------------------------------
// Parses an op's custom syntax after its name into the generic shape: fills
// operands (ODS order), operand_types, attrs (with operandSegmentSizes where
// the op has them), result_types and regions.
using PrettyForm = void (*)(Parser& p, Operation& op);
const PrettyForm* find_pretty_form(std::string_view op_name);

}  // namespace tessera::mlir_text
