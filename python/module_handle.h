// tessera.Module: a parsed module as Python holds it, and what the bindings
// share about it.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "analysis/prove/prove.h"
#include "ir/ir.h"

namespace tessera::python {

struct ModuleHandle {
  Module module;
  std::string source_name;                      // the file it was read from, or "<string>"
  std::vector<prove::Assumption> assumptions;   // its source's `# prove: assume` lines
  mutable bool verified = false;                // a Module never changes: verify once

  // Throws VerifyError listing every diagnostic unless the module verifies.
  void verify() const;
};

// The function `name` of `h`'s module, after verifying the module as the CLI
// does before opt, prove, run and emit.
BodyPtr verified_function(const ModuleHandle& h, const std::string& name);

// The bindings of each concept (one file each; bind_errors is in errors.h).
void bind_module(pybind11::module_& m);  // module.cpp: Module, parse, opt, emit
void bind_prove(pybind11::module_& m);   // prove.cpp
void bind_run(pybind11::module_& m);     // run.cpp

}  // namespace tessera::python
