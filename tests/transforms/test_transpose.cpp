// Reverse mode (transpose, vjp) checked numerically in the interpreter.
//
// The dot-product test: for random primals x, tangents v and cotangents w,
// <w, J v> with J v from `jvp` equals <Jᵀ w, v> with Jᵀ w from `vjp`, in f64
// to 1e-10 relative, for one small function per transpose rule (and the
// control-flow rules with primal values computed beside the tangents). Two
// gradients are checked against formulas derived by hand (dot_general,
// cumsum), and the errors against their exact located messages.
#include <doctest/doctest.h>

#include <cmath>

#include "ir/primitive.h"
#include "tests/transforms/ad_test_util.h"
#include "tests/transforms/diff_test_util.h"
#include "transforms/transpose.h"

using namespace tessera;
using namespace tessera::testing;

namespace {

double inner(const Array& a, const Array& b) {
  REQUIRE(a.shape() == b.shape());
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += a.get(i) * b.get(i);
  return s;
}

// <w, J v> and <Jᵀ w, v> for `src` differentiated with respect to every
// float input; also checks that vjp's primal outputs are f's.
void check_dot_product(const std::string& src, double tol = 1e-10, uint32_t seed = 7) {
  Module m = parse(src);
  Module j = jvp_pass(m, {});
  Module vj = vjp_pass(m, {});
  verify_or_throw(vj);
  const Body& f = *m.entry();
  std::vector<Array> x = random_inputs(f, seed);
  std::vector<Array> jin = x, vin = x, v;
  for (size_t i = 0; i < x.size(); ++i)
    if (transpose::has_cotangent(f.params()[i]->type)) {
      v.push_back(random_array(f.params()[i]->type, seed + 100 + static_cast<uint32_t>(i)));
      jin.push_back(v.back());
    }
  std::vector<Array> w;
  for (size_t k = 0; k < f.outputs().size(); ++k)
    if (transpose::has_cotangent(f.outputs()[k].type())) {
      w.push_back(random_array(f.outputs()[k].type(), seed + 200 + static_cast<uint32_t>(k)));
      vin.push_back(w.back());
    }
  std::vector<Array> y = interp::run_function(m, "main", x);
  std::vector<Array> jout = interp::run_function(j, "main", jin);
  std::vector<Array> vout = interp::run_function(vj, "main", vin);
  REQUIRE(jout.size() == y.size() + w.size());
  REQUIRE(vout.size() == y.size() + v.size());
  for (size_t k = 0; k < y.size(); ++k) require_close(vout[k], y[k], tol * 1e-2);
  double lhs = 0, rhs = 0;
  for (size_t k = 0; k < w.size(); ++k) lhs += inner(w[k], jout[y.size() + k]);
  for (size_t i = 0; i < v.size(); ++i) rhs += inner(vout[y.size() + i], v[i]);
  INFO("<w, Jv> = " << lhs << ", <J^T w, v> = " << rhs);
  CHECK(std::abs(lhs - rhs) <= tol * (1 + std::abs(lhs)));
  CHECK(std::abs(lhs) > 1e-6);  // the test must be able to fail
}

struct Case {
  const char* name;
  const char* src;
};

// One small function per rule (f64). Each is non-linear in its inputs, so the
// tangent function has residuals, and uses the rule on a linear value.
const Case kCases[] = {
    {"add sub neg, scalar broadcast", R"(
func @main(%x: f64[4], %y: f64[4], %s: f64) -> f64[4] {
  %a = sin %x
  %b = add %a, %y
  %c = sub %b, %s
  %d = neg %c
  %e = mul %d, 2.0
  %f = mul %s, %x
  %g = add %e, %f
  return %g
})"},
    {"mul div", R"(
func @main(%x: f64[4], %y: f64[4]) -> f64[4] {
  %a = mul %x, %y
  %e = exp %y
  %b = div %a, %e
  %c = div %b, %x
  %d = mul %c, %c
  return %d
})"},
    {"convert_element_type", R"(
func @main(%x: f64[4], %y: f64[4]) -> f64[4] {
  %a = mul %x, %y
  %b = convert_element_type[new_dtype=f64] %a
  %c = sin %b
  return %c
})"},
    {"select_n", R"(
func @main(%x: f64[6], %y: f64[6]) -> f64[6] {
  %p = lt %x, %y
  %a = sin %x
  %b = mul %y, %y
  %c = select_n %p, %a, %b
  %d = select_n %p, %c, 0.0
  return %d
})"},
    {"reduce_sum broadcast_in_dim", R"(
func @main(%x: f64[3,4], %y: f64[1,4]) -> (f64[3], f64[2,3,4]) {
  %a = sin %x
  %r = reduce_sum[axes=(1)] %a
  %b = broadcast_in_dim[shape=(2, 3, 4), broadcast_dimensions=(1, 2)] %y
  %c = mul %b, %b
  %s = broadcast_in_dim[shape=(2, 3, 4), broadcast_dimensions=(1, 2)] %a
  %d = add %c, %s
  return %r, %d
})"},
    {"reshape transpose squeeze expand_dims rev", R"(
func @main(%x: f64[2,3], %z: f64[1,6]) -> f64[6,1] {
  %a = sin %x
  %b = transpose[permutation=(1, 0)] %a
  %c = reshape[new_sizes=(6)] %b
  %d = expand_dims[dimensions=(1)] %c
  %e = rev[dimensions=(0)] %d
  %s = squeeze[dimensions=(0)] %z
  %t = mul %s, %s
  %u = reshape[new_sizes=(6, 1)] %t
  %f = add %e, %u
  return %f
})"},
    {"slice (strided) pad concatenate split", R"(
func @main(%x: f64[10], %p: f64) -> (f64[2], f64[5]) {
  %a = sin %x
  %b = slice[start_indices=(1), limit_indices=(9), strides=(3)] %a
  %q = mul %p, %p
  %c = pad[low=(2), high=(-1)] %b, %q
  %d = pad[low=(-1), high=(1)] %b, 0.0
  %e = concatenate[dimension=0] %c, %d
  %f, %g = split[sizes=(2, 5), axis=0] %e
  %h = mul %g, %g
  return %f, %h
})"},
    {"dot_general with batch dims", R"(
func @main(%x: f64[2,3,4], %y: f64[4,2,5]) -> f64[2,3,5] {
  %a = sin %x
  %b = cos %y
  %c = dot_general[lhs_contracting=(2), rhs_contracting=(0), lhs_batch=(0), rhs_batch=(1)] %a, %b
  %d = mul %c, %c
  return %d
})"},
    {"cumsum forward and reverse", R"(
func @main(%x: f64[3,5]) -> f64[3,5] {
  %a = sin %x
  %b = cumsum[axis=1] %a
  %c = mul %b, %a
  %d = cumsum[axis=0, reverse=true] %c
  return %d
})"},
    {"dynamic_slice dynamic_update_slice (integer inputs)", R"(
func @main(%x: f64[8], %u: f64[3], %i: i32) -> (f64[3], f64[8]) {
  %a = sin %x
  %b = dynamic_slice[slice_sizes=(3)] %a, %i
  %c = mul %b, %u
  %d = dynamic_update_slice %a, %c, %i
  return %b, %d
})"},
    {"gather take_along_axis", R"(
func @main(%x: f64[5,3], %idx: i32[4], %t: i32[5,2]) -> (f64[4,3], f64[5,2]) {
  %a = sin %x
  %g = gather[axis=0] %a, %idx
  %h = mul %g, %g
  %tt = rem %t, 3:i32
  %k = take_along_axis[axis=1] %a, %tt
  return %h, %k
})"},
    {"sort roll", R"(
func @main(%x: f64[6], %s: i32) -> (f64[6], f64[6], f64[6]) {
  %a = sin %x
  %b = sort %a
  %c = roll[axis=0, shift=2] %a
  %d = roll[axis=0] %a, %s
  %e = mul %b, %c
  return %e, %d, %b
})"},
    {"cond with primal values inside", R"(
func @main(%x: f64[4], %y: f64[4], %k: i32) -> f64[4] {
  %r = cond[branches=[
    fn(%a: f64[4], %b: f64[4]) -> f64[4] { %s = sin %a
      %t = mul %s, %b
      return %t },
    fn(%a: f64[4], %b: f64[4]) -> f64[4] { %e = exp %b
      return %e }
  ]] %k, %x, %y
  %o = mul %r, %x
  return %o
})"},
    {"for with a non-linear carry (recorded)", R"(
func @main(%x: f64[4], %c: f64[4]) -> f64[4] {
  %w = for[body=fn(%i: i32, %k: f64[4], %v: f64[4]) -> f64[4] {
      %s = sin %v
      %t = mul %s, %k
      return %t
    }, num_consts=1] 0:i32, 3:i32, %c, %x
  return %w
})"},
    {"for with linear constants, dynamic bounds", R"(
func @main(%x: f64[4], %c: f64[4], %n: i32) -> f64[4] {
  %e = exp %c
  %w = for[body=fn(%i: i32, %k: f64[4], %v: f64[4]) -> f64[4] {
      %fi = convert_element_type[new_dtype=f64] %i
      %t = mul %v, %fi
      %u = add %t, %k
      return %u
    }, num_consts=1] 1:i32, %n, %e, %x
  %o = mul %w, %x
  return %o
})"},
    {"scan forward and reverse", R"(
func @main(%x: f64[4], %xs: f64[5,4], %c: f64[4]) -> (f64[4], f64[5,4], f64[4]) {
  %cy, %ys = scan[body=fn(%k: f64[4], %acc: f64[4], %xi: f64[4]) -> (f64[4], f64[4]) {
      %p = mul %acc, %xi
      %s = sin %p
      %q = add %s, %k
      return %q, %p
    }, length=5, num_consts=1, num_carry=1] %c, %x, %xs
  %cz, %zs = scan[body=fn(%acc: f64[4], %xi: f64[4]) -> (f64[4], f64[4]) {
      %p = mul %acc, %xi
      return %p, %acc
    }, length=5, num_carry=1, reverse=true] %x, %xs
  return %cy, %ys, %cz
})"},
    {"while counting to a literal bound", R"(
func @main(%x: f64[4]) -> f64[4] {
  %r, %i = while[cond=fn(%v: f64[4], %k: i32) -> bool { %c = lt %k, 3:i32
                   return %c },
                 body=fn(%v: f64[4], %k: i32) -> (f64[4], i32) { %w = sin %v
                   %k1 = add %k, 1:i32
                   return %w, %k1 }] %x, 0:i32
  return %r
})"},
    {"while counting to a dynamic bound, linear body", R"(
func @main(%x: f64[4], %n: i32) -> f64[4] {
  %nf = convert_element_type[new_dtype=f64] %n
  %e = div %nf, 4.0
  %r, %i = while[cond=fn(%b: i32, %s: f64, %v: f64[4], %k: i32) -> bool { %c = lt %k, %b
                   return %c },
                 body=fn(%b: i32, %s: f64, %v: f64[4], %k: i32) -> (f64[4], i32) { %w = mul %v, %s
                   %k1 = add 1:i32, %k
                   return %w, %k1 }, num_consts=2] %n, %e, %x, 2:i32
  %o = sin %r
  return %o
})"},
    {"call", R"(
func @g(%a: f64[4], %b: f64[4]) -> (f64[4], i32) {
  %s = sin %a
  %t = mul %s, %b
  %n = iota[dtype=i32, shape=(2), dimension=0]
  %n0 = reduce_sum[axes=(0)] %n
  return %t, %n0
}
func @main(%x: f64[4], %y: f64[4]) -> f64[4] {
  %r, %n = call[callee=@g] %x, %y
  %q, %m = call[callee=@g] %r, %x
  return %q
})"},
    {"pmap with a mapped and an unmapped input", R"(
func @main(%x: f64[3,2], %s: f64) -> f64[2,3] {
  %y = pmap[axis_name=dev, axis_size=3, in_axes=(0, none), out_axes=(1),
            body=fn(%row: f64[2], %sc: f64) -> f64[2] {
              %a = mul %row, %sc
              %e = sin %a
              return %e
            }] %x, %s
  return %y
})"},
    {"run_scoped scratch: get, swap, addupdate", R"(
func @main(%x: f64[4], %y: f64[4]) -> f64[4] {
  %r = run_scoped[body=fn(%a: f64[4], %b: f64[4], %t: ref<f64[4], vmem>) -> f64[4] {
      %s = sin %a
      swap %t[:], %s
      addupdate %t[:], %b
      %u = get %t[:]
      %w = mul %u, %a
      %w2 = slice[start_indices=(0), limit_indices=(2)] %w
      %old = swap %t[1:3], %w2
      %z = mul %old, %old
      %v = get %t[:]
      %q = add %v, %w
      return %q
    }] %x, %y
  return %r
})"},
    {"run_scoped scratch: masked load and store", R"(
func @main(%x: f64[4], %y: f64[4]) -> f64[4] {
  %m = gt %x, 0.0
  %r = run_scoped[body=fn(%a: f64[4], %b: f64[4], %mm: bool[4], %t: ref<f64[4], vmem>) -> f64[4] {
      %s = sin %a
      swap %t[:], %s
      store %t[:], %b, %mm
      %u = load %t[:], %mm, %a
      %w = mul %u, %a
      %v = load %t[:]
      %q = add %w, %v
      return %q
    }] %x, %y, %m
  return %r
})"},
    {"a loop reading a tangent Ref beside a primal carry (forward part cut to the primal half)", R"(
func @main(%x: f64[4], %y: f64[4]) -> f64[4] {
  %r = run_scoped[body=fn(%a: f64[4], %b: f64[4], %t: ref<f64[4], vmem>) -> f64[4] {
      swap %t[:], %b
      %c = for[body=fn(%i: i32, %tt: ref<f64[4], vmem>, %v: f64[4]) -> f64[4] {
          %u = get %tt[:]
          %s = sin %v
          %w = mul %u, %s
          return %w
        }, num_consts=1] 0:i32, 3:i32, %t, %a
      %k = reduce_sum[axes=(0)] %a
      %p = gt %k, 0.0
      %d = cond[branches=[
          fn(%t0: ref<f64[4], vmem>, %c0: f64[4]) -> f64[4] { %g = get %t0[:]
            %e = exp %c0
            %h = mul %g, %e
            return %h },
          fn(%t1: ref<f64[4], vmem>, %c1: f64[4]) -> f64[4] { %g = get %t1[:]
            return %g }
        ]] %p, %t, %c
      %q = mul %d, %a
      return %q
    }] %x, %y
  return %r
})"},
    {"a cond writing primal scratch that a later op reads (replayed in program order)", R"(
func @main(%x: f64[4], %y: f64[4]) -> f64[4] {
  %r = run_scoped[body=fn(%a: f64[4], %b: f64[4], %m: ref<f64[4], vmem>) -> f64[4] {
      swap %m[:], %b
      %k = reduce_sum[axes=(0)] %a
      %p = ge %k, -1000.0
      cond[branches=[
          fn(%m0: ref<f64[4], vmem>, %a0: f64[4]) { },
          fn(%m1: ref<f64[4], vmem>, %a1: f64[4]) { %e = sin %a1
            swap %m1[:], %e }
        ]] %p, %m, %a
      %g = get %m[:]
      %q = mul %g, %a
      return %q
    }] %x, %y
  return %r
})"},
    {"a cond reading primal scratch it then overwrites (the read kept as a residual)", R"(
func @main(%x: f64[4], %y: f64[4]) -> f64[4] {
  %r = run_scoped[body=fn(%a: f64[4], %b: f64[4], %m: ref<f64[4], vmem>) -> f64[4] {
      %s0 = sin %a
      swap %m[:], %s0
      %k = reduce_sum[axes=(0)] %a
      %p = ge %k, -1000.0
      %d = cond[branches=[
          fn(%m0: ref<f64[4], vmem>, %b0: f64[4]) -> f64[4] { return %b0 },
          fn(%m1: ref<f64[4], vmem>, %b1: f64[4]) -> f64[4] { %g = get %m1[:]
            %e = exp %g
            %h = mul %b1, %e
            swap %m1[:], %b1
            return %h }
        ]] %p, %m, %b
      %g2 = get %m[:]
      %q = mul %d, %g2
      return %q
    }] %x, %y
  return %r
})"},
    {"repeat", R"(
func @main(%x: f64[2,3]) -> (f64[6,3], f64[2,12]) {
  %a = sin %x
  %b = repeat[repeats=3, axis=0] %a
  %c = mul %b, %b
  %d = repeat[repeats=4, axis=1] %a
  return %c, %d
})"},
};

}  // namespace

TEST_CASE("transpose: dot-product test <w, J v> = <J^T w, v> for every rule (f64)") {
  for (const Case& c : kCases) {
    INFO(std::string(c.name));
    check_dot_product(c.src);
  }
}

TEST_CASE("transpose: dot-product test in f32 (1e-4)") {
  for (const Case& c : kCases) {
    INFO(std::string(c.name));
    check_dot_product(replace_all(c.src, "f64", "f32"), 1e-4);
  }
}

TEST_CASE("transpose: a tangent kernel (Ref params, program_id, cond on a program id) transposes in place") {
  Module lin = linearize_pass(example("matmul.tsr"), {});
  const Op* call = nullptr;
  for (const Op& op : lin.find("main_tangent")->ops())
    if (op.name() == "pallas_call") call = &op;
  REQUIRE(call);
  const Body& k = *call->param(keys::kernel);
  // (x, y, x_dot, y_dot, o, o_dot): the tangent Refs are linear.
  std::vector<bool> linear{false, false, true, true, false, true};
  ad::SymbolSink syms(lin);
  BodyPtr scratch = make_body("scratch", BodyKind::func);
  Builder b(*scratch);
  transpose::Ctx ctx{b, syms};
  BodyPtr t = transpose::transpose_body(ctx, k, "matmul_kernel_transpose", BodyKind::kernel, linear);
  std::string text = print_body(*t);
  // Cotangent Refs in the tangents' places, nothing returned.
  CHECK(t->params().size() == 6);
  CHECK(t->params()[2]->name == "x_ct");
  CHECK(t->params()[5]->name == "o_ct");
  CHECK(t->outputs().empty());
  check_in_order(text, {"program_id[axis=2]", "get %o_ct[:, :]", "dot_general", "addupdate %y_ct[:, :]",
                        "addupdate %x_ct[:, :]", "cond[", "swap %o1_ct[:, :]"});
}

TEST_CASE("transpose: gradients against hand-derived formulas (dot_general, cumsum)") {
  // f(x, y) = x @ y: the cotangents of w are w @ yᵀ and xᵀ @ w.
  Module mm = parse(R"(
func @main(%x: f64[3,4], %y: f64[4,2]) -> f64[3,2] {
  %z = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %x, %y
  return %z
})");
  Array x = random_array(Type::array(DType::f64, {3, 4}), 1), y = random_array(Type::array(DType::f64, {4, 2}), 2);
  Array w = random_array(Type::array(DType::f64, {3, 2}), 3);
  std::vector<Array> g = interp::run_function(vjp_pass(mm, {}), "main", {x, y, w});
  REQUIRE(g.size() == 3);
  Array gx(DType::f64, {3, 4}), gy(DType::f64, {4, 2});
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 4; ++k) {
      double s = 0;
      for (int j = 0; j < 2; ++j) s += w.get(i * 2 + j) * y.get(k * 2 + j);
      gx.set(i * 4 + k, s);
    }
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int i = 0; i < 3; ++i) s += x.get(i * 4 + k) * w.get(i * 2 + j);
      gy.set(k * 2 + j, s);
    }
  require_close(g[1], gx, 1e-12);
  require_close(g[2], gy, 1e-12);

  // f(x) = cumsum(x): the cotangent is the reversed cumulative sum of w.
  Module cs = parse(R"(
func @main(%x: f64[6]) -> f64[6] {
  %z = cumsum[axis=0] %x
  return %z
})");
  Array x6 = random_array(Type::array(DType::f64, {6}), 4), w6 = random_array(Type::array(DType::f64, {6}), 5);
  std::vector<Array> gc = interp::run_function(vjp_pass(cs, {}), "main", {x6, w6});
  Array want(DType::f64, {6});
  double acc = 0;
  for (int i = 5; i >= 0; --i) want.set(i, acc += w6.get(i));
  require_close(gc[1], want, 1e-12);
}

TEST_CASE("transpose: linearize,transpose gives the transpose of the tangent function") {
  Module m = parse(kCases[7].src);  // dot_general with batch dims
  Module t = run_pipeline(m, "linearize,transpose");
  const Body& tan = *t.find("main_tangent");
  const Body& tr = *t.find("main_transpose");
  // main_tangent(residuals..., x_dot, y_dot) and main_transpose(residuals..., ct0).
  size_t nres = tan.params().size() - 2;
  REQUIRE(tr.params().size() == nres + 1);
  std::vector<Array> res = interp::run_function(t, "main_primal", random_inputs(*m.entry(), 11));
  std::vector<Array> targs(res.begin() + 1, res.end()), trargs = targs;
  Array v0 = random_array(tan.params()[nres]->type, 12), v1 = random_array(tan.params()[nres + 1]->type, 13);
  Array w = random_array(tr.params()[nres]->type, 14);
  targs.push_back(v0);
  targs.push_back(v1);
  trargs.push_back(w);
  double lhs = inner(w, interp::run_function(t, "main_tangent", targs)[0]);
  std::vector<Array> ct = interp::run_function(t, "main_transpose", trargs);
  double rhs = inner(ct[0], v0) + inner(ct[1], v1);
  CHECK(std::abs(lhs - rhs) <= 1e-10 * (1 + std::abs(lhs)));
}

namespace {

std::string error_of(const std::string& src, const std::string& pipeline) {
  try {
    run_pipeline(parse(src), pipeline);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("transpose: errors name the op and say why") {
  const char* bilinear = R"(func @main(%x: f32[4], %y: f32[4]) -> f32[4] {
  %a = add %x, %y
  %b = mul %a, %x
  %c = exp %x
  return %b
})";
  // The first op in program order that is not linear.
  CHECK(error_of(bilinear, "transpose{linear=0|1}") == "t.tsr:3:3: error: transpose: `mul` of two linear values is not linear");
  CHECK(error_of(bilinear, "transpose{linear=0}") == "t.tsr:3:3: error: transpose: `mul` of two linear values is not linear");
  CHECK(error_of(R"(func @main(%x: f32[4], %y: f32[4]) -> f32[4] {
  %a = mul %x, %y
  %c = exp %y
  return %c
})", "transpose{linear=1}") ==
        "t.tsr:3:3: error: transpose: `exp` of the linear value %y is not linear (a non-linear function: jvp applies it "
        "to primal values only)");
  CHECK(error_of(R"(func @main(%x: f32[4], %y: f32[4]) -> f32[4] {
  %a = div %x, %y
  return %a
})", "transpose{linear=1}") == "t.tsr:2:3: error: transpose: `div` by a linear value is not linear");
  CHECK(error_of(R"(func @main(%x: f32[4]) -> i1[4] {
  %a = neg %x
  %b = lt %a, 0.0
  return %b
})", "transpose{linear=0}") == "t.tsr:3:3: error: transpose: `lt` of the linear value %a is not linear (its results are integers or bools)");
  CHECK(error_of(R"(func @main(%x: f32[4], %n: i32) -> f32[4] {
  return %x
})", "vjp{wrt=1}") == "t.tsr:1:1: error: vjp: input 1 (%n: i32) is not floating point and gets no cotangent");
  CHECK(error_of(bilinear, "transpose") ==
        "t.tsr:1:1: error: transpose: @main was not made by linearize (no @NAME and @NAME_primal beside @NAME_tangent); "
        "say which inputs are linear with linear=I|J");
  CHECK(error_of(R"(func @main(%x: f64[4]) -> f64[4] {
  %r = while[cond=fn(%v: f64[4]) -> bool { %s = reduce_sum[axes=(0)] %v
                   %c = lt %s, 10.0
                   return %c },
             body=fn(%v: f64[4]) -> f64[4] { %w = mul %v, 2.0
                   return %w }] %x
  return %r
})", "vjp") == "t.tsr:2:3: error: transpose: this `while` has no trip count known on entry (its cond is not `lt` of a "
               "carry the body increments by 1, against a constant); its transpose would need to record every "
               "iteration: write it as a `for` or `scan`");
  CHECK(error_of(R"(func @main(%x: f64[4], %n: i32) -> f64[4] {
  %w = for[body=fn(%i: i32, %v: f64[4]) -> f64[4] {
      %s = sin %v
      return %s
    }] 0:i32, %n, %x
  return %w
})", "vjp") == "t.tsr:2:3: error: transpose: this loop carries non-linear values its transpose must replay backwards, "
               "which needs a static trip count (it has a dynamic upper bound); use a `scan`");
}

TEST_CASE("transpose: every primitive has a rule or a stated reason") {
  std::string note;
  for (const Primitive* p : registry().all()) {
    if (transpose::rules().find(*p)) continue;
    transpose::NoRule no = transpose::why_no_rule(*p);
    CHECK_MESSAGE(no.why != "no transpose rule yet", p->name);
    note += p->name + ": " + no.why + "\n";
  }
  // The ones a linear function may meet and that are not done are few.
  CHECK(note.find("dma_start:") == std::string::npos);  // transpose_dma.cpp
  CHECK(note.find("dma_wait:") == std::string::npos);
  CHECK(note.find("core_map: its cores communicate") != std::string::npos);
  CHECK(note.find("\nmul:") == std::string::npos);
}

TEST_CASE("custom_vjp_call: runs call; vjp uses fwd and bwd (even a deliberately wrong bwd); jvp cannot run; vmap batches all") {
  // bwd returns twice the true cotangent, so the test can tell it was used.
  const char* src = R"(func @main(%x: f64[4]) -> f64[4] {
  %y = custom_vjp_call[call=fn(%a: f64[4]) -> f64[4] {
      %s = sin %a
      return %s
    }, fwd=fn(%a: f64[4]) -> (f64[4], f64[4]) {
      %s = sin %a
      %c = cos %a
      return %s, %c
    }, bwd=fn(%c: f64[4], %g: f64[4]) -> f64[4] {
      %t = mul %c, %g
      %u = mul %t, 2.0
      return %u
    }] %x
  %z = mul %y, %x
  return %z
})";
  Module m = parse(src);
  Array x = random_array(Type::array(DType::f64, {4}), 21), w = random_array(Type::array(DType::f64, {4}), 22);
  Array z = interp::run_function(m, "main", {x})[0];
  for (int64_t i = 0; i < 4; ++i) CHECK(z.get(i) == doctest::Approx(std::sin(x.get(i)) * x.get(i)).epsilon(1e-14));
  // z = y * x: x_ct = bwd(cos x, w * x) + y * w = 2 cos(x) x w + sin(x) w.
  std::vector<Array> g = interp::run_function(run_pipeline(m, "vjp"), "main", {x, w});
  REQUIRE(g.size() == 2);
  for (int64_t i = 0; i < 4; ++i) {
    double xi = x.get(i), wi = w.get(i);
    CHECK(g[1].get(i) == doctest::Approx(2 * std::cos(xi) * xi * wi + std::sin(xi) * wi).epsilon(1e-12));
  }
  // Under vmap (x batched, 3 examples) then vjp, each row as above.
  Module vm = run_pipeline(m, "vmap{axis_size=3},vjp");
  Array xb = random_array(Type::array(DType::f64, {3, 4}), 23), wb = random_array(Type::array(DType::f64, {3, 4}), 24);
  std::vector<Array> gb = interp::run_function(vm, "main", {xb, wb});
  for (int64_t i = 0; i < 12; ++i) {
    double xi = xb.get(i), wi = wb.get(i);
    CHECK(gb[1].get(i) == doctest::Approx(2 * std::cos(xi) * xi * wi + std::sin(xi) * wi).epsilon(1e-12));
  }
  // Forward mode has no rule to run, as in JAX; the error is at the custom_lin jvp made.
  Module j = run_pipeline(m, "jvp");
  std::string err;
  try {
    interp::run_function(j, "main", {x, w});
  } catch (const Error& e) {
    err = e.what();
  }
  CHECK(err == "t.tsr:2:3: error: custom_lin: the jvp of a custom_vjp_call has no tangent to compute (jax.custom_vjp "
               "defines reverse mode only): differentiate it with vjp, or give the function a custom_jvp_call instead");
  // The shape rule checks the three bodies against each other.
  std::string bad = replace_once(src, "bwd=fn(%c: f64[4], %g: f64[4]) -> f64[4]", "bwd=fn(%c: f64[4], %g: f64[4]) -> f32[4]");
  bad = replace_once(bad, "      return %u\n", "      %v = convert_element_type[new_dtype=f32] %u\n      return %v\n");
  CHECK(error_of(bad, "dce") ==
        "t.tsr:2:3: error: custom_vjp_call: bwd returns (f32[4]) but the operands are (f64[4]) (one cotangent per operand, "
        "of its type)");
}
