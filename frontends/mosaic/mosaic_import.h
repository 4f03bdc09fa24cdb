// `tessera import mosaic`: Mosaic TPU MLIR text in, a tessera module out.
//
// Each `module { ... }` of the text holds one pallas_call: a kernel
// `func.func` (with `iteration_bounds`, `dimension_semantics`,
// `window_params`, `scalar_prefetch`, `scratch_operands`, `tpu.core_type`)
// and the `transform_i` functions (index maps). The importer writes, per
// module, the index maps, the kernel and a func with one pallas_call whose
// operands and results have the full array shapes. docs/import.md explains
// the mapping and its limits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ir/ir.h"

namespace tessera {

struct MosaicImportOptions {
  // The pallas_call's signature in tessera's type syntax, as a function
  // signature: `T, T, ... -> T, ...`. Operands in custom-call order: dynamic
  // grid sizes, then scalar prefetch, then inputs (every windowed or ANY
  // operand that is not an output). With several modules, one signature per
  // module separated by `;`. Absent: inferred where the module allows it,
  // otherwise a located error asks for it.
  std::optional<std::string> shapes;
  // Name of the func holding the pallas_call ("main"; with several modules
  // "main", "main_1", ...).
  std::string func_name = "main";
  // The size of the 1-D device mesh the kernel runs on. A Mosaic module
  // does not say it, yet a kernel that talks to other devices (remote DMAs
  // and signals, a barrier semaphore, `tpu.device_id`) needs it. Given, the
  // func takes every operand with a leading axis of this size (one slice per
  // device; `shapes` stays per device) and runs the pallas_call in
  // `pmap[axis_name=dev, axis_size=N, ...]`; `tpu.device_id` is then the
  // index along `dev` (the emitter writes flat ids, the same on one axis).
  std::optional<int64_t> devices;
};

// `--devices` text: a positive device count. Located errors (file
// "--devices") for anything else, and for a mesh of several axes (`2x4`,
// `2,4`): only 1-D meshes are supported.
int64_t parse_devices(std::string_view text);

// Parses and translates; the result verifies. Throws tessera::Error with a
// location in `filename` (or "--shapes" for a bad signature).
Module import_mosaic(std::string_view text, const std::string& filename, const MosaicImportOptions& options = {});

}  // namespace tessera
