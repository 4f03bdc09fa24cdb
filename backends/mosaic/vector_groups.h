// The groups of Mosaic value rules, one file each; add_vector_rules
// (vector_rules.cpp) registers them all.
#pragma once

#include <string>

#include "backends/lowering.h"

namespace tessera::backends::mosaic {

void add_elementwise_rules(LoweringTable& t);  // vector_elementwise.cpp: arith / math ops, comparisons, select_n
void add_convert_rules(LoweringTable& t);      // vector_convert.cpp: convert_element_type, bitcast_convert_type
void add_shape_rules(LoweringTable& t);        // vector_shape.cpp: broadcasts, reshapes, transpose, iota, slices, roll...
void add_reduce_rules(LoweringTable& t);       // vector_reduce.cpp: reduce_*, argmax / argmin, cumsum
void add_matmul_rules(LoweringTable& t);       // vector_matmul.cpp: dot_general
void add_random_rules(LoweringTable& t);       // vector_random.cpp: prng_seed, prng_random_bits
void add_composite_rules(LoweringTable& t);    // vector_composite.cpp: erf_inv, nextafter

// `tpu.iota` of `shape` counting along `dimension`, of dtype `d` (vector_shape.cpp).
std::string emit_iota(EmitContext& ctx, const Shape& shape, int64_t dimension, DType d);

}  // namespace tessera::backends::mosaic
