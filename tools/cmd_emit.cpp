// `tessera emit TARGET FILE [--func NAME] [-o FILE] [--checkable] [--sm 80|90] [--target nvptx|host]`:
// a function lowered for a backend of backends/backend.h.
#include <iostream>

#include "backends/backend.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

std::string targets_help() {
  std::string out = "targets:\n";
  for (const backends::Backend& b : backends::backends()) {
    std::string name(b.target);
    out += "  " + name + std::string(name.size() < 10 ? 10 - name.size() : 1, ' ') + std::string(b.summary) + "\n";
  }
  return out;
}

}  // namespace

int cmd_emit(const Argv& argv) {
  Args a("emit",
         "Verifies a module and lowers one function (and what it calls) for a backend TARGET. An op the target\n"
         "cannot lower is an error at its location, \"TARGET: no lowering for `NAME`: REASON\".\n"
         "Nothing is written unless the whole function lowers.\n\n" +
             targets_help(),
         "TARGET FILE");
  a.flag("--func", "NAME", "the function to lower", "main");
  a.flag("-o", "FILE", "write the output to FILE instead of stdout");
  a.toggle("--checkable", "rewrite the output so that upstream tools verify it (mosaic: for mlir-opt-19 "
                          "--allow-unregistered-dialect)");
  a.flag("--sm", "80|90", "ptx, llvm: the NVIDIA architecture (sm_80 or sm_90)", "80");
  a.flag("--target", "nvptx|host", "llvm: the IR for the GPU or for this host's CPU (the JIT's)", "nvptx");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().size() != 2) {
    std::cerr << "error: tessera emit takes a TARGET (" << backends::target_names() << ") and one FILE ('-' for stdin)\n";
    return 1;
  }
  const std::string& target = a.positionals()[0];
  const backends::Backend* backend = backends::find_backend(target);
  if (!backend) {
    std::cerr << "error: unknown target '" << target << "' (targets: " << backends::target_names() << ")\n";
    return 1;
  }
  auto m = load_module(a.positionals()[1]);
  if (!m) return 1;
  BodyPtr entry = find_function(*m, a.get("--func"));
  if (!entry) return 1;
  if (a.has("--checkable") && !backend->checkable) {
    std::cerr << "error: --checkable applies to target mosaic only, not '" << target << "'\n";
    return 1;
  }
  if ((a.has("--sm") || a.has("--target")) && !backend->emit_with) {
    std::cerr << "error: --sm and --target apply to targets ptx and llvm, not '" << target << "'\n";
    return 1;
  }
  if (a.has("--target") && target != "llvm") {
    std::cerr << "error: --target applies to target llvm only, not '" << target << "'\n";
    return 1;
  }
  backends::EmitOptions opts;
  opts.llvm_target = a.get("--target");
  const std::string sm = a.get("--sm");
  if (sm != "80" && sm != "90") {
    std::cerr << "error: --sm must be 80 or 90, not '" << sm << "'\n";
    return 1;
  }
  opts.sm = std::stoi(sm);
  if (opts.llvm_target != "nvptx" && opts.llvm_target != "host") {
    std::cerr << "error: --target must be nvptx or host, not '" << opts.llvm_target << "'\n";
    return 1;
  }
  // Both throw a located Error, which main prints.
  std::string text = backend->emit_with ? backend->emit_with(*m, *entry, opts) : backend->emit(*m, *entry);
  if (a.has("--checkable")) text = backend->checkable(text);
  return write_output(a.get("-o"), text);
}

}  // namespace tessera::cli
