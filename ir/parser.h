// Parser for the text format. Errors are thrown as Error with file:line:col.
#pragma once

#include <string>
#include <string_view>

#include "ir/ir.h"

namespace tessera {

// How deep bodies may nest: an inline body (a branch, a loop body, a kernel
// given as fn) or a symbol referred to (`kernel=@k`, `call @f`) is one level
// below the body that holds it. Every walk of the IR (verifier, passes,
// printer, interpreter) recurses once per level, so the parser rejects deeper
// modules with a located error instead of letting a walk overflow the stack,
// and the pass manager rejects a pass result that goes deeper.
constexpr int kMaxBodyNesting = 256;

Module parse_module(std::string_view text, const std::string& filename = "<input>");
// Reads a file (or stdin for "-") and parses it.
Module parse_file(const std::string& path);
// The bytes of a file, or of stdin for "-"; throws Error when it cannot be read.
std::string read_source(const std::string& path);
// The name errors give for `path`: "<stdin>" for "-".
std::string source_name(const std::string& path);

}  // namespace tessera
