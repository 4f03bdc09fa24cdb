// `tessera import mosaic FILE [--shapes SIG] [-o FILE]`: a tessera module from
// the Mosaic TPU MLIR text JAX Pallas produces (frontends/mosaic/).
#include <iostream>

#include "frontends/mosaic/import_rules.h"
#include "frontends/mosaic/mosaic_import.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {
namespace {

void print_coverage() {
  std::cout << "op | status | what it becomes, or why not\n";
  for (const mlir_text::CoverageEntry& e : mlir_text::import_coverage())
    std::cout << e.op << " | " << e.status << " | " << e.note << "\n";
}

}  // namespace

int cmd_import(const Argv& argv) {
  Args a("import",
         "Reads a kernel written elsewhere and prints it as a tessera module. The only FORMAT is mosaic: the\n"
         "Mosaic TPU MLIR text of a Pallas TPU kernel (`pallas_call(debug=True)` output, the module captured by\n"
         "scripts/capture_mosaic.py, or `tessera emit mosaic` output; several modules in one file give one\n"
         "func each). The module gives block shapes but not the full array shapes nor which operands are\n"
         "outputs: --shapes gives the pallas_call's signature; it may be left out when every index map is an\n"
         "identity map of the grid and the outputs are the operands the kernel writes. docs/import.md.",
         "FORMAT FILE");
  a.flag("--shapes", "SIG",
         "the pallas_call's operand and result types, `T, T, ... -> T, ...` (dynamic grid sizes, scalar "
         "prefetch, inputs -> outputs); `;` between modules");
  a.flag("--devices", "N",
         "run the kernel on a 1-D mesh of N devices: @main takes each operand with a leading axis of N and "
         "maps the pallas_call over it (pmap axis `dev`); needed by kernels with remote DMAs or signals, a "
         "barrier semaphore or tpu.device_id. --shapes stays per device");
  a.flag("-o", "FILE", "write the module to FILE instead of stdout");
  a.toggle("--coverage", "print every Mosaic op and how it is imported, then exit");
  if (!a.parse(argv)) return a.exit_code();
  if (a.has("--coverage")) {
    print_coverage();
    return 0;
  }
  if (a.positionals().size() != 2) {
    std::cerr << "error: tessera import takes a FORMAT (mosaic) and one FILE ('-' for stdin)\n";
    return 1;
  }
  if (a.positionals()[0] != "mosaic") {
    std::cerr << "error: unknown import format '" << a.positionals()[0] << "' (formats: mosaic)\n";
    return 1;
  }
  const std::string& path = a.positionals()[1];
  MosaicImportOptions opts;
  if (a.has("--shapes")) opts.shapes = a.get("--shapes");
  if (a.has("--devices")) opts.devices = parse_devices(a.get("--devices"));
  // Throws a located Error, which main prints.
  Module m = import_mosaic(read_source(path), source_name(path), opts);
  return write_output(a.get("-o"), print_module(m));
}

}  // namespace tessera::cli
