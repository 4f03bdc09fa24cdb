// The value rules of the LLVM backend (backends/llvm/value_*.cpp, math.cpp),
// family by family. Each case is a function of value ops; its body is lowered
// by the backend's Lowering as a kernel body whose inputs and outputs are whole
// arrays in the kernel ABI's storage (bf16 as its 16 bits, f16 as half, bool as
// i8), compiled for the host with a minimal ORC LLJIT of this test, run, and
// compared with the interpreter on the same random inputs (special values
// included: NaN, +-inf, +-0, halves, subnormals, the integers' extremes,
// divisors 0 and -1, shift amounts past the width).
//
// Comparison: bit for bit (any NaN equals any NaN). The host reproduces the
// interpreter exactly: the JIT calls the same libm functions, float sums and
// dot products follow the interpreter's order, bf16 / f16 round as it does.
// Some cases also run the O3 pipeline first (most of the compile time).
// The NVPTX case only assembles: this machine has no GPU.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include <unistd.h>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/Support/TargetSelect.h>

#include "backends/llvm/codegen.h"
#include "backends/llvm/kernel_lowering.h"
#include "interpreter/interpreter.h"
#include "ir/parser.h"
#include "runtime/float_bits.h"

using namespace tessera;
namespace ll = tessera::backends::llvm_lowering;
using interp::Array;

namespace {

// ---- building the test program ----------------------------------------------

struct Case {
  std::vector<Type> ins;           // the kernel's inputs %a0, %a1, ... (loaded whole)
  std::vector<std::string> lines;  // the body; it defines %r0, %r1, ...
  std::vector<Type> outs;          // the types of %r0, %r1, ...
};

// `main` applies the case's lines to its parameters and returns the results.
std::string program(const Case& c) {
  std::ostringstream p;
  p << "func @main(";
  for (size_t i = 0; i < c.ins.size(); ++i) p << (i ? ", " : "") << "%a" << i << ": " << c.ins[i].str();
  p << ") -> (";
  for (size_t i = 0; i < c.outs.size(); ++i) p << (i ? ", " : "") << c.outs[i].str();
  p << ") {\n";
  for (const std::string& l : c.lines) p << "  " << l << "\n";
  p << "  return ";
  for (size_t i = 0; i < c.outs.size(); ++i) p << (i ? ", " : "") << "%r" << i;
  p << "\n}\n";
  return p.str();
}

// ---- inputs -------------------------------------------------------------------

// Random elements with the special values every rule must get right.
Array random_array(DType d, const Shape& s, std::mt19937_64& rng) {
  Array a = Array::uninitialized(d, s);
  std::uniform_real_distribution<double> real(-4, 4);
  std::uniform_int_distribution<int> pick(0, 9);
  static const double special_f[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0.5, 2.5, -3.5, 1e30, 1e-40, 65520.0, 1e-6};
  static const int64_t special_i[] = {0, 1, -1, 2, 7, 8, 31, 32, 33, 64, INT64_MIN, INT64_MAX, -128, 127, 255, INT32_MIN, INT32_MAX};
  for (int64_t i = 0; i < a.size(); ++i) {
    bool special = pick(rng) < 3;
    if (is_float(d)) {
      double v = special ? special_f[rng() % std::size(special_f)] : real(rng);
      a.set(i, v);
    } else {
      int64_t v;
      if (is_bool(d)) v = static_cast<int64_t>(rng() & 1);
      else if (special) v = special_i[rng() % std::size(special_i)];
      else if (pick(rng) < 5) v = static_cast<int64_t>(rng() % 21) - 10;
      else v = static_cast<int64_t>(rng());
      interp::visit(a, [&](auto* p) { p[i] = static_cast<std::remove_pointer_t<decltype(p)>>(v); });
    }
  }
  return a;
}

// ---- the kernel ABI's storage (bf16 / f16 as 2 bytes) -------------------------

std::vector<std::byte> to_storage(const Array& a) {
  if (a.dtype() != DType::bf16 && a.dtype() != DType::f16) {
    std::vector<std::byte> out(a.storage_bytes());
    if (!out.empty()) std::memcpy(out.data(), a.raw(), out.size());
    return out;
  }
  std::vector<std::byte> out(static_cast<size_t>(a.size()) * 2);
  for (int64_t i = 0; i < a.size(); ++i) {
    float f = a.data<float>()[i];
    uint16_t h = a.dtype() == DType::bf16 ? interp::bf16_bits(f) : interp::f16_bits(f);
    std::memcpy(&out[static_cast<size_t>(i) * 2], &h, 2);
  }
  return out;
}

Array from_storage(DType d, const Shape& s, const std::vector<std::byte>& bytes) {
  Array a = Array::uninitialized(d, s);
  if (d != DType::bf16 && d != DType::f16) {
    if (a.storage_bytes()) std::memcpy(a.raw(), bytes.data(), a.storage_bytes());
    return a;
  }
  for (int64_t i = 0; i < a.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, &bytes[static_cast<size_t>(i) * 2], 2);
    a.data<float>()[i] = d == DType::bf16 ? interp::bf16_from_bits(h) : interp::f16_from_bits(h);
  }
  return a;
}

// ---- lowering and a minimal JIT ----------------------------------------------

// `main`'s body lowered as the body of a kernel whose inputs and outputs are
// whole arrays in the kernel ABI's storage:
//   void test_entry(ptr slots)   slots: the inputs, the outputs, the arena
// Inputs are lazy Blocks reading their pointer; every output is stored by one
// element loop. The value rules are the only rules this exercises.
struct Compiled {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  void (*entry)(void*) = nullptr;
  int64_t arena_bytes = 0;
};

// NVPTX: the PTX text of the same function (a `.entry`), with libdevice
// linked, in *ir; nothing runs.
// `o3`: run codegen.cpp's O3 pipeline first (what the backend does; it is most
// of the compile time, so only some cases ask for it).
Compiled compile(const Module& m, bool o3, ll::Target target = ll::Target::host, std::string* ir = nullptr) {
  static bool once = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)once;
  auto ctx = std::make_unique<llvm::LLVMContext>();
  auto mod = std::make_unique<llvm::Module>("test", *ctx);
  auto tm = ll::target_machine(target);
  ll::configure_module(*mod, *tm);
  auto* ptr = llvm::PointerType::get(*ctx, 0);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(*ctx), {ptr}, false),
                                    llvm::Function::ExternalLinkage, "test_entry", *mod);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(*ctx, "entry", fn));
  if (target == ll::Target::nvptx) fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
  ll::Lowering L(b, fn, target, ll::llvm_table(), 256);
  const Body& body = *m.entry("main");
  size_t nin = body.params().size(), nout = body.outputs().size();
  auto slot = [&](size_t i) { return b.CreateLoad(ptr, b.CreateGEP(ptr, fn->getArg(0), b.getInt64(i))); };
  L.arena_base = slot(nin + nout);
  L.thread_id = target == ll::Target::nvptx
                    ? b.CreateZExt(b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {}), b.getInt64Ty())
                    : L.i64(0);
  for (size_t i = 0; i < nin; ++i) {
    const Var* p = body.params()[i];
    llvm::Value* base = slot(i);
    ll::Block in;
    in.type = p->type;
    in.cost = 1;
    DType d = p->type.dtype();
    Shape s = p->type.shape();
    in.element = [base, d, s](ll::Lowering& L2, const std::vector<llvm::Value*>& idx) {
      llvm::Type* st = L2.storage_type(d);
      return L2.to_compute(L2.b.CreateLoad(st, L2.b.CreateGEP(st, base, L2.linear_index(s, idx))), d);
    };
    L.define(p, std::move(in));
  }
  L.lower_ops(body);
  for (size_t o = 0; o < nout; ++o) {
    ll::Block v = L.value(body.outputs()[o]);
    llvm::Value* base = slot(nin + o);
    DType d = v.type.dtype();
    Shape s = v.type.shape();
    auto store = [&](const std::vector<llvm::Value*>& idx) {
      llvm::Type* st = L.storage_type(d);
      llvm::Value* x = v.element(L, v.type.rank() == 0 ? std::vector<llvm::Value*>{} : idx);
      b.CreateStore(L.to_storage(x, d), b.CreateGEP(st, base, L.linear_index(s, idx)));
    };
    if (s.empty()) store({});
    else L.for_each_element(s, store);
  }
  b.CreateRetVoid();
  Compiled c;
  c.arena_bytes = L.arena_bytes();
  if (target == ll::Target::nvptx) {  // PTX text only: this machine has no GPU
    ll::link_libdevice(*mod);
    ll::optimize(*mod, *tm);
    if (ir) *ir = ll::emit_ptx(*mod, *tm);
    return c;
  }
  if (o3) ll::optimize(*mod, *tm);
  if (ir) *ir = ll::print_ir(*mod);
  c.jit = llvm::cantFail(llvm::orc::LLJITBuilder().create());
  c.jit->getMainJITDylib().addGenerator(llvm::cantFail(
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(c.jit->getDataLayout().getGlobalPrefix())));
  llvm::cantFail(c.jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx))));
  c.entry = llvm::cantFail(c.jit->lookup("test_entry")).toPtr<void (*)(void*)>();
  return c;
}

std::vector<Array> run_compiled(const Compiled& c, const std::vector<Array>& inputs, const std::vector<Type>& outs) {
  std::vector<std::vector<std::byte>> bufs;
  for (const Array& a : inputs) bufs.push_back(to_storage(a));
  for (const Type& t : outs) bufs.emplace_back(static_cast<size_t>(t.array_type().size()) * 8 + 8);
  std::vector<std::byte> arena(static_cast<size_t>(c.arena_bytes) + 64);
  std::vector<void*> slots;
  for (auto& b : bufs) slots.push_back(b.data());
  slots.push_back(arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64) % 64);
  c.entry(slots.data());
  std::vector<Array> out;
  for (size_t i = 0; i < outs.size(); ++i) out.push_back(from_storage(outs[i].dtype(), outs[i].shape(), bufs[inputs.size() + i]));
  return out;
}

// ---- comparison ---------------------------------------------------------------

// Equal bit patterns of the stored values; any NaN equals any NaN.
bool same(const Array& a, const Array& b, int64_t i) {
  if (is_float(a.dtype())) {
    double x = a.get(i), y = b.get(i);
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
    return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y);
  }
  return a.get_int(i) == b.get_int(i);
}

int64_t g_compared = 0;  // elements compared over the whole test run

enum class Opt { none, o3 };

// With TESSERA_VALUES_GPU_DUMP=DIR, every case also leaves its NVPTX form for
// a GPU (tests/backends/llvm/values_gpu_check.py runs them there): caseN.ptx
// (entry test_entry(slots), one CTA of 256 threads), caseN.meta (the arena
// size, then one line per input / output: dtype, shape, file, the op) and the
// inputs and the interpreter's outputs in the kernel ABI's storage.
void dump_for_gpu(const std::string& dir, const Module& m, const Case& c, const std::vector<Array>& inputs,
                  const std::vector<Array>& want) {
  static int n = 0;
  if (n == 0) std::filesystem::create_directories(dir);
  std::string stem = dir + "/case" + std::to_string(n++);
  std::string ptx;
  Compiled nv = compile(m, true, ll::Target::nvptx, &ptx);
  std::ofstream(stem + ".ptx") << ptx;
  std::ofstream meta(stem + ".meta");
  meta << "arena " << nv.arena_bytes << "\n";
  auto write = [&](const char* kind, size_t i, const Array& a, const std::string& what) {
    std::string file = stem + "." + kind + std::to_string(i);
    std::vector<std::byte> bytes = to_storage(a);
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    meta << kind << " " << dtype_name(a.dtype()) << " " << a.size() << " " << file.substr(dir.size() + 1) << " " << what << "\n";
  };
  for (size_t i = 0; i < inputs.size(); ++i) write("in", i, inputs[i], "%a" + std::to_string(i));
  for (size_t i = 0; i < want.size(); ++i) write("out", i, want[i], i < c.lines.size() ? c.lines[i] : "");
}

// Runs `c` in the interpreter and compiled on the same random inputs and
// checks every output element bit for bit.
void check(const Case& c, uint64_t seed = 1, Opt opt = Opt::none) {
  std::string text = program(c);
  INFO(text);
  Module m = parse_module(text, "test.tsr");
  std::mt19937_64 rng(seed);
  std::vector<Array> inputs;
  for (const Type& t : c.ins) inputs.push_back(random_array(t.dtype(), t.shape(), rng));
  std::vector<Array> want = interp::run_function(m, "main", inputs);
  if (const char* dir = std::getenv("TESSERA_VALUES_GPU_DUMP")) dump_for_gpu(dir, m, c, inputs, want);
  Compiled compiled = compile(m, opt == Opt::o3);
  std::vector<Array> got = run_compiled(compiled, inputs, c.outs);
  REQUIRE(want.size() == got.size());
  for (size_t o = 0; o < want.size(); ++o) {
    int bad = 0;
    for (int64_t i = 0; i < want[o].size(); ++i) {
      ++g_compared;
      if (same(want[o], got[o], i)) continue;
      if (++bad > 3) continue;
      std::ostringstream msg;
      msg << "output %r" << o << " (" << c.outs[o].str() << ") element " << i << ": interpreter " << want[o].get(i)
          << ", compiled " << got[o].get(i);
      if (!c.ins.empty() && inputs[0].size() == want[o].size()) msg << " (input %a0 " << inputs[0].get(i) << ")";
      FAIL_CHECK(msg.str());
    }
  }
}

const DType kFloats[] = {DType::f32, DType::f64, DType::bf16, DType::f16};
const DType kAll[] = {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i8, DType::i16,
                      DType::i32, DType::i64, DType::u8,  DType::u32, DType::i1};

std::string dn(DType d) { return std::string(dtype_name(d)); }

// A literal of dtype `d`.
std::string literal(DType d) {
  if (is_bool(d)) return "true";
  return (is_float(d) ? "1.5:" : "3:") + dn(d);
}

Type arr(DType d, Shape s) { return Type::array(d, std::move(s)); }

// A case applying each of `ops` (format strings with {a}, {b}: the operands)
// to the inputs, one output each.
Case per_op(const std::vector<Type>& ins, const std::vector<std::pair<std::string, Type>>& ops) {
  Case c;
  c.ins = ins;
  for (size_t i = 0; i < ops.size(); ++i) {
    c.lines.push_back("%r" + std::to_string(i) + " = " + ops[i].first);
    c.outs.push_back(ops[i].second);
  }
  return c;
}

const Shape kShape = {5, 37};  // odd sizes: vector loops with remainders

}  // namespace

TEST_CASE("llvm values: unary float math, every float dtype") {
  for (DType d : kFloats) {
    CAPTURE(dn(d));
    Type t = arr(d, kShape), b = arr(DType::i1, kShape);
    std::vector<std::pair<std::string, Type>> ops;
    for (const char* n : {"exp", "log", "sqrt", "rsqrt", "tanh", "logistic", "sin", "cos", "tan", "floor", "ceil", "round",
                          "exp2", "log1p", "expm1", "erf", "cbrt", "erf_inv", "reciprocal", "neg", "abs", "square", "sign"})
      ops.push_back({std::string(n) + " %a0", t});
    ops.push_back({"round[rounding_method=to_nearest_even] %a0", t});
    ops.push_back({"reciprocal[approx=true] %a0", t});
    ops.push_back({"is_finite %a0", b});
    ops.push_back({"integer_pow[y=3] %a0", t});
    ops.push_back({"integer_pow[y=-2] %a0", t});
    ops.push_back({"integer_pow[y=0] %a0", t});
    if (d != DType::f16) {
      ops.push_back({"reduce_precision[exponent_bits=5, mantissa_bits=2] %a0", t});
      ops.push_back({"reduce_precision[exponent_bits=8, mantissa_bits=0] %a0", t});
    }
    check(per_op({t}, ops), 1, d == DType::f32 || d == DType::bf16 ? Opt::o3 : Opt::none);
  }
}

TEST_CASE("llvm values: binary arithmetic and comparisons, every dtype") {
  for (DType d : kAll) {
    CAPTURE(dn(d));
    Type t = arr(d, kShape), b = arr(DType::i1, kShape);
    std::vector<std::pair<std::string, Type>> ops;
    if (!is_bool(d))
      for (const char* n : {"add", "sub", "mul", "div", "rem", "max", "min"}) ops.push_back({std::string(n) + " %a0, %a1", t});
    for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge"}) ops.push_back({std::string(n) + " %a0, %a1", b});
    if (is_float(d)) {
      ops.push_back({"pow %a0, %a1", t});
      ops.push_back({"atan2 %a0, %a1", t});
      if (d == DType::f32 || d == DType::f64) ops.push_back({"nextafter %a0, %a1", t});
    } else {
      for (const char* n : {"and", "or", "xor"}) ops.push_back({std::string(n) + " %a0, %a1", t});
      ops.push_back({"not %a0", t});
    }
    if (is_int(d)) {
      for (const char* n : {"shift_left", "shift_right_logical", "shift_right_arithmetic"})
        ops.push_back({std::string(n) + " %a0, %a1", t});
      ops.push_back({"population_count %a0", t});
      ops.push_back({"clz %a0", t});
      ops.push_back({"neg %a0", t});
      ops.push_back({"abs %a0", t});
      ops.push_back({"sign %a0", t});
      ops.push_back({"square %a0", t});
      ops.push_back({"integer_pow[y=5] %a0", t});
    }
    bool o3 = d == DType::f32 || d == DType::i8 || d == DType::u32 || d == DType::i64;
    check(per_op({t, t}, ops), 7, o3 ? Opt::o3 : Opt::none);
  }
}

TEST_CASE("llvm values: rank-0 operands broadcast, select_n, clamp") {
  Type f = arr(DType::f32, kShape), i = arr(DType::i32, kShape), b = arr(DType::i1, kShape);
  check(per_op({f, f, b, i}, {{"add %a0, 2.0:f32", f},
                              {"sub 1.5:f32, %a1", f},
                              {"select_n %a2, %a0, %a1", f},
                              {"select_n %a3, %a0, %a1, 3.0:f32", f},
                              {"clamp -1.0:f32, %a0, 1.0:f32", f},
                              {"clamp %a1, %a0, 2.0:f32", f},
                              {"max %a0, 0.0:f32", f},
                              {"clamp -5:i32, %a3, 5:i32", i},
                              {"select_n true, %a0, %a1", f}}),
        3);
  Type h = arr(DType::bf16, kShape);
  check(per_op({h, h, b}, {{"select_n %a2, %a0, %a1", h}, {"clamp %a1, %a0, 1.0:bf16", h}, {"mul %a0, 3.0:bf16", h}}), 4, Opt::o3);
}

TEST_CASE("llvm values: convert_element_type between every pair of dtypes") {
  for (DType from : kAll) {
    CAPTURE(dn(from));
    std::vector<std::pair<std::string, Type>> ops;
    for (DType to : kAll) ops.push_back({"convert_element_type[new_dtype=" + dn(to) + "] %a0", arr(to, kShape)});
    check(per_op({arr(from, kShape)}, ops), 11);
  }
}

TEST_CASE("llvm values: bitcast_convert_type") {
  check(per_op({arr(DType::f32, {3, 5})}, {{"bitcast_convert_type[new_dtype=i32] %a0", arr(DType::i32, {3, 5})},
                                           {"bitcast_convert_type[new_dtype=u32] %a0", arr(DType::u32, {3, 5})},
                                           {"bitcast_convert_type[new_dtype=u8] %a0", arr(DType::u8, {3, 5, 4})},
                                           {"bitcast_convert_type[new_dtype=i16] %a0", arr(DType::i16, {3, 5, 2})}}));
  check(per_op({arr(DType::i32, {3, 5}), arr(DType::u8, {3, 4}), arr(DType::bf16, {3, 2}), arr(DType::i16, {3, 4})},
               {{"bitcast_convert_type[new_dtype=f32] %a0", arr(DType::f32, {3, 5})},
                {"bitcast_convert_type[new_dtype=f32] %a1", arr(DType::f32, {3})},
                {"bitcast_convert_type[new_dtype=i16] %a2", arr(DType::i16, {3, 2})},
                {"bitcast_convert_type[new_dtype=bf16] %a3", arr(DType::bf16, {3, 4})},
                {"bitcast_convert_type[new_dtype=f32] %a2", arr(DType::f32, {3})},
                {"bitcast_convert_type[new_dtype=u8] %a2", arr(DType::u8, {3, 2, 2})}}),
        2);
  // f16 both ways: random 16-bit patterns (NaN payloads, subnormals among them) from i16, and back.
  check(per_op({arr(DType::i16, {256, 256}), arr(DType::f16, {4, 8})},
               {{"bitcast_convert_type[new_dtype=f16] %a0", arr(DType::f16, {256, 256})},
                {"bitcast_convert_type[new_dtype=i16] %a1", arr(DType::i16, {4, 8})},
                {"bitcast_convert_type[new_dtype=u8] %a1", arr(DType::u8, {4, 8, 2})}}),
        4);
  check(per_op({arr(DType::f64, {4}), arr(DType::i32, {4, 2})}, {{"bitcast_convert_type[new_dtype=i32] %a0", arr(DType::i32, {4, 2})},
                                                                 {"bitcast_convert_type[new_dtype=f64] %a1", arr(DType::f64, {4})},
                                                                 {"bitcast_convert_type[new_dtype=i64] %a0", arr(DType::i64, {4})}}),
        3);
}

TEST_CASE("llvm values: shape ops") {
  for (DType d : {DType::f32, DType::bf16, DType::i8, DType::i1}) {
    CAPTURE(dn(d));
    Type x = arr(d, {4, 6}), v = arr(d, {6}), s = arr(DType::i32, {3});
    Case c = per_op({x, v, s},
                 {{"broadcast_in_dim[shape=(3, 4, 6), broadcast_dimensions=(1, 2)] %a0", arr(d, {3, 4, 6})},
                  {"broadcast_in_dim[shape=(4, 6), broadcast_dimensions=(1)] %a1", arr(d, {4, 6})},
                  {"reshape[new_sizes=(3, 8)] %a0", arr(d, {3, 8})},
                  {"reshape[new_sizes=(1, 4, 1, 6)] %a0", arr(d, {1, 4, 1, 6})},
                  {"transpose[permutation=(1, 0)] %a0", arr(d, {6, 4})},
                  {"expand_dims[dimensions=(0, 2)] %a0", arr(d, {1, 4, 1, 6})},
                  {"concatenate[dimension=0] %a0, %a0", arr(d, {8, 6})},
                  {"slice[start_indices=(1, 0), limit_indices=(4, 6), strides=(2, 3)] %a0", arr(d, {2, 2})},
                  {"dynamic_slice[slice_sizes=(2, 4)] %a0, 3, -1", arr(d, {2, 4})},
                  {"pad[low=(1, -2), high=(2, 1)] %a0, " + literal(d), arr(d, {7, 5})},
                  {"rev[dimensions=(0, 1)] %a0", arr(d, {4, 6})},
                  {"roll[shift=-7, axis=1] %a0", arr(d, {4, 6})},
                  {"roll[axis=0] %a0, 5", arr(d, {4, 6})},
                  {"repeat[repeats=3, axis=1] %a0", arr(d, {4, 18})},
                  {"repeat[repeats=2, axis=0] %a0", arr(d, {8, 6})},
                  {"gather[axis=1] %a0, %a2", arr(d, {4, 3})}});
    size_t n = c.outs.size();
    c.lines.push_back("%r" + std::to_string(n) + ", %r" + std::to_string(n + 1) + " = split[sizes=(2, 4), axis=1] %a0");
    c.outs.push_back(arr(d, {4, 2}));
    c.outs.push_back(arr(d, {4, 4}));
    check(c, 5);
  }
}

TEST_CASE("llvm values: iota in every numeric dtype") {
  std::vector<std::pair<std::string, Type>> ops;
  for (DType d : kAll)
    if (!is_bool(d)) ops.push_back({"iota[dtype=" + dn(d) + ", shape=(3, 300), dimension=1] ", arr(d, {3, 300})});
  check(per_op({}, ops));
}

TEST_CASE("llvm values: reductions, every axis set, in the interpreter's order") {
  for (DType d : {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::u8, DType::i64}) {
    CAPTURE(dn(d));
    Type x = arr(d, {3, 1, 4, 37});
    std::vector<std::pair<std::string, Type>> ops;
    for (const char* n : {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod"}) {
      ops.push_back({std::string(n) + "[axes=(3)] %a0", arr(d, {3, 1, 4})});
      ops.push_back({std::string(n) + "[axes=(0, 2)] %a0", arr(d, {1, 37})});
      ops.push_back({std::string(n) + "[axes=(1, 2, 3)] %a0", arr(d, {3})});
      ops.push_back({std::string(n) + "[axes=(0, 1, 2, 3)] %a0", arr(d, {})});
    }
    for (const char* n : {"argmax", "argmin"}) {
      ops.push_back({std::string(n) + "[axis=3] %a0", arr(DType::i32, {3, 1, 4})});
      ops.push_back({std::string(n) + "[axis=0, index_dtype=u8] %a0", arr(DType::u8, {1, 4, 37})});
    }
    ops.push_back({"cumsum[axis=3] %a0", x});
    ops.push_back({"cumsum[axis=0, reverse=true] %a0", x});
    check(per_op({x}, ops), 13, d == DType::f32 ? Opt::o3 : Opt::none);
  }
  for (DType d : {DType::i1, DType::i8, DType::u32}) {
    Type x = arr(d, {3, 40});
    check(per_op({x}, {{"reduce_and[axes=(1)] %a0", arr(d, {3})},
                       {"reduce_or[axes=(0)] %a0", arr(d, {40})},
                       {"reduce_and[axes=(0, 1)] %a0", arr(d, {})}}),
          17);
  }
}

TEST_CASE("llvm values: sort, stable, several keys, descending") {
  for (DType d : {DType::f32, DType::bf16, DType::i8, DType::u32, DType::i1}) {
    CAPTURE(dn(d));
    Type x = arr(d, {4, 33}), y = arr(DType::i32, {4, 33});
    Case c;
    c.ins = {x, y};
    c.lines = {"%r0, %r1 = sort[dimension=1] %a0, %a1", "%r2, %r3 = sort[dimension=0, num_keys=2, descending=true] %a0, %a1",
               "%r4 = sort[dimension=1, descending=true] %a0"};
    c.outs = {x, y, x, y, x};
    check(c, 31);
  }
}

TEST_CASE("llvm values: sums longer than 8 and than 256 (partial results, chunks)") {
  Type x = arr(DType::f32, {2, 1000});
  check(per_op({x}, {{"reduce_sum[axes=(1)] %a0", arr(DType::f32, {2})}, {"cumsum[axis=1] %a0", x}}), 19, Opt::o3);
}

TEST_CASE("llvm values: dot_general, batch dims, accumulators") {
  // f32 with K > 256 (the interpreter's chunks), transposed operands, batch dims.
  check(per_op({arr(DType::f32, {6, 300}), arr(DType::f32, {300, 10})},
               {{"dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a0, %a1", arr(DType::f32, {6, 10})}}),
        23, Opt::o3);
  for (DType d : {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i8, DType::i32, DType::u8}) {
    CAPTURE(dn(d));
    Type q = arr(d, {2, 5, 7}), k = arr(d, {2, 9, 7});
    std::vector<std::pair<std::string, Type>> ops = {
        {"dot_general[lhs_contracting=(2), rhs_contracting=(2), lhs_batch=(0), rhs_batch=(0)] %a0, %a1", arr(d, {2, 5, 9})},
        {"dot_general[lhs_contracting=(1), rhs_contracting=(1), lhs_batch=(0), rhs_batch=(0)] %a0, %a0", arr(d, {2, 7, 7})},
        {"dot_general[lhs_contracting=(0, 2), rhs_contracting=(0, 2)] %a0, %a1", arr(d, {5, 9})},
        {"dot_general[lhs_contracting=(2), rhs_contracting=(2), preferred_element_type=f32] %a0, %a1", arr(DType::f32, {2, 5, 2, 9})},
    };
    if (!is_float(d))
      ops.push_back({"dot_general[lhs_contracting=(2), rhs_contracting=(2), lhs_batch=(0), rhs_batch=(0), preferred_element_type=i32] %a0, %a1",
                     arr(DType::i32, {2, 5, 9})});
    check(per_op({q, k}, ops), 29, d == DType::bf16 ? Opt::o3 : Opt::none);
  }
}

// The NVPTX side of the same rules: libdevice math (f32 `__nv_*f` and f64),
// the per-thread dot_general, reductions, sort. ptxas (when installed) must
// accept the PTX for sm_80 and sm_90.
TEST_CASE("llvm values: the rules lower for NVPTX and ptxas accepts them") {
  Type f = arr(DType::f32, {8, 40}), g = arr(DType::f64, {8, 40}), h = arr(DType::bf16, {8, 40}), i = arr(DType::i32, {8, 40});
  std::vector<std::pair<std::string, Type>> ops;
  for (const char* n : {"exp", "log", "tanh", "logistic", "sin", "cos", "tan", "exp2", "log1p", "expm1", "erf", "cbrt", "erf_inv",
                        "sqrt", "rsqrt", "floor", "round"})
    ops.push_back({std::string(n) + " %a0", f});
  ops.push_back({"pow %a0, %a0", f});
  ops.push_back({"atan2 %a0, %a0", f});
  ops.push_back({"rem %a0, %a0", f});
  ops.push_back({"nextafter %a0, %a0", f});
  for (const char* n : {"exp", "log", "tanh", "erf_inv"}) ops.push_back({std::string(n) + " %a1", g});
  ops.push_back({"rem %a1, %a1", g});
  ops.push_back({"exp %a2", h});
  ops.push_back({"div %a3, %a3", i});
  ops.push_back({"shift_right_arithmetic %a3, %a3", i});
  ops.push_back({"reduce_sum[axes=(1)] %a0", arr(DType::f32, {8})});
  ops.push_back({"argmax[axis=0] %a2", arr(DType::i32, {40})});
  ops.push_back({"cumsum[axis=1] %a3", i});
  ops.push_back({"dot_general[lhs_contracting=(1), rhs_contracting=(1)] %a0, %a0", arr(DType::f32, {8, 8})});
  ops.push_back({"convert_element_type[new_dtype=bf16] %a1", h});
  ops.push_back({"convert_element_type[new_dtype=u32] %a0", arr(DType::u32, {8, 40})});
  ops.push_back({"convert_element_type[new_dtype=f16] %a3", arr(DType::f16, {8, 40})});
  ops.push_back({"round[rounding_method=to_nearest_even] %a0", f});
  ops.push_back({"is_finite %a0", arr(DType::i1, {8, 40})});
  ops.push_back({"reduce_precision[exponent_bits=5, mantissa_bits=2] %a0", f});
  ops.push_back({"max %a2, %a2", h});
  for (const char* n : {"population_count", "clz", "abs", "sign"}) ops.push_back({std::string(n) + " %a3", i});
  ops.push_back({"bitcast_convert_type[new_dtype=u8] %a0", arr(DType::u8, {8, 40, 4})});
  ops.push_back({"transpose[permutation=(1, 0)] %a2", arr(DType::bf16, {40, 8})});
  ops.push_back({"reduce_max[axes=(0, 1)] %a2", arr(DType::bf16, {})});
  Case c = per_op({f, g, h, i}, ops);
  c.lines.push_back("%r" + std::to_string(c.outs.size()) + " = sort[dimension=1] %a0");
  c.outs.push_back(f);
  Module m = parse_module(program(c), "nvptx.tsr");
  std::string ptx;
  compile(m, true, ll::Target::nvptx, &ptx);
  CHECK(ptx.find(".entry test_entry") != std::string::npos);
  if (std::getenv("TESSERA_PRINT_PTX")) MESSAGE(ptx);
  CHECK(ptx.find("__nv_") == std::string::npos);  // libdevice linked and inlined
  CHECK(ptx.find(".func") == std::string::npos);
  CHECK(ptx.find("bar.sync") != std::string::npos);
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (std::FILE* probe = std::fopen(ptxas, "r")) {
    std::fclose(probe);
    std::string path = "/tmp/tessera_test_llvm_values_" + std::to_string(getpid()) + ".ptx";
    {
      std::ofstream out(path);
      out << ptx;
    }
    for (const char* sm : {"sm_80", "sm_90"}) {
      CAPTURE(sm);
      std::string cmd = std::string(ptxas) + " -arch=" + sm + " " + path + " -o /dev/null";
      CHECK(std::system(cmd.c_str()) == 0);
    }
    std::remove(path.c_str());
  } else {
    MESSAGE("ptxas not installed: PTX not assembled");
  }
}

// Every value primitive (the elementwise, reduction and structural families)
// has a rule in both tables; only those outside them are left to the other
// LLVM rule groups or stated as unsupported.
TEST_CASE("llvm values: every value primitive has a rule") {
  for (const ll::LlvmTable* t : {&ll::llvm_table(), &ll::ptx_table()})
    for (Family f : {Family::elementwise, Family::reduction, Family::structural})
      for (const Primitive* p : registry().of(f)) {
        CAPTURE(p->name);
        CHECK(t->find(*p) != nullptr);
      }
}

TEST_CASE("llvm values: what they compared") {
  MESSAGE("elements compared with the interpreter: " << g_compared);
}

