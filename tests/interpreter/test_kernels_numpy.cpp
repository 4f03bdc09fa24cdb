// Cross-checks of a few kernels against NumPy (/usr/bin/python3 only): inputs
// are written as .npy, NumPy computes the expected results into .npy files.
#include <filesystem>

#include "tests/interpreter/kernel_test_util.h"

using namespace ktest;

namespace {

// The folder one NumPy cross-check writes its .npy files to, removed when the
// test ends; false (the test skips, saying why) when NumPy is missing.
struct NumpyDir {
  explicit NumpyDir(const std::string& name) {
    if (numpy_available()) path = temp_dir(name).string();
    else MESSAGE("NumPy not available through /usr/bin/python3; skipping the cross-check");
  }
  ~NumpyDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  explicit operator bool() const { return !path.empty(); }
  std::string path;
};

Array convert(const Array& a, DType d) {
  Array out(d, a.shape());
  for (int64_t i = 0; i < a.size(); ++i) out.set(i, a.get(i));
  return out;
}

}  // namespace

TEST_CASE("numpy: matmul, transpose, sort, argmax, cumsum, reductions, math") {
  NumpyDir scratch("kernels_numpy");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  Array a = random_array(DType::f32, {64, 96}, 81), b = random_array(DType::f32, {96, 80}, 82);
  Array c = random_array(DType::f32, {5, 6, 7}, 83);
  Array s = random_array(DType::f32, {9, 33}, 84, -2, 2);
  for (int i = 0; i < s.size(); i += 7) s.set(i, NAN);
  Array t = random_array(DType::i32, {9, 33}, 85, -5, 5);
  write_npy(dir + "/a.npy", a);
  write_npy(dir + "/b.npy", b);
  write_npy(dir + "/c.npy", c);
  write_npy(dir + "/s.npy", s);
  write_npy(dir + "/t.npy", t);
  run_numpy(dir, R"(
a, b, c, s, t = (np.load(n + '.npy') for n in 'abcst')
np.save('mm.npy', (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))
np.save('tr.npy', np.ascontiguousarray(np.transpose(c, (2, 0, 1))))
np.save('sort.npy', np.sort(s, axis=1, kind='stable'))
np.save('argsort.npy', np.argsort(t, axis=0, kind='stable').astype(np.int32))
np.save('argmax.npy', np.argmax(s, axis=1).astype(np.int32))
np.save('argmin.npy', np.argmin(t, axis=0).astype(np.int32))
np.save('cums.npy', np.flip(np.cumsum(np.flip(c, 1), axis=1), 1).astype(np.float32))
np.save('sum.npy', c.astype(np.float64).sum(axis=(0, 2)).astype(np.float32))
np.save('max.npy', np.max(s, axis=0))
np.save('tanh.npy', np.tanh(c))
np.save('erfish.npy', np.exp(-c) * np.log1p(np.abs(c)))
)");
  Params mm = {{"lhs_contracting", I{1}}, {"rhs_contracting", I{0}}};
  check_close(run("dot_general", {a, b}, mm), values(read_npy(dir + "/mm.npy", DType::f32, {64, 80})), 1e-5, 1e-4, "matmul");
  check_equal(run("transpose", {c}, {{"permutation", I{2, 0, 1}}}), values(read_npy(dir + "/tr.npy", DType::f32, {7, 5, 6})));
  check_equal(run("sort", {s}, {{"dimension", int64_t{1}}}), values(read_npy(dir + "/sort.npy", DType::f32, {9, 33})));
  Array iota = run("iota", {}, {{"dtype", DType::i32}, {"shape", I{9, 33}}, {"dimension", int64_t{0}}});
  auto sorted = run_all("sort", {t, iota}, {{"dimension", int64_t{0}}});
  check_equal(sorted[1], values(read_npy(dir + "/argsort.npy", DType::i32, {9, 33})), "argsort");
  check_equal(run("argmax", {s}, {{"axis", int64_t{1}}}), values(read_npy(dir + "/argmax.npy", DType::i32, {9})));
  check_equal(run("argmin", {t}, {{"axis", int64_t{0}}}), values(read_npy(dir + "/argmin.npy", DType::i32, {33})));
  check_close(run("cumsum", {c}, {{"axis", int64_t{1}}, {"reverse", true}}), values(read_npy(dir + "/cums.npy", DType::f32, {5, 6, 7})),
              1e-5, 1e-5, "cumsum");
  check_close(run("reduce_sum", {c}, {{"axes", I{0, 2}}}), values(read_npy(dir + "/sum.npy", DType::f32, {6})), 1e-5, 1e-4, "sum");
  check_equal(run("reduce_max", {s}, {{"axes", I{0}}}), values(read_npy(dir + "/max.npy", DType::f32, {33})));
  check_close(run("tanh", {c}), values(read_npy(dir + "/tanh.npy", DType::f32, {5, 6, 7})), 1e-6, 1e-7, "tanh");
  Array e = run("mul", {run("exp", {run("neg", {c})}), run("log1p", {run("abs", {c})})});
  check_close(e, values(read_npy(dir + "/erfish.npy", DType::f32, {5, 6, 7})), 1e-6, 1e-6, "exp*log1p");
}

TEST_CASE("numpy: cbrt, reciprocal, is_finite, atan2, clamp, tan and square in f16, f32 and f64, clamp and square on i32 too") {
  NumpyDir scratch("kernels_numpy_more");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  for (DType d : {DType::f16, DType::f32, DType::f64}) {
    INFO(dtype_name(d));
    // f16 values travel as f32 (they are exact there); NumPy computes in float16.
    DType file = d == DType::f64 ? DType::f64 : DType::f32;
    Array x = random_array(d, {7, 33}, 91, -3, 3), y = random_array(d, {7, 33}, 92, -3, 3);
    for (int i = 0; i < x.size(); i += 11) x.set(i, i % 2 ? INFINITY : NAN);
    Array lo = random_array(d, {7, 33}, 93, -2, 0), hi = Array::scalar(d, 1.5);
    write_npy(dir + "/x.npy", convert(x, file));
    write_npy(dir + "/y.npy", convert(y, file));
    write_npy(dir + "/lo.npy", convert(lo, file));
    run_numpy(dir, std::string("t = np.") + (d == DType::f16 ? "float16" : d == DType::f32 ? "float32" : "float64") + R"(
x, y, lo = (np.load(n + '.npy').astype(t) for n in ('x', 'y', 'lo'))
out = x.dtype if t != np.float16 else np.float32
with np.errstate(all='ignore'):
    np.save('cbrt.npy', np.cbrt(x).astype(out))
    np.save('recip.npy', np.reciprocal(x).astype(out))
    np.save('atan2.npy', np.arctan2(y, x).astype(out))
    np.save('pow3.npy', (x ** 3).astype(out))
    np.save('powm2.npy', (x ** -2).astype(out))
    np.save('tan.npy', np.tan(x).astype(out))
    np.save('square.npy', np.square(x).astype(out))
np.save('fin.npy', np.isfinite(x))
np.save('clamp.npy', np.minimum(np.maximum(x, lo), t(1.5)).astype(out))
)");
    double tol = d == DType::f16 ? 2e-3 : d == DType::f32 ? 1e-6 : 1e-12;
    auto want = [&](const char* name) { return values(read_npy(dir + "/" + name + ".npy", file, {7, 33})); };
    check_close(run("cbrt", {x}), want("cbrt"), tol, tol, "cbrt");
    check_close(run("reciprocal", {x}, {{"approx", true}}), want("recip"), tol, tol, "reciprocal");
    check_equal(run("is_finite", {x}), values(read_npy(dir + "/fin.npy", DType::i1, {7, 33})), "is_finite");
    check_close(run("atan2", {y, x}), want("atan2"), tol, tol, "atan2");
    check_close(run("integer_pow", {x}, {{"y", int64_t{3}}}), want("pow3"), tol, tol, "integer_pow 3");
    check_close(run("integer_pow", {x}, {{"y", int64_t{-2}}}), want("powm2"), tol, tol, "integer_pow -2");
    check_equal(run("clamp", {lo, x, hi}), want("clamp"), "clamp");
    check_close(run("tan", {x}), want("tan"), tol, tol, "tan");
    check_close(run("square", {x}), want("square"), tol, tol, "square");
  }
  Array xi = random_array(DType::i32, {40}, 94, -50, 50);
  write_npy(dir + "/xi.npy", xi);
  run_numpy(dir, "xi = np.load('xi.npy')\nnp.save('ci.npy', np.clip(xi, -7, 9).astype(np.int32))\n"
                 "np.save('pi.npy', (xi ** 5).astype(np.int32))\n"
                 "np.save('sq.npy', np.square(xi * np.int32(46341)))\n");
  check_equal(run("clamp", {Array::scalar(DType::i32, -7), xi, Array::scalar(DType::i32, 9)}),
              values(read_npy(dir + "/ci.npy", DType::i32, {40})), "clamp i32");
  // 50^5 wraps in i32, as NumPy's int32 power does.
  check_equal(run("integer_pow", {xi}, {{"y", int64_t{5}}}), values(read_npy(dir + "/pi.npy", DType::i32, {40})), "integer_pow i32");
  // (46341 x)^2 passes 2^31: square wraps in i32, as NumPy's int32 does.
  check_equal(run("square", {run("mul", {xi, Array::scalar(DType::i32, 46341)})}), values(read_npy(dir + "/sq.npy", DType::i32, {40})),
              "square i32");
}

TEST_CASE("numpy: roll with static and run-time shifts, any axis, negative and oversized shifts") {
  NumpyDir scratch("kernels_numpy_roll");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  Array x = random_array(DType::f32, {3, 5, 7}, 95), k = random_array(DType::i32, {4, 9}, 96, -9, 9);
  write_npy(dir + "/x.npy", x);
  write_npy(dir + "/k.npy", k);
  run_numpy(dir, R"(
x, k = np.load('x.npy'), np.load('k.npy')
for axis in range(3):
    for shift in (-8, -1, 0, 2, 7, 12):
        np.save(f'x_{axis}_{shift}.npy', np.roll(x, shift, axis=axis))
np.save('kr.npy', np.roll(k, -3, axis=1))
)");
  for (int64_t axis = 0; axis < 3; ++axis)
    for (int64_t shift : {-8, -1, 0, 2, 7, 12}) {
      CAPTURE(axis);
      CAPTURE(shift);
      std::vector<double> want = values(read_npy(dir + "/x_" + std::to_string(axis) + "_" + std::to_string(shift) + ".npy",
                                                 DType::f32, {3, 5, 7}));
      check_equal(run("roll", {x}, {{"axis", axis}, {"shift", shift}}), want, "static shift");
      check_equal(run("roll", {x, Array::scalar(DType::i32, static_cast<double>(shift))}, {{"axis", axis}}), want,
                  "run-time shift");
    }
  check_equal(run("roll", {k, Array::scalar(DType::i64, -3)}, {{"axis", int64_t{1}}}),
              values(read_npy(dir + "/kr.npy", DType::i32, {4, 9})), "i32 values, i64 shift");
}

TEST_CASE("numpy: repeat is np.tile along the axis, every axis, floats, ints and bools") {
  NumpyDir scratch("kernels_numpy_repeat");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  for (DType d : {DType::f32, DType::i32, DType::i1}) {
    INFO(dtype_name(d));
    Array x = random_array(d, {3, 4, 5}, 118, -50, 50);
    write_npy(dir + "/x.npy", x);
    run_numpy(dir, "x = np.load('x.npy')\nfor a in range(3):\n    r = [1, 1, 1]\n    r[a] = 3\n"
                   "    np.save(f't{a}.npy', np.tile(x, r))\n");
    for (int64_t axis = 0; axis < 3; ++axis) {
      CAPTURE(axis);
      Shape s{3, 4, 5};
      s[static_cast<size_t>(axis)] *= 3;
      Array got = run("repeat", {x}, {{"repeats", int64_t{3}}, {"axis", axis}});
      CHECK(got.shape() == s);
      check_equal(got, values(read_npy(dir + "/t" + std::to_string(axis) + ".npy", d, s)), "repeat");
    }
  }
}

TEST_CASE("numpy: bitcast_convert_type (equal and different widths), population_count and clz") {
  NumpyDir scratch("kernels_numpy_bits");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  Array f = random_array(DType::f32, {6, 5}, 97), d = random_array(DType::f64, {3, 4}, 98);
  Array k = random_array(DType::i32, {50}, 99, -2e9, 2e9);
  k.set(0, 0);
  k.set(1, -1);
  write_npy(dir + "/f.npy", f);
  write_npy(dir + "/d.npy", d);
  write_npy(dir + "/k.npy", k);
  run_numpy(dir, R"(
f, d, k = np.load('f.npy'), np.load('d.npy'), np.load('k.npy')
np.save('f_i32.npy', f.view(np.int32))
np.save('d_i32.npy', d.view(np.int32).reshape(3, 4, 2))
np.save('d_u8.npy', d.view(np.uint8).reshape(3, 4, 8))
np.save('pop.npy', np.array([bin(int(v) & 0xffffffff).count('1') for v in k], np.int32))
np.save('clz.npy', np.array([32 - (int(v) & 0xffffffff).bit_length() for v in k], np.int32))
)");
  Params to_i32 = {{"new_dtype", DType::i32}};
  Array f_i32 = run("bitcast_convert_type", {f}, to_i32);
  check_equal(f_i32, values(read_npy(dir + "/f_i32.npy", DType::i32, {6, 5})), "f32 -> i32");
  check_equal(run("bitcast_convert_type", {f_i32}, {{"new_dtype", DType::f32}}), values(f), "i32 -> f32 round trip");
  Array d_i32 = run("bitcast_convert_type", {d}, to_i32);
  check_equal(d_i32, values(read_npy(dir + "/d_i32.npy", DType::i32, {3, 4, 2})), "f64 -> i32 (trailing 2)");
  check_equal(run("bitcast_convert_type", {d_i32}, {{"new_dtype", DType::f64}}), values(d), "i32[..,2] -> f64");
  check_equal(run("bitcast_convert_type", {d}, {{"new_dtype", DType::u8}}),
              values(read_npy(dir + "/d_u8.npy", DType::u8, {3, 4, 8})), "f64 -> u8 (trailing 8)");
  // bf16 1.0 is 0x3F80, -2.0 is 0xC000.
  Array b = Array(DType::bf16, {2});
  b.set(0, 1.0);
  b.set(1, -2.0);
  check_equal(run("bitcast_convert_type", {b}, {{"new_dtype", DType::i16}}), {16256, -16384}, "bf16 -> i16");
  // f16 against numpy's float16 view, both ways, NaN payloads and subnormals included.
  Array bits16 = random_array(DType::i32, {64}, 117, -32768, 32767);
  const double special16[] = {0, -32768, 0x7C00, 0x7E01, 0x7C01, 0x0001, 0x03FF, 0x3C00, -1, 0x7BFF};
  for (int i = 0; i < 10; ++i) bits16.set(i, special16[i]);
  Array i16 = convert(bits16, DType::i16);
  write_npy(dir + "/i16.npy", bits16);
  run_numpy(dir, "v = np.load('i16.npy').astype(np.int16).view(np.float16)\nnp.save('h.npy', v.astype(np.float32))\n");
  Array h = run("bitcast_convert_type", {i16}, {{"new_dtype", DType::f16}});
  Array want_h = read_npy(dir + "/h.npy", DType::f32, {64});
  for (int64_t i = 0; i < h.size(); ++i) {
    CAPTURE(i);
    if (std::isnan(want_h.get(i))) CHECK(std::isnan(h.get(i)));
    else CHECK((h.get(i) == want_h.get(i) && std::signbit(h.get(i)) == std::signbit(want_h.get(i))));
  }
  check_equal(run("bitcast_convert_type", {h}, {{"new_dtype", DType::i16}}), values(i16), "f16 -> i16 round trip");
  check_equal(run("population_count", {k}), values(read_npy(dir + "/pop.npy", DType::i32, {50})), "population_count");
  check_equal(run("clz", {k}), values(read_npy(dir + "/clz.npy", DType::i32, {50})), "clz");
}

TEST_CASE("numpy: take_along_axis on every axis (argsort indices), and an index outside the axis is located") {
  NumpyDir scratch("kernels_numpy_take");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  Array x = random_array(DType::f32, {4, 5, 6}, 101);
  write_npy(dir + "/x.npy", x);
  run_numpy(dir, R"(
x = np.load('x.npy')
for axis in range(3):
    i = np.argsort(x, axis=axis, kind='stable')[tuple(slice(0, 3) if d == axis else slice(None) for d in range(3))]
    np.save(f'i{axis}.npy', i.astype(np.int32))
    np.save(f't{axis}.npy', np.take_along_axis(x, i, axis=axis))
)");
  for (int64_t axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    Shape s{4, 5, 6};
    s[axis] = 3;
    std::string a = std::to_string(axis);
    Array idx = read_npy(dir + "/i" + a + ".npy", DType::i32, s);
    check_equal(run("take_along_axis", {x, idx}, {{"axis", axis}}), values(read_npy(dir + "/t" + a + ".npy", DType::f32, s)));
  }
  Array bad = Array(DType::i32, {4, 1, 6});
  bad.set(7, 5);
  CHECK_THROWS_WITH_AS(run("take_along_axis", {x, bad}, {{"axis", int64_t{1}}}),
                       doctest::Contains("index 5 at position 7 is outside [0, 5) along axis 1"), Error);
}

TEST_CASE("numpy: nextafter in f32 and f64 (zeros, infinities, NaN, equal operands), bf16 and f16 a clear error") {
  NumpyDir scratch("kernels_numpy_nextafter");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  for (DType d : {DType::f32, DType::f64}) {
    INFO(dtype_name(d));
    Array x = random_array(d, {6, 20}, 111, -3, 3), y = random_array(d, {6, 20}, 112, -3, 3);
    // Signed zeros, infinities, NaN, equal operands and the largest finite value.
    double big = d == DType::f32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
    const double special[][2] = {{0.0, 1.0}, {0.0, -1.0}, {-0.0, 0.0}, {0.0, -0.0}, {INFINITY, 0.0}, {-INFINITY, INFINITY},
                                 {big, INFINITY}, {1.0, 1.0}, {NAN, 1.0}, {1.0, NAN}, {1.0, 2.0}, {-1.0, -2.0}};
    for (int i = 0; i < 12; ++i) x.set(i * 7, special[i][0]), y.set(i * 7, special[i][1]);
    write_npy(dir + "/x.npy", x);
    write_npy(dir + "/y.npy", y);
    run_numpy(dir, "x, y = np.load('x.npy'), np.load('y.npy')\nwith np.errstate(all='ignore'):\n"
                   "    np.save('n.npy', np.nextafter(x, y))\n    np.save('s.npy', np.nextafter(x, x.dtype.type(-1.5)))\n");
    Array got = run("nextafter", {x, y});
    Array want = read_npy(dir + "/n.npy", d, {6, 20});
    check_equal(got, values(want), "nextafter");
    // Bit for bit: the sign of a zero result, too.
    for (int64_t i = 0; i < got.size(); ++i)
      if (got.get(i) == 0.0) CHECK_MESSAGE(std::signbit(got.get(i)) == std::signbit(want.get(i)), "sign of zero at " << i);
    check_equal(run("nextafter", {x, Array::scalar(d, -1.5)}), values(read_npy(dir + "/s.npy", d, {6, 20})), "rank-0 x2");
  }
  // f16 against numpy's float16 nextafter (the values travel as f32, exact).
  Array x = random_array(DType::f16, {6, 20}, 115, -3, 3), y = random_array(DType::f16, {6, 20}, 116, -3, 3);
  const double special[][2] = {{0.0, 1.0},       {0.0, -1.0},    {-0.0, 0.0}, {INFINITY, 0.0}, {65504.0, INFINITY},
                               {6.0e-8, 0.0},    {6.1e-5, 1.0},  {1.0, 1.0},  {NAN, 1.0},      {1.0, 2.0},
                               {-1.0, -2.0},     {-65504.0, 0.0}};
  for (int i = 0; i < 12; ++i) x.set(i * 7, special[i][0]), y.set(i * 7, special[i][1]);
  write_npy(dir + "/x.npy", convert(x, DType::f32));
  write_npy(dir + "/y.npy", convert(y, DType::f32));
  run_numpy(dir, "x, y = np.load('x.npy').astype(np.float16), np.load('y.npy').astype(np.float16)\n"
                 "with np.errstate(all='ignore'):\n    np.save('n.npy', np.nextafter(x, y).astype(np.float32))\n");
  Array got = run("nextafter", {x, y});
  CHECK(got.dtype() == DType::f16);
  check_equal(got, values(read_npy(dir + "/n.npy", DType::f32, {6, 20})), "f16 nextafter");
  // bf16 has no numpy type: its steps by hand (7 mantissa bits, f32's exponent).
  Array b(DType::bf16, {5}), toward(DType::bf16, {5});
  const double from[] = {1.0, 1.0, 0.0, -2.0, 3.3895313892515355e38}, to[] = {2.0, 0.0, -1.0, 0.0, INFINITY};
  for (int i = 0; i < 5; ++i) b.set(i, from[i]), toward.set(i, to[i]);
  check_equal(run("nextafter", {b, toward}),
              {1.0078125, 0.99609375, -9.183549615799121e-41, -1.9921875, INFINITY}, "bf16 nextafter");
}

TEST_CASE("numpy: reduce_precision against the rounding formula (f64, f32, bf16) and float16 conversion") {
  NumpyDir scratch("kernels_numpy_reduce_precision");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  // Magnitudes from 2^-20 to 2^20, both signs, plus zeros, infinities, NaN and ties.
  auto inputs = [](DType d) {
    Array x = random_array(d, {8, 32}, 113, -1, 1);
    Array k = random_array(DType::f64, {8, 32}, 114, -20, 20);
    for (int64_t i = 0; i < x.size(); ++i) x.set(i, x.get(i) * std::exp2(std::round(k.get(i))));
    // Ties: 0.75 and -1.5 with no mantissa bits, 1 + 2^-8 and 1 + 3 * 2^-8 with 7.
    const double special[] = {0.0,     -0.0, INFINITY, -INFINITY,       NAN,           65504.0, 65520.0,
                              -70000.0, 1e-6, 6.103515625e-05, 0.75, -1.5, 1.00390625, 1.01171875};
    for (int i = 0; i < 14; ++i) x.set(i * 5, special[i]);
    return x;
  };
  // The reference: round x / 2^(e - M) half to even, e = floor(log2 |x|);
  // then past the E-bit range an infinity, below its smallest normal a zero.
  struct Case {
    DType dtype;
    int64_t e, m;
  };
  for (Case c : {Case{DType::f64, 11, 52}, Case{DType::f64, 11, 20}, Case{DType::f64, 8, 23}, Case{DType::f64, 5, 10},
                 Case{DType::f64, 4, 3}, Case{DType::f64, 2, 0}, Case{DType::f32, 8, 23}, Case{DType::f32, 8, 7},
                 Case{DType::f32, 5, 10}, Case{DType::f32, 5, 2}, Case{DType::f32, 3, 1}, Case{DType::f32, 11, 30},
                 Case{DType::bf16, 8, 7}, Case{DType::bf16, 5, 2}, Case{DType::bf16, 8, 0}}) {
    std::string what = std::string(dtype_name(c.dtype)) + " E=" + std::to_string(c.e) + " M=" + std::to_string(c.m);
    CAPTURE(what);
    Array x = inputs(c.dtype);
    DType file = c.dtype == DType::f64 ? DType::f64 : DType::f32;  // bf16 values travel as f32 (exact there)
    write_npy(dir + "/x.npy", convert(x, file));
    int src_e = c.dtype == DType::f64 ? 11 : 8, src_m = c.dtype == DType::f64 ? 52 : c.dtype == DType::bf16 ? 7 : 23;
    run_numpy(dir, "E, M, SE, SM = " + std::to_string(c.e) + ", " + std::to_string(c.m) + ", " + std::to_string(src_e) + ", " +
                       std::to_string(src_m) + R"(
x = np.load('x.npy').astype(np.float64)
r = x.copy()
fin = np.isfinite(x) & (x != 0)
if M < SM:
    e = np.frexp(x[fin])[1] - 1
    q = np.ldexp(1.0, e - M)
    r[fin] = np.round(x[fin] / q) * q
    if M == 0:  # no mantissa bit to make even: a tie goes to the even exponent field (XLA's bit arithmetic)
        xf, even = x[fin], (e + 2 ** (SE - 1) - 1) % 2 == 0
        r[fin] = np.where(np.abs(xf) == 1.5 * q, np.sign(xf) * np.where(even, q, 2 * q), r[fin])
if E < SE:
    bias = 2 ** (E - 1) - 1
    a = np.abs(r)
    r = np.where(np.isfinite(x) & (a >= 2.0 ** (bias + 1)), np.copysign(np.inf, x), r)
    r = np.where(np.isfinite(x) & (a < 2.0 ** (1 - bias)), np.copysign(0.0, x), r)
if M == 0:  # no mantissa bits: no NaN either; XLA gives infinity
    r = np.where(np.isnan(x), np.inf, r)
np.save('r.npy', r.astype(np.load('x.npy').dtype))
)");
    Array got = run("reduce_precision", {x}, {{"exponent_bits", c.e}, {"mantissa_bits", c.m}});
    CHECK(got.dtype() == c.dtype);
    Array want = read_npy(dir + "/r.npy", file, {8, 32});
    for (int64_t i = 0; i < got.size(); ++i) {
      CAPTURE(i);
      CAPTURE(x.get(i));
      double g = got.get(i), w = want.get(i);
      if (std::isnan(w)) CHECK(std::isnan(g));
      else CHECK((g == w && std::signbit(g) == std::signbit(w)));
    }
  }
  // reduce_precision[5, 10] of an f32 is its float16 rounding, except that
  // float16's subnormals flush to zero.
  Array x = inputs(DType::f32);
  write_npy(dir + "/x.npy", x);
  run_numpy(dir, R"(
x = np.load('x.npy')
with np.errstate(all='ignore'):
    h = x.astype(np.float16).astype(np.float32)
h = np.where(np.abs(h) < 2.0 ** -14, np.copysign(np.float32(0), x), h)
np.save('h.npy', h)
)");
  check_equal(run("reduce_precision", {x}, {{"exponent_bits", int64_t{5}}, {"mantissa_bits", int64_t{10}}}),
              values(read_npy(dir + "/h.npy", DType::f32, {8, 32})), "float16");
  // On f16 data XLA rounds the f16 bits: the formula above with f16's 5 and
  // 10 bits, so f16 values must come out as through the f64 path -- except
  // f16's subnormals with E = 5, which keep their exponent field (0) where
  // the f64 path flushes everything below f16's smallest normal.
  for (std::pair<int64_t, int64_t> em : {std::pair<int64_t, int64_t>{5, 10}, {5, 3}, {4, 3}, {3, 1}, {5, 0}}) {
    int64_t e = em.first, m = em.second;  // not a structured binding: clang 14 cannot capture one in CAPTURE
    CAPTURE(e);
    CAPTURE(m);
    Array h = convert(inputs(DType::f32), DType::f16);
    Array got = run("reduce_precision", {h}, {{"exponent_bits", e}, {"mantissa_bits", m}});
    CHECK(got.dtype() == DType::f16);
    Array wide = run("reduce_precision", {convert(h, DType::f64)}, {{"exponent_bits", e}, {"mantissa_bits", m}});
    for (int64_t i = 0; i < got.size(); ++i) {
      CAPTURE(h.get(i));
      double g = got.get(i), w = wide.get(i);
      if (e == 5 && std::fabs(h.get(i)) < 6.103515625e-05) continue;  // a subnormal: checked below
      if (std::isnan(w)) CHECK(std::isnan(g));
      else CHECK((g == w && std::signbit(g) == std::signbit(w)));
    }
  }
  // Subnormals under E = 5: the mantissa bits rounded as for normals; with
  // M = 10 nothing changes.
  Array sub(DType::f16, {4});
  const double tiny[] = {5.960464477539063e-08, 3.0517578125e-05, -4.57763671875e-05, 6.097555160522461e-05};
  for (int i = 0; i < 4; ++i) sub.set(i, tiny[i]);
  check_equal(run("reduce_precision", {sub}, {{"exponent_bits", int64_t{5}}, {"mantissa_bits", int64_t{10}}}),
              values(sub), "f16 subnormals, E=5 M=10");
  // With 1 mantissa bit: 2^-24 (bits 0x0001) rounds to 0; 2^-15 (0x0200) is
  // kept; 0x0300, halfway between 0x0200 and 0x0400, goes to the even 0x0400
  // (2^-14, the smallest normal).
  Array sub2(DType::f16, {3});
  sub2.set(0, 5.960464477539063e-08);
  sub2.set(1, 3.0517578125e-05);
  sub2.set(2, 4.57763671875e-05);
  check_equal(run("reduce_precision", {sub2}, {{"exponent_bits", int64_t{5}}, {"mantissa_bits", int64_t{1}}}),
              {0.0, 3.0517578125e-05, 6.103515625e-05}, "f16 subnormals, E=5 M=1");
}

TEST_CASE("numpy: round with halves away from zero and to even, f32 and f64") {
  NumpyDir scratch("kernels_numpy_round");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  for (DType d : {DType::f32, DType::f64}) {
    INFO(dtype_name(d));
    Array x = random_array(d, {64}, 121, -6, 6);
    for (int i = 0; i < 13; ++i) x.set(i * 3, (i - 6) + 0.5);  // every half from -5.5 to 6.5
    x.set(1, -0.0), x.set(2, INFINITY), x.set(4, NAN), x.set(5, -0.25);
    write_npy(dir + "/x.npy", x);
    run_numpy(dir, R"(
x = np.load('x.npy')
np.save('even.npy', np.round(x))
np.save('away.npy', (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(x.dtype))
)");
    Array even = run("round", {x}, {{"rounding_method", std::string("to_nearest_even")}});
    Array away = run("round", {x});
    check_equal(even, values(read_npy(dir + "/even.npy", d, {64})), "to_nearest_even");
    check_equal(away, values(read_npy(dir + "/away.npy", d, {64})), "away_from_zero");
    CHECK(std::signbit(even.get(1)));  // -0 stays -0
    CHECK(std::signbit(even.get(5)));  // -0.25 rounds to -0
  }
}

TEST_CASE("numpy: split on every axis, with empty pieces; float rem is fmod; sort by two keys is lexsort") {
  NumpyDir scratch("kernels_numpy_split");
  if (!scratch) return;
  const std::string& dir = scratch.path;
  Array x = random_array(DType::f32, {4, 6, 5}, 115);
  Array a = random_array(DType::f64, {50}, 116, -9, 9), b = random_array(DType::f64, {50}, 117, -3, 3);
  b.set(0, 0.0), a.set(1, -0.0), b.set(2, INFINITY), a.set(3, INFINITY);
  Array k1 = random_array(DType::i32, {3, 40}, 118, 0, 3), k2 = random_array(DType::f32, {3, 40}, 119, -2, 2);
  Array v = random_array(DType::i32, {3, 40}, 120, -100, 100);
  for (const auto& [name, arr] : std::vector<std::pair<const char*, const Array*>>{
           {"x", &x}, {"a", &a}, {"b", &b}, {"k1", &k1}, {"k2", &k2}, {"v", &v}})
    write_npy(dir + "/" + name + ".npy", *arr);
  run_numpy(dir, R"(
x, a, b = np.load('x.npy'), np.load('a.npy'), np.load('b.npy')
k1, k2, v = np.load('k1.npy'), np.load('k2.npy'), np.load('v.npy')
sizes = {0: (1, 0, 3), 1: (2, 4), 2: (5,)}
for axis, s in sizes.items():
    for i, p in enumerate(np.split(x, np.cumsum(s)[:-1], axis=axis)):
        np.save(f's{axis}_{i}.npy', np.ascontiguousarray(p))
with np.errstate(all='ignore'):
    np.save('rem.npy', np.fmod(a, b))
order = np.lexsort((k2, k1), axis=1)   # k1 first, then k2; stable
np.save('sk1.npy', np.take_along_axis(k1, order, 1))
np.save('sk2.npy', np.take_along_axis(k2, order, 1))
np.save('sv.npy', np.take_along_axis(v, order, 1))
)");
  const std::vector<std::vector<int64_t>> sizes = {{1, 0, 3}, {2, 4}, {5}};
  for (int64_t axis = 0; axis < 3; ++axis) {
    CAPTURE(axis);
    std::vector<Array> pieces = run_all("split", {x}, {{"sizes", sizes[axis]}, {"axis", axis}});
    REQUIRE(pieces.size() == sizes[axis].size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      Shape s{4, 6, 5};
      s[axis] = sizes[axis][i];
      CHECK(pieces[i].shape() == s);
      check_equal(pieces[i], values(read_npy(dir + "/s" + std::to_string(axis) + "_" + std::to_string(i) + ".npy", DType::f32, s)));
    }
  }
  check_equal(run("rem", {a, b}), values(read_npy(dir + "/rem.npy", DType::f64, {50})), "float rem");
  std::vector<Array> sorted = run_all("sort", {k1, k2, v}, {{"dimension", int64_t{1}}, {"num_keys", int64_t{2}}});
  check_equal(sorted[0], values(read_npy(dir + "/sk1.npy", DType::i32, {3, 40})), "first key");
  check_equal(sorted[1], values(read_npy(dir + "/sk2.npy", DType::f32, {3, 40})), "second key");
  check_equal(sorted[2], values(read_npy(dir + "/sv.npy", DType::i32, {3, 40})), "payload");
}
