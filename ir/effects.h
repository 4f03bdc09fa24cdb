// Effects of a body, computed from its ops, never written by hand.
//
// Per Ref-typed parameter: read, write, accum (addupdate). Plus two ordered
// effects that pin ops in place: io (debug_print) and comms (DMAs, semaphores,
// remote signals). Passes use them to decide what may be dropped or reordered.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

class Body;
struct Op;

enum EffectBits : uint8_t { kRead = 1, kWrite = 2, kAccum = 4 };

struct Effects {
  std::vector<uint8_t> on_param;  // EffectBits per body parameter
  bool io = false;
  bool comms = false;

  bool empty() const;
  bool reads(int p) const { return on_param[p] & kRead; }
  bool writes(int p) const { return on_param[p] & kWrite; }
  bool accums(int p) const { return on_param[p] & kAccum; }
  // "read(%x), write(%o), io", writing parameter p as `param_names[p]` (the
  // printer's unique names: two parameters may share a name hint).
  std::string str(const std::vector<std::string>& param_names) const;
  std::string str(const Body& body) const;  // parameters by their name hints
  bool operator==(const Effects&) const = default;
};

// What one op does to its operands (by operand index) and whether it is ordered.
struct OpEffects {
  std::vector<std::pair<int, uint8_t>> on_operand;
  bool io = false;
  bool comms = false;
  void add(int operand, uint8_t bits) { on_operand.emplace_back(operand, bits); }
  uint8_t on(int operand) const {  // the bits on one operand
    uint8_t bits = 0;
    for (auto [k, b] : on_operand)
      if (k == operand) bits |= b;
    return bits;
  }
};

Effects compute_effects(const Body& body);
OpEffects op_effects(const Op& op);
// True when dropping `op` (its results unused) would change the program.
bool has_side_effects(const Op& op);

}  // namespace tessera
