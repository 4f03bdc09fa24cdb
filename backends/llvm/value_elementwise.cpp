// The elementwise family: one generator combinator (nary_rule) and one table
// from primitive name to the scalar IR of its formula, as JAX's
// `standard_naryop` gives a whole family one lowering. select_n, clamp and the
// primitives with params get their own small rules beside it.
//
// Semantics are the interpreter's (runtime/kernels/elementwise.cpp), so
// results match it bit for bit where the math is exact:
//   integers wrap; div by 0 gives -1 (all bits set), INT_MIN / -1 = INT_MIN;
//   rem takes the dividend's sign, x % 0 = x, INT_MIN % -1 = 0;
//   shift amounts are unsigned, >= the width gives 0 (or the sign fill);
//   float max / min propagate NaN; bf16 / f16 compute in f32 and every result
//   is rounded to its precision (value_convert.cpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>

#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {

// ---- Block plumbing shared by the value rules --------------------------------

std::vector<Block> operand_blocks(Lowering& L, const Op& op) {
  std::vector<Block> out;
  for (size_t k = 0; k < op.num_main_operands(); ++k) out.push_back(L.value(op.main_operand(static_cast<int>(k))));
  return out;
}

std::vector<const Var*> merged_reads(const std::vector<Block>& blocks) {
  std::vector<const Var*> out;
  for (const Block& x : blocks)
    for (const Var* r : x.reads)
      if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  return out;
}

int chained_cost(const std::vector<Block>& blocks) {
  int c = 1;
  for (const Block& x : blocks) c += x.cost;
  return c;
}

int chained_depth(const std::vector<Block>& blocks) {
  int d = 0;
  for (const Block& x : blocks) d = std::max(d, x.depth);
  return d + 1;
}

Block generator(const Type& type, const std::vector<Block>& from,
                std::function<llvm::Value*(Lowering&, const std::vector<llvm::Value*>&)> f) {
  Block r;
  r.type = type;
  r.element = std::move(f);
  r.cost = chained_cost(from);
  r.depth = chained_depth(from);
  r.reads = merged_reads(from);
  return r;
}

std::vector<llvm::Value*> delinearize(Lowering& L, llvm::Value* flat, const Shape& sizes) {
  std::vector<llvm::Value*> out(sizes.size());
  for (size_t k = sizes.size(); k-- > 0;) {
    if (k == 0) {
      out[0] = flat;
      break;
    }
    out[k] = L.b.CreateURem(flat, L.i64(sizes[k]));
    flat = L.b.CreateUDiv(flat, L.i64(sizes[k]));
  }
  return out;
}

llvm::Value* element_at(Lowering& L, const Block& x, const std::vector<llvm::Value*>& idx) {
  static const std::vector<llvm::Value*> scalar_index;
  return x.element(L, x.type.rank() == 0 ? scalar_index : idx);
}

llvm::Value* local_variable(Lowering& L, llvm::Type* type, const char* name) {
  llvm::BasicBlock& entry = L.fn->getEntryBlock();
  llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
  llvm::AllocaInst* a = eb.CreateAlloca(type, nullptr, name);
  eb.CreateStore(llvm::Constant::getNullValue(type), a);
  return a;
}

llvm::Value* max_of(Lowering& L, llvm::Value* a, llvm::Value* b, DType d) {
  auto& B = L.b;
  if (is_float(d)) {
    llvm::Value* pick = B.CreateSelect(B.CreateFCmpOGT(a, b), a, b);
    return B.CreateSelect(B.CreateFCmpUNO(a, a), a, B.CreateSelect(B.CreateFCmpUNO(b, b), b, pick));
  }
  return B.CreateSelect(is_unsigned(d) ? B.CreateICmpUGT(a, b) : B.CreateICmpSGT(a, b), a, b);
}

llvm::Value* min_of(Lowering& L, llvm::Value* a, llvm::Value* b, DType d) {
  auto& B = L.b;
  if (is_float(d)) {
    llvm::Value* pick = B.CreateSelect(B.CreateFCmpOLT(a, b), a, b);
    return B.CreateSelect(B.CreateFCmpUNO(a, a), a, B.CreateSelect(B.CreateFCmpUNO(b, b), b, pick));
  }
  return B.CreateSelect(is_unsigned(d) ? B.CreateICmpULT(a, b) : B.CreateICmpSLT(a, b), a, b);
}

namespace {

using Args = std::vector<llvm::Value*>;
// The scalar formula of one primitive: operands and result in the compute
// type of the operands' dtype `d` (comparisons give i1).
using Formula = std::function<llvm::Value*(Lowering&, DType d, const Args&)>;

llvm::Value* one_like(llvm::Value* v) {
  return v->getType()->isFloatingPointTy() ? llvm::ConstantFP::get(v->getType(), 1.0) : llvm::ConstantInt::get(v->getType(), 1);
}

Formula math(const char* fn) {
  return [fn](Lowering& L, DType d, const Args& a) { return L.math_call(fn, d, a); };
}

// Integer division and remainder, never dividing by 0 or INT_MIN by -1 (poison
// in LLVM): those lanes divide by 1 and the result is selected.
llvm::Value* int_div(Lowering& L, DType d, llvm::Value* a, llvm::Value* b, bool rem) {
  auto& B = L.b;
  llvm::Type* t = a->getType();
  llvm::Value* zero = llvm::ConstantInt::get(t, 0);
  llvm::Value* by_zero = B.CreateICmpEQ(b, zero);
  llvm::Value* special = by_zero;
  llvm::Value* overflow = nullptr;
  if (!is_unsigned(d)) {
    overflow = B.CreateAnd(B.CreateICmpEQ(a, llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(t->getIntegerBitWidth()))),
                           B.CreateICmpEQ(b, llvm::ConstantInt::getSigned(t, -1)));
    // rem: any b = -1 gives 0, so take the safe path for all of them.
    if (rem) overflow = B.CreateICmpEQ(b, llvm::ConstantInt::getSigned(t, -1));
    special = B.CreateOr(special, overflow);
  }
  llvm::Value* safe = B.CreateSelect(special, llvm::ConstantInt::get(t, 1), b);
  llvm::Value* q = rem ? (is_unsigned(d) ? B.CreateURem(a, safe) : B.CreateSRem(a, safe))
                       : (is_unsigned(d) ? B.CreateUDiv(a, safe) : B.CreateSDiv(a, safe));
  if (rem) {
    if (overflow) q = B.CreateSelect(overflow, zero, q);
    return B.CreateSelect(by_zero, a, q);
  }
  if (overflow) q = B.CreateSelect(overflow, a, q);
  return B.CreateSelect(by_zero, llvm::ConstantInt::getSigned(t, -1), q);
}

// Shifts with the amount read as unsigned: >= the width gives 0, or the sign
// fill for an arithmetic right shift.
llvm::Value* shift(Lowering& L, const Args& a, llvm::Instruction::BinaryOps kind) {
  auto& B = L.b;
  llvm::Type* t = a[0]->getType();
  llvm::Value* width = llvm::ConstantInt::get(t, t->getIntegerBitWidth());
  if (kind == llvm::Instruction::AShr) {
    llvm::Value* amount = B.CreateSelect(B.CreateICmpUGE(a[1], width), llvm::ConstantInt::get(t, t->getIntegerBitWidth() - 1), a[1]);
    return B.CreateAShr(a[0], amount);
  }
  llvm::Value* r = B.CreateBinOp(kind, a[0], a[1]);
  return B.CreateSelect(B.CreateICmpUGE(a[1], width), llvm::ConstantInt::get(t, 0), r);
}

llvm::Value* compare(Lowering& L, DType d, const Args& a, llvm::CmpInst::Predicate fp, llvm::CmpInst::Predicate s,
                     llvm::CmpInst::Predicate u) {
  if (is_float(d)) return L.b.CreateFCmp(fp, a[0], a[1]);
  return L.b.CreateICmp(is_unsigned(d) ? u : s, a[0], a[1]);
}

// erf_inv as the interpreter computes it, in double: Giles' approximation
// ("Approximating the erfinv function", GPU Computing Gems, 2011), then two
// Newton steps on erf; +-1 give +-inf, |y| > 1 and NaN give NaN.
llvm::Value* erf_inv(Lowering& L, DType d, const Args& a) {
  auto& B = L.b;
  llvm::Type* f64 = B.getDoubleTy();
  auto c = [&](double v) { return llvm::ConstantFP::get(f64, v); };
  llvm::Value* y = a[0]->getType()->isDoubleTy() ? a[0] : B.CreateFPExt(a[0], f64);
  llvm::Value* w0 = B.CreateFNeg(L.math_call("log", DType::f64, {B.CreateFMul(B.CreateFSub(c(1), y), B.CreateFAdd(c(1), y))}));
  auto poly = [&](double first, std::initializer_list<double> rest, llvm::Value* w) {
    llvm::Value* p = c(first);
    for (double k : rest) p = B.CreateFAdd(c(k), B.CreateFMul(p, w));
    return p;
  };
  llvm::Value* small = poly(2.81022636e-08,
                            {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                             0.246640727, 1.50140941},
                            B.CreateFSub(w0, c(2.5)));
  llvm::Value* large = poly(-0.000200214257,
                            {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                             1.00167406, 2.83297682},
                            B.CreateFSub(L.math_call("sqrt", DType::f64, {w0}), c(3)));
  llvm::Value* x = B.CreateFMul(B.CreateSelect(B.CreateFCmpOLT(w0, c(5)), small, large), y);
  const double k = 2 / std::sqrt(std::numbers::pi);
  for (int step = 0; step < 2; ++step) {
    llvm::Value* err = B.CreateFSub(L.math_call("erf", DType::f64, {x}), y);
    llvm::Value* slope = B.CreateFMul(c(k), L.math_call("exp", DType::f64, {B.CreateFMul(B.CreateFNeg(x), x)}));
    x = B.CreateFSub(x, B.CreateFDiv(err, slope));
  }
  llvm::Value* inf = B.CreateFMul(y, llvm::ConstantFP::getInfinity(f64));
  x = B.CreateSelect(B.CreateOr(B.CreateFCmpOEQ(y, c(1)), B.CreateFCmpOEQ(y, c(-1))), inf, x);
  llvm::Value* inside = B.CreateAnd(B.CreateFCmpOGE(y, c(-1)), B.CreateFCmpOLE(y, c(1)));
  x = B.CreateSelect(inside, x, llvm::ConstantFP::getNaN(f64));
  return d == DType::f64 ? x : B.CreateFPTrunc(x, B.getFloatTy());
}

// The formulas of the fixed-arity elementwise primitives without params.
const std::map<std::string, Formula, std::less<>>& formulas() {
  using P = llvm::CmpInst::Predicate;
  static const std::map<std::string, Formula, std::less<>> table = {
      {"exp", math("exp")},
      {"log", math("log")},
      {"sqrt", math("sqrt")},
      {"rsqrt", [](Lowering& L, DType d, const Args& a) { return L.b.CreateFDiv(one_like(a[0]), L.math_call("sqrt", d, a)); }},
      {"tanh", math("tanh")},
      {"logistic",
       [](Lowering& L, DType d, const Args& a) {
         llvm::Value* one = one_like(a[0]);
         return L.b.CreateFDiv(one, L.b.CreateFAdd(one, L.math_call("exp", d, {L.b.CreateFNeg(a[0])})));
       }},
      {"sin", math("sin")},
      {"cos", math("cos")},
      {"tan", math("tan")},
      {"floor", math("floor")},
      {"ceil", math("ceil")},
      {"exp2", math("exp2")},
      {"log1p", math("log1p")},
      {"expm1", math("expm1")},
      {"erf", math("erf")},
      {"cbrt", math("cbrt")},
      {"erf_inv", erf_inv},
      {"is_finite",
       [](Lowering& L, DType d, const Args& a) {
         return L.b.CreateFCmpOLT(L.math_call("fabs", d, a), llvm::ConstantFP::getInfinity(a[0]->getType()));
       }},
      {"neg",
       [](Lowering& L, DType d, const Args& a) {
         return is_float(d) ? L.b.CreateFNeg(a[0]) : L.b.CreateSub(llvm::ConstantInt::get(a[0]->getType(), 0), a[0]);
       }},
      {"abs",
       [](Lowering& L, DType d, const Args& a) -> llvm::Value* {
         if (is_float(d)) return L.math_call("fabs", d, a);
         if (is_unsigned(d)) return a[0];
         return L.b.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a[0], L.b.getFalse());  // INT_MIN wraps to itself
       }},
      {"square",
       [](Lowering& L, DType d, const Args& a) { return is_float(d) ? L.b.CreateFMul(a[0], a[0]) : L.b.CreateMul(a[0], a[0]); }},
      {"sign",
       [](Lowering& L, DType d, const Args& a) -> llvm::Value* {
         auto& B = L.b;
         llvm::Type* t = a[0]->getType();
         if (is_float(d)) {  // NaN, +0 and -0 unchanged
           llvm::Value* zero = llvm::ConstantFP::get(t, 0.0);
           return B.CreateSelect(B.CreateFCmpOGT(a[0], zero), llvm::ConstantFP::get(t, 1.0),
                                 B.CreateSelect(B.CreateFCmpOLT(a[0], zero), llvm::ConstantFP::get(t, -1.0), a[0]));
         }
         llvm::Value* zero = llvm::ConstantInt::get(t, 0);
         if (is_unsigned(d)) return B.CreateZExt(B.CreateICmpNE(a[0], zero), t);
         return B.CreateSub(B.CreateZExt(B.CreateICmpSGT(a[0], zero), t), B.CreateZExt(B.CreateICmpSLT(a[0], zero), t));
       }},
      {"not", [](Lowering& L, DType, const Args& a) { return L.b.CreateNot(a[0]); }},
      {"reciprocal", [](Lowering& L, DType, const Args& a) { return L.b.CreateFDiv(one_like(a[0]), a[0]); }},  // exact, approx or not
      {"population_count",
       [](Lowering& L, DType, const Args& a) { return L.b.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, a[0]); }},
      {"clz",
       [](Lowering& L, DType, const Args& a) {
         return L.b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, a[0], L.b.getFalse());  // clz(0) = width
       }},
      {"add", [](Lowering& L, DType d, const Args& a) { return is_float(d) ? L.b.CreateFAdd(a[0], a[1]) : L.b.CreateAdd(a[0], a[1]); }},
      {"sub", [](Lowering& L, DType d, const Args& a) { return is_float(d) ? L.b.CreateFSub(a[0], a[1]) : L.b.CreateSub(a[0], a[1]); }},
      {"mul", [](Lowering& L, DType d, const Args& a) { return is_float(d) ? L.b.CreateFMul(a[0], a[1]) : L.b.CreateMul(a[0], a[1]); }},
      {"div",
       [](Lowering& L, DType d, const Args& a) { return is_float(d) ? L.b.CreateFDiv(a[0], a[1]) : int_div(L, d, a[0], a[1], false); }},
      {"rem",
       [](Lowering& L, DType d, const Args& a) {
         return is_float(d) ? (L.target == Target::host ? L.b.CreateFRem(a[0], a[1]) : L.math_call("fmod", d, a))
                            : int_div(L, d, a[0], a[1], true);
       }},
      {"max", [](Lowering& L, DType d, const Args& a) { return max_of(L, a[0], a[1], d); }},
      {"min", [](Lowering& L, DType d, const Args& a) { return min_of(L, a[0], a[1], d); }},
      {"pow", math("pow")},
      {"atan2", math("atan2")},
      {"nextafter", math("nextafter")},
      {"and", [](Lowering& L, DType, const Args& a) { return L.b.CreateAnd(a[0], a[1]); }},
      {"or", [](Lowering& L, DType, const Args& a) { return L.b.CreateOr(a[0], a[1]); }},
      {"xor", [](Lowering& L, DType, const Args& a) { return L.b.CreateXor(a[0], a[1]); }},
      {"shift_left", [](Lowering& L, DType, const Args& a) { return shift(L, a, llvm::Instruction::Shl); }},
      {"shift_right_logical", [](Lowering& L, DType, const Args& a) { return shift(L, a, llvm::Instruction::LShr); }},
      {"shift_right_arithmetic", [](Lowering& L, DType, const Args& a) { return shift(L, a, llvm::Instruction::AShr); }},
      {"eq", [](Lowering& L, DType d, const Args& a) { return compare(L, d, a, P::FCMP_OEQ, P::ICMP_EQ, P::ICMP_EQ); }},
      {"ne", [](Lowering& L, DType d, const Args& a) { return compare(L, d, a, P::FCMP_UNE, P::ICMP_NE, P::ICMP_NE); }},
      {"lt", [](Lowering& L, DType d, const Args& a) { return compare(L, d, a, P::FCMP_OLT, P::ICMP_SLT, P::ICMP_ULT); }},
      {"le", [](Lowering& L, DType d, const Args& a) { return compare(L, d, a, P::FCMP_OLE, P::ICMP_SLE, P::ICMP_ULE); }},
      {"gt", [](Lowering& L, DType d, const Args& a) { return compare(L, d, a, P::FCMP_OGT, P::ICMP_SGT, P::ICMP_UGT); }},
      {"ge", [](Lowering& L, DType d, const Args& a) { return compare(L, d, a, P::FCMP_OGE, P::ICMP_SGE, P::ICMP_UGE); }},
  };
  return table;
}

// A transcendental (a libm / libdevice call) counts as this many ops in a
// Block's cost: a generator using one that is read twice is worth a buffer
// (Lowering::kMaxLazyCost), so softmax's exp runs once per element.
constexpr int kTranscendentalCost = Lowering::kMaxLazyCost;

// `formula` applied at every element: operands of rank 0 broadcast, a bf16 /
// f16 result is rounded to its precision.
LlvmRule nary_rule(Formula formula) {
  return [formula = std::move(formula)](Lowering& L, const Op& op) {
    std::vector<Block> xs = operand_blocks(L, op);
    DType in = xs[0].type.dtype(), out = op.results[0]->type.dtype();
    Block r = generator(op.results[0]->type, xs, [xs, formula, in, out](Lowering& L2, const std::vector<llvm::Value*>& idx) {
      Args a;
      for (const Block& x : xs) a.push_back(element_at(L2, x, idx));
      return round_float(L2, formula(L2, in, a), out);
    });
    if (op.prim->transcendental) r.cost += kTranscendentalCost;
    L.define(op.results[0], std::move(r));
  };
}

void lower_family_op(Lowering& L, const Op& op) {
  auto it = formulas().find(op.name());
  if (it == formulas().end()) throw L.error(op, "no formula for `" + op.name() + "`");
  nary_rule(it->second)(L, op);
}

// round: halves away from zero (llvm.round), or to even (llvm.rint in the
// default rounding mode), as lax.round's rounding_method says.
void lower_round(Lowering& L, const Op& op) {
  const char* fn = op.param(keys::rounding_method) == "to_nearest_even" ? "rint" : "round";
  nary_rule(math(fn))(L, op);
}

// integer_pow[y]: the interpreter's square-and-multiply, in the same order
// (bf16 / f16 round once, at the end); y < 0 is 1 / x ** -y.
void lower_integer_pow(Lowering& L, const Op& op) {
  int64_t y = op.param(keys::y);
  uint64_t e = y < 0 ? 0 - static_cast<uint64_t>(y) : static_cast<uint64_t>(y);  // |y|, also for INT64_MIN
  nary_rule([y, e](Lowering& L2, DType d, const Args& a) {
    auto& B = L2.b;
    auto mul = [&](llvm::Value* p, llvm::Value* q) { return is_float(d) ? B.CreateFMul(p, q) : B.CreateMul(p, q); };
    llvm::Value* acc = one_like(a[0]);
    llvm::Value* base = a[0];
    for (uint64_t k = e; k; k >>= 1) {
      if (k & 1) acc = mul(acc, base);
      if (k > 1) base = mul(base, base);
    }
    if (y < 0) acc = B.CreateFDiv(one_like(acc), acc);
    return acc;
  })(L, op);
}

// reduce_precision (XLA's ReducePrecision, as the interpreter computes it on
// the f32 bits for f32 and bf16, on the f64 bits for f64). Its result is
// already representable: the combinator's bf16 rounding leaves it unchanged.
void lower_reduce_precision(Lowering& L, const Op& op) {
  int64_t e = op.param(keys::exponent_bits), m = op.param(keys::mantissa_bits);
  DType d = op.results[0]->type.dtype();
  if (d == DType::f16) throw L.error(op, "reduce_precision of f16 is not supported");
  nary_rule([e, m](Lowering& L2, DType dt, const Args& a) {
    auto& B = L2.b;
    const bool dbl = dt == DType::f64;
    const int src_e = dbl ? 11 : 8, src_m = dbl ? 52 : 23, width = dbl ? 64 : 32;
    const int64_t mm = dt == DType::bf16 ? std::min<int64_t>(m, 7) : m;
    llvm::Type* ut = B.getIntNTy(static_cast<unsigned>(width));
    auto k = [&](uint64_t v) { return llvm::ConstantInt::get(ut, v); };
    llvm::Value* x = a[0];
    llvm::Value* bits = B.CreateBitCast(x, ut);
    if (mm < src_m) {
      int drop = src_m - static_cast<int>(mm);
      uint64_t last = uint64_t{1} << drop;
      llvm::Value* bias = B.CreateAdd(k((last >> 1) - 1), B.CreateLShr(B.CreateAnd(bits, k(last)), static_cast<uint64_t>(drop)));
      bits = B.CreateAnd(B.CreateAdd(bits, bias), k(~(last - 1)));
    }
    if (e < src_e) {
      uint64_t sign = uint64_t{1} << (width - 1);
      uint64_t exp_mask = ((uint64_t{1} << src_e) - 1) << src_m;
      uint64_t bias = (uint64_t{1} << (src_e - 1)) - 1, reduced_bias = (uint64_t{1} << (e - 1)) - 1;
      llvm::Value* exponent = B.CreateAnd(bits, k(exp_mask));
      llvm::Value* inf = B.CreateOr(B.CreateAnd(bits, k(sign)), k(exp_mask));
      llvm::Value* zero = B.CreateAnd(bits, k(sign));
      bits = B.CreateSelect(B.CreateICmpUGT(exponent, k((bias + reduced_bias) << src_m)), inf,
                            B.CreateSelect(B.CreateICmpULE(exponent, k((bias - reduced_bias) << src_m)), zero, bits));
    }
    llvm::Value* r = B.CreateBitCast(bits, x->getType());
    llvm::Value* nan_result = mm > 0 ? x : llvm::ConstantFP::getInfinity(x->getType());
    return B.CreateSelect(B.CreateFCmpUNO(x, x), nan_result, r);
  })(L, op);
}

// select_n p, c0, c1, ...: bool p picks c1 when true; an i32 p is clamped into
// range, so case k wins exactly when p >= k for the largest such k.
void lower_select_n(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  L.define(op.results[0], generator(op.results[0]->type, xs, [xs](Lowering& L2, const std::vector<llvm::Value*>& idx) {
             auto& B = L2.b;
             llvm::Value* p = element_at(L2, xs[0], idx);
             llvm::Value* r = element_at(L2, xs[1], idx);
             for (size_t c = 2; c < xs.size(); ++c) {
               llvm::Value* take = is_bool(xs[0].type.dtype()) ? p : B.CreateICmpSGE(p, B.getInt32(static_cast<uint32_t>(c - 1)));
               r = B.CreateSelect(take, element_at(L2, xs[c], idx), r);
             }
             return r;
           }));
}

// clamp lo, x, hi = min(max(x, lo), hi) with the NaN-propagating max / min.
void lower_clamp(Lowering& L, const Op& op) {
  nary_rule([](Lowering& L2, DType d, const Args& a) { return min_of(L2, max_of(L2, a[1], a[0], d), a[2], d); })(L, op);
}

}  // namespace

void add_elementwise_rules(LlvmTable& t) {
  t.set_family(Family::elementwise, [](const Primitive& p) { return formulas().count(p.name) > 0; }, lower_family_op);
  t.set("round", lower_round);
  t.set("integer_pow", lower_integer_pow);
  t.set("reduce_precision", lower_reduce_precision);
  t.set("select_n", lower_select_n);
  t.set("clamp", lower_clamp);
}

}  // namespace tessera::backends::llvm_lowering
