// What a backend's lowering rules write through: the output text, with
// indentation, and the SSA names of the values in scope (ir/ssa_names.h, the
// printer's naming, so emitted code calls a value what `tessera print` does).
//
//   EmitContext ctx("toy");
//   for (Var* p : body.params()) ctx.def(p);                  // %x, %y
//   std::string a = ctx.use(op.operands[0]), b = ctx.use(op.operands[1]);
//   ctx.line(ctx.def(op.results[0]) + " = add " + a + ", " + b);
//   {
//     auto region = ctx.nested(EmitContext::Names::see_enclosing);  // an scf.for's body:
//     ...                                                             // one level deeper
//   }
//   std::string text = ctx.take_text();
//
// Operands are named before results: `use` of a literal may emit a line (see
// `literal`), which must come before the op that uses it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/ir.h"
#include "ir/ssa_names.h"

namespace tessera::backends {

class EmitContext {
 public:
  explicit EmitContext(std::string target);

  const std::string& target() const { return target_; }

  // ---- names (with the `%` sigil) ----
  // Names a value the current scope defines: an op's result or a body parameter.
  std::string def(const Var* v);
  // The name of a value in scope, or how a literal is written (`literal`).
  // Throws if a variable has no name here: a rule used a value before
  // defining it, or across a closed scope without `alias`.
  std::string use(const Value& v);
  // A temporary that stands for no IR value (an emitter's helper op).
  std::string fresh(std::string_view hint = "");
  // Makes `v` (a nested body's parameter) mean the value named `name`
  // (`%`-prefixed, as `use` returned it) instead of defining a new one.
  void alias(const Var* v, std::string_view name);

  // How a literal operand is written; the default is its IR spelling
  // (`2.0:f32`). A backend that must materialize constants (MLIR's
  // `arith.constant`) emits a line here and returns the temporary's name.
  std::function<std::string(EmitContext&, const Literal&)> literal;

  // ---- text ----
  void line(std::string_view text);  // one line at the current indentation
  std::string& text() { return text_; }  // raw access, for multi-line pieces
  std::string take_text() { return std::move(text_); }
  int depth() const { return indent_; }

  // ---- scopes ----
  // A nested body's values. `closed`: names of its own (the printer's rule for
  // tessera's closed bodies); `see_enclosing`: enclosing names stay visible and
  // are not reused (an MLIR region inside its function).
  enum class Names { closed, see_enclosing };
  class Scope {
   public:
    Scope(Scope&& o) noexcept : ctx_(o.ctx_), indent_(o.indent_), pushed_names_(o.pushed_names_) { o.ctx_ = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope();

   private:
    friend class EmitContext;
    Scope(EmitContext* ctx, int indent, bool pushed_names) : ctx_(ctx), indent_(indent), pushed_names_(pushed_names) {}
    EmitContext* ctx_;
    int indent_;
    bool pushed_names_;
  };
  // Enters a scope for names, `indent` levels deeper; left when the result dies.
  [[nodiscard]] Scope nested(Names names, int indent = 1);
  // Only `indent` levels deeper, the names unchanged.
  [[nodiscard]] Scope indented(int indent = 1);

  // An error at `op`'s location, prefixed by the target: "mosaic: ...".
  Error error(const Op& op, std::string_view message) const;

 private:
  SsaNames& names() { return *scopes_.back(); }

  std::string target_;
  std::string text_;
  int indent_ = 0;
  // The innermost scope last; a nested one may point at the one before it.
  std::vector<std::unique_ptr<SsaNames>> scopes_;
};

}  // namespace tessera::backends
