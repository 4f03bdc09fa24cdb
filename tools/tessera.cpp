#include <iostream>

#include "ir/parser.h"
#include "ir/printer.h"
#include "verify/verify.h"

int main(int argc, char** argv) {
  using namespace tessera;
  if (argc < 3) { std::cerr << "usage: tessera print FILE\n"; return 1; }
  try {
    Module m = parse_file(argv[2]);
    std::cout << print_module(m);
  } catch (const Error& e) {
    std::cerr << e.formatted() << "\n";
    return 1;
  }
  return 0;
}
