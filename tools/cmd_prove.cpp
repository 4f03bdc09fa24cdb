#include <iostream>

#include "tools/commands.h"

namespace tessera::cli {

int cmd_prove(const Argv&) {
  std::cerr << "error: 'tessera prove' is not implemented yet (issue 5)\n";
  return 1;
}

}  // namespace tessera::cli
