// Shape and layout primitives as generators: each maps the result's
// multi-index to an operand's, so `transpose(broadcast(x))` stored into a Ref
// is one loop reading x in place, with no buffer in between.
//
// Ops that pick among operands (concatenate, pad, dynamic_update_slice) read
// every candidate at an index clamped into its range and select, so no lane
// ever reads outside an operand (lazy operands may be Ref reads). Run-time
// starts and indices are clamped into range as the interpreter does; a
// take_along_axis index outside the axis, an error in the interpreter, is
// clamped here (a kernel cannot stop mid-run).
#include <algorithm>

#include "backends/llvm/value_helpers.h"

namespace tessera::backends::llvm_lowering {
namespace {

using Index = std::vector<llvm::Value*>;

const Shape& shape_of(const Block& x) { return x.type.shape(); }

llvm::Value* clamp_index(Lowering& L, llvm::Value* i, int64_t lo, int64_t hi) {
  auto& B = L.b;
  i = B.CreateSelect(B.CreateICmpSLT(i, L.i64(lo)), L.i64(lo), i);
  return B.CreateSelect(B.CreateICmpSGT(i, L.i64(hi)), L.i64(hi), i);
}

// A run-time integer scalar operand as i64 (signed or unsigned by its dtype).
llvm::Value* index_value(Lowering& L, const Block& s, const Index& idx = {}) {
  llvm::Value* v = element_at(L, s, idx);
  return is_unsigned(s.type.dtype()) ? L.b.CreateZExtOrTrunc(v, L.b.getInt64Ty()) : L.b.CreateSExtOrTrunc(v, L.b.getInt64Ty());
}

// Result `result` of `op` reads operand `x` at `map(index)`.
void define_view(Lowering& L, const Op& op, int result, std::function<Index(Lowering&, const Index&)> map, const Block& x) {
  L.define(op.results[result], generator(op.results[result]->type, {x}, [x, map](Lowering& L2, const Index& idx) {
             return x.element(L2, map(L2, idx));
           }));
}

void lower_broadcast_in_dim(Lowering& L, const Op& op) {
  Block x = L.value(op.main_operand(0));
  std::vector<int64_t> dims = op.param(keys::broadcast_dimensions);
  Shape xs = shape_of(x);
  define_view(L, op, 0, [dims, xs](Lowering& L2, const Index& idx) {
    Index in;
    for (size_t i = 0; i < dims.size(); ++i) in.push_back(xs[i] == 1 ? L2.i64(0) : idx[static_cast<size_t>(dims[i])]);
    return in;
  }, x);
}

// reshape, squeeze, expand_dims: the same row-major elements; the operand's
// index drops or inserts size-1 dims, or goes through the linear index.
void lower_reshape(Lowering& L, const Op& op) {
  Block x = L.value(op.main_operand(0));
  Shape in = shape_of(x), out = op.results[0]->type.shape();
  Shape in_big, out_big;  // the dims of size > 1: equal lists need no division
  for (int64_t n : in)
    if (n != 1) in_big.push_back(n);
  for (int64_t n : out)
    if (n != 1) out_big.push_back(n);
  define_view(L, op, 0, [in, out, same = in_big == out_big](Lowering& L2, const Index& idx) {
    if (same) {
      Index big, r;
      for (size_t d = 0; d < out.size(); ++d)
        if (out[d] != 1) big.push_back(idx[d]);
      size_t k = 0;
      for (int64_t n : in) r.push_back(n == 1 ? L2.i64(0) : big[k++]);
      return r;
    }
    return delinearize(L2, L2.linear_index(out, idx), in);
  }, x);
}

void lower_transpose(Lowering& L, const Op& op) {
  Block x = L.value(op.main_operand(0));
  std::vector<int64_t> perm = op.param(keys::permutation);
  define_view(L, op, 0, [perm](Lowering&, const Index& idx) {
    Index in(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) in[static_cast<size_t>(perm[i])] = idx[i];
    return in;
  }, x);
}

void lower_iota(Lowering& L, const Op& op) {
  const Type& t = op.results[0]->type;
  int64_t dim = op.param(keys::dimension);
  DType d = t.dtype();
  // As the interpreter: the count converted to the storage type (float for
  // bf16 / f16), then rounded to the dtype's precision.
  L.define(op.results[0], generator(t, {}, [dim, d](Lowering& L2, const Index& idx) {
             llvm::Value* j = idx[static_cast<size_t>(dim)];
             if (is_narrow_float(d)) return round_float(L2, L2.b.CreateSIToFP(j, L2.b.getFloatTy()), d);
             return convert(L2, j, DType::i64, d);
           }));
}

// Selects among pieces along `dim`: piece k covers [offset[k], offset[k+1]).
// Each piece is read at its own clamped index.
llvm::Value* pick_piece(Lowering& L, const std::vector<Block>& pieces, const std::vector<int64_t>& offset, int64_t dim,
                        const Index& idx) {
  auto& B = L.b;
  llvm::Value* r = nullptr;
  for (size_t k = 0; k < pieces.size(); ++k) {
    int64_t n = pieces[k].type.shape()[static_cast<size_t>(dim)];
    if (n == 0) continue;
    Index in = idx;
    in[static_cast<size_t>(dim)] = clamp_index(L, B.CreateSub(idx[static_cast<size_t>(dim)], L.i64(offset[k])), 0, n - 1);
    llvm::Value* v = pieces[k].element(L, in);
    r = r ? B.CreateSelect(B.CreateICmpSGE(idx[static_cast<size_t>(dim)], L.i64(offset[k])), v, r) : v;
  }
  return r;
}

void lower_concatenate(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  int64_t dim = op.param(keys::dimension);
  std::vector<int64_t> offset;
  int64_t at = 0;
  for (const Block& x : xs) offset.push_back(at), at += x.type.shape()[static_cast<size_t>(dim)];
  L.define(op.results[0], generator(op.results[0]->type, xs, [xs, offset, dim](Lowering& L2, const Index& idx) {
             return pick_piece(L2, xs, offset, dim, idx);
           }));
}

void lower_slice(Lowering& L, const Op& op) {
  Block x = L.value(op.main_operand(0));
  std::vector<int64_t> start = op.param(keys::start_indices), steps = op.param(keys::strides);
  if (steps.empty()) steps.assign(start.size(), 1);
  define_view(L, op, 0, [start, steps](Lowering& L2, const Index& idx) {
    Index in;
    for (size_t d = 0; d < idx.size(); ++d)
      in.push_back(L2.b.CreateAdd(L2.b.CreateMul(idx[d], L2.i64(steps[d])), L2.i64(start[d])));
    return in;
  }, x);
}

// split: one slice along `axis` per result.
void lower_split(Lowering& L, const Op& op) {
  Block x = L.value(op.main_operand(0));
  int64_t axis = op.param(keys::axis);
  int64_t at = 0;
  for (size_t r = 0; r < op.results.size(); ++r) {
    define_view(L, op, static_cast<int>(r), [axis, at](Lowering& L2, const Index& idx) {
      Index in = idx;
      in[static_cast<size_t>(axis)] = L2.b.CreateAdd(idx[static_cast<size_t>(axis)], L2.i64(at));
      return in;
    }, x);
    at += op.results[r]->type.shape()[static_cast<size_t>(axis)];
  }
}

void lower_dynamic_slice(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  Block x = xs[0];
  std::vector<int64_t> sizes = op.param(keys::slice_sizes);
  L.define(op.results[0], generator(op.results[0]->type, xs, [xs, x, sizes](Lowering& L2, const Index& idx) {
             Index in;
             for (size_t d = 0; d < idx.size(); ++d) {
               llvm::Value* s = clamp_index(L2, index_value(L2, xs[d + 1]), 0, x.type.shape()[d] - sizes[d]);
               in.push_back(L2.b.CreateAdd(s, idx[d]));
             }
             return x.element(L2, in);
           }));
}

void lower_dynamic_update_slice(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  Block x = xs[0], u = xs[1];
  L.define(op.results[0], generator(op.results[0]->type, xs, [xs, x, u](Lowering& L2, const Index& idx) -> llvm::Value* {
             auto& B = L2.b;
             if (u.type.array_type().size() == 0) return x.element(L2, idx);
             llvm::Value* inside = B.getTrue();
             Index in;
             for (size_t d = 0; d < idx.size(); ++d) {
               int64_t n = u.type.shape()[d];
               llvm::Value* s = clamp_index(L2, index_value(L2, xs[d + 2]), 0, x.type.shape()[d] - n);
               llvm::Value* rel = B.CreateSub(idx[d], s);
               inside = B.CreateAnd(inside, B.CreateAnd(B.CreateICmpSGE(rel, L2.i64(0)), B.CreateICmpSLT(rel, L2.i64(n))));
               in.push_back(clamp_index(L2, rel, 0, n - 1));
             }
             return B.CreateSelect(inside, u.element(L2, in), x.element(L2, idx));
           }));
}

// pad x, v: operand element i lands at lo + i (negative lo / hi crop).
void lower_pad(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  Block x = xs[0], v = xs[1];
  std::vector<int64_t> lo = op.param(keys::low);
  L.define(op.results[0], generator(op.results[0]->type, xs, [x, v, lo](Lowering& L2, const Index& idx) -> llvm::Value* {
             auto& B = L2.b;
             llvm::Value* pad_value = v.element(L2, {});
             if (x.type.array_type().size() == 0) return pad_value;
             llvm::Value* inside = B.getTrue();
             Index in;
             for (size_t d = 0; d < idx.size(); ++d) {
               int64_t n = x.type.shape()[d];
               llvm::Value* rel = B.CreateSub(idx[d], L2.i64(lo[d]));
               inside = B.CreateAnd(inside, B.CreateAnd(B.CreateICmpSGE(rel, L2.i64(0)), B.CreateICmpSLT(rel, L2.i64(n))));
               in.push_back(clamp_index(L2, rel, 0, n - 1));
             }
             return B.CreateSelect(inside, x.element(L2, in), pad_value);
           }));
}

void lower_rev(Lowering& L, const Op& op) {
  Block x = L.value(op.main_operand(0));
  std::vector<int64_t> dims = op.param(keys::dimensions);
  Shape s = shape_of(x);
  define_view(L, op, 0, [dims, s](Lowering& L2, const Index& idx) {
    Index in = idx;
    for (int64_t d : dims) in[static_cast<size_t>(d)] = L2.b.CreateSub(L2.i64(s[static_cast<size_t>(d)] - 1), idx[static_cast<size_t>(d)]);
    return in;
  }, x);
}

// repeat (a tile along the axis): out[.., j, ..] = x[.., j mod n, ..].
void lower_repeat(Lowering& L, const Op& op) {
  Block x = L.value(op.main_operand(0));
  auto axis = static_cast<size_t>(op.param(keys::axis));
  int64_t n = shape_of(x)[axis];
  define_view(L, op, 0, [axis, n](Lowering& L2, const Index& idx) {
    Index in = idx;
    in[axis] = L2.b.CreateURem(idx[axis], L2.i64(n));
    return in;
  }, x);
}

// roll: element i moves to (i + shift) mod n, so out[j] = x[(j - shift) mod n].
void lower_roll(Lowering& L, const Op& op) {
  std::vector<Block> xs = operand_blocks(L, op);
  Block x = xs[0];
  int64_t axis = op.param(keys::axis);
  int64_t n = x.type.shape()[static_cast<size_t>(axis)];
  bool static_shift = op.has(keys::shift);
  int64_t shift = static_shift ? op.param(keys::shift) : 0;
  L.define(op.results[0], generator(op.results[0]->type, xs, [xs, x, axis, n, static_shift, shift](Lowering& L2, const Index& idx) {
             auto& B = L2.b;
             if (n == 0) return x.element(L2, idx);
             llvm::Value* s = static_shift ? L2.i64(((shift % n) + n) % n)
                                           : B.CreateSRem(B.CreateAdd(B.CreateSRem(index_value(L2, xs[1]), L2.i64(n)), L2.i64(n)), L2.i64(n));
             Index in = idx;
             // (j - s) mod n with j, s in [0, n): j - s + n in [1, 2n).
             in[static_cast<size_t>(axis)] = B.CreateURem(B.CreateAdd(B.CreateSub(idx[static_cast<size_t>(axis)], s), L2.i64(n)), L2.i64(n));
             return x.element(L2, in);
           }));
}

// x read along `axis` at the (clamped) integers of ids: ids[where(idx)] for
// result element idx. gather reads ids at the axis position alone,
// take_along_axis at the whole index.
void lower_indexed_read(Lowering& L, const Op& op, const std::string& empty_axis,
                        Index (*where)(const Index& idx, size_t axis)) {
  std::vector<Block> xs = operand_blocks(L, op);
  Block x = xs[0], ids = xs[1];
  auto axis = static_cast<size_t>(op.param(keys::axis));
  int64_t n = x.type.shape()[axis];
  if (n == 0 && op.results[0]->type.array_type().size() > 0) throw L.error(op, empty_axis);
  L.define(op.results[0], generator(op.results[0]->type, xs, [x, ids, axis, n, where](Lowering& L2, const Index& idx) {
             Index in = idx;
             in[axis] = clamp_index(L2, index_value(L2, ids, where(idx, axis)), 0, n - 1);
             return x.element(L2, in);
           }));
}

// gather x, idx along axis: out[.., j, ..] = x[.., clamp(idx[j]), ..].
void lower_gather(Lowering& L, const Op& op) {
  lower_indexed_read(L, op, "gather: gathers from an empty axis",
                     [](const Index& idx, size_t axis) { return Index{idx[axis]}; });
}

// take_along_axis x, idx: out[i] = x[i with axis -> idx[i]] (clamped).
void lower_take_along_axis(Lowering& L, const Op& op) {
  lower_indexed_read(L, op, "take_along_axis: takes from an empty axis", [](const Index& idx, size_t) { return idx; });
}

}  // namespace

void add_shape_rules(LlvmTable& t) {
  t.set("broadcast_in_dim", lower_broadcast_in_dim);
  for (const char* n : {"reshape", "squeeze", "expand_dims"}) t.set(n, lower_reshape);
  t.set("transpose", lower_transpose);
  t.set("iota", lower_iota);
  t.set("concatenate", lower_concatenate);
  t.set("slice", lower_slice);
  t.set("split", lower_split);
  t.set("repeat", lower_repeat);
  t.set("dynamic_slice", lower_dynamic_slice);
  t.set("dynamic_update_slice", lower_dynamic_update_slice);
  t.set("pad", lower_pad);
  t.set("rev", lower_rev);
  t.set("roll", lower_roll);
  t.set("gather", lower_gather);
  t.set("take_along_axis", lower_take_along_axis);
}

}  // namespace tessera::backends::llvm_lowering
