// dot_general vs a naive triple loop over doubles.
#include "tests/interpreter/kernel_test_util.h"

using namespace ktest;

namespace {

// Naive dot_general: out[batch..., lhs free..., rhs free...].
std::vector<double> ref_dot(const Array& a, const Array& b, const I& lc, const I& rc, const I& lb, const I& rb, Shape& out_shape) {
  auto contains = [](const I& v, int64_t d) { return std::find(v.begin(), v.end(), d) != v.end(); };
  I lfree, rfree;
  for (int d = 0; d < a.rank(); ++d)
    if (!contains(lc, d) && !contains(lb, d)) lfree.push_back(d);
  for (int d = 0; d < b.rank(); ++d)
    if (!contains(rc, d) && !contains(rb, d)) rfree.push_back(d);
  out_shape.clear();
  for (int64_t d : lb) out_shape.push_back(a.shape()[d]);
  for (int64_t d : lfree) out_shape.push_back(a.shape()[d]);
  for (int64_t d : rfree) out_shape.push_back(b.shape()[d]);
  Shape kshape;
  for (int64_t d : lc) kshape.push_back(a.shape()[d]);
  std::vector<double> out(num_elements(out_shape));
  for (size_t o = 0; o < out.size(); ++o) {
    I oi = unflatten(static_cast<int64_t>(o), out_shape);
    I ai(a.rank()), bi(b.rank());
    size_t p = 0;
    for (size_t i = 0; i < lb.size(); ++i, ++p) ai[lb[i]] = oi[p], bi[rb[i]] = oi[p];
    for (int64_t d : lfree) ai[d] = oi[p++];
    for (int64_t d : rfree) bi[d] = oi[p++];
    double s = 0;
    for (int64_t k = 0; k < num_elements(kshape); ++k) {
      I ki = unflatten(k, kshape);
      for (size_t i = 0; i < lc.size(); ++i) ai[lc[i]] = ki[i], bi[rc[i]] = ki[i];
      s += a.get(flatten(ai, a.shape())) * b.get(flatten(bi, b.shape()));
    }
    out[o] = s;
  }
  return out;
}

struct Case {
  Shape as, bs;
  I lc, rc, lb, rb;
};

}  // namespace

TEST_CASE("dot_general: layouts, batch dims, remainders of the register tiles") {
  std::vector<Case> cases = {
      {{5, 300}, {300, 13}, {1}, {0}, {}, {}},         // plain matmul, K spans two K blocks
      {{300, 5}, {300, 13}, {0}, {0}, {}, {}},         // lhs transposed
      {{7, 9}, {11, 9}, {1}, {1}, {}, {}},             // rhs transposed (q @ k.T)
      {{2, 3, 4}, {2, 4, 5}, {2}, {1}, {0}, {0}},      // batched
      {{4, 2, 3}, {3, 5, 2}, {2}, {0}, {1}, {2}},      // batch dims not leading
      {{2, 3, 4}, {4, 3, 6}, {1, 2}, {1, 0}, {}, {}},  // two contracting dims
      {{3}, {3}, {0}, {0}, {}, {}},                    // inner product -> rank 0
      {{3}, {4}, {}, {}, {}, {}},                      // outer product
      {{70, 17}, {17, 9}, {1}, {0}, {}, {}},           // more than one M block
      {{0, 4}, {4, 3}, {1}, {0}, {}, {}},              // empty M
      {{2, 0}, {0, 3}, {1}, {0}, {}, {}},              // empty K: zeros
  };
  for (DType d : {DType::f32, DType::f64, DType::i32, DType::bf16}) {
    for (const Case& c : cases) {
      INFO(dtype_name(d) << " lhs " << shape_str(c.as) << " rhs " << shape_str(c.bs));
      Array a = random_array(d, c.as, 61, -3, 3), b = random_array(d, c.bs, 62, -3, 3);
      Array y = run("dot_general", {a, b},
                    {{"lhs_contracting", c.lc}, {"rhs_contracting", c.rc}, {"lhs_batch", c.lb}, {"rhs_batch", c.rb}});
      Shape os;
      std::vector<double> want = ref_dot(a, b, c.lc, c.rc, c.lb, c.rb, os);
      CHECK(y.shape() == os);
      for (double& w : want) w = is_float(d) ? round_double_to(d, w) : w;
      if (d == DType::f32) check_close(y, want, 1e-5, 1e-4);
      else if (d == DType::f64) check_close(y, want, 1e-12, 1e-12);
      else if (d == DType::bf16) check_close(y, want, 8e-3, 1e-2);
      else check_equal(y, want);
    }
  }
}

TEST_CASE("dot_general: preferred_element_type and accumulation precision") {
  // bf16 inputs accumulate in f32: 1024 products of 1 * 1 give exactly 1024.
  Array a = Array::from_values(DType::bf16, {1, 1024}, std::vector<double>(1024, 1.0));
  Array b = Array::from_values(DType::bf16, {1024, 1}, std::vector<double>(1024, 1.0));
  Params p = {{"lhs_contracting", I{1}}, {"rhs_contracting", I{0}}};
  check_equal(run("dot_general", {a, b}, p), {1024});
  Params pf = p;
  pf.push_back({"preferred_element_type", DType::f32});
  Array small = Array::from_values(DType::bf16, {1, 3}, {1, 1.0 / 128, 1.0 / 128});
  Array ones = Array::from_values(DType::bf16, {3, 1}, {1, 1, 1});
  Array yf = run("dot_general", {small, ones}, pf);
  CHECK(yf.dtype() == DType::f32);
  check_equal(yf, {1 + 2.0 / 128});
  // int8 inputs into an int32 result; products beyond the int8 range.
  Array i = Array::from_values(DType::i8, {1, 2}, {-128, 127}), j = Array::from_values(DType::i8, {2, 1}, {-128, 127});
  Params pi = p;
  pi.push_back({"preferred_element_type", DType::i32});
  check_equal(run("dot_general", {i, j}, pi), {16384 + 16129});
  // Without preferred_element_type an i8 result wraps.
  check_equal(run("dot_general", {i, j}, p), {static_cast<double>(static_cast<int8_t>(16384 + 16129))});
  // i32 inputs into an f32 result.
  Params pf32 = p;
  pf32.push_back({"preferred_element_type", DType::f32});
  Array m = Array::from_values(DType::i32, {1, 2}, {3, 4}), n = Array::from_values(DType::i32, {2, 1}, {5, 6});
  check_equal(run("dot_general", {m, n}, pf32), {39});
}

TEST_CASE("dot_general: large f32 matmul against the naive reference") {
  Array a = random_array(DType::f32, {67, 520}, 71), b = random_array(DType::f32, {520, 45}, 72);
  Array y = run("dot_general", {a, b}, {{"lhs_contracting", I{1}}, {"rhs_contracting", I{0}}});
  Shape os;
  check_close(y, ref_dot(a, b, {1}, {0}, {}, {}, os), 1e-4, 1e-3);
}
