// tessera.Error: the Python face of tessera::Error (ir/diagnostics.h).
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "ir/diagnostics.h"
#include "verify/verify.h"

namespace tessera::python {

// Every diagnostic of a module that does not verify, thrown as one Error
// located at the first; tessera.Error lists them all in `diagnostics`.
class VerifyError : public Error {
 public:
  explicit VerifyError(std::vector<Diagnostic> diags);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

// Defines tessera.Error and tessera.Diagnostic in `m` and translates every
// tessera::Error a binding throws into tessera.Error.
void bind_errors(pybind11::module_& m);

}  // namespace tessera::python
