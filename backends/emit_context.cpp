#include "backends/emit_context.h"

namespace tessera::backends {

EmitContext::EmitContext(std::string target)
    : literal([](EmitContext&, const Literal& l) { return l.str(); }), target_(std::move(target)) {
  scopes_.push_back(std::make_unique<SsaNames>());
}

std::string EmitContext::def(const Var* v) { return "%" + names().name(v); }

std::string EmitContext::use(const Value& v) {
  if (v.is_literal()) return literal(*this, v.literal());
  if (const std::string* n = names().find(v.var())) return "%" + *n;
  // A bug in a lowering rule, not in the input; still an error, not a crash.
  throw Error(v.var()->loc, target_ + ": internal error: value " + (v.var()->name.empty() ? "" : "`" + v.var()->name + "` ") +
                                "used where it has no name (used before its definition was emitted, or inside a "
                                "closed scope without an alias)");
}

std::string EmitContext::fresh(std::string_view hint) { return "%" + names().fresh(hint); }

void EmitContext::alias(const Var* v, std::string_view name) {
  if (!name.empty() && name.front() == '%') name.remove_prefix(1);
  names().alias(v, std::string(name));
}

void EmitContext::line(std::string_view text) {
  text_.append(2 * static_cast<size_t>(indent_), ' ');
  text_ += text;
  text_ += '\n';
}

EmitContext::Scope EmitContext::nested(Names n, int indent) {
  const SsaNames* enclosing = n == Names::see_enclosing ? scopes_.back().get() : nullptr;
  scopes_.push_back(std::make_unique<SsaNames>(enclosing));
  indent_ += indent;
  return Scope(this, indent, true);
}

EmitContext::Scope EmitContext::indented(int indent) {
  indent_ += indent;
  return Scope(this, indent, false);
}

EmitContext::Scope::~Scope() {
  if (!ctx_) return;
  ctx_->indent_ -= indent_;
  if (pushed_names_) ctx_->scopes_.pop_back();
}

Error EmitContext::error(const Op& op, std::string_view message) const {
  return Error(op.loc, target_ + ": " + std::string(message));
}

}  // namespace tessera::backends
