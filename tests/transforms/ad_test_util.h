// Shared by the jvp / vmap tests: small kernels in the text format and helpers
// to run a pass on them.
#pragma once

#include <string>

#include "tests/test_util.h"
#include "transforms/pass.h"
#include "verify/verify.h"

namespace tessera::testing {

// A blocked matmul accumulating over the k axis of a (4, 3, 2) grid:
// f32[32,16] x f32[16,24] with 8x8 blocks.
inline const char* kMatmul = R"(
index_map @x_map(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %k }
index_map @y_map(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %k, %j }
index_map @o_map(%i: i32, %j: i32, %k: i32) -> (i32, i32) { return %i, %j }
kernel @matmul_kernel(%x: ref<f32[8,8], vmem>, %y: ref<f32[8,8], vmem>, %o: ref<f32[8,8], vmem>) {
  %k = program_id[axis=2]
  %first = eq %k, 0
  %a = get %x[:, :]
  %b = get %y[:, :]
  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b
  %prev = get %o[:, :]
  %base = select_n %first, %prev, 0.0
  %acc = add %base, %p
  swap %o[:, :], %acc
}
func @main(%x: f32[32,16], %y: f32[16,24]) -> f32[32,24] {
  %out = pallas_call[kernel=@matmul_kernel, grid=(4, 3, 2),
                     in_specs=[spec((8, 8), @x_map), spec((8, 8), @y_map)],
                     out_specs=[spec((8, 8), @o_map)], out_shapes=[f32[32,24]],
                     dimension_semantics=(parallel, parallel, arbitrary), cost_estimate=(24576, 0, 6144)] %x, %y
  return %out
}
)";

// Row softmax, one block of 4 rows per program.
inline const char* kSoftmax = R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @softmax_kernel(%x: ref<f32[4,16], vmem>, %o: ref<f32[4,16], vmem>) {
  %a = get %x[:, :]
  %m = reduce_max[axes=(1)] %a
  %mb = broadcast_in_dim[shape=(4, 16), broadcast_dimensions=(0)] %m
  %s = sub %a, %mb
  %e = exp %s
  %z = reduce_sum[axes=(1)] %e
  %zb = broadcast_in_dim[shape=(4, 16), broadcast_dimensions=(0)] %z
  %y = div %e, %zb
  swap %o[:, :], %y
}
func @main(%x: f32[8,16]) -> f32[8,16] {
  %out = pallas_call[kernel=@softmax_kernel, grid=(2), in_specs=[spec((4, 16), @rows)],
                     out_specs=[spec((4, 16), @rows)], out_shapes=[f32[8,16]],
                     dimension_semantics=(parallel)] %x
  return %out
}
)";

inline PassOptions options(std::initializer_list<std::pair<const char*, const char*>> kv) {
  PassOptions o;
  for (const auto& [k, v] : kv) o.values[k] = v;
  return o;
}

// Row layer norm with a scale vector (whole-array spec for the scale).
inline const char* kLayerNorm = R"(
index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }
kernel @layernorm_kernel(%x: ref<f32[4,16], vmem>, %g: ref<f32[16], vmem>, %o: ref<f32[4,16], vmem>) {
  %a = get %x[:, :]
  %s = reduce_sum[axes=(1)] %a
  %mean = div %s, 16.0
  %mb = broadcast_in_dim[shape=(4, 16), broadcast_dimensions=(0)] %mean
  %c = sub %a, %mb
  %c2 = mul %c, %c
  %v = reduce_sum[axes=(1)] %c2
  %var = div %v, 16.0
  %ve = add %var, 0.00001
  %r = rsqrt %ve
  %rb = broadcast_in_dim[shape=(4, 16), broadcast_dimensions=(0)] %r
  %n = mul %c, %rb
  %gg = get %g[:]
  %gb = broadcast_in_dim[shape=(4, 16), broadcast_dimensions=(1)] %gg
  %y = mul %n, %gb
  swap %o[:, :], %y
}
func @main(%x: f32[8,16], %g: f32[16]) -> f32[8,16] {
  %out = pallas_call[kernel=@layernorm_kernel, grid=(2), in_specs=[spec((4, 16), @rows), spec()],
                     out_specs=[spec((4, 16), @rows)], out_shapes=[f32[8,16]],
                     dimension_semantics=(parallel)] %x, %g
  return %out
}
)";

// Single-head flash attention: online softmax over key/value blocks (the
// arbitrary axis), running max / sum / accumulator in scratch.
inline const char* kFlashAttention = R"(
index_map @q_map(%i: i32, %j: i32) -> (i32, i32) { return %i, 0 }
index_map @kv_map(%i: i32, %j: i32) -> (i32, i32) { return %j, 0 }
kernel @flash_kernel(%q: ref<f32[8,8], vmem>, %k: ref<f32[8,8], vmem>, %v: ref<f32[8,8], vmem>,
                     %o: ref<f32[8,8], vmem>, %m: ref<f32[8], vmem>, %l: ref<f32[8], vmem>,
                     %acc: ref<f32[8,8], vmem>) {
  %j = program_id[axis=1]
  %first = eq %j, 0
  %m0 = get %m[:]
  %l0 = get %l[:]
  %a0 = get %acc[:, :]
  %mi = select_n %first, %m0, -inf
  %li = select_n %first, %l0, 0.0
  %ai = select_n %first, %a0, 0.0
  %qb = get %q[:, :]
  %kb = get %k[:, :]
  %vb = get %v[:, :]
  %s = dot_general[lhs_contracting=(1), rhs_contracting=(1)] %qb, %kb
  %smax = reduce_max[axes=(1)] %s
  %mn = max %mi, %smax
  %mnb = broadcast_in_dim[shape=(8, 8), broadcast_dimensions=(0)] %mn
  %sc = sub %s, %mnb
  %p = exp %sc
  %dm = sub %mi, %mn
  %alpha = exp %dm
  %ps = reduce_sum[axes=(1)] %p
  %la = mul %li, %alpha
  %ln = add %la, %ps
  %ab = broadcast_in_dim[shape=(8, 8), broadcast_dimensions=(0)] %alpha
  %pv = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %p, %vb
  %aa = mul %ai, %ab
  %an = add %aa, %pv
  swap %m[:], %mn
  swap %l[:], %ln
  swap %acc[:, :], %an
  %lb = broadcast_in_dim[shape=(8, 8), broadcast_dimensions=(0)] %ln
  %out = div %an, %lb
  swap %o[:, :], %out
}
func @main(%q: f32[16,8], %k: f32[32,8], %v: f32[32,8]) -> f32[16,8] {
  %out = pallas_call[kernel=@flash_kernel, grid=(2, 4),
                     in_specs=[spec((8, 8), @q_map), spec((8, 8), @kv_map), spec((8, 8), @kv_map)],
                     out_specs=[spec((8, 8), @q_map)], out_shapes=[f32[16,8]],
                     scratch=[ref<f32[8], vmem>, ref<f32[8], vmem>, ref<f32[8,8], vmem>],
                     dimension_semantics=(parallel, arbitrary)] %q, %k, %v
  return %out
}
)";

}  // namespace tessera::testing
