// The Mosaic vocabulary the importer knows: every op JAX's TPU lowering
// writes (jax/_src/pallas/mosaic/lowering.py and sc_lowering.py) and every op
// `tessera emit mosaic` writes, with what it becomes or why it is refused.
// "value rule" entries are the value_rules() table (a test keeps the two
// equal); "structural" ones belong to the body translator.
#include <algorithm>

#include "frontends/mosaic/import_rules.h"

namespace tessera::mlir_text {
namespace {

constexpr std::string_view kValue = "value rule", kStructural = "structural", kUnsupported = "unsupported";

const std::vector<CoverageEntry> kCoverage = {
    // ---- arith ----
    {"arith.constant", kValue, "a literal (scalar), a broadcast literal (splat), or runs of equal / evenly spaced values "
                       "concatenated (non-splat, up to 256 runs)"},
    {"arith.addf", kValue, "add"},
    {"arith.subf", kValue, "sub"},
    {"arith.mulf", kValue, "mul"},
    {"arith.divf", kValue, "div"},
    {"arith.remf", kValue, "rem (fmod: the dividend's sign)"},
    {"arith.negf", kValue, "neg"},
    {"arith.maximumf", kValue, "max (NaN propagates)"},
    {"arith.minimumf", kValue, "min (NaN propagates)"},
    {"arith.maxnumf", kValue, "max, a NaN operand giving the other (select_n on ne x, x)"},
    {"arith.minnumf", kValue, "min, a NaN operand giving the other"},
    {"arith.addi", kValue, "add (i1: xor)"},
    {"arith.subi", kValue, "sub (i1: xor)"},
    {"arith.muli", kValue, "mul (i1: and)"},
    {"arith.divsi", kValue, "div (toward zero)"},
    {"arith.remsi", kValue, "rem (the dividend's sign)"},
    {"arith.divui", kValue, "div on u8 / u32 (i16 zero-extended to i32); i64 refused (no u64)"},
    {"arith.remui", kValue, "rem on u8 / u32 (i16 zero-extended to i32); i64 refused (no u64)"},
    {"arith.floordivsi", kValue, "div, minus 1 where the remainder is nonzero and the signs differ"},
    {"arith.ceildivsi", kValue, "div, plus 1 where the remainder is nonzero and the signs agree"},
    {"arith.ceildivui", kValue, "unsigned div, plus 1 where the remainder is nonzero"},
    {"arith.maxsi", kValue, "max"},
    {"arith.minsi", kValue, "min"},
    {"arith.maxui", kValue, "max of the operands xor the sign bit, xor the sign bit"},
    {"arith.minui", kValue, "min of the operands xor the sign bit, xor the sign bit"},
    {"arith.andi", kValue, "and"},
    {"arith.ori", kValue, "or"},
    {"arith.xori", kValue, "xor"},
    {"arith.shli", kValue, "shift_left"},
    {"arith.shrsi", kValue, "shift_right_arithmetic"},
    {"arith.shrui", kValue, "shift_right_logical"},
    {"arith.cmpi", kValue, "eq ne lt le gt ge; unsigned predicates compare the operands xor the sign bit; "
                   "i1 signed predicates swap the operands (true is -1)"},
    {"arith.cmpf", kValue, "eq gt ge lt le (ordered); une is ne; the other unordered ones negate or add an isnan test; "
                   "false / true are constants"},
    {"arith.select", kValue, "select_n (an i1 scalar condition broadcasts)"},
    {"arith.extf", kValue, "convert_element_type"},
    {"arith.truncf", kValue, "convert_element_type (to nearest even; other rounding modes refused)"},
    {"arith.extsi", kValue, "convert_element_type (i1: select_n of 0 / -1)"},
    {"arith.extui", kValue, "convert_element_type, then and with the source's mask (i1: 0 / 1)"},
    {"arith.trunci", kValue, "convert_element_type (wraps; to i1: the lowest bit)"},
    {"arith.sitofp", kValue, "convert_element_type (i1: 0.0 / -1.0)"},
    {"arith.uitofp", kValue, "convert_element_type from u8 / u32 (i16 zero-extended); i64 refused"},
    {"arith.fptosi", kValue, "convert_element_type (toward zero)"},
    {"arith.fptoui", kValue, "convert_element_type through u8 / u32"},
    {"arith.index_cast", kValue, "nothing for i32 <-> index (index is i32); convert_element_type for other widths"},
    {"arith.index_castui", kValue, "as index_cast, zero-extending"},
    {"arith.bitcast", kValue, "bitcast_convert_type (equal widths)"},
    // ---- math ----
    {"math.exp", kValue, "exp"},
    {"math.exp2", kValue, "exp2"},
    {"math.expm1", kValue, "expm1"},
    {"math.log", kValue, "log"},
    {"math.log1p", kValue, "log1p"},
    {"math.log2", kValue, "log / ln 2"},
    {"math.log10", kValue, "log / ln 10"},
    {"math.sqrt", kValue, "sqrt"},
    {"math.rsqrt", kValue, "rsqrt"},
    {"math.cbrt", kValue, "cbrt"},
    {"math.tanh", kValue, "tanh"},
    {"math.sin", kValue, "sin"},
    {"math.cos", kValue, "cos"},
    {"math.tan", kValue, "tan"},
    {"math.atan", kValue, "atan2 x, 1"},
    {"math.atan2", kValue, "atan2"},
    {"math.erf", kValue, "erf"},
    {"math.powf", kValue, "pow"},
    {"math.absf", kValue, "abs"},
    {"math.absi", kValue, "abs (wraps)"},
    {"math.floor", kValue, "floor"},
    {"math.ceil", kValue, "ceil"},
    {"math.trunc", kValue, "floor or ceil by sign"},
    {"math.round", kValue, "round (halves away from zero)"},
    {"math.roundeven", kValue, "round[rounding_method=to_nearest_even]"},
    {"math.ctlz", kValue, "clz"},
    {"math.ctpop", kValue, "population_count"},
    {"math.copysign", kValue, "abs, negated where the sign bit of y is set"},
    {"math.fma", kValue, "mul and add in f64, rounded to the dtype (f64: rounded twice)"},
    {"math.isnan", kValue, "ne x, x"},
    {"math.isinf", kValue, "eq abs(x), inf"},
    {"math.isfinite", kValue, "is_finite"},
    {"math.erfc", kUnsupported, "1 - erf loses the small values erfc exists for; Pallas does not write it"},
    {"math.sinh", kUnsupported, "tessera has no sinh; Pallas does not write it"},
    {"math.cosh", kUnsupported, "tessera has no cosh; Pallas does not write it"},
    {"math.asin", kUnsupported, "tessera has no asin; Pallas does not write it"},
    {"math.acos", kUnsupported, "tessera has no acos; Pallas does not write it"},
    {"math.fpowi", kUnsupported, "Pallas writes integer_pow as multiplications, not fpowi"},
    // ---- vector ----
    {"vector.broadcast", kValue, "broadcast_in_dim onto the trailing dims"},
    {"vector.shape_cast", kValue, "reshape"},
    {"vector.splat", kValue, "broadcast_in_dim of the scalar"},
    {"vector.extract", kValue, "slice (dynamic_slice for dynamic positions), then reshape"},
    {"vector.extract_strided_slice", kValue, "slice"},
    {"vector.transpose", kValue, "transpose"},
    {"vector.multi_reduction", kValue, "reduce_sum / reduce_max / ... over reduction_dims, then combined with the "
                               "accumulator (left out when it is the kind's identity)"},
    {"vector.reduction", kValue, "a reduction over every dim, then the optional accumulator"},
    {"vector.fma", kValue, "as math.fma"},
    {"vector.contract", kUnsupported, "Pallas writes tpu.matmul for dot_general, never vector.contract"},
    {"vector.load", kStructural, "get of the indexed block Ref"},
    {"vector.store", kStructural, "swap into the indexed block Ref"},
    // ---- memref ----
    {"memref.load", kStructural, "get of one SMEM element"},
    {"memref.store", kStructural, "swap of one SMEM element"},
    {"memref.alloca", kStructural, "a scratch Ref of the enclosing run_scoped"},
    {"memref.atomic_rmw", kUnsupported, "SparseCore atomic updates have no tessera primitive"},
    // ---- scf / func / cf ----
    {"scf.if", kStructural, "cond on the i1 condition"},
    {"scf.for", kStructural, "for (i32 bounds), carried values as loop state"},
    {"scf.while", kStructural, "while"},
    {"scf.condition", kStructural, "the condition of the enclosing while"},
    {"scf.yield", kStructural, "the results of the enclosing region"},
    {"scf.index_switch", kStructural, "cond on the index (nested ifs)"},
    {"func.return", kStructural, "the body's return (an index map's block indices)"},
    {"func.call", kStructural, "call of the imported callee"},
    {"cf.assert", kValue, "debug_check[msg] of the condition"},
    // ---- tpu: values ----
    {"tpu.matmul", kValue, "dot_general with the dimension numbers (preferred_element_type: the accumulator's), "
                   "transposed to the output order, plus the accumulator (left out when a splat zero); "
                   "precision not modelled"},
    {"tpu.iota", kValue, "iota per listed dim, collapsed row-major"},
    {"tpu.transpose", kValue, "transpose"},
    {"tpu.dynamic_rotate", kValue, "roll by the i32 amount (strided rotations refused)"},
    {"tpu.rotate", kValue, "roll[shift] (strided rotations refused)"},
    {"tpu.concatenate", kValue, "concatenate"},
    {"tpu.repeat", kValue, "repeat"},
    {"tpu.bitcast", kValue, "bitcast_convert_type (equal widths; a repacking bitcast is refused)"},
    {"tpu.assume_multiple", kValue, "multiple_of"},
    {"tpu.dynamic_gather", kValue, "take_along_axis (one dim; an index outside it stops the run where Mosaic wraps it)"},
    {"tpu.reciprocal", kValue, "reciprocal[approx]"},
    {"tpu.weird", kValue, "not is_finite"},
    {"tpu.reduce_index", kValue, "argmax / argmin (the first extreme)"},
    {"tpu.sort", kValue, "sort (1-D; with a mask, a first key putting valid lanes first)"},
    {"tpu.prng_set_seed_32", kValue, "prng_seed"},
    {"tpu.prng_random_bits", kValue, "prng_random_bits (i32)"},
    {"tpu.trace_value", kValue, "nothing: a profiler event"},
    {"tpu.pack_elementwise", kUnsupported, "packs sub-32-bit values into words by the vreg layout, which tessera does not model"},
    {"tpu.unpack_elementwise", kUnsupported, "unpacks sub-32-bit values from words by the vreg layout, which tessera "
                                         "does not model"},
    {"tpu.stochastic_convert", kUnsupported, "stochastic rounding has no tessera primitive"},
    {"tpu.matmul_push_rhs", kUnsupported, "explicit MXU staging has no tessera counterpart (write dot_general)"},
    {"tpu.matmul_acc_lhs", kUnsupported, "explicit MXU staging has no tessera counterpart (write dot_general)"},
    {"tpu.matmul_pop", kUnsupported, "explicit MXU staging has no tessera counterpart (write dot_general)"},
    {"tpu.matmul_lhs_fifo", kUnsupported, "explicit MXU staging has no tessera counterpart (write dot_general)"},
    {"tpu.matmul_pop_fifo", kUnsupported, "explicit MXU staging has no tessera counterpart (write dot_general)"},
    // ---- tpu: memory, DMAs, semaphores, ids, regions, debugging ----
    {"tpu.vector_load", kStructural, "get (load with a mask) of the indexed block Ref"},
    {"tpu.vector_store", kStructural, "swap (store with a mask, addupdate with add) into the indexed block Ref"},
    {"tpu.strided_load", kStructural, "get with strided slices"},
    {"tpu.strided_store", kStructural, "swap with strided slices"},
    {"tpu.memref_slice", kStructural, "an indexer of later uses: the Ref with slices at the base indices"},
    {"tpu.memref_squeeze", kStructural, "an indexer of later uses: the unit dims taken at 0"},
    {"tpu.memref_reshape", kStructural, "a reshaped view of the Ref"},
    {"tpu.memref_bitcast", kStructural, "a bitcast view of the Ref"},
    {"tpu.enqueue_dma", kStructural, "dma_start"},
    {"tpu.wait_dma2", kStructural, "dma_wait"},
    {"tpu.enqueue_indirect_dma", kStructural, "dma_start with an offsets indexer (gather / scatter)"},
    {"tpu.wait_indirect_dma", kStructural, "dma_wait with an offsets indexer"},
    {"tpu.sem_signal", kStructural, "semaphore_signal"},
    {"tpu.sem_wait", kStructural, "semaphore_wait"},
    {"tpu.sem_read", kStructural, "semaphore_read"},
    {"tpu.sem_barrier", kStructural, "get_barrier_semaphore"},
    {"tpu.sem_alloc", kStructural, "a semaphore scratch Ref of the enclosing run_scoped"},
    {"tpu.device_id", kStructural, "axis_index of the --devices axis (needs --devices N)"},
    {"tpu.iteration_bound", kStructural, "num_programs"},
    {"tpu.region", kStructural, "run_scoped"},
    {"tpu.yield", kStructural, "the end of the enclosing region"},
    {"tpu.trace_start", kStructural, "nothing: a profiler scope"},
    {"tpu.trace_stop", kStructural, "nothing: a profiler scope"},
    {"tpu.trace", kStructural, "its region's ops: a profiler scope"},
    {"tpu.log", kStructural, "debug_print"},
    {"tpu.log_buffer", kStructural, "debug_print of the buffer's values"},
    {"tpu.delay", kStructural, "delay"},
};

}  // namespace

const std::vector<CoverageEntry>& import_coverage() { return kCoverage; }

const CoverageEntry* find_coverage(std::string_view op) {
  static const std::vector<const CoverageEntry*> sorted = [] {
    std::vector<const CoverageEntry*> v;
    for (const CoverageEntry& e : kCoverage) v.push_back(&e);
    std::sort(v.begin(), v.end(), [](const CoverageEntry* a, const CoverageEntry* b) { return a->op < b->op; });
    return v;
  }();
  auto it = std::lower_bound(sorted.begin(), sorted.end(), op, [](const CoverageEntry* e, std::string_view k) { return e->op < k; });
  return it != sorted.end() && (*it)->op == op ? *it : nullptr;
}

}  // namespace tessera::mlir_text
