// Transform-dialect patterns run before the conversion to LLVM (mosaic_exec.py's PIPELINE):
// upstream rewrites of upstream vector ops, which MLIR 19's convert-vector-to-llvm leaves alone
// or lowers slowly. They change how the kernel is lowered, never what it computes.
//  1. cast_away_vector_leading_one_dim (+ canonicalization): a squeezed block dim gives
//     vector<1x64x64> loads and shape_casts; without this each shape_cast becomes one
//     extract/insert per element (4096 for 64x64), and compiling takes seconds.
//  2. lower_multi_reduction: vector.multi_reduction has no LLVM lowering of its own;
//     "innerreduction" turns a reduction over the last dim into one vector.reduction per row.
//  3. fastmath<reassoc> on every vector.reduction: LLVM expands an ordered float reduction into
//     a chain of n dependent adds in one basic block (row_sum's 128 rows of 256 took minutes to
//     compile); reassociated, it is a log-depth tree. Only the summation order changes, within
//     the harness's tolerance (the TPU does not sum in sequential order either).
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
    } : !transform.any_op
    %reductions = transform.structured.match ops{["vector.reduction"]} in %root : (!transform.any_op) -> !transform.any_op
    %reassoc = transform.param.constant #arith.fastmath<reassoc> -> !transform.any_param
    transform.annotate %reductions "fastmath" = %reassoc : !transform.any_op, !transform.any_param
    transform.yield
  }
}
