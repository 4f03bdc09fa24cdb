// Deep nesting: the parser's documented limit on how deep
// bodies nest, and a printer whose work is linear in the nesting depth.
#include <chrono>

#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

// @main holding `levels` bodies one inside the other: each level is a cond
// whose first branch holds the next level, one line per level.
std::string nested_conds(int levels) {
  std::string head = "func @main(%p: i1, %x: f32[4]) -> f32[4] {\n", tail = "  return %r\n}\n";
  std::string text = head;
  for (int d = 1; d < levels; ++d)
    text += "  %r = cond[branches=[fn(%p: i1, %x: f32[4]) -> f32[4] {\n";
  text += "  %r = add %x, 1.0\n";
  for (int d = 1; d < levels; ++d)
    text += "  return %r\n}, fn(%q: i1, %z: f32[4]) -> f32[4] { return %z }]] %p, %p, %x\n";
  return text + tail;
}

// `count` functions, each calling the next; `callee_first` defines them from
// the end of the chain, so no body is parsed on demand.
std::string call_chain(int count, bool callee_first) {
  std::string text;
  for (int k = 0; k < count; ++k) {
    int i = callee_first ? count - 1 - k : k;
    std::string call = i + 1 < count ? "  %y = call[callee=@f" + std::to_string(i + 1) + "] %x\n  return %y\n" : "  return %x\n";
    text += "func @f" + std::to_string(i) + "(%x: f32[4]) -> f32[4] {\n" + call + "}\n";
  }
  return text;
}

}  // namespace

TEST_CASE("parser: bodies nested deeper than the limit are a located error") {
  CHECK(parse_error(nested_conds(kMaxBodyNesting)) == "<no error>");
  // The innermost body is the one too deep: level N+1 opens on line N+1.
  std::string want = "t.tsr:" + std::to_string(kMaxBodyNesting + 1) + ":23: error: bodies nested deeper than " +
                     std::to_string(kMaxBodyNesting) +
                     " (counting inline bodies and the symbols they refer to); tessera's limit, see docs/ir.md";
  CHECK(parse_error(nested_conds(kMaxBodyNesting + 1)) == want);
  CHECK(parse_error(nested_conds(5000)) == want);  // no stack overflow on the way down
  // Symbols referred to count too, whatever order they are defined in.
  CHECK(parse_error(call_chain(kMaxBodyNesting, true)) == "<no error>");
  CHECK(parse_error(call_chain(kMaxBodyNesting, false)) == "<no error>");
  CHECK_HAS(parse_error(call_chain(kMaxBodyNesting + 1, true)), "error: bodies nested deeper than");
  CHECK_HAS(parse_error(call_chain(kMaxBodyNesting + 1, false)), "error: bodies nested deeper than");
  CHECK_HAS(parse_error(call_chain(5000, false)), "error: bodies nested deeper than");
}

TEST_CASE("printer: each nested body is rendered once (linear in the depth)") {
  // Rendering nested parameters twice per level took 2^depth: 20 levels took
  // seconds, the limit would never finish.
  Module m = parse(nested_conds(kMaxBodyNesting));
  auto start = std::chrono::steady_clock::now();
  std::string text = print_module(m);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 2.0);
  CHECK(print_module(parse(text)) == text);
}
