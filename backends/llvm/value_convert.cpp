// Conversions: the interpreter's bf16 / f16 rounding in IR, convert_element_type
// and bitcast_convert_type.
//
// bf16 and f16 values are computed in f32 and, after every op, rounded to
// their precision exactly as runtime/array.h does (bit manipulation on the
// f32 pattern, so NaNs keep their payload as the interpreter's do); from f64
// and integers they are rounded once from the double (round_double_to of
// runtime/array.cpp), never through f32.
#include <bit>
#include <cmath>

#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {

bool is_narrow_float(DType d) { return d == DType::bf16 || d == DType::f16; }
bool is_unsigned(DType d) { return is_unsigned_int(d) || is_bool(d); }

llvm::Value* constant(Lowering& L, DType d, double v) {
  llvm::Type* t = L.compute_type(d);
  if (t->isFloatingPointTy()) return llvm::ConstantFP::get(t, v);
  if (is_bool(d)) return L.b.getInt1(v != 0);
  return llvm::ConstantInt::get(t, static_cast<uint64_t>(static_cast<int64_t>(v)), true);
}

namespace {

llvm::Value* u32(Lowering& L, uint32_t v) { return L.b.getInt32(v); }

// round_to_bf16: (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000; a NaN keeps its
// bits with the quiet bit set.
llvm::Value* round_bf16(Lowering& L, llvm::Value* f) {
  auto& b = L.b;
  llvm::Value* u = b.CreateBitCast(f, b.getInt32Ty());
  llvm::Value* odd = b.CreateAnd(b.CreateLShr(u, 16), u32(L, 1));
  llvm::Value* r = b.CreateAnd(b.CreateAdd(b.CreateAdd(u, u32(L, 0x7FFF)), odd), u32(L, 0xFFFF0000u));
  llvm::Value* nan = b.CreateFCmpUNO(f, f);
  r = b.CreateSelect(nan, b.CreateOr(u, u32(L, 0x00400000u)), r);
  return b.CreateBitCast(r, b.getFloatTy());
}

// round_to_f16: infinities and NaNs unchanged; below 2^-14 rounded to a
// multiple of 2^-24 by (f + 0.5) - 0.5; otherwise 10 mantissa bits, to
// nearest even, with overflow (>= 65536 after rounding) to infinity.
llvm::Value* round_f16(Lowering& L, llvm::Value* f) {
  auto& b = L.b;
  llvm::Value* u = b.CreateBitCast(f, b.getInt32Ty());
  llvm::Value* sign = b.CreateAnd(u, u32(L, 0x80000000u));
  llvm::Value* a = b.CreateXor(u, sign);
  // Subnormal range.
  llvm::Value* af = b.CreateBitCast(a, b.getFloatTy());
  llvm::Value* half = llvm::ConstantFP::get(b.getFloatTy(), 0.5);
  llvm::Value* sub = b.CreateFSub(b.CreateFAdd(af, half), half);
  llvm::Value* sub_bits = b.CreateOr(b.CreateBitCast(sub, b.getInt32Ty()), sign);
  // Normal range.
  llvm::Value* odd = b.CreateAnd(b.CreateLShr(a, 13), u32(L, 1));
  llvm::Value* n = b.CreateAnd(b.CreateAdd(b.CreateAdd(a, u32(L, 0xFFF)), odd), u32(L, ~0x1FFFu));
  n = b.CreateSelect(b.CreateICmpUGE(n, u32(L, 0x47800000u)), u32(L, 0x7F800000u), n);
  llvm::Value* normal_bits = b.CreateOr(n, sign);
  llvm::Value* bits = b.CreateSelect(b.CreateICmpULT(a, u32(L, 0x38800000u)), sub_bits, normal_bits);
  llvm::Value* r = b.CreateBitCast(bits, b.getFloatTy());
  return b.CreateSelect(b.CreateICmpUGE(a, u32(L, 0x7F800000u)), f, r);
}

}  // namespace

llvm::Value* round_float(Lowering& L, llvm::Value* f, DType d) {
  if (d == DType::bf16) return round_bf16(L, f);
  if (d == DType::f16) return round_f16(L, f);
  return f;
}

// round_double_to: |x| >= 2^emin keeps `mant` mantissa bits (a carry may bump
// the exponent), smaller |x| becomes a multiple of 2^(emin - mant) by adding
// and subtracting 2^(emin - mant + 52) (whose ulp is that quantum); past the
// largest finite value: infinity. Zero, infinities and NaN pass through.
llvm::Value* round_double(Lowering& L, llvm::Value* x, DType d) {
  auto& b = L.b;
  if (d == DType::f64) return x;
  if (d == DType::f32) return b.CreateFPTrunc(x, b.getFloatTy());
  if (!is_narrow_float(d)) throw Error("round_double: " + std::string(dtype_name(d)) + " is not a float dtype");
  const int mant = d == DType::bf16 ? 7 : 10;
  const int emin = d == DType::bf16 ? -126 : -14;
  const double maxval = d == DType::bf16 ? std::ldexp(2.0 - std::ldexp(1.0, -7), 127) : 65504.0;
  llvm::Type* f64 = b.getDoubleTy();
  llvm::Type* i64t = b.getInt64Ty();
  llvm::Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  // Normal range: round the double's 52 mantissa bits to `mant`.
  const int drop = 52 - mant;
  llvm::Value* u = b.CreateBitCast(ax, i64t);
  llvm::Value* odd = b.CreateAnd(b.CreateLShr(u, drop), b.getInt64(1));
  llvm::Value* biased = b.CreateAdd(b.CreateAdd(u, b.getInt64((uint64_t{1} << (drop - 1)) - 1)), odd);
  llvm::Value* normal = b.CreateBitCast(b.CreateAnd(biased, b.getInt64(~((uint64_t{1} << drop) - 1))), f64);
  // Subnormal range.
  llvm::Value* c = llvm::ConstantFP::get(f64, std::ldexp(1.0, emin - mant + 52));
  llvm::Value* subnormal = b.CreateFSub(b.CreateFAdd(ax, c), c);
  llvm::Value* small = b.CreateFCmpOLT(ax, llvm::ConstantFP::get(f64, std::ldexp(1.0, emin)));
  llvm::Value* r = b.CreateSelect(small, subnormal, normal);
  r = b.CreateSelect(b.CreateFCmpOGT(r, llvm::ConstantFP::get(f64, maxval)), llvm::ConstantFP::getInfinity(f64), r);
  r = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
  // Infinities, NaN and zero unchanged (fabs(x) < inf is false for both non-finites).
  llvm::Value* finite_nonzero =
      b.CreateAnd(b.CreateFCmpOLT(ax, llvm::ConstantFP::getInfinity(f64)), b.CreateFCmpONE(ax, llvm::ConstantFP::get(f64, 0.0)));
  r = b.CreateSelect(finite_nonzero, r, x);
  return b.CreateFPTrunc(r, b.getFloatTy());
}

llvm::Value* convert(Lowering& L, llvm::Value* v, DType from, DType to) {
  auto& b = L.b;
  if (from == to) return v;
  llvm::Type* tt = L.compute_type(to);
  if (is_bool(to)) {
    if (is_float(from)) return b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));  // NaN -> true
    return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (is_float(to)) {
    if (is_float(from)) {
      if (to == DType::f64) return from == DType::f64 ? v : b.CreateFPExt(v, tt);
      if (from == DType::f64) return round_double(L, v, to);
      return round_float(L, v, to);  // f32 / bf16 / f16 values are all exact f32 values
    }
    if (to == DType::f32 || to == DType::f64)
      return is_unsigned(from) ? b.CreateUIToFP(v, tt) : b.CreateSIToFP(v, tt);
    // Integers to bf16 / f16: once from the double, as the interpreter does.
    llvm::Value* d = is_unsigned(from) ? b.CreateUIToFP(v, b.getDoubleTy()) : b.CreateSIToFP(v, b.getDoubleTy());
    return round_double(L, d, to);
  }
  // Integer targets.
  if (is_float(from)) {
    llvm::Intrinsic::ID id = is_unsigned(to) ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    return b.CreateIntrinsic(id, {tt, v->getType()}, {v});  // truncates, saturates, NaN -> 0
  }
  unsigned fw = v->getType()->getIntegerBitWidth(), tw = tt->getIntegerBitWidth();
  if (tw < fw) return b.CreateTrunc(v, tt);
  if (tw == fw) return v;
  return is_unsigned(from) ? b.CreateZExt(v, tt) : b.CreateSExt(v, tt);
}

namespace {

void lower_convert_element_type(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  DType from = xs[0].type.dtype(), to = op.param(keys::new_dtype);
  if (is_semaphore(from) || is_semaphore(to)) throw L.error(op, "convert_element_type: cannot convert semaphores");
  Block x = xs[0];
  L.define(op.results[0], generator(op.results[0]->type, xs, [x, from, to](Lowering& L2, const std::vector<llvm::Value*>& idx) {
             return convert(L2, x.element(L2, idx), from, to);
           }));
}

// The f16 bit pattern of an f32 holding an f16 value, in integer ops as
// runtime/float_bits.h computes it (no hardware conversion, which would
// quiet a signaling NaN): a NaN keeps the top 10 bits of its payload.
llvm::Value* f16_bits_of(Lowering& L, llvm::Value* f) {
  auto& b = L.b;
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Value* u = b.CreateBitCast(f, i32);
  llvm::Value* sign = b.CreateAnd(b.CreateLShr(u, 16), 0x8000u);
  llvm::Value* exp = b.CreateAnd(b.CreateLShr(u, 23), 0xFFu);
  llvm::Value* mant = b.CreateAnd(u, 0x7FFFFFu);
  llvm::Value* top = b.CreateLShr(mant, 13);
  llvm::Value* payload = b.CreateSelect(b.CreateICmpEQ(top, b.getInt32(0)), b.getInt32(0x200), top);
  llvm::Value* special = b.CreateOr(b.CreateOr(sign, b.getInt32(0x7C00)),
                                    b.CreateSelect(b.CreateICmpEQ(mant, b.getInt32(0)), b.getInt32(0), payload));
  llvm::Value* e = b.CreateSub(exp, b.getInt32(112));  // f32 bias 127, f16 bias 15
  llvm::Value* normal = b.CreateOr(sign, b.CreateOr(b.CreateShl(e, 10), top));
  // Subnormals (and zero): |f| * 2^24 is an exact integer.
  llvm::Value* magnitude = b.CreateCall(L.intrinsic(llvm::Intrinsic::fabs, {b.getFloatTy()}), {f});
  llvm::Value* scaled = b.CreateFMul(magnitude, llvm::ConstantFP::get(b.getFloatTy(), 16777216.0));
  llvm::Value* sub = b.CreateOr(sign, b.CreateFPToUI(scaled, i32));
  llvm::Value* r = b.CreateSelect(b.CreateICmpSLE(e, b.getInt32(0)), sub, normal);
  r = b.CreateSelect(b.CreateICmpEQ(exp, b.getInt32(0xFF)), special, r);
  return b.CreateTrunc(r, b.getInt16Ty());
}

// The f32 holding the f16 of bit pattern `h` (i16), as float_bits.h does.
llvm::Value* f16_from_bits_of(Lowering& L, llvm::Value* h) {
  auto& b = L.b;
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Value* u = b.CreateZExt(h, i32);
  llvm::Value* sign = b.CreateShl(b.CreateLShr(u, 15), 31);
  llvm::Value* exp = b.CreateAnd(b.CreateLShr(u, 10), 0x1Fu);
  llvm::Value* mant = b.CreateAnd(u, 0x3FFu);
  llvm::Value* normal = b.CreateOr(sign, b.CreateOr(b.CreateShl(b.CreateAdd(exp, b.getInt32(112)), 23), b.CreateShl(mant, 13)));
  llvm::Value* special = b.CreateOr(sign, b.CreateOr(b.getInt32(0x7F800000), b.CreateShl(mant, 13)));
  llvm::Value* tiny = b.CreateFMul(b.CreateUIToFP(mant, b.getFloatTy()), llvm::ConstantFP::get(b.getFloatTy(), 1.0 / 16777216.0));
  tiny = b.CreateOr(b.CreateBitCast(tiny, i32), sign);
  llvm::Value* r = b.CreateSelect(b.CreateICmpEQ(exp, b.getInt32(0)), tiny, normal);
  r = b.CreateSelect(b.CreateICmpEQ(exp, b.getInt32(31)), special, r);
  return b.CreateBitCast(r, b.getFloatTy());
}

// The raw bits of a compute value of dtype `d` as an integer of its storage
// width (bf16: the f32's high half, as the interpreter's bitcast reads it).
llvm::Value* bits_of(Lowering& L, llvm::Value* v, DType d) {
  auto& b = L.b;
  switch (d) {
    case DType::f32: return b.CreateBitCast(v, b.getInt32Ty());
    case DType::f64: return b.CreateBitCast(v, b.getInt64Ty());
    case DType::bf16: return b.CreateTrunc(b.CreateLShr(b.CreateBitCast(v, b.getInt32Ty()), 16), b.getInt16Ty());
    case DType::f16: return f16_bits_of(L, v);
    default: return v;
  }
}

llvm::Value* from_bits(Lowering& L, llvm::Value* bits, DType d) {
  auto& b = L.b;
  switch (d) {
    case DType::f32: return b.CreateBitCast(bits, b.getFloatTy());
    case DType::f64: return b.CreateBitCast(bits, b.getDoubleTy());
    case DType::bf16: return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, b.getInt32Ty()), 16), b.getFloatTy());
    case DType::f16: return f16_from_bits_of(L, bits);
    default: return bits;
  }
}

// bitcast_convert_type: equal widths reinterpret; a narrower target splits
// each element into a trailing dim (little-endian: piece 0 is the low bits);
// a wider one joins the trailing dim's pieces.
void lower_bitcast_convert_type(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  Block x = xs[0];
  DType from = x.type.dtype(), to = op.param(keys::new_dtype);
  for (DType d : {from, to})
    if (is_bool(d) || is_semaphore(d))
      throw L.error(op, "bitcast_convert_type of " + std::string(dtype_name(d)) + " is not supported");
  const int fb = dtype_bytes(from) * 8, tb = dtype_bytes(to) * 8;
  L.define(op.results[0],
           generator(op.results[0]->type, xs, [x, from, to, fb, tb](Lowering& L2, const std::vector<llvm::Value*>& idx) {
             auto& b = L2.b;
             llvm::Type* tint = b.getIntNTy(static_cast<unsigned>(tb));
             if (fb == tb) return from_bits(L2, bits_of(L2, x.element(L2, idx), from), to);
             if (fb > tb) {  // idx = (outer..., piece)
               std::vector<llvm::Value*> in(idx.begin(), idx.end() - 1);
               llvm::Value* whole = bits_of(L2, x.element(L2, in), from);
               llvm::Value* shift = b.CreateMul(b.CreateZExtOrTrunc(idx.back(), whole->getType()),
                                                llvm::ConstantInt::get(whole->getType(), static_cast<uint64_t>(tb)));
               return from_bits(L2, b.CreateTrunc(b.CreateLShr(whole, shift), tint), to);
             }
             llvm::Value* acc = llvm::ConstantInt::get(tint, 0);
             for (int k = 0; k < tb / fb; ++k) {
               std::vector<llvm::Value*> in = idx;
               in.push_back(L2.i64(k));
               llvm::Value* piece = b.CreateZExt(bits_of(L2, x.element(L2, in), from), tint);
               acc = b.CreateOr(acc, b.CreateShl(piece, static_cast<uint64_t>(k) * static_cast<uint64_t>(fb)));
             }
             return from_bits(L2, acc, to);
           }));
}

}  // namespace

void add_convert_rules(LlvmTable& t) {
  t.set("convert_element_type", lower_convert_element_type);
  t.set("bitcast_convert_type", lower_bitcast_convert_type);
}

}  // namespace tessera::backends::llvm_lowering
