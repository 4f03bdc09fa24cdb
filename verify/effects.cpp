// Effects are never stored, only computed (ir/effects.h); the verifier makes
// sure they can be computed for every body and that bodies which must be pure
// are: an index map runs at arbitrary times to plan DMAs, so it may only read
// (its scalar-prefetch Refs); a while cond is evaluated an unknown number of
// times, so it must not write or communicate.
#include "ir/effects.h"
#include "ir/primitive.h"
#include "verify/check.h"

namespace tessera::verify_detail {
namespace {

// The effects beyond plain reads, as text ("write(%r), io"), or "".
std::string impure_part(const Body& b, const Effects& fx) {
  Effects impure = fx;
  for (uint8_t& bits : impure.on_param) bits &= static_cast<uint8_t>(~kRead);
  return impure.empty() ? "" : impure.str(b);
}

bool compute(const Body& b, const Loc& loc, Effects& fx, Diags& out) {
  try {
    fx = compute_effects(b);
    return true;
  } catch (const Error& e) {
    report(out, e.loc().known() ? e.loc() : loc, "cannot compute the effects of " + body_label(b) + ": " + e.message());
  } catch (const std::exception& e) {
    report(out, loc, "cannot compute the effects of " + body_label(b) + ": " + e.what());
  }
  return false;
}

}  // namespace

void check_read_only(const Body& b, const std::string& what, const std::string& why, const Loc& loc, Diags& out) {
  Effects fx;
  if (!compute(b, loc, fx, out)) return;
  std::string bad = impure_part(b, fx);
  if (!bad.empty()) report(out, loc, what + " has effects " + bad + "; " + why);
}

void check_body_effects(const Body& b, const Loc& fallback, Diags& out) {
  const Loc& loc = where(b, fallback);
  if (b.kind() == BodyKind::index_map) {
    check_read_only(b, body_label(b), "index maps must be pure (they may only read scalar prefetch)", loc, out);
    return;
  }
  Effects fx;
  compute(b, loc, fx, out);
}

void check_op_effects(const Op& op, Diags& out) {
  if (op.name() != "while") return;
  check_read_only(*op.param(keys::cond), "the cond of while", "a loop condition must not write or communicate",
                  op.loc, out);
}

}  // namespace tessera::verify_detail
