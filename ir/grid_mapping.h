// A typed view of a pallas_call's parameters, following `GridMapping` in
// jax/_src/pallas/core.py.
//
// Calling conventions (`GridMapping`, jax/_src/pallas/core.py):
//   pallas_call operands: *dynamic_grid_sizes, *scalar_prefetch, *inputs
//   kernel parameters:    *scalar_prefetch, *inputs, *outputs, *scratch
//   index map parameters: *program_ids (i32), *scalar_prefetch
#pragma once

#include <string>
#include <vector>

#include "ir/block_geometry.h"
#include "ir/ir.h"

namespace tessera {

struct GridMapping {
  std::vector<int64_t> grid;               // -1: a dynamic size (an operand)
  std::vector<std::string> grid_names;     // empty or one per axis
  std::vector<BlockSpec> in_specs, out_specs;
  std::vector<Type> in_types;              // full arrays of the inputs
  std::vector<Type> out_types;             // full arrays of the outputs
  std::vector<Type> scalar_prefetch_types;
  std::vector<Type> scratch_types;
  // input_output_aliases as (array input, output) pairs. The param numbers
  // inputs as JAX does, scalar-prefetch operands first (with one prefetch
  // operand, `(1, 0)` aliases the first array input to output 0); here the
  // input is an index among the array inputs (param value - number of
  // scalar-prefetch operands). A negative one names a prefetch operand,
  // which the verifier rejects.
  IntPairs aliases;
  std::vector<int64_t> vmapped_dims;
  std::vector<std::string> dimension_semantics;  // empty or one per axis
  std::string kernel_type = "tc";
  std::string name;
  BodyPtr kernel;
  int num_dynamic = 0;

  int num_inputs() const { return static_cast<int>(in_specs.size()); }
  int num_outputs() const { return static_cast<int>(out_specs.size()); }
  int num_scalar_prefetch() const { return static_cast<int>(scalar_prefetch_types.size()); }
  int grid_rank() const { return static_cast<int>(grid.size()); }
  // Operand index of input i / scalar prefetch j.
  int input_operand(int i) const { return num_dynamic + num_scalar_prefetch() + i; }
  int scalar_prefetch_operand(int j) const { return num_dynamic + j; }
  // Kernel parameter index of input i / output o / scratch s.
  int input_param(int i) const { return num_scalar_prefetch() + i; }
  int output_param(int o) const { return num_scalar_prefetch() + num_inputs() + o; }
  int scratch_param(int s) const { return num_scalar_prefetch() + num_inputs() + num_outputs() + s; }

  // Spec and full array type of block mapping m (inputs first, then outputs).
  const BlockSpec& spec(int m) const { return m < num_inputs() ? in_specs[m] : out_specs[m - num_inputs()]; }
  const Type& array(int m) const { return m < num_inputs() ? in_types[m] : out_types[m - num_inputs()]; }
  std::vector<BlockDim> dims(int m) const { return block_dims(spec(m), array(m).shape()); }
  // Where mapping m's blocks lie in its (padded) array: see ir/block_geometry.h.
  BlockGeometry geometry(int m) const { return block_geometry(dims(m), array(m).shape()); }
  // "input x" / "output 0": how messages name mapping m, using kernel parameter names.
  std::string describe(int m) const;
  // The grid axis each of the kernel's program_id axes means: a batched
  // kernel (vmap) does not see its vmapped axes, so program_id(k) is grid axis
  // kernel_axes()[k]. Index maps see every axis.
  std::vector<int> kernel_axes() const;
  bool is_parallel(int axis) const {
    return axis < static_cast<int>(dimension_semantics.size()) && dimension_semantics[axis] != "arbitrary";
  }

  // The input_output_aliases param value for pairs numbered as `aliases` is.
  IntPairs alias_param(const IntPairs& pairs) const;
  // The param's own numbering of input i (for messages).
  int64_t alias_param_input(int64_t i) const { return i + num_scalar_prefetch(); }

  // Types the conventions require.
  std::vector<Type> expected_kernel_params() const;
  std::vector<Type> expected_index_map_params() const;
};

// Decodes the params of a pallas_call op (its operand types included).
GridMapping grid_mapping(const Op& op);

}  // namespace tessera
