// Parses, verifies, differentiates (jvp) and runs a kernel file through the
// installed library (docs/embedding.md):
//   c++ -std=c++20 hello.cpp $(pkg-config --cflags --libs tessera)
#include <tessera/interpreter/interpreter.h>
#include <tessera/ir/parser.h>
#include <tessera/transforms/pass.h>
#include <tessera/verify/verify.h>

#include <cstdio>
#include <vector>

using namespace tessera;
using interp::Array;

int main(int argc, char** argv) try {
  Module m = parse_file(argc > 1 ? argv[1] : "examples/add.tsr");
  verify_or_throw(m);
  Module d = run_pipeline(m, "jvp");  // @main(x, y, dx, dy) -> (x + y, dx + dy)
  verify_or_throw(d);
  auto full = [](double v) { return Array::from_values(DType::f32, {1024, 512}, std::vector<double>(1024 * 512, v)); };
  std::vector<Array> out = interp::run_function(d, "main", {full(1), full(2), full(3), full(4)});
  std::printf("out = %g, tangent = %g\n", out[0].get(0), out[1].get(0));
  return out[0].get(0) == 3 && out[1].get(0) == 7 ? 0 : 1;
} catch (const Error& e) {  // file:line:col: error: ... from any step
  std::fprintf(stderr, "%s\n", e.formatted().c_str());
  return 1;
}
