// `tessera emit mosaic`: one MLIR module per pallas_call and core_map
// reachable from the entry function, in program order, separated by `// -----` lines (so that
// `mlir-opt --split-input-file` checks each), each preceded by a comment with
// the call's location and kernel. A module holds the kernel func.func
// (kernel_signature.h, window_params.h, the body through tensorcore_rules())
// and its transform functions (transforms.h); a core_map's module holds its
// body as a kernel over the mesh indices (window_params.h, core_map_attributes).
// SparseCore calls and core_maps (kernel_type=sc_*) take the forms of
// sc_module.h, their bodies through sparse_core_rules().
#pragma once

#include <string>
#include <string_view>

#include "ir/ir.h"

namespace tessera::backends::mosaic {

std::string emit_modules(const Module& m, const Body& entry);

// The module of one pallas_call op, without the leading comment.
std::string emit_pallas_call(const Op& call);

// The two-rule rewrite that lets upstream mlir-opt (no tpu dialect) verify
// the text:
// `#tpu.memory_space<X>` -> `"X"`, `!tpu.semaphore` / `!tpu.dma_semaphore` -> `i32`.
std::string checkable(std::string_view text);

}  // namespace tessera::backends::mosaic
