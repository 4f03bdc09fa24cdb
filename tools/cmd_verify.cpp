// `tessera verify FILE...`: parses and verifies each file.
//
// Diagnostics go to stderr as `file:line:col: error: message`; a file that
// verifies prints `FILE: ok` on stdout (unless --quiet). Every file is checked
// even after one fails; the exit status is 1 if any failed.
#include <iostream>

#include "tools/args.h"
#include "tools/commands.h"

namespace tessera::cli {

int cmd_verify(const Argv& argv) {
  Args a("verify",
         "Parses each FILE and runs the verifier: SSA, types through every primitive's shape rule, effects\n"
         "recomputed, and the pallas_call / core_map / pmap conventions. Problems are printed on stderr as\n"
         "`file:line:col: error: message`; each file that verifies prints `FILE: ok` on stdout.\n"
         "Exit 0 if every file verifies, 1 otherwise.",
         "FILE...");
  a.toggle("--quiet", "print nothing for files that verify");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().empty()) {
    std::cerr << "error: tessera verify takes at least one FILE ('-' for stdin)\n";
    return 1;
  }
  bool all_ok = true;
  for (const std::string& path : a.positionals()) {
    if (!load_module(path, /*verify=*/true)) {
      all_ok = false;
      continue;
    }
    // Flushed at once so that, on a shared terminal or pipe, each line lands
    // in order with the diagnostics (stderr) of the files around it.
    if (!a.has("--quiet")) std::cout << (path == "-" ? "<stdin>" : path) << ": ok" << std::endl;
  }
  return all_ok ? 0 : 1;
}

}  // namespace tessera::cli
