// Canonical text form of the IR. print(parse(print(m))) == print(m).
#pragma once

#include <string>

#include "ir/ir.h"

namespace tessera {

std::string print_module(const Module& m);
// A top-level body alone; nested bodies that are module symbols print as @name
// when `m` is given.
std::string print_body(const Body& b, const Module* m = nullptr);

}  // namespace tessera
