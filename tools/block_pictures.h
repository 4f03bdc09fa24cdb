// What `graph --blocks` and `prove --svg` share: the values of a
// pallas_call's scalar-prefetch operands, named by `--input NAME=PATH.npy`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/array.h"

namespace tessera::cli {

// One array per scalar-prefetch operand of `call` (named `name` in
// messages), each read from the file of `given` under one of its names: the
// function's value passed as the operand, or the kernel's parameter. Throws
// Error naming the operand and the flag to give when one is missing.
std::vector<interp::Array> prefetch_values(const Op& call, const std::string& name,
                                           const std::map<std::string, std::string>& given);

}  // namespace tessera::cli
