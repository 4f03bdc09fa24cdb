#include <iostream>

#include "tools/commands.h"

namespace tessera::cli {

int cmd_graph(const Argv&) {
  std::cerr << "error: 'tessera graph' is not implemented yet (issue 2)\n";
  return 1;
}

}  // namespace tessera::cli
