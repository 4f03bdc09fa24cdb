#include <iostream>

#include "tools/commands.h"

namespace tessera::cli {

int cmd_verify(const Argv&) {
  std::cerr << "error: 'tessera verify' is not implemented yet (issue 2)\n";
  return 1;
}

}  // namespace tessera::cli
