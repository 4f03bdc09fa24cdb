#include "python/errors.h"

#include <pybind11/stl.h>

#include <string>

namespace py = pybind11;

namespace tessera::python {
namespace {

// tessera.Error, created once by bind_errors; module objects live until the
// interpreter exits, so the reference is never released.
PyObject* error_type = nullptr;

std::string all_lines(const std::vector<Diagnostic>& diags) {
  std::string s;
  for (const Diagnostic& d : diags) s += (s.empty() ? "" : "\n") + d.str();
  return s;
}

py::object file_of(const Loc& loc) { return loc.file ? py::object(py::str(*loc.file)) : py::object(py::none()); }

// Raises tessera.Error for `e`: str() is the CLI's `file:line:col: error: message`
// (one line per diagnostic), the location and message are attributes.
void raise(const Error& e) {
  auto* verify = dynamic_cast<const VerifyError*>(&e);
  std::vector<Diagnostic> diags = verify ? verify->diagnostics() : std::vector<Diagnostic>{{e.loc(), e.message()}};
  py::object exc = py::reinterpret_borrow<py::object>(error_type)(all_lines(diags));
  exc.attr("file") = file_of(e.loc());
  exc.attr("line") = e.loc().line;
  exc.attr("column") = e.loc().col;
  exc.attr("message") = e.message();
  exc.attr("diagnostics") = py::cast(diags);
  PyErr_SetObject(error_type, exc.ptr());
}

}  // namespace

VerifyError::VerifyError(std::vector<Diagnostic> diags)
    : Error(diags.empty() ? Loc{} : diags.front().loc, diags.empty() ? "" : diags.front().message),
      diags_(std::move(diags)) {}

void bind_errors(py::module_& m) {
  py::class_<Diagnostic>(m, "Diagnostic", "One problem the verifier found, with its location.")
      .def_property_readonly("file", [](const Diagnostic& d) { return file_of(d.loc); })
      .def_property_readonly("line", [](const Diagnostic& d) { return d.loc.line; })
      .def_property_readonly("column", [](const Diagnostic& d) { return d.loc.col; })
      .def_readonly("message", &Diagnostic::message)
      .def("__str__", &Diagnostic::str)
      .def("__repr__", [](const Diagnostic& d) { return "<tessera.Diagnostic " + d.str() + ">"; });

  error_type = PyErr_NewExceptionWithDoc(
      "tessera.Error",
      "An error from tessera: str() is `file:line:col: error: message` as the CLI prints it.\n"
      "Attributes: file (None when unknown), line and column (0 when unknown), message, and\n"
      "diagnostics (every problem, for a module that does not verify).",
      PyExc_Exception, nullptr);
  if (!error_type) throw py::error_already_set();
  py::object type = py::reinterpret_borrow<py::object>(error_type);
  // Class-level defaults, so that an Error raised from Python has them too.
  type.attr("file") = py::none();
  type.attr("line") = 0;
  type.attr("column") = 0;
  type.attr("message") = "";
  type.attr("diagnostics") = py::tuple();
  m.attr("Error") = type;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise(e);
    }
  });
}

}  // namespace tessera::python
