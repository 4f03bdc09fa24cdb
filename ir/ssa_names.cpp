#include "ir/ssa_names.h"

#include <cctype>

namespace tessera {
namespace {

bool is_identifier(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

}  // namespace

// A nested scope numbers on from its enclosing one, so its unnamed values
// rarely need to skip numbers the enclosing scope has taken.
SsaNames::SsaNames(const SsaNames* enclosing) : enclosing_(enclosing), next_(enclosing ? enclosing->next_ : 0) {}

const std::string& SsaNames::name(const Var* v) {
  auto it = names_.find(v);
  if (it != names_.end()) return it->second;
  return names_.emplace(v, unique(v->name)).first->second;
}

const std::string* SsaNames::find(const Var* v) const {
  for (const SsaNames* s = this; s; s = s->enclosing_) {
    auto it = s->names_.find(v);
    if (it != s->names_.end()) return &it->second;
  }
  return nullptr;
}

std::string SsaNames::fresh(std::string_view hint) { return unique(hint); }

void SsaNames::alias(const Var* v, std::string name) { names_[v] = std::move(name); }

bool SsaNames::taken(const std::string& n) const {
  for (const SsaNames* s = this; s; s = s->enclosing_)
    if (s->taken_.count(n)) return true;
  return false;
}

std::string SsaNames::unique(std::string_view hint) {
  std::string n;
  // A numeric hint that is taken gets the next free number, not `0_1`: MLIR
  // (and the text format) read a name that starts with a digit as a number.
  bool numeric = !hint.empty() && std::isdigit(static_cast<unsigned char>(hint[0]));
  if (!is_identifier(hint) || (numeric && taken(std::string(hint)))) {
    do n = std::to_string(next_++); while (taken(n));
  } else {
    // Suffixes are tried in increasing order and a name once taken stays
    // taken, so the search for a hint resumes where its last one ended: the
    // same names as trying 1, 2, ... each time, without quadratic time when
    // one hint (an emitter's `%c0`) is used thousands of times in a scope.
    n = hint;
    if (taken(n)) {
      int& i = next_suffix_[n];
      if (i == 0) i = 1;
      do n = std::string(hint) + "_" + std::to_string(i++); while (taken(n));
    }
  }
  taken_.insert(n);
  return n;
}

}  // namespace tessera
