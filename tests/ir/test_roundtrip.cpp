// print(parse(print(m))) == print(m): for every shipped example (found at run
// time, so new ones are covered as they land) and for hand-written modules
// that stress the printer.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

namespace fs = std::filesystem;

namespace {
// Parses `text`, prints it, and checks parse(print) prints the same again.
std::string round_trip(const std::string& text, const std::string& name) {
  std::string once = print_module(parse_module(text, name));
  Module again = parse_module(once, name + " (printed)");
  std::string twice = print_module(again);
  CHECK_MESSAGE(once == twice, name << ": printing is not a fixed point:\n" << once << "\n---\n" << twice);
  return once;
}
}  // namespace

TEST_CASE("round-trip: every examples/*.tsr") {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(examples_dir())) {
    if (entry.path().extension() != ".tsr") continue;
    ++count;
    INFO("example: " << entry.path().string());
    try {
      Module m = parse_module(read_file(entry.path()), entry.path().string());
      std::string once = round_trip(read_file(entry.path()), entry.path().filename().string());
      // Same symbols, in the same order, with the same signatures.
      Module back = parse_module(once, "printed");
      REQUIRE(back.symbols().size() == m.symbols().size());
      for (size_t i = 0; i < m.symbols().size(); ++i) {
        CHECK(back.symbols()[i]->name() == m.symbols()[i]->name());
        CHECK(back.symbols()[i]->param_types() == m.symbols()[i]->param_types());
        CHECK(back.symbols()[i]->output_types() == m.symbols()[i]->output_types());
        CHECK(back.symbols()[i]->ops().size() == m.symbols()[i]->ops().size());
      }
    } catch (const Error& e) {
      FAIL_CHECK(e.formatted());
    }
  }
  CHECK(count >= 1);
  MESSAGE(count << " examples round-tripped");
}

TEST_CASE("round-trip: every parameter kind, inline bodies, indexers, odd literals") {
  fs::path p = fs::path(IR_TEST_MODULES_DIR) / "every_param_kind.tsr";
  std::string once = round_trip(read_file(p), "every_param_kind.tsr");
  // Spot checks that the printer kept what is easy to lose.
  CHECK_HAS(once, "mul %a, -0.0:f32");
  CHECK_HAS(once, "add %a, inf:f32");
  CHECK_HAS(once, "max %z, -inf:f32");
  CHECK_HAS(once, "add %q, nan:f32");
  CHECK_HAS(once, "add 1e-300:f64, 0.0:f64");
  CHECK_HAS(once, "sub -9223372036854775807:i64, 1:i64");
  CHECK_HAS(once, "add 4000000000:u32, 1:u32");
  CHECK_HAS(once, "and true, false");
  CHECK_HAS(once, "get %x[ds(%i, 4, 2), ds(0, 64, 2)]");
  CHECK_HAS(once, "get %x[1:9, :]");
  CHECK_HAS(once, "get %x[3, 0:128]");
  CHECK_HAS(once, "grid=(?, 4)");
  CHECK_HAS(once, "grid_names=(rows, cols)");
  CHECK_HAS(once, "spec((element(8, 1, 1), 128), @rows, buffered=2)");
  CHECK_HAS(once, "spec((squeezed, bounded(16)), @bounded_rows)");  // mem=vmem is the default
  CHECK_HAS(once, "mem=any)");
  CHECK_HAS(once, "input_output_aliases=[(1, 0)]");
  CHECK_HAS(once, "name=\"k \\\"v2\\\"\"");
  CHECK_HAS(once, "fmt=\"tab\there \\\"quoted\\\" back\\\\slash\\nnewline {}\"");
  CHECK_HAS(once, "in_axes=(0, none)");
  CHECK_HAS(once, "preferred_element_type=f64");
  CHECK_HAS(once, "sort[descending=true] %v, %io");  // defaults (num_keys=1) left out
  CHECK_HAS(once, "pad[low=(1), high=(-1)]");
  CHECK_HAS(once, "mesh_axes=(core, sub)");
  CHECK_HAS(once, "kernel_type=sc_vector_subcore");
  // Default parameters are left out.
  CHECK(once.find("num_consts=0") == std::string::npos);
}

TEST_CASE("round-trip: names are made unique and printable") {
  // Builder-made variables have empty or clashing names; the printer numbers
  // them, and the printed text parses back to the same text.
  std::string once = round_trip(
      "func @f(%x: f32[4]) -> f32[4] {\n"
      "  %0 = exp %x\n"
      "  %1 = cond[branches=[fn(%x: f32[4]) -> f32[4] { %0 = neg %x\n return %0 }]] 0:i32, %0\n"
      "  return %1\n"
      "}\n",
      "names");
  CHECK_HAS(once, "%0: f32[4] = exp %x");
  CHECK_HAS(once, "%0: f32[4] = neg %x");  // a nested body has its own names
}

TEST_CASE("round-trip: comments, blank lines and either comment style are dropped") {
  std::string a = round_trip("// c\nfunc @f(%x: f32) -> f32 { # trailing\n  %y = exp %x // why\n\n  return %y\n}\n", "a");
  std::string b = round_trip("func @f(%x: f32) -> f32 {\n  %y: f32 = exp %x\n  return %y\n}\n", "b");
  CHECK(a == b);
  CHECK(a == "func @f(%x: f32) -> f32 {\n  %y: f32 = exp %x\n  return %y\n}\n");
}

TEST_CASE("round-trip: empty module and bodies") {
  CHECK(round_trip("", "empty") == "");
  CHECK(round_trip("func @f() {}\n", "f") == "func @f() {\n}\n");
}
