#include <iostream>

#include "tools/commands.h"

namespace tessera::cli {

int cmd_run(const Argv&) {
  std::cerr << "error: 'tessera run' is not implemented yet (issue 3)\n";
  return 1;
}

}  // namespace tessera::cli
