// tessera.run: `tessera run` (tools/cmd_run.cpp) from Python, with NumPy arrays
// in and out (python/arrays.h) and interp::RunOptions as keyword arguments.
#include <pybind11/stl.h>


#include "interpreter/interpreter.h"
#include "interpreter/option_words.h"
#include "python/arrays.h"
#include "python/errors.h"
#include "python/module_handle.h"
#include "runtime/memory_limit.h"

namespace py = pybind11;

namespace tessera::python {
namespace {

using Opts = interp::RunOptions;

// Inputs by parameter name (a dict; a leading % is allowed) or in parameter
// order (a list or tuple), as arrays of each parameter's type.
std::vector<interp::Array> inputs_for(const Body& f, const py::object& inputs) {
  const std::vector<Var*>& params = f.params();
  std::vector<py::object> given(params.size());
  std::string names;
  for (const Var* p : params) names += (names.empty() ? "%" : ", %") + p->name;
  if (py::isinstance<py::dict>(inputs)) {
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(inputs)) {
      std::string name = py::str(key);
      if (!name.empty() && name[0] == '%') name = name.substr(1);
      size_t i = 0;
      while (i < params.size() && params[i]->name != name) ++i;
      if (i == params.size())
        throw Error(f.loc(), "@" + f.name() + " has no parameter %" + name + " (its parameters: " + names + ")");
      given[i] = py::reinterpret_borrow<py::object>(value);
    }
  } else if (py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs)) {
    py::sequence seq = py::reinterpret_borrow<py::sequence>(inputs);
    if (seq.size() != params.size())
      throw Error(f.loc(), "@" + f.name() + " takes " + std::to_string(params.size()) + " input(s) (" + names +
                               "), got " + std::to_string(seq.size()));
    for (size_t i = 0; i < params.size(); ++i) given[i] = seq[i];
  } else if (!inputs.is_none()) {
    throw py::type_error("tessera.run: inputs must be a dict {name: array} or a list of arrays in parameter order");
  }
  std::vector<interp::Array> out;
  for (size_t i = 0; i < params.size(); ++i) {
    const Var* p = params[i];
    std::string what = "input %" + p->name + " of @" + f.name();
    if (!given[i]) throw Error(f.loc(), "missing " + what + " (its parameters: " + names + ")");
    out.push_back(to_array(given[i], p->type.array_type(), what, p->loc));
  }
  return out;
}

py::list run(const ModuleHandle& h, const py::object& inputs, const std::string& func, int cores, bool detect_races,
             const std::string& dma, const std::string& oob, const std::string& uninit, std::optional<uint64_t> grid_seed,
             const std::string& trace_file, bool allow_hbm_scoped, int64_t max_steps, int64_t max_work,
             std::optional<int64_t> max_memory, bool debug_checks) {
  Opts opts;
  interp::set_option_word(opts, "dma", dma, "dma");
  interp::set_option_word(opts, "oob", oob, "oob");
  interp::set_option_word(opts, "uninit", uninit, "uninit");
  if (cores < 1 || cores > 1024) throw Error("cores must be between 1 and 1024, got " + std::to_string(cores));
  if (max_steps < 0) throw Error("max_steps must be at least 0 (0: no limit)");
  if (max_work < 0) throw Error("max_work must be at least 0 (0: no limit)");
  if (max_memory && *max_memory < 0) throw Error("max_memory must be at least 0 bytes (0: no limit)");
  opts.cores = cores;
  opts.detect_races = detect_races;
  opts.grid_seed = grid_seed;
  opts.trace_file = trace_file;
  opts.allow_hbm_scoped = allow_hbm_scoped;
  opts.max_steps = max_steps;
  opts.max_work = max_work;
  if (max_memory) opts.max_memory = *max_memory;
  opts.debug_checks = debug_checks;

  BodyPtr f = verified_function(h, func);
  // Copied inputs count toward the limit, as the CLI's .npy inputs do.
  interp::MemoryLimitScope memory_limit(opts.max_memory);
  std::vector<interp::Array> args = inputs_for(*f, inputs);
  std::vector<interp::Array> outs = interp::run_function(h.module, f->name(), args, opts);
  py::list result;
  for (const interp::Array& a : outs) result.append(to_numpy(a));
  return result;
}

}  // namespace

void bind_run(py::module_& m) {
  Opts d;
  static const std::string doc =
      "Runs function `func` in the reference interpreter, as `tessera run`. `inputs` maps parameter names to arrays "
      "(or lists them in parameter order); returns the outputs as a list of ndarrays. Keyword arguments mirror "
      "`tessera run`'s flags: cores, detect_races, dma ('on_wait' | 'eager'), oob ('raise' | 'uninitialized'), "
      "uninit ('nan' | 'zero'), grid_seed, trace_file, allow_hbm_scoped, max_steps (default " +
      std::to_string(interp::kDefaultMaxSteps) +
      "; 0: no limit), max_work (0: no limit), max_memory (bytes, 0: no limit; default 8 GiB or half the RAM), "
      "debug_checks. A run-time error raises tessera.Error.";
  m.def("run", &run, py::arg("module"), py::arg("inputs") = py::none(), py::arg("func") = "main", py::kw_only(),
        py::arg("cores") = d.cores, py::arg("detect_races") = d.detect_races, py::arg("dma") = "on_wait",
        py::arg("oob") = "raise", py::arg("uninit") = "nan", py::arg("grid_seed") = py::none(),
        py::arg("trace_file") = "", py::arg("allow_hbm_scoped") = d.allow_hbm_scoped, py::arg("max_steps") = d.max_steps,
        py::arg("max_work") = d.max_work, py::arg("max_memory") = py::none(), py::arg("debug_checks") = d.debug_checks,
        doc.c_str());
}

}  // namespace tessera::python
