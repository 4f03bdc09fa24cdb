// tessera.prove and tessera.Claim: `tessera prove` (tools/cmd_prove.cpp) from
// Python, one Claim per proof obligation (analysis/prove/prove.h).
#include <pybind11/stl.h>

#include "analysis/prove/prove.h"
#include "python/errors.h"
#include "python/module_handle.h"

namespace py = pybind11;

namespace tessera::python {
namespace {

// `assume`: {"idx": (0, 1024)} (half-open, as `--assume 'idx in [0, 1024)'`),
// or strings in the CLI's syntax.
std::vector<prove::Assumption> assumptions_from(const py::object& assume) {
  std::vector<prove::Assumption> out;
  if (assume.is_none()) return out;
  if (py::isinstance<py::dict>(assume)) {
    for (auto [name, range] : py::reinterpret_borrow<py::dict>(assume)) {
      std::string n = py::str(name);
      std::pair<int64_t, int64_t> r;
      try {
        r = range.cast<std::pair<int64_t, int64_t>>();
      } catch (const py::cast_error&) {
        throw Error("assume[" + n + "] must be a pair (lo, hi) of integers: the range [lo, hi)");
      }
      if (r.first >= r.second) throw Error("assume[" + n + "]: the range [lo, hi) is empty");
      out.push_back({n, r.first, r.second});
    }
    return out;
  }
  for (const py::handle& s : assume) out.push_back(prove::parse_assumption(py::str(s).cast<std::string>()));
  return out;
}

std::vector<prove::Obligation> prove(const ModuleHandle& h, const std::string& func, const py::object& assume,
                                     unsigned timeout_ms, unsigned rlimit, const std::string& smt2_dir,
                                     bool intervals) {
  if (!func.empty()) verified_function(h, func);
  h.verify();
  prove::Options opts;
  opts.func = func;
  opts.timeout_ms = timeout_ms;
  opts.rlimit = rlimit;
  opts.smt2_dir = smt2_dir;
  opts.use_intervals = intervals;
  opts.assumptions = h.assumptions;
  for (prove::Assumption& a : assumptions_from(assume)) opts.assumptions.push_back(std::move(a));
  return prove::prove_module(h.module, opts);
}

std::string verdict(const prove::Obligation& o) {
  return o.verdict == prove::Verdict::failed ? "failed" : std::string(prove::verdict_name(o.verdict));
}

// None when proved; else {"grid_points": [(i, j, ...), ...], "message": ...}:
// the grid point(s) Z3 found (two for a race: the points that collide).
py::object counterexample(const prove::Obligation& o) {
  if (o.verdict != prove::Verdict::failed) return py::none();
  py::list points;
  for (const std::vector<int64_t>& p : o.grid_points) points.append(py::tuple(py::cast(p)));
  py::dict d;
  d["grid_points"] = points;
  d["message"] = o.detail;
  return d;
}

}  // namespace

void bind_prove(py::module_& m) {
  py::class_<prove::Obligation>(m, "Claim", "One proof obligation of `tessera prove` and its verdict.")
      .def_property_readonly("name", [](const prove::Obligation& o) { return o.call + " " + o.subject + " " + o.kind; },
                             "'CALL SUBJECT KIND', e.g. 'matmul out[0] parallel safety'")
      .def_readonly("call", &prove::Obligation::call, "the pallas_call's name")
      .def_readonly("subject", &prove::Obligation::subject, "'in[1]', 'out[0]', 'kernel'")
      .def_readonly("kind", &prove::Obligation::kind, "'bounds', 'non-revisiting', 'parallel safety', ...")
      .def_property_readonly("verdict", &verdict, "'proved', 'failed' or 'unknown'")
      .def_property_readonly("proved", [](const prove::Obligation& o) { return o.verdict == prove::Verdict::proved; })
      .def_readonly("message", &prove::Obligation::detail, "the counterexample, or why the verdict is unknown")
      .def_property_readonly("counterexample", &counterexample,
                             "None unless failed; else {'grid_points': [tuple, ...], 'message': str}")
      .def_readonly("method", &prove::Obligation::method, "'intervals', 'z3' or 'trivial'")
      .def_readonly("queries", &prove::Obligation::queries, "Z3 queries asked")
      .def_readonly("millis", &prove::Obligation::millis)
      .def("__str__", &prove::Obligation::line)
      .def("__repr__", [](const prove::Obligation& o) { return "<tessera.Claim " + o.line() + ">"; });

  prove::Options defaults;
  m.def("prove", &prove, py::arg("module"), py::arg("func") = "", py::arg("assume") = py::none(),
        py::arg("timeout_ms") = defaults.timeout_ms, py::arg("rlimit") = defaults.rlimit, py::arg("smt2_dir") = "",
        py::arg("intervals") = true,
        "Proves every pallas_call of the module (only those reachable from `func` if given), as `tessera prove`: "
        "block indices in bounds, no revisited output blocks, parallel axes race-free, kernel accesses in bounds. "
        "`assume` gives ranges of scalar-prefetch values: {'idx': (0, 1024)} means 0 <= idx < 1024 (the source's "
        "`# prove: assume` lines count too). Returns a list of Claims; a failed claim is not an exception.");
}

}  // namespace tessera::python
