// Shape rules of every primitive family: result types for good ops, and the
// message (at the op's location) for bad ones.
#include "ir/primitive.h"
#include "tests/ir/ir_test_util.h"

using namespace tessera;
using namespace tessera::testing;

// Every shape-rule error is reported at the op: line 2, column 3 of the module
// one_op_module() builds.
#define CHECK_OP_ERROR(params, stmt, message)              \
  do {                                                     \
    std::string err_ = op_error(params, stmt);             \
    CHECK_HAS(err_, "t.tsr:2:3: error: ");                 \
    CHECK_HAS(err_, message);                              \
  } while (0)

TEST_CASE("registry: every primitive has a name, summary and shape rule; lookups fail cleanly") {
  const auto all = registry().all();
  CHECK(all.size() > 80);
  for (const Primitive* p : all) {
    CHECK_MESSAGE(!p->summary.empty(), p->name);
    CHECK_MESSAGE(static_cast<bool>(p->shape), p->name);
    CHECK(registry().find(p->name) == p);
  }
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i - 1]->name < all[i]->name);
  CHECK(registry().find("no_such_prim") == nullptr);
  try {
    prim("no_such_prim");
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK_HAS(e.message(), "unknown primitive");
    CHECK_HAS(e.message(), "no_such_prim");
  }
  Registry r;
  r.add(Primitive{"p", "a test primitive", {}, {}, {}, false});
  CHECK_THROWS_AS(r.add(Primitive{"p", "again", {}, {}, {}, false}), Error);
}

TEST_CASE("rule tables: a missing rule names the pass and the primitive") {
  RuleTable<int> table("jvp");
  table.set("add", 1);
  CHECK(*table.find(prim("add")) == 1);
  CHECK(table.find(prim("mul")) == nullptr);
  try {
    table.at(prim("mul"));
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(e.message() == "no jvp rule for primitive mul");
  }
}

TEST_CASE("elementwise: types, rank-0 broadcasting, dtype classes") {
  CHECK(result_types("%x: f32[8,4], %y: f32[8,4]", "add %x, %y") == "f32[8,4]");
  CHECK(result_types("%x: f32[8,4]", "mul %x, 2.0") == "f32[8,4]");        // bare literal takes f32
  CHECK(result_types("%x: bf16[8]", "mul %x, 2.0") == "bf16[8]");          // ... or bf16
  CHECK(result_types("%x: i32[8]", "add %x, 1") == "i32[8]");
  CHECK(result_types("%s: f32, %x: f32[3]", "sub %s, %x") == "f32[3]");    // scalar first broadcasts too
  CHECK(result_types("%x: f32[8]", "exp %x") == "f32[8]");
  CHECK(result_types("%x: i32[8], %y: i32[8]", "lt %x, %y") == "bool[8]");
  CHECK(result_types("%x: bool[8], %y: bool[8]", "and %x, %y") == "bool[8]");
  CHECK(result_types("%x: i32[8]", "shift_left %x, 2") == "i32[8]");
  CHECK(result_types("%x: i32[8]", "neg %x") == "i32[8]");
  CHECK_OP_ERROR("%x: f32[8,4], %y: f32[4,8]", "add %x, %y", "add: operand shapes differ: (f32[8,4], f32[4,8])");
  CHECK_OP_ERROR("%x: f32[8], %y: i32[8]", "add %x, %y", "add: operand dtypes differ");
  CHECK_OP_ERROR("%x: i32[8]", "exp %x", "exp: expects a floating-point dtype, got i32[8]");
  CHECK_OP_ERROR("%x: f32[8]", "and %x, %x", "and: expects an integer or bool dtype");
  CHECK_OP_ERROR("%x: f32[8]", "shift_left %x, %x", "expects an integer dtype");
  CHECK_OP_ERROR("%x: f32[8]", "add %x", "add: expects 2 operand(s), got 1");
  CHECK_OP_ERROR("%r: ref<f32[8], vmem>", "exp %r", "exp: operand 0 must be an array, got the Ref ref<f32[8], vmem>");
}

TEST_CASE("select_n and convert_element_type") {
  CHECK(result_types("%p: bool[8], %a: f32[8], %b: f32[8]", "select_n %p, %a, %b") == "f32[8]");
  CHECK(result_types("%p: i32[8], %a: f32[8], %b: f32[8], %c: f32[8]", "select_n %p, %a, %b, %c") == "f32[8]");
  CHECK_OP_ERROR("%p: f32[8], %a: f32[8]", "select_n %p, %a, %a", "predicate must be bool or i32, got f32[8]");
  CHECK_OP_ERROR("%p: bool[8], %a: f32[8]", "select_n %p, %a, %a, %a", "a bool predicate selects between at most 2 cases");
  CHECK_OP_ERROR("%p: bool[8], %a: f32[8], %b: i32[8]", "select_n %p, %a, %b", "case dtypes differ");
  CHECK_OP_ERROR("%p: bool[8]", "select_n %p", "needs a predicate and at least one case");
  CHECK(result_types("%x: f32[8]", "convert_element_type[new_dtype=i32] %x") == "i32[8]");
  CHECK(result_types("%x: i32", "convert_element_type[new_dtype=bool] %x") == "bool");
  CHECK_OP_ERROR("%x: f32[8]", "convert_element_type[new_dtype=sem] %x", "cannot convert semaphores");
}

TEST_CASE("structural: broadcast, reshape, transpose, squeeze, expand_dims, iota") {
  CHECK(result_types("%x: f32[4]", "broadcast_in_dim[shape=(8, 4), broadcast_dimensions=(1)] %x") == "f32[8,4]");
  CHECK(result_types("%x: f32", "broadcast_in_dim[shape=(2, 3), broadcast_dimensions=()] %x") == "f32[2,3]");
  CHECK_OP_ERROR("%x: f32[4]", "broadcast_in_dim[shape=(8, 5), broadcast_dimensions=(1)] %x",
                 "operand dim 0 of size 4 cannot broadcast to size 5");
  CHECK_OP_ERROR("%x: f32[4]", "broadcast_in_dim[shape=(8, 4), broadcast_dimensions=()] %x",
                 "broadcast_dimensions has 0 entries for an operand of rank 1");
  CHECK_OP_ERROR("%x: f32[4,4]", "broadcast_in_dim[shape=(4, 4), broadcast_dimensions=(1, 0)] %x",
                 "broadcast_dimensions must be strictly increasing");
  CHECK(result_types("%x: f32[8,4]", "reshape[new_sizes=(32)] %x") == "f32[32]");
  CHECK_OP_ERROR("%x: f32[8,4]", "reshape[new_sizes=(5, 6)] %x", "cannot reshape f32[8,4] to (5, 6): element counts differ");
  CHECK(result_types("%x: f32[8,4,2]", "transpose[permutation=(2, 0, 1)] %x") == "f32[2,8,4]");
  CHECK_OP_ERROR("%x: f32[8,4]", "transpose[permutation=(0, 0)] %x", "is not a permutation of 0..1");
  CHECK_OP_ERROR("%x: f32[8,4]", "transpose[permutation=(0)] %x", "permutation length differs from rank");
  CHECK(result_types("%x: f32[1,8,1]", "squeeze[dimensions=(0, 2)] %x") == "f32[8]");
  CHECK_OP_ERROR("%x: f32[2,8]", "squeeze[dimensions=(0)] %x", "cannot squeeze dimension 0 of size 2");
  CHECK(result_types("%x: f32[8]", "expand_dims[dimensions=(0, 2)] %x") == "f32[1,8,1]");
  CHECK_OP_ERROR("%x: f32[8]", "expand_dims[dimensions=(3)] %x", "dimension 3 is out of range for rank 2");
  CHECK(result_types("", "iota[dtype=i32, shape=(4, 8), dimension=1]") == "i32[4,8]");
  CHECK_OP_ERROR("", "iota[dtype=i32, shape=(4, 8), dimension=2]", "iota: dimension 2 is out of range for rank 2");
  CHECK_OP_ERROR("", "iota[dtype=bool, shape=(4), dimension=0]", "iota needs a numeric dtype");
}

TEST_CASE("structural: concatenate, slices, pad, rev, gather, sort") {
  CHECK(result_types("%a: f32[2,4], %b: f32[3,4]", "concatenate[dimension=0] %a, %b") == "f32[5,4]");
  CHECK_OP_ERROR("%a: f32[2,4], %b: f32[2,5]", "concatenate[dimension=0] %a, %b", "operands differ outside the concatenated dimension");
  CHECK_OP_ERROR("%a: f32[2,4], %b: i32[2,4]", "concatenate[dimension=0] %a, %b", "operands differ in dtype or rank");
  CHECK(result_types("%x: f32[16,8]", "slice[start_indices=(2, 0), limit_indices=(10, 8)] %x") == "f32[8,8]");
  CHECK(result_types("%x: f32[16]", "slice[start_indices=(1), limit_indices=(16), strides=(4)] %x") == "f32[4]");
  CHECK_OP_ERROR("%x: f32[16]", "slice[start_indices=(2), limit_indices=(20)] %x", "slice [2:20] is out of range for dim 0 of f32[16]");
  CHECK_OP_ERROR("%x: f32[16,2]", "slice[start_indices=(2), limit_indices=(4)] %x", "need one entry per dimension");
  CHECK(result_types("%x: f32[16,8], %i: i32", "dynamic_slice[slice_sizes=(4, 8)] %x, %i, 0:i32") == "f32[4,8]");
  CHECK_OP_ERROR("%x: f32[16,8], %i: i32", "dynamic_slice[slice_sizes=(4, 9)] %x, %i, 0:i32", "slice size exceeds dimension 1");
  CHECK_OP_ERROR("%x: f32[16,8], %i: f32", "dynamic_slice[slice_sizes=(4, 8)] %x, %i, %i", "start index must be an integer scalar, got f32");
  CHECK_OP_ERROR("%x: f32[16,8]", "dynamic_slice[slice_sizes=(4, 8)] %x", "expects 3 operand(s), got 1");
  CHECK(result_types("%x: f32[16,8], %u: f32[4,8], %i: i32", "dynamic_update_slice %x, %u, %i, 0:i32") == "f32[16,8]");
  CHECK_OP_ERROR("%x: f32[16,8], %u: f32[4,9], %i: i32", "dynamic_update_slice %x, %u, %i, 0:i32", "update is larger than the operand in dimension 1");
  CHECK(result_types("%x: f32[4,4]", "pad[low=(1, 0), high=(2, -1)] %x, 0.0") == "f32[7,3]");
  CHECK_OP_ERROR("%x: f32[4]", "pad[low=(-5), high=(0)] %x, 0.0", "negative padding removes more than dimension 0 holds");
  CHECK_OP_ERROR("%x: f32[4], %v: f32[2]", "pad[low=(1), high=(0)] %x, %v", "padding value must be a scalar of the operand's dtype");
  CHECK(result_types("%x: f32[4,3]", "rev[dimensions=(1)] %x") == "f32[4,3]");
  CHECK_OP_ERROR("%x: f32[4,3]", "rev[dimensions=(2)] %x", "dimension 2 is out of range for rank 2");
  CHECK(result_types("%t: f32[1024,128], %i: i32[16]", "gather %t, %i") == "f32[16,128]");
  CHECK(result_types("%t: f32[8,128], %i: i32[4]", "gather[axis=1] %t, %i") == "f32[8,4]");
  CHECK_OP_ERROR("%t: f32[8,128], %i: f32[4]", "gather %t, %i", "indices must be a 1-D integer array, got f32[4]");
  CHECK(result_types("%k: f32[8], %v: i32[8]", "sort[num_keys=1] %k, %v") == "(f32[8], i32[8])");
  CHECK_OP_ERROR("%k: f32[8], %v: i32[4]", "sort %k, %v", "operands must share a shape");
  CHECK_OP_ERROR("%k: f32[8]", "sort[num_keys=2] %k", "num_keys must be between 1 and the operand count");
}

TEST_CASE("reductions, arg reductions, cumsum, dot_general") {
  CHECK(result_types("%x: f32[8,4]", "reduce_sum[axes=(1)] %x") == "f32[8]");
  CHECK(result_types("%x: f32[8,4]", "reduce_max[axes=(0, 1)] %x") == "f32");
  CHECK(result_types("%x: bool[8]", "reduce_or[axes=(0)] %x") == "bool");
  CHECK_OP_ERROR("%x: f32[8,4]", "reduce_sum[axes=(2)] %x", "reduce_sum: axis 2 is out of range for rank 2");
  CHECK_OP_ERROR("%x: bool[8]", "reduce_sum[axes=(0)] %x", "reduce_sum: does not apply to bool[8]");
  CHECK_OP_ERROR("%x: f32[8]", "reduce_and[axes=(0)] %x", "reduce_and: does not apply to f32[8]");
  CHECK(result_types("%x: f32[8,4]", "argmax[axis=1] %x") == "i32[8]");
  CHECK(result_types("%x: f32[8,4]", "argmin[axis=0, index_dtype=i64] %x") == "i64[4]");
  CHECK_OP_ERROR("%x: f32[8,4]", "argmax[axis=1, index_dtype=f32] %x", "index_dtype must be an integer dtype");
  CHECK(result_types("%x: f32[8,4]", "cumsum[axis=1, reverse=true] %x") == "f32[8,4]");
  CHECK_OP_ERROR("%x: bool[8]", "cumsum[axis=0] %x", "cumsum: does not apply to bool");
  CHECK(result_types("%a: f32[8,16], %b: f32[16,4]", "dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b") == "f32[8,4]");
  CHECK(result_types("%a: f32[2,8,16], %b: f32[2,4,16]",
                     "dot_general[lhs_contracting=(2), rhs_contracting=(2), lhs_batch=(0), rhs_batch=(0)] %a, %b") == "f32[2,8,4]");
  CHECK(result_types("%a: bf16[8,16], %b: bf16[16,4]",
                     "dot_general[lhs_contracting=(1), rhs_contracting=(0), preferred_element_type=f32] %a, %b") == "f32[8,4]");
  CHECK_OP_ERROR("%a: f32[8,16], %b: f32[15,4]", "dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b",
                 "contracting dimensions differ in size: f32[8,16] dim 1 vs f32[15,4] dim 0");
  CHECK_OP_ERROR("%a: f32[8,16], %b: f32[16,4]", "dot_general[lhs_contracting=(1), rhs_contracting=()] %a, %b",
                 "lhs_contracting and rhs_contracting differ in length");
  CHECK_OP_ERROR("%a: f32[8,16], %b: f32[16,4]", "dot_general[lhs_contracting=(1, 1), rhs_contracting=(0, 0)] %a, %b",
                 "lhs dimensions repeat a dimension");
  CHECK_OP_ERROR("%a: f32[8,16], %b: i32[16,4]", "dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b",
                 "operand dtypes differ");
}

TEST_CASE("state: get, swap, addupdate, load, store through indexers") {
  const std::string r = "%r: ref<f32[16,128], vmem>, %i: i32, %v: f32[8,128], %m: bool[8,128]";
  CHECK(result_types(r, "get %r[:, :]") == "f32[16,128]");
  CHECK(result_types(r, "get %r") == "f32[16,128]");              // no indexer: the whole Ref
  CHECK(result_types(r, "get %r[3]") == "f32[128]");               // missing trailing entries are `:`
  CHECK(result_types(r, "get %r[%i, 0:8]") == "f32[8]");
  CHECK(result_types(r, "get %r[ds(%i, 8), :]") == "f32[8,128]");
  CHECK(result_types(r, "get %r[ds(0, 4, 4), 5]") == "f32[4]");
  CHECK(result_types(r, "swap %r[0:8, :], %v") == "f32[8,128]");
  CHECK(result_types(r, "addupdate %r[ds(%i, 8), :], %v") == "()");
  CHECK(result_types(r, "swap %r[0:8, :], 0.0") == "f32[8,128]");  // a scalar value fills the region
  CHECK(result_types(r, "load %r[0:8, :], %m") == "f32[8,128]");
  CHECK(result_types(r, "load %r[0:8, :], %m, %v") == "f32[8,128]");
  CHECK(result_types(r, "store %r[0:8, :], %v, %m") == "()");
  CHECK_OP_ERROR(r, "get %r[0:8, 0:8, 0]", "get: 3 indices for a Ref of rank 2 (ref<f32[16,128], vmem>)");
  CHECK_OP_ERROR(r, "get %r[16, :]", "get: static index out of bounds in dimension 0 of ref<f32[16,128], vmem>");
  CHECK_OP_ERROR(r, "get %r[ds(0, 8, 3), :]", "static index out of bounds in dimension 0");
  CHECK_OP_ERROR(r, "swap %r[0:4, :], %v", "swap: value f32[8,128] does not match the indexed region f32[4,128]");
  CHECK_OP_ERROR(r, "get %v", "get: operand 0 must be a Ref, got f32[8,128]");
  CHECK_OP_ERROR(r + ", %f: f32", "get %r[%f, :]", "get: a dynamic index must be an integer scalar, got f32");
  CHECK_OP_ERROR(r, "load %r[0:8, :], %v", "load: mask f32[8,128] must be bool with the indexed region's shape (8, 128)");
  CHECK_OP_ERROR("%b: ref<bool[8], vmem>, %v: bool[8]", "addupdate %b[:], %v", "cannot accumulate into a bool Ref");
  CHECK_OP_ERROR("%s: ref<sem[2], semaphore>", "get %s[0]", "cannot read or write a semaphore Ref ref<sem[2], semaphore> as data");
}

TEST_CASE("DMA with a dynamic size: ds(start, %n) bounded by the Ref; only DMAs take it; both sides must agree") {
  const std::string dma =
      "%x: ref<f32[64,128], any>, %b: ref<f32[32,128], vmem>, %s: ref<dma_sem[2], semaphore>, %n: i32, %m: i32, %i: i32, "
      "%f: f32, %x3: ref<i32[64,128,2], any>";
  CHECK(result_types(dma, "dma_start %x[ds(0, %n), :], %b[ds(0, %n), :], %s[0]") == "()");
  CHECK(result_types(dma, "dma_start %x[ds(%i, %n), :], %b[ds(8, %n), :], %s[0]") == "()");
  CHECK(result_types(dma, "dma_wait %s[0], %b[ds(0, %n), :]") == "()");
  // The static bound: dim - start, or the dim for a dynamic start.
  {
    Module m = parse(one_op_module(dma, "dma_start %x[ds(%i, %n), :], %b[ds(8, %n), :], %s[0]"));
    const Op& op = m.find("f")->ops().back();
    CHECK(op.indexers[0].entries[0].size == 64);
    CHECK(op.indexers[1].entries[0].size == 24);
    CHECK(op.indexers[1].entries[0].dyn_size == 4);
    CHECK(op.num_main_operands() == 3);
  }
  CHECK_OP_ERROR(dma, "dma_start %x[ds(0, %n), :], %b[ds(0, %m), :], %s[0]", "source region (%n, 128) and destination region (%m, 128) differ");
  CHECK_OP_ERROR(dma, "dma_start %x[ds(0, %n), :], %b[0:8, :], %s[0]", "source region (%n, 128) and destination region (8, 128) differ");
  CHECK_OP_ERROR(dma, "dma_start %x[:, ds(0, %n)], %b[ds(0, %n), :], %s[0]", "source region (64, %n) and destination region (%n, 128) differ");
  CHECK_OP_ERROR(dma, "dma_start %x3[ds(0, %n), :, 0], %b[ds(0, %n), :], %s[0]", "dtypes differ");
  CHECK_OP_ERROR(dma, "dma_start %x[ds(0, %f), :], %b[ds(0, %f), :], %s[0]", "a dynamic slice size must be an integer scalar, got f32");
  CHECK_OP_ERROR(dma, "dma_start %x[ds(0, %n, 2), :], %b[ds(0, %n, 2), :], %s[0]", "a slice with a dynamic size must have stride 1");
  CHECK_OP_ERROR(dma, "dma_start %x[ds(65, %n), :], %b[ds(0, %n), :], %s[0]", "slice start 65 is outside [0, 64] in dimension 0");
  CHECK_OP_ERROR(dma, "dma_start %x[0:8, :], %b[0:8, :], %s[ds(0, %n)]", "must select a single semaphore");
  for (const char* stmt : {"%v = get %b[ds(0, %n), :]", "swap %b[ds(0, %n), :], 1.0", "addupdate %b[ds(0, %n), :], 1.0",
                           "%v = load %b[ds(0, %n), :]", "store %b[ds(0, %n), :], 1.0"})
    CHECK_OP_ERROR(dma, stmt, "a dynamic slice size is only allowed in dma_start and dma_wait");
}

TEST_CASE("pallas kernel primitives: grid queries, DMAs, semaphores, devices, debugging") {
  CHECK(result_types("", "program_id[axis=0]") == "i32");
  CHECK(result_types("", "num_programs[axis=1]") == "i32");
  CHECK(result_types("%i: i32", "multiple_of[value=8] %i") == "i32");
  CHECK_OP_ERROR("%i: i32", "multiple_of[value=0] %i", "value must be positive");
  CHECK_OP_ERROR("%x: f32", "multiple_of[value=8] %x", "applies to integers, got f32");
  CHECK(result_types("", "axis_index[axis_name=dev]") == "i32");
  CHECK(result_types("", "device_id") == "i32");
  CHECK(result_types("", "get_barrier_semaphore") == "ref<barrier_sem, semaphore>");
  const std::string dma = "%a: ref<f32[64,128], any>, %v: ref<f32[8,128], vmem>, %s: ref<dma_sem[2], semaphore>, %d: i32";
  CHECK(result_types(dma, "dma_start %a[0:8, :], %v, %s[0]") == "()");
  CHECK(result_types(dma, "dma_start %a[0:8, :], %v, %s[0], %s[1], %d") == "()");
  CHECK(result_types(dma, "dma_wait %s[0], %v") == "()");
  CHECK_OP_ERROR(dma, "dma_start %a[0:4, :], %v, %s[0]", "source region (4, 128) and destination region (8, 128) differ");
  CHECK_OP_ERROR(dma, "dma_start %a[0:8, :], %v, %s", "destination semaphore must select a single semaphore");
  CHECK_OP_ERROR(dma, "dma_start %a[0:8, :], %v, %v", "destination semaphore must be a semaphore Ref, got ref<f32[8,128], vmem>");
  CHECK_OP_ERROR(dma, "dma_start %a[0:8, :], %v", "expects src, dst, dst_sem (local) or src, dst, dst_sem, src_sem, device_id (remote)");
  const std::string sem = "%s: ref<sem[4], semaphore>, %d: i32";
  CHECK(result_types(sem, "semaphore_signal %s[1], 1") == "()");
  CHECK(result_types(sem, "semaphore_signal %s[1], 1, %d, 0") == "()");
  CHECK(result_types(sem, "semaphore_wait %s[1], 2") == "()");
  CHECK(result_types(sem, "semaphore_read %s[1]") == "i32");
  CHECK_OP_ERROR(sem, "semaphore_wait %s[1], 2.0", "decrement must be an integer scalar, got f32");
  CHECK_OP_ERROR("%s: ref<dma_sem[4], semaphore>", "semaphore_signal %s[0], 1", "semaphore must be a semaphore Ref, got ref<dma_sem[4], semaphore>");
  CHECK(result_types("%x: f32, %i: i32", "debug_print[fmt=\"x={} i={}\"] %x, %i") == "()");
  CHECK(result_types("%n: i32", "delay %n") == "()");
}

TEST_CASE("control flow: cond, while, scan, for, run_scoped, call") {
  CHECK(result_types("%p: bool, %x: f32[8]",
                     "cond[branches=[fn(%a: f32[8]) -> f32[8] { return %a }, fn(%a: f32[8]) -> f32[8] { %b = neg %a\n return %b }]] %p, %x") ==
        "f32[8]");
  CHECK_OP_ERROR("%p: bool, %x: f32[8]", "cond[branches=[fn(%a: f32[8]) -> f32[8] { return %a }]] %p, %x",
                 "a bool index needs exactly 2 branches");
  CHECK_OP_ERROR("%p: f32, %x: f32[8]", "cond[branches=[fn(%a: f32[8]) -> f32[8] { return %a }]] %p, %x",
                 "index must be an i32 or bool scalar, got f32");
  CHECK_OP_ERROR("%p: i32, %x: f32[8]",
                 "cond[branches=[fn(%a: f32[8]) -> f32[8] { return %a }, fn(%a: f32[8]) -> i32 { return 0 }]] %p, %x",
                 "branch 1 returns (i32) but branch 0 returns (f32[8])");
  CHECK_OP_ERROR("%p: i32, %x: f32[8]", "cond[branches=[fn(%a: f32[4]) { }]] %p, %x",
                 "branch 0 takes (f32[4]) but is given (f32[8])");
  CHECK(result_types("%n: i32, %x: f32",
                     "while[cond=fn(%k: i32, %c: f32) -> bool { %t = lt %c, 10.0\n return %t },"
                     " body=fn(%k: i32, %c: f32) -> f32 { %d = add %c, 1.0\n return %d }, num_consts=1] %n, %x") == "f32");
  CHECK_OP_ERROR("%x: f32", "while[cond=fn(%c: f32) -> f32 { return %c }, body=fn(%c: f32) -> f32 { return %c }] %x",
                 "cond must return one bool scalar");
  CHECK(result_types("%c: f32, %xs: f32[5,3]",
                     "scan[body=fn(%c: f32, %x: f32[3]) -> (f32, f32[3]) { return %c, %x }, length=5, num_carry=1] %c, %xs") ==
        "(f32, f32[5,3])");
  CHECK_OP_ERROR("%c: f32, %xs: f32[4,3]",
                 "scan[body=fn(%c: f32, %x: f32[3]) -> (f32, f32[3]) { return %c, %x }, length=5, num_carry=1] %c, %xs",
                 "scanned operand f32[4,3] must be an array with leading dimension 5");
  CHECK(result_types("%r: ref<f32[8], vmem>, %acc: f32",
                     "for[body=fn(%i: i32, %rr: ref<f32[8], vmem>, %a: f32) -> f32 { %v = get %rr[%i]\n %s = add %a, %v\n return %s },"
                     " num_consts=1] 0:i32, 8:i32, %r, %acc") == "f32");
  CHECK_OP_ERROR("%acc: f32", "for[body=fn(%i: i32, %a: f32) -> i32 { return %i }] 0:i32, 8:i32, %acc",
                 "body returns (i32) but the carries are (f32)");
  CHECK_OP_ERROR("%acc: f32, %lo: f32", "for[body=fn(%i: f32, %a: f32) -> f32 { return %a }] %lo, 8, %acc",
                 "lower bound must be an integer scalar, got f32");
  CHECK(result_types("%x: f32[8]",
                     "run_scoped[body=fn(%a: f32[8], %s: ref<f32[8], vmem>) -> f32[8] { swap %s[:], %a\n %b = get %s[:]\n return %b }] %x") ==
        "f32[8]");
  CHECK_OP_ERROR("%x: f32[8]", "run_scoped[body=fn(%a: f32[8], %s: f32[8]) { }] %x", "scoped allocation f32[8] must be a Ref");
  std::string callee = "func @g(%a: f32[8]) -> f32[8] { return %a }\n";
  Module m = parse(callee + "func @f(%x: f32[8]) -> f32[8] {\n  %y = call[callee=@g] %x\n  return %y\n}\n");
  CHECK(m.find("f")->ops()[0].results[0]->type.str() == "f32[8]");
  std::string err = parse_error(callee + "func @f(%x: f32[4]) {\n  %y = call[callee=@g] %x\n}\n");
  CHECK_HAS(err, "t.tsr:3:3: error: call: @g takes (f32[8]) but is given (f32[4])");
}

TEST_CASE("core_map and pmap") {
  CHECK(result_types("%r: ref<f32[8], any>",
                     "core_map[body=fn(%x: ref<f32[8], any>) { }, mesh_axes=(core), mesh_shape=(2)] %r") == "()");
  CHECK_OP_ERROR("%r: ref<f32[8], any>", "core_map[body=fn(%x: ref<f32[8], any>) { }, mesh_axes=(core), mesh_shape=(0)] %r",
                 "mesh sizes must be positive");
  CHECK_OP_ERROR("%r: ref<f32[8], any>", "core_map[body=fn(%x: ref<f32[8], any>) { }, mesh_axes=(a, b), mesh_shape=(2)] %r",
                 "mesh_axes and mesh_shape must be non-empty and of equal length");
  CHECK(result_types("%x: f32[4,8], %w: f32[8]",
                     "pmap[body=fn(%a: f32[8], %b: f32[8]) -> f32[8] { %c = add %a, %b\n return %c },"
                     " axis_name=d, axis_size=4, in_axes=(0, none), out_axes=(1)] %x, %w") == "f32[8,4]");
  CHECK_OP_ERROR("%x: f32[3,8]", "pmap[body=fn(%a: f32[8]) -> f32[8] { return %a }, axis_name=d, axis_size=4, in_axes=(0), out_axes=(0)] %x",
                 "operand 0 f32[3,8] has size 3 on its mapped axis, not axis_size 4");
  CHECK_OP_ERROR("%x: f32[4,8]", "pmap[body=fn(%a: f32[8]) -> f32[8] { return %a }, axis_name=d, axis_size=4, in_axes=(0, 0), out_axes=(0)] %x",
                 "in_axes has 2 entries for 1 operands");
}

namespace {
const char* kKernel =
    "index_map @ij(%i: i32, %j: i32) -> (i32, i32) { return %i, %j }\n"
    "kernel @k(%x: ref<f32[128,128], vmem>, %o: ref<f32[128,128], vmem>) {\n"
    "  %a = get %x[:, :]\n"
    "  swap %o[:, :], %a\n"
    "}\n";
}  // namespace

TEST_CASE("pallas_call: result types and operand conventions") {
  Module m = parse(std::string(kKernel) +
                   "func @main(%x: f32[256,256]) -> f32[256,256] {\n"
                   "  %o = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec((128, 128), @ij)],\n"
                   "                   out_specs=[spec((128, 128), @ij)], out_shapes=[f32[256,256]]] %x\n"
                   "  return %o\n}\n");
  const Op& op = m.find("main")->ops()[0];
  CHECK(op.results[0]->type.str() == "f32[256,256]");
  CHECK(op.str_param("kernel_type") == "tc");  // defaults filled in
  CHECK(op.int_param("num_scalar_prefetch") == 0);
  auto wrong = [&](const std::string& call, const std::string& message) {
    std::string err = parse_error(std::string(kKernel) + "func @main(%x: f32[256,256], %n: i32, %f: f32) {\n  " + call + "\n}\n");
    CHECK_HAS(err, "t.tsr:7:3: error: pallas_call: " + message);
  };
  wrong("%o = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec((128, 128), @ij)], out_specs=[spec((128, 128), @ij)],"
        " out_shapes=[f32[256,256]]] %x, %x",
        "expects 0 dynamic grid size(s), 0 scalar prefetch operand(s) and 1 input(s) (one per in_spec), got 2 operands");
  wrong("%o = pallas_call[kernel=@k, grid=(?, 2), in_specs=[spec((128, 128), @ij)], out_specs=[spec((128, 128), @ij)],"
        " out_shapes=[f32[256,256]]] %f, %x",
        "a dynamic grid size must be an integer scalar, got f32");
  wrong("%o = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec((128, 128), @ij)], out_specs=[spec((128, 128), @ij)],"
        " out_shapes=[f32[256,256]], num_scalar_prefetch=1] %f, %x",
        "scalar prefetch operand 0 must be an integer array, got f32");
  wrong("%o = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec((128, 128), @ij)], out_specs=[],"
        " out_shapes=[f32[256,256]]] %x",
        "0 out_specs for 1 out_shapes");
  wrong("%o = pallas_call[kernel=@k, grid=(2, 2), in_specs=[spec((128, 128), @ij)], out_specs=[spec((128, 128), @ij)],"
        " out_shapes=[ref<f32[256,256], vmem>]] %x",
        "out_shapes must be arrays, got ref<f32[256,256], vmem>");
}

TEST_CASE("block specs: dims, kernel block shapes and index-map arity") {
  BlockSpec whole;
  auto dims = block_dims(whole, {16, 8});
  REQUIRE(dims.size() == 2);
  CHECK(dims[0] == BlockDim::blocked(16));
  CHECK(kernel_block_shape(dims) == Shape{16, 8});
  BlockSpec s;
  s.block = std::vector<BlockDim>{BlockDim::squeezed(), BlockDim::element(8, 1, 2), BlockDim::bounded(4)};
  CHECK(kernel_block_shape(*s.block) == Shape{8, 4});
  CHECK(index_map_arity(*s.block) == 4);  // bounded gives (start, size)
  Indexer ix{0, {IndexEntry::point(1), IndexEntry::slice(0, 4, 2), IndexEntry::full()}};
  CHECK(indexed_shape(ix, {3, 8, 5}) == Shape{4, 5});
}

TEST_CASE("integer_pow: a negative exponent needs a float dtype; y is required") {
  CHECK(result_types("%x: f32[8]", "integer_pow[y=-2] %x") == "f32[8]");
  CHECK(result_types("%x: i32[8]", "integer_pow[y=3] %x") == "i32[8]");
  CHECK_HAS(op_error("%x: i32[8]", "integer_pow[y=-1] %x"), "a negative exponent y = -1 needs a float dtype, got i32[8]");
  CHECK_HAS(op_error("%x: f32[8]", "integer_pow %x"), "y");
}

TEST_CASE("bitcast_convert_type: equal widths keep the shape; the width ratio is a trailing dim") {
  CHECK(result_types("%x: f32[8]", "bitcast_convert_type[new_dtype=i32] %x") == "i32[8]");
  CHECK(result_types("%x: f64[3,5]", "bitcast_convert_type[new_dtype=u8] %x") == "u8[3,5,8]");
  CHECK(result_types("%x: i16[4,2]", "bitcast_convert_type[new_dtype=f32] %x") == "f32[4]");
  CHECK(result_types("%x: bf16[4]", "bitcast_convert_type[new_dtype=i16] %x") == "i16[4]");
  CHECK_HAS(op_error("%x: i16[4,3]", "bitcast_convert_type[new_dtype=f32] %x"), "needs a last dim of 2");
  CHECK_HAS(op_error("%x: i8", "bitcast_convert_type[new_dtype=i32] %x"), "needs a last dim of 4");
  CHECK_HAS(op_error("%x: bool[4]", "bitcast_convert_type[new_dtype=u8] %x"), "cannot bitcast bool");
  CHECK(result_types("%x: f16[4]", "bitcast_convert_type[new_dtype=i16] %x") == "i16[4]");
  CHECK(result_types("%x: u8[4,2]", "bitcast_convert_type[new_dtype=f16] %x") == "f16[4]");
}

TEST_CASE("take_along_axis: the result has the indices' shape; ranks and off-axis sizes must agree") {
  CHECK(result_types("%x: f32[4,8], %i: i32[4,3]", "take_along_axis[axis=1] %x, %i") == "f32[4,3]");
  CHECK_HAS(op_error("%x: f32[4,8], %i: i32[3]", "take_along_axis[axis=1] %x, %i"), "must have the rank of f32[4,8]");
  CHECK_HAS(op_error("%x: f32[4,8], %i: i32[2,3]", "take_along_axis[axis=1] %x, %i"), "differ in dimension 0");
  CHECK_HAS(op_error("%x: f32[4,8], %i: f32[4,3]", "take_along_axis[axis=1] %x, %i"), "indices must be integers");
}

TEST_CASE("custom_jvp_call: call takes the operands; jvp takes them and their tangents; both pure") {
  const std::string call = "call=fn(%a: f32[8]) -> f32[8] { %s = sin %a\n return %s }";
  const std::string rule = "jvp=fn(%a: f32[8], %da: f32[8]) -> f32[8] { return %da }";
  CHECK(result_types("%x: f32[8]", "custom_jvp_call[" + call + ", " + rule + "] %x") == "f32[8]");
  CHECK_OP_ERROR("%x: f32[8]", "custom_jvp_call[" + call + ", jvp=fn(%a: f32[8]) -> f32[8] { return %a }] %x",
                 "jvp takes (f32[8]) but is given (f32[8], f32[8])");
  CHECK_OP_ERROR("%x: f32[8]",
                 "custom_jvp_call[" + call + ", jvp=fn(%a: f32[8], %da: f32[8]) -> f64[8] { %c = convert_element_type[new_dtype=f64] %da\n return %c }] %x",
                 "jvp returns (f64[8]) but call returns (f32[8])");
  CHECK_OP_ERROR("%x: f32[4]", "custom_jvp_call[" + call + ", " + rule + "] %x", "call takes (f32[8]) but is given (f32[4])");
  CHECK_OP_ERROR("%r: ref<f32[8], vmem>",
                 "custom_jvp_call[call=fn(%a: ref<f32[8], vmem>) { }, jvp=fn(%a: ref<f32[8], vmem>, %b: ref<f32[8], vmem>) { }] %r",
                 "operands must be values, not Refs");
  CHECK_OP_ERROR("%x: f32[8]",
                 "custom_jvp_call[call=fn(%a: f32[8]) -> f32[8] { debug_print[fmt=\"a\"]\n return %a }, " + rule + "] %x",
                 "call must be pure, but has effects");
  CHECK_HAS(op_error("%x: f32[8]", "custom_jvp_call[" + call + "] %x"), "jvp");
}

TEST_CASE("nextafter: two floats of one dtype") {
  CHECK(result_types("%x: f32[8], %y: f32[8]", "nextafter %x, %y") == "f32[8]");
  CHECK(result_types("%x: f64[2,3], %y: f64", "nextafter %x, %y") == "f64[2,3]");
  CHECK_OP_ERROR("%x: f32[8], %y: f64[8]", "nextafter %x, %y", "nextafter: operand dtypes differ: (f32[8], f64[8])");
  CHECK_OP_ERROR("%x: f32[8], %y: f32[4]", "nextafter %x, %y", "nextafter: operand shapes differ");
  CHECK_OP_ERROR("%x: i32[8], %y: i32[8]", "nextafter %x, %y", "nextafter: expects a floating-point dtype, got i32[8]");
  CHECK(result_types("%x: bf16[8], %y: bf16[8]", "nextafter %x, %y") == "bf16[8]");
  CHECK(result_types("%x: f16[8], %y: f16", "nextafter %x, %y") == "f16[8]");
}

TEST_CASE("reduce_precision: exponent_bits >= 1 and mantissa_bits >= 0, both required; floats") {
  CHECK(result_types("%x: f32[8]", "reduce_precision[exponent_bits=5, mantissa_bits=10] %x") == "f32[8]");
  CHECK(result_types("%x: bf16[8]", "reduce_precision[exponent_bits=4, mantissa_bits=3] %x") == "bf16[8]");
  CHECK(result_types("%x: f64", "reduce_precision[exponent_bits=11, mantissa_bits=0] %x") == "f64");
  CHECK_OP_ERROR("%x: f32[8]", "reduce_precision[exponent_bits=0, mantissa_bits=10] %x",
                 "reduce_precision: exponent_bits must be at least 1, got 0");
  CHECK_OP_ERROR("%x: f32[8]", "reduce_precision[exponent_bits=8, mantissa_bits=-1] %x",
                 "reduce_precision: mantissa_bits must be at least 0, got -1");
  CHECK_OP_ERROR("%x: i32[8]", "reduce_precision[exponent_bits=8, mantissa_bits=7] %x", "expects a floating-point dtype, got i32[8]");
  CHECK(result_types("%x: f16[8]", "reduce_precision[exponent_bits=4, mantissa_bits=3] %x") == "f16[8]");
  CHECK_HAS(op_error("%x: f32[8]", "reduce_precision[exponent_bits=8] %x"), "mantissa_bits");
}

TEST_CASE("split: one result per size along the axis; sizes non-negative and adding up to the dimension") {
  CHECK(result_types("%x: f32[4,5]", "%a, %b = split[sizes=(2, 3), axis=1] %x") == "(f32[4,2], f32[4,3])");
  CHECK(result_types("%x: bf16[4,5]", "repeat[repeats=3, axis=1] %x") == "bf16[4,15]");
  CHECK(result_types("%x: i32[2]", "repeat[repeats=1, axis=0] %x") == "i32[2]");
  CHECK_OP_ERROR("%x: f32[4,5]", "repeat[repeats=0, axis=1] %x", "repeat: repeats must be at least 1, got 0");
  CHECK_OP_ERROR("%x: f32[4,5]", "repeat[repeats=2, axis=2] %x", "repeat: axis 2 is out of range for rank 2");
  CHECK_OP_ERROR("%x: f32", "repeat[repeats=2, axis=0] %x", "repeat: axis 0 is out of range for rank 0");
  CHECK(result_types("%x: i32[6]", "%a, %b, %c = split[sizes=(0, 6, 0), axis=0] %x") == "(i32[0], i32[6], i32[0])");
  CHECK(result_types("%x: bf16[3,2]", "%a = split[sizes=(3), axis=0] %x") == "bf16[3,2]");
  CHECK_OP_ERROR("%x: f32[4,5]", "%a, %b = split[sizes=(2, 2), axis=1] %x",
                 "split: sizes (2, 2) add up to 4, but dimension 1 of f32[4,5] has size 5");
  CHECK_OP_ERROR("%x: f32[4,5]", "%a, %b = split[sizes=(7, -2), axis=1] %x", "split: sizes must be non-negative, got (7, -2)");
  CHECK_OP_ERROR("%x: f32[4,5]", "%a = split[sizes=(4), axis=2] %x", "split: axis 2 is out of range for rank 2");
  CHECK_OP_ERROR("%x: f32[4,5]", "split[sizes=(), axis=0] %x", "split: sizes must name at least one piece");
  CHECK_OP_ERROR("%x: f32", "%a = split[sizes=(1), axis=0] %x", "split: axis 0 is out of range for rank 0");
  // The parser checks the result count against the shape rule's.
  CHECK_HAS(op_error("%x: f32[4,5]", "%a = split[sizes=(2, 3), axis=1] %x"), "t.tsr:2:");
}

TEST_CASE("split: sizes whose sum overflows are an error, not undefined behaviour") {
  CHECK_OP_ERROR("%x: f32[4]", "%a, %b = split[sizes=(9223372036854775807, 9223372036854775807), axis=0] %x",
                 "split: sizes (9223372036854775807, 9223372036854775807) overflow");
}

TEST_CASE("round: rounding_method is one of lax's two, away_from_zero by default") {
  Module m = parse(one_op_module("%x: f32[8]", "%r = round %x"));
  CHECK(m.find("f")->ops().back().str_param("rounding_method") == "away_from_zero");
  CHECK(result_types("%x: bf16[8]", "round[rounding_method=to_nearest_even] %x") == "bf16[8]");
  CHECK_OP_ERROR("%x: f32[8]", "round[rounding_method=half_up] %x",
                 "parameter 'rounding_method' of round is 'half_up'; expected one of away_from_zero, to_nearest_even");
}
