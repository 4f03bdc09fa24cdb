// Reductions, arg reductions, cumulative sums and dot_general.
#include <algorithm>

#include "ir/prims/shape_util.h"

namespace tessera {
using namespace prims;
namespace {

std::vector<Type> reduce(const Op& op, bool bool_only) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  if (bool_only ? !(is_bool(x.dtype()) || is_int(x.dtype())) : is_bool(x.dtype()))
    fail(op, "does not apply to " + x.str());
  const auto& axes = op.ints_param("axes");
  Shape s;
  for (int64_t a : axes) check_axis(op, a, x.rank());
  for (int d = 0; d < x.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) s.push_back(x.shape()[d]);
  return {Type::array(x.dtype(), s)};
}

std::vector<Type> arg_reduce(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  int64_t axis = op.int_param("axis");
  check_axis(op, axis, x.rank());
  DType idx = op.dtype_param("index_dtype");
  if (!is_int(idx)) fail(op, "index_dtype must be an integer dtype");
  Shape s = x.shape();
  s.erase(s.begin() + axis);
  return {Type::array(idx, s)};
}

std::vector<Type> cumulative(const Op& op) {
  expect_operands(op, 1);
  Type x = array_operand(op, 0);
  check_axis(op, op.int_param("axis"), x.rank());
  if (is_bool(x.dtype())) fail(op, "does not apply to bool");
  return {x};
}

void check_dims(const Op& op, const std::vector<int64_t>& dims, int rank, const char* what) {
  for (int64_t d : dims) check_axis(op, d, rank, what);
  std::vector<int64_t> s = dims;
  std::sort(s.begin(), s.end());
  if (std::adjacent_find(s.begin(), s.end()) != s.end()) fail(op, std::string(what) + " repeat a dimension");
}

std::vector<Type> dot_general(const Op& op) {
  expect_operands(op, 2);
  Type a = array_operand(op, 0), b = array_operand(op, 1);
  const auto& lc = op.ints_param("lhs_contracting");
  const auto& rc = op.ints_param("rhs_contracting");
  const auto& lb = op.ints_param("lhs_batch");
  const auto& rb = op.ints_param("rhs_batch");
  if (lc.size() != rc.size()) fail(op, "lhs_contracting and rhs_contracting differ in length");
  if (lb.size() != rb.size()) fail(op, "lhs_batch and rhs_batch differ in length");
  check_dims(op, lc, a.rank(), "lhs dimensions");
  check_dims(op, rc, b.rank(), "rhs dimensions");
  check_dims(op, lb, a.rank(), "lhs batch dimensions");
  check_dims(op, rb, b.rank(), "rhs batch dimensions");
  for (size_t i = 0; i < lc.size(); ++i)
    if (a.shape()[lc[i]] != b.shape()[rc[i]])
      fail(op, "contracting dimensions differ in size: " + a.str() + " dim " + std::to_string(lc[i]) + " vs " + b.str() +
                   " dim " + std::to_string(rc[i]));
  for (size_t i = 0; i < lb.size(); ++i)
    if (a.shape()[lb[i]] != b.shape()[rb[i]]) fail(op, "batch dimensions differ in size");
  if (a.dtype() != b.dtype()) fail(op, "operand dtypes differ: " + a.str() + " and " + b.str());
  if (is_bool(a.dtype())) fail(op, "does not apply to bool");
  Shape s;
  for (int64_t d : lb) s.push_back(a.shape()[d]);
  auto free_dims = [&](const Type& t, const std::vector<int64_t>& c, const std::vector<int64_t>& bt) {
    for (int d = 0; d < t.rank(); ++d)
      if (std::find(c.begin(), c.end(), d) == c.end() && std::find(bt.begin(), bt.end(), d) == bt.end())
        s.push_back(t.shape()[d]);
  };
  free_dims(a, lc, lb);
  free_dims(b, rc, rb);
  const Param& pref = op.param("preferred_element_type");
  DType out = std::holds_alternative<DType>(pref) ? std::get<DType>(pref) : a.dtype();
  return {Type::array(out, s)};
}

}  // namespace

void register_reductions(Registry& r) {
  using K = ParamKind;
  for (const char* n : {"reduce_sum", "reduce_max", "reduce_min", "reduce_prod"})
    r.add({n, std::string(n) + " over axes", {req("axes", K::Ints)}, [](const Op& op) { return reduce(op, false); }, {}, false});
  for (const char* n : {"reduce_and", "reduce_or"})
    r.add({n, std::string(n) + " over axes", {req("axes", K::Ints)}, [](const Op& op) { return reduce(op, true); }, {}, false});
  for (const char* n : {"argmax", "argmin"})
    r.add({n, std::string("index of the first ") + (n[3] == 'm' && n[4] == 'a' ? "maximum" : "minimum") + " along axis",
           {req("axis", K::Int), opt("index_dtype", K::DType, DType::i32)}, arg_reduce, {}, false});
  r.add({"cumsum", "inclusive cumulative sum along axis", {req("axis", K::Int), opt("reverse", K::Bool, false)},
         cumulative, {}, false});
  r.add({"dot_general", "generalized matmul: batch dims, then lhs free dims, then rhs free dims",
         {req("lhs_contracting", K::Ints), req("rhs_contracting", K::Ints),
          opt("lhs_batch", K::Ints, std::vector<int64_t>{}), opt("rhs_batch", K::Ints, std::vector<int64_t>{}),
          opt("preferred_element_type", K::DType)},
         dot_general, {}, false});
}

}  // namespace tessera
