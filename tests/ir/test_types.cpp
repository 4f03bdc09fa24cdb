// dtypes, types, literals and values.
#include <cmath>

#include "ir/type.h"
#include "ir/value.h"
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

TEST_CASE("dtypes: names round-trip and sizes") {
  const DType all[] = {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i1, DType::i8, DType::i16,
                       DType::i32, DType::i64, DType::u8, DType::u32, DType::sem, DType::dma_sem, DType::barrier_sem};
  for (DType d : all) {
    auto back = parse_dtype(dtype_name(d));
    REQUIRE(back.has_value());
    CHECK(*back == d);
  }
  CHECK(dtype_name(DType::i1) == "bool");
  CHECK(parse_dtype("i1") == DType::i1);  // accepted as a synonym
  CHECK(!parse_dtype("f8").has_value());
  CHECK(!parse_dtype("").has_value());
  CHECK(dtype_bytes(DType::f32) == 4);
  CHECK(dtype_bytes(DType::bf16) == 2);
  CHECK(dtype_bytes(DType::f64) == 8);
  CHECK(dtype_bytes(DType::i1) == 1);
  CHECK(dtype_bytes(DType::dma_sem) == 4);
  CHECK(int_bits(DType::i16) == 16);
  CHECK(int_bits(DType::i1) == 1);
}

TEST_CASE("dtypes: classification is a partition of the data dtypes") {
  CHECK(is_float(DType::bf16));
  CHECK(!is_float(DType::i32));
  CHECK(is_int(DType::u8));
  CHECK(is_unsigned_int(DType::u32));
  CHECK(!is_signed_int(DType::u32));
  CHECK(is_signed_int(DType::i64));
  CHECK(!is_int(DType::i1));  // bool is not an integer
  CHECK(is_bool(DType::i1));
  CHECK(is_semaphore(DType::barrier_sem));
  CHECK(!is_semaphore(DType::i32));
  for (DType d : {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i1, DType::i8, DType::i16, DType::i32,
                  DType::i64, DType::u8, DType::u32, DType::sem, DType::dma_sem, DType::barrier_sem}) {
    int classes = is_float(d) + is_int(d) + is_bool(d) + is_semaphore(d);
    CHECK_MESSAGE(classes == 1, dtype_name(d));
  }
}

TEST_CASE("types: printing, equality and accessors") {
  Type a = Type::array(DType::f32, {128, 64});
  CHECK(a.str() == "f32[128,64]");
  CHECK(a.rank() == 2);
  CHECK(a.array_type().size() == 128 * 64);
  CHECK(!a.is_ref());
  CHECK(Type::scalar(DType::i32).str() == "i32");
  CHECK(Type::scalar(DType::i32).is_scalar());
  CHECK(Type::array(DType::i32, {}) == Type::scalar(DType::i32));
  Type r = Type::ref(DType::f32, {8, 128}, MemSpace::vmem);
  CHECK(r.str() == "ref<f32[8,128], vmem>");
  CHECK(r.is_ref());
  CHECK(!r.is_scalar());
  CHECK(r.mem_space() == MemSpace::vmem);
  CHECK(r != Type::ref(DType::f32, {8, 128}, MemSpace::smem));  // memory space matters for Refs
  CHECK(r != a);
  CHECK(Type::ref(DType::dma_sem, {2}, MemSpace::semaphore).str() == "ref<dma_sem[2], semaphore>");
  CHECK(Type::ref(DType::barrier_sem, {}, MemSpace::semaphore).str() == "ref<barrier_sem, semaphore>");
  CHECK(Type::array(DType::f32, {0, 3}).array_type().size() == 0);
}

TEST_CASE("types: memory spaces round-trip; shapes print as tuples") {
  for (MemSpace m : {MemSpace::any, MemSpace::hbm, MemSpace::vmem, MemSpace::smem, MemSpace::vmem_shared,
                     MemSpace::semaphore, MemSpace::index, MemSpace::host})
    CHECK(parse_mem_space(mem_space_name(m)) == m);
  CHECK(!parse_mem_space("gmem").has_value());
  CHECK(shape_str({}) == "()");
  CHECK(shape_str({8}) == "(8,)");
  CHECK(shape_str({8, 128}) == "(8, 128)");
  CHECK(num_elements({}) == 1);
  CHECK(num_elements({2, 3, 4}) == 24);
}

TEST_CASE("literals: printing keeps the value exactly") {
  CHECK(Literal::of_float(DType::f32, 2.0).str() == "2.0:f32");
  CHECK(Literal::of_float(DType::f32, 0.1).str() == "0.1:f32");
  CHECK(Literal::of_float(DType::f64, 1e-300).str() == "1e-300:f64");
  CHECK(Literal::of_float(DType::f32, INFINITY).str() == "inf:f32");
  CHECK(Literal::of_float(DType::f32, -INFINITY).str() == "-inf:f32");
  CHECK(Literal::of_float(DType::f32, NAN).str() == "nan:f32");
  CHECK(Literal::of_float(DType::f32, -0.0).str() == "-0.0:f32");
  CHECK(Literal::of_int(DType::i32, -7).str() == "-7:i32");
  CHECK(Literal::of_int(DType::i1, 1).str() == "true");
  CHECK(Literal::of_int(DType::i1, 0).str() == "false");
  CHECK(Literal::of_int(DType::u32, 4000000000).str() == "4000000000:u32");
  // NaN equals NaN as a literal (so printing and re-parsing compares equal).
  CHECK(Literal::of_float(DType::f32, NAN) == Literal::of_float(DType::f32, NAN));
  CHECK(!(Literal::of_float(DType::f32, 1.0) == Literal::of_float(DType::f64, 1.0)));
  CHECK(Literal::of_float(DType::f32, 2.5).as_int() == 2);
  CHECK(Literal::of_int(DType::i32, 3).as_double() == 3.0);
}

TEST_CASE("values: variables and literals") {
  Var v{"x", Type::array(DType::f32, {4}), {}};
  Value a = &v;
  Value b = Literal::of_int(DType::i32, 3);
  CHECK(a.is_var());
  CHECK(b.is_literal());
  CHECK(a.type() == Type::array(DType::f32, {4}));
  CHECK(b.type() == Type::scalar(DType::i32));
  CHECK(a == Value(&v));
  CHECK(!(a == b));
  CHECK(b == Value(Literal::of_int(DType::i32, 3)));
}

TEST_CASE("locations and errors format as file:line:col") {
  Loc l{std::make_shared<const std::string>("k.tsr"), 3, 7};
  CHECK(l.known());
  CHECK(l.str() == "k.tsr:3:7");
  CHECK(Error(l, "bad").formatted() == "k.tsr:3:7: error: bad");
  CHECK(Error("no place").formatted() == "error: no place");
  CHECK(!Loc{}.known());
}
