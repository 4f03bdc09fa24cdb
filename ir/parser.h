// Parser for the text format. Errors are thrown as Error with file:line:col.
#pragma once

#include <string>
#include <string_view>

#include "ir/ir.h"

namespace tessera {

Module parse_module(std::string_view text, const std::string& filename = "<input>");
// Reads a file (or stdin for "-") and parses it.
Module parse_file(const std::string& path);

}  // namespace tessera
