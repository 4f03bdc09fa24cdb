// The names and C++ types of op params, one typed key each: code outside
// ir/ reads `op.param(keys::axis)` rather than `op.int_param("axis")`, so a
// misspelt name or a wrong type is a compile error, and every reader of a
// param is one grep away. tests/ir/test_param_keys.cpp checks each key's type
// against every primitive schema that declares a param of that name.
#pragma once

#include "ir/params.h"

namespace tessera::keys {

inline constexpr ParamKey<bool> add{"add"};
inline constexpr ParamKey<bool> approx{"approx"};
inline constexpr ParamKey<std::vector<int64_t>> axes{"axes"};
inline constexpr ParamKey<int64_t> axis{"axis"};
inline constexpr ParamKey<std::string> axis_name{"axis_name"};
inline constexpr ParamKey<int64_t> axis_size{"axis_size"};
inline constexpr ParamKey<BodyPtr> body{"body"};
inline constexpr ParamKey<std::vector<BodyPtr>> branches{"branches"};
inline constexpr ParamKey<std::vector<int64_t>> broadcast_dimensions{"broadcast_dimensions"};
inline constexpr ParamKey<BodyPtr> bwd{"bwd"};
inline constexpr ParamKey<BodyPtr> call{"call"};
inline constexpr ParamKey<BodyPtr> callee{"callee"};
inline constexpr ParamKey<int64_t> collective_id{"collective_id"};
inline constexpr ParamKey<BodyPtr> cond{"cond"};
inline constexpr ParamKey<std::vector<int64_t>> cost_estimate{"cost_estimate"};
inline constexpr ParamKey<bool> descending{"descending"};
inline constexpr ParamKey<int64_t> dimension{"dimension"};
inline constexpr ParamKey<std::vector<int64_t>> dimensions{"dimensions"};
inline constexpr ParamKey<DType> dtype{"dtype"};
inline constexpr ParamKey<int64_t> exponent_bits{"exponent_bits"};
inline constexpr ParamKey<std::string> fmt{"fmt"};
inline constexpr ParamKey<BodyPtr> fwd{"fwd"};
inline constexpr ParamKey<std::vector<int64_t>> grid{"grid"};
inline constexpr ParamKey<std::vector<std::string>> grid_names{"grid_names"};
inline constexpr ParamKey<std::vector<int64_t>> high{"high"};
inline constexpr ParamKey<std::vector<int64_t>> in_axes{"in_axes"};
inline constexpr ParamKey<DType> index_dtype{"index_dtype"};
inline constexpr ParamKey<IntPairs> input_output_aliases{"input_output_aliases"};
inline constexpr ParamKey<BodyPtr> jvp{"jvp"};
inline constexpr ParamKey<BodyPtr> kernel{"kernel"};
inline constexpr ParamKey<std::string> kernel_type{"kernel_type"};
inline constexpr ParamKey<std::vector<int64_t>> lhs_batch{"lhs_batch"};
inline constexpr ParamKey<std::vector<int64_t>> lhs_contracting{"lhs_contracting"};
inline constexpr ParamKey<std::vector<int64_t>> limit_indices{"limit_indices"};
inline constexpr ParamKey<std::vector<int64_t>> low{"low"};
inline constexpr ParamKey<int64_t> mantissa_bits{"mantissa_bits"};
inline constexpr ParamKey<std::vector<std::string>> mesh_axes{"mesh_axes"};
inline constexpr ParamKey<std::vector<int64_t>> mesh_shape{"mesh_shape"};
inline constexpr ParamKey<std::string> msg{"msg"};
inline constexpr ParamKey<std::string> name{"name"};
inline constexpr ParamKey<DType> new_dtype{"new_dtype"};
inline constexpr ParamKey<std::vector<int64_t>> new_sizes{"new_sizes"};
inline constexpr ParamKey<int64_t> num_carry{"num_carry"};
inline constexpr ParamKey<int64_t> num_consts{"num_consts"};
inline constexpr ParamKey<int64_t> num_keys{"num_keys"};
inline constexpr ParamKey<int64_t> num_res{"num_res"};
inline constexpr ParamKey<int64_t> num_scalar_prefetch{"num_scalar_prefetch"};
inline constexpr ParamKey<std::vector<int64_t>> out_axes{"out_axes"};
inline constexpr ParamKey<std::vector<int64_t>> permutation{"permutation"};
inline constexpr ParamKey<int64_t> repeats{"repeats"};
inline constexpr ParamKey<bool> reverse{"reverse"};
inline constexpr ParamKey<std::vector<int64_t>> rhs_batch{"rhs_batch"};
inline constexpr ParamKey<std::vector<int64_t>> rhs_contracting{"rhs_contracting"};
inline constexpr ParamKey<std::string> rounding_method{"rounding_method"};
inline constexpr ParamKey<std::vector<Type>> scratch{"scratch"};
inline constexpr ParamKey<std::vector<int64_t>> shape{"shape"};
inline constexpr ParamKey<int64_t> shift{"shift"};
inline constexpr ParamKey<std::vector<int64_t>> sizes{"sizes"};
inline constexpr ParamKey<std::vector<int64_t>> slice_sizes{"slice_sizes"};
inline constexpr ParamKey<std::vector<int64_t>> start_indices{"start_indices"};
inline constexpr ParamKey<std::vector<int64_t>> strides{"strides"};
inline constexpr ParamKey<int64_t> value{"value"};
inline constexpr ParamKey<int64_t> y{"y"};

// Calls `f` on every key (the schema test walks them all).
template <class F>
void for_each_key(F&& f) {
  f(add);
  f(approx);
  f(axes);
  f(axis);
  f(axis_name);
  f(axis_size);
  f(body);
  f(branches);
  f(broadcast_dimensions);
  f(bwd);
  f(call);
  f(callee);
  f(collective_id);
  f(cond);
  f(cost_estimate);
  f(descending);
  f(dimension);
  f(dimensions);
  f(dtype);
  f(exponent_bits);
  f(fmt);
  f(fwd);
  f(grid);
  f(grid_names);
  f(high);
  f(in_axes);
  f(index_dtype);
  f(input_output_aliases);
  f(jvp);
  f(kernel);
  f(kernel_type);
  f(lhs_batch);
  f(lhs_contracting);
  f(limit_indices);
  f(low);
  f(mantissa_bits);
  f(mesh_axes);
  f(mesh_shape);
  f(msg);
  f(name);
  f(new_dtype);
  f(new_sizes);
  f(num_carry);
  f(num_consts);
  f(num_keys);
  f(num_res);
  f(num_scalar_prefetch);
  f(out_axes);
  f(permutation);
  f(repeats);
  f(reverse);
  f(rhs_batch);
  f(rhs_contracting);
  f(rounding_method);
  f(scratch);
  f(shape);
  f(shift);
  f(sizes);
  f(slice_sizes);
  f(start_indices);
  f(strides);
  f(value);
  f(y);
}

}  // namespace tessera::keys
