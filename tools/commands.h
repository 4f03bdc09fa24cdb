// The `tessera` subcommands. Each lives in its own tools/cmd_*.cpp and takes
// the arguments after its name; it returns the process exit status.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/array.h"

namespace tessera::cli {

using Argv = std::vector<std::string>;

int cmd_print(const Argv& args);   // cmd_print.cpp
int cmd_verify(const Argv& args);  // cmd_verify.cpp
int cmd_graph(const Argv& args);   // cmd_graph.cpp
int cmd_run(const Argv& args);     // cmd_run.cpp
int cmd_prove(const Argv& args);   // cmd_prove.cpp
int cmd_opt(const Argv& args);     // cmd_opt.cpp
int cmd_emit(const Argv& args);    // cmd_emit.cpp
int cmd_cost(const Argv& args);    // cmd_cost.cpp
int cmd_import(const Argv& args);  // cmd_import.cpp
int cmd_rules(const Argv& args);   // cmd_rules.cpp

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Argv&);
};
const std::vector<Command>& commands();

// Parses `path` ("-" for stdin); on failure prints the error to stderr and
// returns nullopt. With `verify`, also runs the verifier and prints every
// diagnostic.
std::optional<Module> load_module(const std::string& path, bool verify = true);

// `--input NAME=PATH.npy` flags as NAME -> PATH (a leading `%` dropped);
// throws Error on a flag without `=` or a name.
std::map<std::string, std::string> named_inputs(const std::vector<std::string>& flags);

// The value `--random-inputs SEED` gives parameter `param` (the i-th of its
// function); throws Error located at the parameter.
interp::Array random_input(const Var& param, size_t i, uint64_t seed);

// Writes `text` to the file `path`, or to stdout when `path` is empty (a
// command's `-o FILE`); prints the error and returns 1 when the file cannot
// be written, else 0.
int write_output(const std::string& path, const std::string& text);

// The module's symbol @name; when there is none, prints an error listing the
// symbols (to pick one with --func) and returns null.
BodyPtr find_function(const Module& m, const std::string& name);

}  // namespace tessera::cli
