// SSA names of one body's values, shared by the printer (ir/printer.cpp) and
// the backends' emit context (backends/emit_context.h).
//
// A value is named after its hint (`Var::name`) when that is an identifier
// not yet taken, `hint_1`, `hint_2`, ... when it is, and by the next free
// number (`0`, `1`, ...) when it has no usable hint or a numeric one taken. Names carry no sigil: the
// caller writes `%`.
//
// The printer gives every body its own names (bodies are closed). An emitter
// whose output nests regions that see their enclosing values (MLIR's `scf.for`
// inside a `func.func`) makes each nested scope's names `enclosing` aware:
// they then avoid every name visible from the enclosing scopes, as MLIR's
// parser requires (no redefinition of a visible SSA name), and a lookup falls
// back to the enclosing scopes.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "ir/value.h"

namespace tessera {

class SsaNames {
 public:
  explicit SsaNames(const SsaNames* enclosing = nullptr);

  // The name of `v` in this scope; the first call chooses it.
  const std::string& name(const Var* v);
  // The name of `v` here or in an enclosing scope, or null if it has none.
  const std::string* find(const Var* v) const;
  // A fresh name, not tied to a value (an emitter's temporaries).
  std::string fresh(std::string_view hint = "");
  // Makes `v` another name for a value already named `name` (a nested body's
  // parameter standing for an enclosing value); takes no new name.
  void alias(const Var* v, std::string name);

  const SsaNames* enclosing() const { return enclosing_; }

 private:
  bool taken(const std::string& n) const;
  std::string unique(std::string_view hint);

  const SsaNames* enclosing_;
  std::unordered_map<const Var*, std::string> names_;
  std::unordered_set<std::string> taken_;
  int next_ = 0;  // the next number to try for an unnamed value
  std::unordered_map<std::string, int> next_suffix_;  // per hint: the next `_N` to try
};

}  // namespace tessera
