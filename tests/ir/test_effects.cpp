// Effects are computed from the ops, and nested bodies' effects reach the op
// that holds them (cond, for, while, run_scoped, call, pallas_call, core_map).
#include "ir/effects.h"
#include "ir/primitive.h"
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace {
std::string effects_of(const std::string& module_text, const std::string& name) {
  Module m = parse(module_text);
  BodyPtr b = m.find(name);
  REQUIRE(b);
  return compute_effects(*b).str(*b);
}
}  // namespace

TEST_CASE("effects: read, write and accum per Ref parameter") {
  std::string text =
      "kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %acc: ref<f32[8], vmem>, %unused: ref<f32[8], vmem>,"
      " %s: f32) {\n"
      "  %a = get %x[:]\n"
      "  swap %o[:], %a\n"
      "  addupdate %acc[:], %a\n"
      "}\n";
  CHECK(effects_of(text, "k") == "read(%x), read(%o), write(%o), accum(%acc)");
  Module m = parse(text);
  Effects fx = compute_effects(*m.find("k"));
  CHECK(fx.reads(0));
  CHECK(!fx.writes(0));
  CHECK(fx.writes(1));
  CHECK(fx.accums(2));
  CHECK(!fx.reads(2));
  CHECK(fx.on_param[3] == 0);
  CHECK(fx.on_param[4] == 0);
  CHECK(!fx.io);
  CHECK(!fx.comms);
  CHECK(!fx.empty());
  CHECK(effects_of("kernel @s(%o: ref<f32[8], vmem>, %v: f32[8]) { store %o[:], %v }\n", "s") == "write(%o)");
  CHECK(effects_of("kernel @l(%o: ref<f32[8], vmem>, %m: bool[8]) { %v = load %o[:], %m }\n", "l") == "read(%o)");
}

TEST_CASE("effects: pure bodies have none; a pure op has no side effects") {
  Module m = parse(one_op_module("%x: f32[8]", "%y = exp %x"));
  Effects fx = compute_effects(*m.find("f"));
  CHECK(fx.empty());
  CHECK(fx.str(*m.find("f")).empty());
  CHECK(!has_side_effects(m.find("f")->ops()[0]));
}

TEST_CASE("effects: io and comms are ordered effects") {
  CHECK(effects_of(one_op_module("%x: f32", "debug_print[fmt=\"{}\"] %x"), "f") == "io");
  CHECK(effects_of(one_op_module("%n: i32", "delay %n"), "f") == "io");
  CHECK(effects_of(one_op_module("%s: ref<sem[2], semaphore>", "semaphore_signal %s[0], 1"), "f") == "write(%s), comms");
  CHECK(effects_of(one_op_module("%s: ref<sem[2], semaphore>", "%v = semaphore_read %s[0]"), "f") == "comms");
  CHECK(effects_of(one_op_module("", "%b = get_barrier_semaphore"), "f") == "comms");
  CHECK(effects_of(one_op_module("%a: ref<f32[8], any>, %v: ref<f32[8], vmem>, %s: ref<dma_sem[1], semaphore>",
                                 "dma_start %a, %v, %s[0]"),
                   "f") == "read(%a), write(%v), write(%s), comms");
  Module m = parse(one_op_module("%x: f32", "debug_print[fmt=\"{}\"] %x"));
  CHECK(has_side_effects(m.find("f")->ops()[0]));
  Module g = parse(one_op_module("%r: ref<f32[8], vmem>", "%v = get %r[:]"));
  CHECK(!has_side_effects(g.find("f")->ops()[0]));  // a read alone may be dropped
}

TEST_CASE("effects: propagate through cond branches onto the op's operands") {
  std::string text =
      "func @f(%p: bool, %r: ref<f32[8], vmem>, %q: ref<f32[8], vmem>) {\n"
      "  cond[branches=[fn(%a: ref<f32[8], vmem>, %b: ref<f32[8], vmem>) { %v = get %a[:] },"
      " fn(%a: ref<f32[8], vmem>, %b: ref<f32[8], vmem>) { swap %b[:], 1.0 }]] %p, %r, %q\n"
      "}\n";
  CHECK(effects_of(text, "f") == "read(%r), read(%q), write(%q)");
  Module m = parse(text);
  OpEffects e = op_effects(m.find("f")->ops()[0]);
  REQUIRE(e.on_operand.size() == 2);
  CHECK(e.on_operand[0] == std::pair<int, uint8_t>{1, kRead});
  CHECK(e.on_operand[1] == std::pair<int, uint8_t>{2, kRead | kWrite});
}

TEST_CASE("effects: propagate through for (skipping the induction variable) and while") {
  std::string text =
      "func @f(%r: ref<f32[8], vmem>, %acc: ref<f32[1], vmem>) {\n"
      "  for[body=fn(%i: i32, %a: ref<f32[8], vmem>, %c: ref<f32[1], vmem>) {\n"
      "    %v = get %a[ds(%i, 1)]\n"
      "    addupdate %c[:], %v\n"
      "  }, num_consts=2] 0:i32, 8:i32, %r, %acc\n"
      "}\n";
  CHECK(effects_of(text, "f") == "read(%r), accum(%acc)");
  std::string loop =
      "func @w(%r: ref<i32[1], smem>, %n: i32) -> i32 {\n"
      "  %out = while[cond=fn(%a: ref<i32[1], smem>, %k: i32) -> bool { %t = lt %k, 4\n return %t },"
      " body=fn(%a: ref<i32[1], smem>, %k: i32) -> i32 { swap %a[0], %k\n %k1 = add %k, 1\n return %k1 }, num_consts=1] %r, %n\n"
      "  return %out\n"
      "}\n";
  CHECK(effects_of(loop, "w") == "read(%r), write(%r)");
}

TEST_CASE("effects: propagate through run_scoped, but not onto its scratch Refs") {
  std::string text =
      "func @f(%r: ref<f32[8], vmem>) {\n"
      "  run_scoped[body=fn(%a: ref<f32[8], vmem>, %tmp: ref<f32[8], vmem>) {\n"
      "    %v = get %a[:]\n"
      "    swap %tmp[:], %v\n"
      "    debug_print[fmt=\"done\"]\n"
      "  }] %r\n"
      "}\n";
  CHECK(effects_of(text, "f") == "read(%r), io");
}

TEST_CASE("effects: propagate through call and pallas_call with Ref inputs") {
  std::string text =
      "func @g(%a: ref<f32[8], vmem>) { addupdate %a[:], 1.0 }\n"
      "func @f(%r: ref<f32[8], vmem>) { call[callee=@g] %r }\n"
      "kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>) {\n"
      "  %v = get %x[:]\n"
      "  swap %x[:], %v\n"
      "  swap %o[:], %v\n"
      "}\n"
      "func @p(%r: ref<f32[8], vmem>) -> f32[8] {\n"
      "  %o = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]]] %r\n"
      "  return %o\n"
      "}\n"
      "func @q(%x: f32[8]) -> f32[8] {\n"
      "  %o = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]]] %x\n"
      "  return %o\n"
      "}\n";
  CHECK(effects_of(text, "f") == "accum(%r)");
  CHECK(effects_of(text, "p") == "read(%r), write(%r)");  // a closed-over Ref is updated in place
  CHECK(effects_of(text, "q") == "");                      // array inputs: the kernel's writes stay inside
}

TEST_CASE("effects: pmap and core_map keep ordered effects") {
  std::string text =
      "func @f(%x: f32[2,8]) -> f32[2,8] {\n"
      "  %y = pmap[body=fn(%a: f32[8]) -> f32[8] { %i = axis_index[axis_name=d]\n debug_print[fmt=\"{}\"] %i\n return %a },"
      " axis_name=d, axis_size=2, in_axes=(0), out_axes=(0)] %x\n"
      "  return %y\n"
      "}\n"
      "func @c(%r: ref<f32[8], any>, %s: ref<sem[1], semaphore>) {\n"
      "  core_map[body=fn(%a: ref<f32[8], any>, %t: ref<sem[1], semaphore>) { semaphore_signal %t[0], 1 },"
      " mesh_axes=(core), mesh_shape=(2)] %r, %s\n"
      "}\n";
  CHECK(effects_of(text, "f") == "io");
  CHECK(effects_of(text, "c") == "write(%s), comms");
}

TEST_CASE("effects: the printer reports them over top-level bodies") {
  std::string printed = canonical("kernel @k(%o: ref<f32[8], vmem>) { swap %o[:], 0.0 }\n");
  CHECK(printed.rfind("// effects: read(%o), write(%o)\nkernel @k", 0) == 0);
}

TEST_CASE("effects: a pallas_call whose DMAs signal only its own scratch semaphores orders nothing outside") {
  // The kernel's protocol starts and ends within the call: no comms for the
  // call, so an unused call has no side effect (dce drops it).
  auto call_module = [](const std::string& body, const std::string& sem) {
    return "kernel @k(%x: ref<f32[8,128], any>, %o: ref<f32[8,128], vmem>, %buf: ref<f32[8,128], vmem>,\n"
           "          %sem: ref<" + sem + "[1], semaphore>) {\n" +
           body +
           "}\n"
           "func @f(%x: f32[8,128]) -> f32[8,128] {\n"
           "  %out = pallas_call[kernel=@k, grid=(1), in_specs=[spec(mem=any)], out_specs=[spec()],\n"
           "                     out_shapes=[f32[8,128]], scratch=[ref<f32[8,128], vmem>, ref<" + sem + "[1], semaphore>]] %x\n"
           "  return %out\n"
           "}\n";
  };
  std::string copy = call_module("  dma_start %x[:, :], %buf[:, :], %sem[0]\n  dma_wait %sem[0], %buf[:, :]\n", "dma_sem");
  CHECK(effects_of(copy, "k") == "read(%x), write(%buf), write(%sem), comms");
  CHECK(effects_of(copy, "f").empty());
  Module local = parse(copy);
  CHECK(!has_side_effects(local.find("f")->ops()[0]));
  // A signal is not a local DMA: the call keeps its comms.
  std::string signal = call_module("  semaphore_signal %sem[0], 1\n  semaphore_wait %sem[0], 1\n", "sem");
  CHECK(effects_of(signal, "f") == "comms");
}
