// .npy reading and writing, checked against NumPy (/usr/bin/python3), and
// `tessera run` end to end: inputs from .npy files, outputs compared with
// NumPy's result.
#include <cstdlib>
#include <filesystem>

#include "interp_test_util.h"
#include "runtime/npy.h"

using namespace itest;
namespace fs = std::filesystem;

namespace {

int python(const std::string& script) {
  std::string cmd = "/usr/bin/python3 -c \"" + script + "\"";
  return std::system(cmd.c_str());
}

}  // namespace

TEST_CASE("npy: every dtype round-trips through write_npy / read_npy") {
  fs::path d = temp_dir("interp_roundtrip");
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::i8, DType::i16, DType::i32, DType::i64, DType::u8, DType::u32,
                  DType::i1}) {
    Array a(t, {3, 5});
    for (int64_t i = 0; i < a.size(); ++i) a.set(i, is_bool(t) ? i % 2 : (is_float(t) ? i * 0.5 - 3 : i + 1));
    std::string p = (d / "a.npy").string();
    write_npy(p, a);
    Array b = read_npy(p);
    INFO(dtype_name(t));
    CHECK(b.dtype() == t);
    CHECK(b.shape() == a.shape());
    check_close(b, values(a), 0);
  }
  Array s = Array::scalar(DType::f32, 2.5);
  write_npy((d / "s.npy").string(), s);
  CHECK(read_npy((d / "s.npy").string()).shape() == Shape{});
  fs::remove_all(d);
}

TEST_CASE("npy: files written by NumPy read correctly and ours load in NumPy") {
  fs::path d = temp_dir("interp_numpy");
  std::string dir = d.string();
  REQUIRE(python("import numpy as np; np.save('" + dir + "/f.npy', np.arange(12, dtype=np.float32).reshape(3, 4) / 4); "
                 "np.save('" + dir + "/i.npy', np.arange(6, dtype=np.int64) - 3); "
                 "np.save('" + dir + "/h.npy', np.array([1.5, -2.25, 65504], dtype=np.float16)); "
                 "np.save('" + dir + "/b.npy', np.array([True, False, True]))") == 0);
  Array f = read_npy(dir + "/f.npy");
  CHECK(f.dtype() == DType::f32);
  CHECK(f.shape() == Shape{3, 4});
  check_close(f, {0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75}, 0);
  check_close(read_npy(dir + "/i.npy"), {-3, -2, -1, 0, 1, 2}, 0);
  check_close(read_npy(dir + "/h.npy"), {1.5, -2.25, 65504}, 0);
  check_close(read_npy(dir + "/b.npy"), {1, 0, 1}, 0);
  Array a(DType::i32, {2, 3});
  for (int64_t i = 0; i < 6; ++i) a.set(i, i * 7 - 5);
  write_npy(dir + "/ours.npy", a);
  CHECK(python("import numpy as np, sys; a = np.load('" + dir + "/ours.npy'); "
               "sys.exit(0 if a.dtype == np.int32 and a.shape == (2, 3) and (a.ravel() == np.arange(6) * 7 - 5).all() else 1)") == 0);
  fs::remove_all(d);
}

TEST_CASE("npy: wrong shape or dtype is a clear error") {
  fs::path d = temp_dir("interp_wrong");
  std::string p = (d / "x.npy").string();
  write_npy(p, Array(DType::f32, {2, 3}));
  try {
    read_npy_as(p, ArrayType{DType::f32, {3, 2}}, "parameter %x of @main");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(contains(e.message(), "x.npy: holds f32[2,3] but parameter %x of @main is f32[3,2]"));
  }
  try {
    read_npy_as(p, ArrayType{DType::i32, {2, 3}}, "parameter %n of @main");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(contains(e.message(), "holds f32[2,3] but parameter %n of @main is i32[2,3]"));
  }
  std::ofstream(d / "junk.npy") << "not numpy";
  CHECK_THROWS_WITH_AS(read_npy((d / "junk.npy").string()), doctest::Contains("not a .npy file"), Error);
  fs::remove_all(d);
}

TEST_CASE("tessera run: .npy inputs in, .npy outputs out, equal to NumPy's result") {
  fs::path d = temp_dir("interp_cli");
  std::string dir = d.string();
  REQUIRE(python("import numpy as np; r = np.random.default_rng(0); "
                 "np.save('" + dir + "/x.npy', r.standard_normal((512, 256), dtype=np.float32)); "
                 "np.save('" + dir + "/y.npy', r.standard_normal((256, 384), dtype=np.float32))") == 0);
  std::string cmd = std::string(TESSERA_EXE) + " run " + example_path("matmul.tsr").string() + " --input x=" + dir +
                    "/x.npy --input y=" + dir + "/y.npy --out " + dir + "/out --cores 2 --grid-seed 3 > " + dir + "/stdout.txt";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream so(dir + "/stdout.txt");
  std::string line;
  std::getline(so, line);
  CHECK(contains(line, "out0: f32[512,384]  min "));
  CHECK(python("import numpy as np, sys; x = np.load('" + dir + "/x.npy'); y = np.load('" + dir + "/y.npy'); "
               "o = np.load('" + dir + "/out/out0.npy'); ref = x.astype(np.float64) @ y.astype(np.float64); "
               "sys.exit(0 if o.shape == (512, 384) and np.abs(o - ref).max() < 1e-4 else 1)") == 0);
  // A wrong input shape fails with a message naming the parameter.
  REQUIRE(python("import numpy as np; np.save('" + dir + "/bad.npy', np.zeros((3, 3), np.float32))") == 0);
  cmd = std::string(TESSERA_EXE) + " run " + example_path("matmul.tsr").string() + " --input x=" + dir + "/bad.npy --input y=" + dir +
        "/y.npy 2> " + dir + "/stderr.txt";
  CHECK(std::system(cmd.c_str()) != 0);
  std::ifstream se(dir + "/stderr.txt");
  std::getline(se, line);
  CHECK(contains(line, "bad.npy: holds f32[3,3] but parameter %x of @main is f32[512,256]"));
  // Missing inputs need --random-inputs.
  cmd = std::string(TESSERA_EXE) + " run " + example_path("add.tsr").string() + " 2> " + dir + "/stderr2.txt";
  CHECK(std::system(cmd.c_str()) != 0);
  std::ifstream se2(dir + "/stderr2.txt");
  std::getline(se2, line);
  CHECK(contains(line, "missing input for parameter %x of @main: give --input x=PATH.npy or --random-inputs SEED"));
  fs::remove_all(d);
}

TEST_CASE("npy: a bf16 input is read from a float32 file, rounded to bf16; bf16 outputs are written as float32") {
  fs::path d = temp_dir("interp_bf16");
  std::string p = (d / "x.npy").string();
  Array f = Array::from_values(DType::f32, {3}, {1.0, 1.00390625, 3.14159});
  write_npy(p, f);
  Array b = read_npy_as(p, ArrayType{DType::bf16, {3}}, "parameter %x");
  CHECK(b.dtype() == DType::bf16);
  CHECK(b.get(0) == 1.0);
  CHECK(b.get(1) == 1.0);  // halfway between 1 and 1 + 2^-7: rounds to even
  CHECK(b.get(2) == 3.140625);
  write_npy(p, b);
  Array back = read_npy(p);
  CHECK(back.dtype() == DType::f32);
  check_close(back, {1.0, 1.0, 3.140625}, 0);
  fs::remove_all(d);
}
