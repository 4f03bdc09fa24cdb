// One test per parser error class: the exact `file:line:col: error: message`.
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

TEST_CASE("lexer: unexpected character") {
  CHECK(parse_error("func @f() {\n  $x\n}\n") == "t.tsr:2:3: error: unexpected character '$'");
}

TEST_CASE("lexer: unterminated string") {
  CHECK(parse_error("func @f() {\n  debug_print[fmt=\"abc]\n}\n") == "t.tsr:2:19: error: unterminated string");
}

TEST_CASE("lexer: a sigil without a name") {
  CHECK(parse_error("func @f(% : f32) { }\n") == "t.tsr:1:9: error: expected a name after '%'");
}

TEST_CASE("top level: only func, kernel and index_map") {
  CHECK(parse_error("# comment\nfunction @f() { }\n") ==
        "t.tsr:2:1: error: expected 'func', 'kernel' or 'index_map' at top level");
}

TEST_CASE("unknown primitive") {
  CHECK(parse_error("func @f(%x: f32) {\n  %y = frobnicate %x\n}\n") == "t.tsr:2:8: error: unknown primitive 'frobnicate'");
}

TEST_CASE("unknown parameter") {
  CHECK(parse_error("func @f(%x: f32[8]) {\n  %y = cumsum[axis=0, exclusive=true] %x\n}\n") ==
        "t.tsr:2:23: error: unknown parameter 'exclusive' for primitive cumsum");
}

TEST_CASE("parameter given twice") {
  CHECK(parse_error("func @f(%x: f32[8]) {\n  %y = cumsum[axis=0, axis=0] %x\n}\n") ==
        "t.tsr:2:23: error: parameter 'axis' given twice");
}

TEST_CASE("missing required parameter") {
  CHECK(parse_error("func @f(%x: f32[8]) {\n  %y = cumsum %x\n}\n") == "t.tsr:2:3: error: cumsum needs parameter 'axis'");
}

TEST_CASE("wrong parameter kind") {
  CHECK(parse_error("func @f(%x: f32[8]) {\n  %y = cumsum[axis=0, reverse=1] %x\n}\n") ==
        "t.tsr:2:31: error: expected true or false for 'reverse'");
  CHECK(parse_error("func @f(%x: f32[8]) {\n  %y = reduce_sum[axes=all] %x\n}\n") ==
        "t.tsr:2:24: error: expected an integer, got 'all'");
  CHECK(parse_error("func @f(%x: f32) {\n  debug_print[fmt=x] %x\n}\n") ==
        "t.tsr:2:19: error: expected a string for 'fmt', got 'x'");
  CHECK(parse_error("func @f(%x: f32[8]) {\n  %y = cumsum[axis=x] %x\n}\n") ==
        "t.tsr:2:20: error: expected an integer for 'axis', got 'x'");
  CHECK(parse_error("func @f(%x: f32) {\n  %y = cond[branches=[@nope]] 0, %x\n}\n") ==
        "t.tsr:2:23: error: use of undefined symbol @nope");
  CHECK(parse_error("func @f(%x: f32) {\n  %y = cond[branches=[3]] 0, %x\n}\n") ==
        "t.tsr:2:23: error: expected @name or an inline fn(...) { ... }, got '3'");
}

TEST_CASE("undefined value") {
  CHECK(parse_error("func @f(%x: f32) {\n  %y = exp %z\n}\n") == "t.tsr:2:12: error: use of undefined value %z");
  CHECK(parse_error("func @f(%x: f32) -> f32 {\n  return %w\n}\n") == "t.tsr:2:10: error: use of undefined value %w");
}

TEST_CASE("redefinition of a value and of a symbol") {
  CHECK(parse_error("func @f(%x: f32) {\n  %x = exp %x\n}\n") == "t.tsr:2:3: error: redefinition of %x");
  CHECK(parse_error("func @f(%x: f32, %x: f32) { }\n") == "t.tsr:1:18: error: redefinition of %x");
  CHECK(parse_error("func @f() { }\nkernel @f() { }\n") == "t.tsr:2:8: error: redefinition of @f");
}

TEST_CASE("capture from an enclosing body") {
  CHECK(parse_error("func @f(%x: f32, %p: bool) {\n"
                    "  %y = cond[branches=[fn() -> f32 { return %x }, fn() -> f32 { return %x }]] %p\n"
                    "}\n") ==
        "t.tsr:2:44: error: %x is defined in an enclosing body; bodies are closed, so pass it in as an operand");
  // Index maps get an extra hint: Pallas forbids them capturing constants.
  std::string err = parse_error(
      "func @f(%x: f32[8], %c: i32) -> f32[8] {\n"
      "  %o = pallas_call[kernel=@k, grid=(1), in_specs=[spec((8), fn(%i: i32) -> i32 { return %c })],\n"
      "                  out_specs=[spec()], out_shapes=[f32[8]]] %x\n"
      "  return %o\n}\n"
      "kernel @k(%a: ref<f32[8], vmem>, %b: ref<f32[8], vmem>) { }\n");
  CHECK(err ==
        "t.tsr:2:89: error: %c is defined in an enclosing body; bodies are closed, so pass it in as an operand"
        " (an index map may use only its program ids and scalar prefetch refs; it must not capture values)");
}

TEST_CASE("missing '}'") {
  CHECK(parse_error("func @f(%x: f32) {\n  %y = exp %x\n") == "t.tsr:1:1: error: unterminated body: missing '}'");
  CHECK(parse_error("func @f(%x: f32) -> f32\n  return %x\n") ==
        "t.tsr:1:1: error: expected '{' to start the body of this func");
}

TEST_CASE("wrong result type annotation") {
  CHECK(parse_error("func @f(%x: f32[8]) {\n  %y: f32[4] = exp %x\n}\n") ==
        "t.tsr:2:3: error: result %y is declared f32[4] but exp gives f32[8]");
  CHECK(parse_error("func @f(%x: f32[8]) -> i32 {\n  return %x\n}\n") ==
        "t.tsr:2:3: error: returned types (f32[8]) do not match the declared result types (i32)");
  CHECK(parse_error("func @f(%x: f32[8]) -> f32[8] {\n}\n") ==
        "t.tsr:1:31: error: body declares results (f32[8]) but has no 'return'");
  CHECK(parse_error("func @f(%x: f32[8]) {\n  %a, %b = exp %x\n}\n") ==
        "t.tsr:2:3: error: exp has 1 result(s), but 2 name(s) were given");
}

TEST_CASE("return must come last") {
  CHECK(parse_error("func @f(%x: f32) -> f32 {\n  return %x\n  %y = exp %x\n}\n") ==
        "t.tsr:3:3: error: 'return' must be the last statement of a body");
}

TEST_CASE("unknown dtype and memory space") {
  CHECK(parse_error("func @f(%x: f8[4]) { }\n") == "t.tsr:1:13: error: unknown dtype 'f8'");
  CHECK(parse_error("func @f(%x: ref<f32[4], gmem>) { }\n") == "t.tsr:1:25: error: unknown memory space 'gmem'");
  CHECK(parse_error("func @f(%x: [4]) { }\n") ==
        "t.tsr:1:13: error: expected a type like f32[8,128] or ref<f32[8], vmem>, got '['");
  CHECK(parse_error("func @f(%x: f32[-4]) { }\n") == "t.tsr:1:17: error: dimension sizes must be non-negative");
  CHECK(parse_error("func @f(%x: f32[99999999999999999999]) { }\n") ==
        "t.tsr:1:17: error: integer out of range: 99999999999999999999");
}

TEST_CASE("float literals with an integer dtype: truncated, an error beyond the int64 range") {
  CHECK(parse("func @f(%x: i32) {\n  %y = add %x, 2.5:i32\n}\n").find("f")->ops()[0].operands[1].literal().str() == "2:i32");
  // Found by clang's UBSan: converting 1e40 to int64 was undefined behaviour.
  for (const char* lit : {"1e40:i32", "-1e40:i64", "nan:i32", "-inf:u8", "9223372036854775808.0:i64"})
    CHECK(parse_error("func @f(%x: i32) {\n  %y = add %x, " + std::string(lit) + "\n}\n") ==
          "t.tsr:2:16: error: float literal with no " + std::string(lit).substr(std::string(lit).find(':') + 1) +
              " value: NaN, infinite or beyond 2^63");
}

TEST_CASE("float literals: overflow is an error, underflow rounds") {
  CHECK(parse_error("func @f(%x: f32) {\n  %y = add %x, 1e99999\n}\n") ==
        "t.tsr:2:16: error: float literal out of range: 1e99999 (write inf)");
  CHECK(parse_error("func @f(%x: f32) {\n  %y = add %x, -1e400\n}\n") ==
        "t.tsr:2:16: error: float literal out of range: -1e400 (write inf)");
  Module m = parse_module("func @f(%x: f64) -> f64 {\n  %y = add %x, 1e-400:f64\n  return %y\n}\n", "t.tsr");
  CHECK(m.entry("f")->ops()[0].operands[1].literal().as_double() == 0.0);
}

TEST_CASE("bad index entries") {
  const std::string head = "kernel @k(%r: ref<f32[16], vmem>, %f: f32) {\n";
  CHECK(parse_error(head + "  %v = get %r[8:4]\n}\n") == "t.tsr:2:17: error: slice end is before its start");
  CHECK(parse_error(head + "  %v = get %r[x]\n}\n") ==
        "t.tsr:2:15: error: expected an index: an integer, %value, a:b, ds(start, size) or ':', got 'x'");
  CHECK(parse_error(head + "  %v = get %r[ds(0)]\n}\n") == "t.tsr:2:19: error: expected ',', got ')'");
  CHECK(parse_error(head + "  %v = exp %f[0]\n}\n") ==
        "t.tsr:2:14: error: exp does not take indexed operands like %ref[...]");
  CHECK(parse_error(head + "  %v = get %r[%f]\n}\n") ==
        "t.tsr:2:3: error: get: a dynamic index must be an integer scalar, got f32");
}

TEST_CASE("bad block specs") {
  auto with_spec = [](const std::string& spec) {
    return parse_error("kernel @k(%a: ref<f32[8], vmem>, %b: ref<f32[8], vmem>) { }\n"
                       "func @f(%x: f32[8]) {\n"
                       "  %o = pallas_call[kernel=@k, grid=(1), in_specs=[" + spec + "], out_specs=[spec()], out_shapes=[f32[8]]] %x\n"
                       "}\n");
  };
  CHECK(with_spec("spec((wide))") ==
        "t.tsr:3:57: error: unknown block dim 'wide'; expected n, squeezed, element(n, lo, hi) or bounded(n)");
  CHECK(with_spec("spec((8), buffered=0)") == "t.tsr:3:70: error: buffered=k needs k >= 1");
  CHECK(with_spec("spec((8), mem=gmem)") == "t.tsr:3:65: error: unknown memory space 'gmem'");
  CHECK(with_spec("spec((8), 3)") ==
        "t.tsr:3:61: error: expected a block shape (..), an index map, mem=... or buffered=..., got '3'");
  CHECK(with_spec("blk((8))") == "t.tsr:3:51: error: expected spec(...), got 'blk'");
}

TEST_CASE("symbols: undefined and recursive references") {
  CHECK(parse_error("func @f(%x: f32) -> f32 {\n  %y = call[callee=@g] %x\n  return %y\n}\n") ==
        "t.tsr:2:20: error: use of undefined symbol @g");
  CHECK(parse_error("func @f(%x: f32) -> f32 {\n  %y = call[callee=@f] %x\n  return %y\n}\n") ==
        "t.tsr:2:20: error: recursive reference to @f (bodies may not call themselves)");
}

TEST_CASE("operands must start on the op's line") {
  // `exp` with its operand on the next line is an `exp` with no operand.
  CHECK(parse_error("func @f(%x: f32) {\n  %y = exp\n    %x\n}\n") == "t.tsr:2:3: error: exp: expects 1 operand(s), got 0");
}

TEST_CASE("bare literals take the dtype of the first non-bool variable operand") {
  Module m = parse(one_op_module("%x: bf16[4], %i: i32", "%y = mul %x, 3"));
  CHECK(m.find("f")->ops()[0].operands[1].literal().str() == "3.0:bf16");
}

TEST_CASE("bare literals among a primitive's integer operands are integers") {
  auto literal = [](const char* params, const char* op, int k) {
    return parse(one_op_module(params, op)).find("f")->ops()[0].operands[k].literal().str();
  };
  // Start indices next to float data: i32, or the dtype of an integer start.
  CHECK(literal("%x: f32[16,8], %i: i32", "%y = dynamic_slice[slice_sizes=(4, 8)] %x, %i, 0", 2) == "0:i32");
  CHECK(literal("%x: f32[16,8], %i: i64", "%y = dynamic_slice[slice_sizes=(4, 8)] %x, 0, %i", 1) == "0:i64");
  CHECK(literal("%x: f32[16], %u: f32[4]", "%y = dynamic_update_slice %x, %u, 3", 2) == "3:i32");
  CHECK(result_types("%x: f32[16], %i: i32", "%y = dynamic_slice[slice_sizes=(4)] %x, 0") == "f32[4]");
  // The index of a cond and the bounds of a for, next to float carries.
  CHECK(literal("%x: f32", "%y = for[body=fn(%k: i32, %a: f32) -> f32 {\n  return %a\n}] 0, 4, %x", 1) == "4:i32");
  // A float literal where an integer belongs is still an error, not truncated.
  CHECK(op_error("%x: f32[16]", "%y = dynamic_slice[slice_sizes=(4)] %x, 1.5") ==
        "t.tsr:2:3: error: dynamic_slice: start index must be an integer scalar, got f32");
}

TEST_CASE("errors come from the file name given, including stdin's") {
  try {
    parse_module("func @f() {\n  ?\n}\n", "<stdin>");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.formatted() == "<stdin>:2:3: error: expected a primitive name or 'return', got '?'");
    CHECK(e.loc().line == 2);
    CHECK(e.loc().col == 3);
  }
  CHECK_THROWS_WITH_AS(parse_file("/nonexistent/x.tsr"), "error: cannot open file '/nonexistent/x.tsr'", Error);
}

TEST_CASE("integer literals outside their dtype's range are located errors") {
  struct Case {
    const char* lit;
    const char* message;
  };
  for (const Case& c : {Case{"4294967296:i32", "integer literal 4294967296 is outside the range of i32 [-2147483648, 2147483647]"},
                        Case{"-2147483649:i32", "integer literal -2147483649 is outside the range of i32 [-2147483648, 2147483647]"},
                        Case{"-1:u32", "integer literal -1 is outside the range of u32 [0, 4294967295]"},
                        Case{"256:u8", "integer literal 256 is outside the range of u8 [0, 255]"},
                        Case{"300.0:u8", "integer literal 300 is outside the range of u8 [0, 255]"},
                        Case{"128:i8", "integer literal 128 is outside the range of i8 [-128, 127]"},
                        Case{"2:bool", "integer literal 2 is outside the range of bool [0, 1]"}}) {
    INFO(std::string(c.lit));
    CHECK(parse_error("func @f(%x: i32) {\n  %y = add %x, " + std::string(c.lit) + "\n}\n") ==
          "t.tsr:2:16: error: " + std::string(c.message));
  }
  // A bare literal takes its dtype from the op, and is checked then.
  CHECK(parse_error("func @f(%x: u8[4]) {\n  %y = add %x, 300\n}\n") ==
        "t.tsr:2:16: error: integer literal 300 is outside the range of u8 [0, 255]");
  CHECK(parse_error("func @f() {\n  %y = add 1, 4294967296\n}\n") ==
        "t.tsr:2:15: error: integer literal 4294967296 is outside the range of i32 [-2147483648, 2147483647]");
  // The ends of each range are fine.
  for (const char* ok : {"2147483647:i32", "-2147483648:i32", "4294967295:u32", "0:u32", "255:u8", "-128:i8",
                         "9223372036854775807:i64"})
    CHECK_NOTHROW(parse_module("func @f() {\n  %y = add " + std::string(ok) + ", " + std::string(ok) + "\n}\n", "t.tsr"));
}
