// The table of backends `tessera emit TARGET` chooses from, as
// tools/commands.h is the table of commands.
//
// A backend is a target name, a one-line summary, its lowering rules
// (backends/lowering.h) and the driver that emits a module's function with
// them. A backend folder (backends/mosaic/, backends/llvm/) defines the rules
// and the driver and adds its entry to `backends()`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backends/lowering.h"
#include "ir/ir.h"

namespace tessera::backends {

// Target options of `tessera emit` (ptx / llvm only).
struct EmitOptions {
  int sm = 80;                      // --sm 80|90
  std::string llvm_target = "nvptx";  // --target nvptx|host (llvm only)
};

struct Backend {
  std::string_view target;   // "mosaic", "ptx", "llvm"
  std::string_view summary;  // one line, for --help
  // Its rule table (the one RuleTable type; ptx and llvm share their rules).
  const RuleTableBase& (*rules)();
  // The text for function `entry` of `m` (and what it calls); throws a
  // located Error at what it cannot lower.
  std::string (*emit)(const Module& m, const Body& entry);
  // `emit --checkable`: the output rewritten so that upstream tools verify
  // it (mosaic: see backends/mosaic/emit_module.h); null where the output
  // needs no rewrite or has no checker.
  std::string (*checkable)(std::string_view text);
  // `emit` with target options; null where the target takes none.
  std::string (*emit_with)(const Module& m, const Body& entry, const EmitOptions& o);
};

const std::vector<Backend>& backends();
const Backend* find_backend(std::string_view target);
// "mosaic, ptx, llvm": for messages that list the targets.
std::string target_names();

}  // namespace tessera::backends
