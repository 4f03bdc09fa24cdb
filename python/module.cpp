// The extension module `tessera`: tessera.Module, parse, import_mosaic, opt and emit. The
// other entry points live in prove.cpp and run.cpp, tessera.Error in errors.cpp.
// Each mirrors a CLI command (tools/cmd_*.cpp) and the library calls it makes.
#include <pybind11/stl.h>

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>

#include "backends/backend.h"
#include "frontends/mosaic/mosaic_import.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "python/errors.h"
#include "python/module_handle.h"
#include "transforms/pass.h"
#include "verify/verify.h"

namespace py = pybind11;

namespace tessera::python {

void ModuleHandle::verify() const {
  if (verified) return;
  std::vector<Diagnostic> diags = verify_module(module);
  if (!diags.empty()) throw VerifyError(std::move(diags));
  verified = true;
}

BodyPtr verified_function(const ModuleHandle& h, const std::string& name) {
  h.verify();
  BodyPtr f = h.module.find(name);
  if (f && f->kind() == BodyKind::func) return f;
  std::string names;
  for (const BodyPtr& s : h.module.symbols())
    if (s->kind() == BodyKind::func) names += (names.empty() ? "@" : ", @") + s->name();
  throw Error("no function @" + name + " in module" + (names.empty() ? "" : " (its functions: " + names + ")"));
}

namespace {

std::shared_ptr<ModuleHandle> from_text(const std::string& text, const std::string& name) {
  auto h = std::make_shared<ModuleHandle>();
  h->module = parse_module(text, name);
  h->source_name = name;
  h->assumptions = prove::assumptions_in_source(text);
  return h;
}

// The text and its name for errors, from a path (os.PathLike, or a one-line
// str naming an existing file) or from the text itself. A one-line str
// ending in one of `extensions` that names no file is reported as a missing
// file rather than taken as (meaningless) text.
std::pair<std::string, std::string> source_text(const py::object& source, const std::string& filename,
                                                 const char* function, std::initializer_list<const char*> extensions) {
  if (py::isinstance(source, py::module_::import("os").attr("PathLike"))) {
    std::string path = py::str(py::module_::import("os").attr("fspath")(source));
    return {read_source(path), path};
  }
  if (!py::isinstance<py::str>(source))
    throw py::type_error(std::string(function) + " takes a str (text or path) or an os.PathLike");
  std::string s = py::str(source);
  bool one_line = s.find('\n') == std::string::npos;
  std::error_code ec;
  if (one_line && !s.empty() && std::filesystem::is_regular_file(s, ec)) return {read_source(s), s};
  for (const char* ext : extensions)
    if (one_line && s.size() > std::string_view(ext).size() && s.ends_with(ext)) throw Error("cannot open file '" + s + "'");
  return {s, filename};
}

// tessera.parse: a .tsr path or the text.
std::shared_ptr<ModuleHandle> parse(const py::object& source, const std::string& filename) {
  auto [text, name] = source_text(source, filename, "tessera.parse", {".tsr"});
  return from_text(text, name);
}

// tessera.import_mosaic: Mosaic TPU text (a path or the text), as `tessera import mosaic`.
std::shared_ptr<ModuleHandle> import_mosaic_text(const py::object& source, const std::optional<std::string>& shapes,
                                                 const py::object& devices, const std::string& filename) {
  auto [text, name] = source_text(source, filename, "tessera.import_mosaic", {".mlir", ".txt"});
  MosaicImportOptions opts;
  opts.shapes = shapes;
  // An int, or the CLI's text; a tuple is a mesh shape, refused unless 1-D.
  if (py::isinstance<py::str>(devices)) opts.devices = parse_devices(devices.cast<std::string>());
  else if (py::isinstance<py::tuple>(devices) || py::isinstance<py::list>(devices)) {
    std::string shape;
    for (const py::handle& d : devices) shape += (shape.empty() ? "" : "x") + py::str(d).cast<std::string>();
    opts.devices = parse_devices(shape);
  }
  else if (!devices.is_none()) opts.devices = devices.cast<int64_t>();
  auto h = std::make_shared<ModuleHandle>();
  h->module = import_mosaic(text, name, opts);
  h->verified = true;  // import_mosaic verified it already
  h->source_name = name;
  return h;
}

std::vector<std::string> functions(const ModuleHandle& h) {
  std::vector<std::string> names;
  for (const BodyPtr& s : h.module.symbols())
    if (s->kind() == BodyKind::func) names.push_back(s->name());
  return names;
}

// [("x", "f32[512,256]"), ...]: what run() takes, by name and in order.
std::vector<std::pair<std::string, std::string>> parameters(const ModuleHandle& h, const std::string& func) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Var* p : verified_function(h, func)->params()) out.emplace_back(p->name, p->type.str());
  return out;
}

std::vector<std::string> results(const ModuleHandle& h, const std::string& func) {
  std::vector<std::string> out;
  for (const Type& t : verified_function(h, func)->output_types()) out.push_back(t.str());
  return out;
}

std::shared_ptr<ModuleHandle> opt(const ModuleHandle& h, const std::string& passes, const std::string& func,
                                  bool verify_each) {
  h.verify();
  PipelineOptions opts;
  opts.entry = func;
  opts.verify_each = verify_each;
  auto out = std::make_shared<ModuleHandle>();
  out->module = run_pipeline(h.module, passes, opts);
  out->source_name = h.source_name;
  out->assumptions = h.assumptions;  // the scalar-prefetch names passes keep
  return out;
}

std::string emit(const ModuleHandle& h, const std::string& target, const std::string& func) {
  const backends::Backend* backend = backends::find_backend(target);
  if (!backend) throw Error("unknown target '" + target + "' (targets: " + backends::target_names() + ")");
  BodyPtr entry = verified_function(h, func);
  return backend->emit(h.module, *entry);
}

}  // namespace

void bind_module(py::module_& m) {
  py::class_<ModuleHandle, std::shared_ptr<ModuleHandle>>(
      m, "Module", "A parsed tessera module (immutable). str() is its canonical text, as `tessera print` shows it.")
      .def("verify", &ModuleHandle::verify,
           "Runs the verifier; raises tessera.Error listing every diagnostic (in .diagnostics) if the module is "
           "ill-formed.")
      .def_property_readonly("functions", &functions, "The names of the module's functions (`func @NAME`), in order.")
      .def("parameters", &parameters, py::arg("func") = "main",
           "The parameters of function `func` as (name, type) pairs, e.g. [('x', 'f32[512,256]'), ...].")
      .def("results", &results, py::arg("func") = "main", "The result types of function `func`, e.g. ['f32[512,384]'].")
      .def_readonly("file", &ModuleHandle::source_name, "The file the module was read from, or '<string>'.")
      .def("__str__", [](const ModuleHandle& h) { return print_module(h.module); })
      .def("__repr__", [](const ModuleHandle& h) {
        std::string names;
        for (const std::string& f : functions(h)) names += (names.empty() ? "@" : ", @") + f;
        return "<tessera.Module from " + h.source_name + ": " + names + ">";
      });

  m.def("parse", &parse, py::arg("source"), py::arg("filename") = "<string>",
        "Parses a module from a path (os.PathLike, or a str naming an existing file) or from its text; "
        "`filename` names text in error locations. Raises tessera.Error at the first syntax or type error. "
        "The module is not verified: call Module.verify().");
  m.def("import_mosaic", &import_mosaic_text, py::arg("source"), py::arg("shapes") = py::none(),
        py::arg("devices") = py::none(), py::arg("filename") = "<string>",
        "Reads Mosaic TPU MLIR text (a path, or the text) as a tessera module, as `tessera import mosaic`: "
        "the index maps, the kernel and @main holding one pallas_call. `shapes` is the pallas_call's "
        "signature, 'T, T -> T' (dynamic grid sizes, scalar prefetch, inputs -> outputs); it may be left "
        "out when the module allows inferring it. `devices=N` runs it on a 1-D mesh of N devices (pmap axis "
        "`dev`; operands gain a leading axis of N), as --devices. Raises tessera.Error located in the Mosaic text.");
  m.def("opt", &opt, py::arg("module"), py::arg("passes"), py::arg("func") = "", py::arg("verify_each") = false,
        "Runs a pass pipeline, as `tessera opt --passes=PIPELINE`: e.g. 'vmap{axis_size=3},jvp,discharge,dce'. "
        "`func` is the function the passes transform (default main). Returns a new Module.");
  m.def("emit", &emit, py::arg("module"), py::arg("target"), py::arg("func") = "main",
        "Lowers function `func` for a backend target, as `tessera emit TARGET`; returns the text. Raises "
        "tessera.Error at the first op the target cannot lower.");
  std::vector<std::string> targets;
  for (const backends::Backend& b : backends::backends()) targets.emplace_back(b.target);
  m.attr("targets") = py::cast(targets);
}

}  // namespace tessera::python

PYBIND11_MODULE(tessera, m) {
  m.doc() =
      "tessera: blocked (Pallas-style) kernels: parse, verify, prove, transform, run in the reference "
      "interpreter and emit. docs/python.md documents the API.";
  tessera::python::bind_errors(m);
  tessera::python::bind_module(m);
  tessera::python::bind_prove(m);
  tessera::python::bind_run(m);
}
