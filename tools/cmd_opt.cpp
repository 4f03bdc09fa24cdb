#include <iostream>

#include "tools/commands.h"

namespace tessera::cli {

int cmd_opt(const Argv&) {
  std::cerr << "error: 'tessera opt' is not implemented yet (issue 4)\n";
  return 1;
}

}  // namespace tessera::cli
