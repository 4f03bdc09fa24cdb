// The run options that are chosen by a word: `--dma eager|on_wait`,
// `--oob raise|uninitialized`, `--uninit nan|zero` on the command line and the
// keyword arguments of the same names in Python. One table, so the CLI and the
// Python module accept the same words and say the same thing about others.
#pragma once

#include <string>

#include "interpreter/interpreter.h"

namespace tessera::interp {

// Sets the option `name` ("dma", "oob" or "uninit") of `opts` from `word`.
// Throws Error "<what> must be one of a|b, got 'word'" for another word, with
// `what` naming the option as the caller's user writes it ("--dma", "dma").
void set_option_word(RunOptions& opts, const std::string& name, const std::string& word, const std::string& what);

}  // namespace tessera::interp
