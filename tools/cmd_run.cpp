// `tessera run FILE`: runs a function in the reference interpreter (the
// simulated TPU of Pallas's TPU interpret mode) on .npy or random inputs, and
// writes and summarizes its outputs. With --backend=jit|cuda its pallas_calls
// run compiled (backends/llvm/: the host JIT, or a GPU through the CUDA
// driver) and the ops between them stay interpreted; --check compares the
// compiled outputs with the interpreter's.
#include <cctype>
#include <climits>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "interpreter/inputs.h"
#include "interpreter/interpreter.h"
#include "interpreter/option_words.h"
#include "ir/op_cost.h"
#include "runtime/memory_limit.h"
#include "runtime/npy.h"
#include "tools/args.h"
#include "tools/commands.h"
#include "tools/output_check.h"
#if TESSERA_HAVE_LLVM
#include "backends/llvm/cuda_runner.h"
#include "backends/llvm/jit.h"
#endif

namespace tessera::cli {
namespace {

int64_t parse_int(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    long long x = std::stoll(v, &used);
    if (used != v.size()) throw std::invalid_argument(v);
    return x;
  } catch (const std::exception&) {
    throw Error(flag + " needs an integer, got '" + v + "'");
  }
}

// A byte count: an integer with an optional binary suffix (K, M, G, T: 2^10 ...).
int64_t parse_bytes(const std::string& flag, const std::string& v) {
  static const std::string suffixes = "KMGT";
  std::string digits = v;
  int shift = 0;
  if (!v.empty()) {
    size_t s = suffixes.find(static_cast<char>(std::toupper(static_cast<unsigned char>(v.back()))));
    if (s != std::string::npos) {
      shift = 10 * static_cast<int>(s + 1);
      digits.pop_back();
    }
  }
  int64_t n = 0;
  try {
    n = parse_int(flag, digits);
  } catch (const Error&) {
    throw Error(flag + " needs a byte count such as 4294967296 or 4G, got '" + v + "'");
  }
  if (n < 0 || n > (INT64_MAX >> shift)) throw Error(flag + " must be between 0 and 2^63 bytes, got '" + v + "'");
  return n << shift;
}

// One line per kernel that ran (in the order first run), ops outside kernels, the total.
void print_stats(const interp::RunStats& stats, std::ostream& os) {
  CostFigures outside;
  for (const interp::RunStats::Scope& s : stats.scopes()) {
    if (!s.op) {
      outside = s.figures;
      continue;
    }
    os << "stats: " << cost_scope_name(*s.op) << ", " << s.runs << (s.runs == 1 ? " run" : " runs") << ": "
       << figures_str(s.figures) << "\n";
  }
  os << "stats: outside kernels: " << figures_str(outside) << "\n";
  os << "stats: total: " << figures_str(stats.total()) << "\n";
}

// Which outputs differ from the interpreter's beyond the tolerance (`--tol`,
// or default_tolerance per dtype): one line per output, true when all pass.
bool check_outputs(const std::vector<interp::Array>& got, const std::vector<interp::Array>& want,
                   std::optional<double> tol, const std::string& backend, std::ostream& os) {
  bool ok = got.size() == want.size();
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    double err = max_relative_error(got[i], want[i]);
    double limit = tol ? *tol : default_tolerance(want[i].dtype());
    bool pass = err <= limit;
    ok &= pass;
    std::ostringstream line;
    line << "check: out" << i << ": largest relative error " << err << " (tolerance " << limit << ", "
         << dtype_name(want[i].dtype()) << ")" << (pass ? "" : ": FAILED");
    os << line.str() << "\n";
  }
  os << "check: " << backend << (ok ? " matches" : " does not match") << " the interpreter\n";
  return ok;
}

// Runs `func` with its pallas_calls compiled (--backend=jit|cuda).
std::vector<interp::Array> run_compiled([[maybe_unused]] const Module& m, [[maybe_unused]] const std::string& func,
                                        [[maybe_unused]] const std::vector<interp::Array>& inputs,
                                        [[maybe_unused]] interp::RunOptions opts, const std::string& backend,
                                        [[maybe_unused]] const Args& a, [[maybe_unused]] std::ostream& os) {
#if TESSERA_HAVE_LLVM
  namespace ll = backends::llvm_lowering;
  bool zero = opts.uninit == interp::RunOptions::Uninit::zero;
  if (backend == "jit") {
    ll::JitOptions jo;
    jo.threads = static_cast<int>(parse_int("--threads", a.get("--threads")));
    if (jo.threads < 1 || jo.threads > 1024) throw Error("--threads must be between 1 and 1024");
    jo.uninit_zero = zero;
    ll::HostJit jit(jo);
    return ll::run_function_jit(jit, m, func, inputs, opts);
  }
  ll::CudaOptions co;
  co.uninit_zero = zero;
  co.timed_launches = static_cast<int>(parse_int("--time-launches", a.get("--time-launches")));
  ll::CudaRunner gpu(co);
  opts.pallas_call_executor = gpu.executor(m);
  std::vector<interp::Array> outs = interp::run_function(m, func, inputs, opts);
  for (const ll::CudaTiming& t : gpu.timings()) {
    double seconds = t.ms_per_launch / 1e3, rate = static_cast<double>(t.array_bytes) / seconds;
    os << "cuda: " << t.kernel << ": " << t.ms_per_launch << " ms per launch (" << t.launches << " launches), "
       << rate / 1e9 << " GB/s of array bytes, " << 100 * rate / gpu.peak_bytes_per_second() << "% of the peak "
       << gpu.peak_bytes_per_second() / 1e9 << " GB/s of " << gpu.device() << "\n";
  }
  return outs;
#else
  (void)backend;
  throw Error("tessera was built without LLVM 19 (meson option llvm)");
#endif
}

}  // namespace

int cmd_run(const Argv& argv) {
  Args a("run",
         "Runs function NAME (default main) of FILE in the reference interpreter, which simulates a TPU as\n"
         "Pallas's TPU interpret mode does: HBM / VMEM / SMEM buffers, block copies, DMAs, semaphores,\n"
         "several cores per device and devices of a pmap. Inputs come from .npy files (by parameter name)\n"
         "or are random (--random-inputs). Each output is summarized on stdout and, with --out DIR, written\n"
         "to DIR/out0.npy, DIR/out1.npy, ... (bf16 is read and written as float32 .npy).\n"
         "Run-time errors (out-of-bounds blocks, revisited output blocks, races, deadlocks, semaphores left\n"
         "non-zero) are printed as `file:line:col: error: ...` and exit with status 1.",
         "FILE");
  a.flag("--func", "NAME", "the function to run", "main");
  a.repeated("--input", "NAME=PATH.npy", "the input for parameter %NAME");
  a.flag("--random-inputs", "SEED", "random values for inputs not given with --input");
  a.flag("--out", "DIR", "write outputs to DIR/out<i>.npy");
  a.flag("--dma", "eager|on_wait", "when DMAs copy: at dma_start, or when a core waits on their semaphore", "on_wait");
  a.flag("--oob", "raise|uninitialized", "out-of-bounds reads: an error, or uninitialized values", "raise");
  a.flag("--uninit", "nan|zero", "what uninitialized memory holds (nan: NaN / int max / true)", "nan");
  a.toggle("--detect-races", "detect data races with vector clocks (slower)");
  a.toggle("--no-debug-checks", "do not evaluate debug_check ops");
  a.flag("--cores", "N", "cores per device; the parallel prefix of each grid is split among them", "1");
  a.flag("--grid-seed", "N", "visit grid points in a random (seeded) order along parallel axes");
  a.flag("--trace", "FILE", "record every grid point visited (device, core, point) to FILE, also when the run fails");
  a.flag("--timeline", "FILE",
         "write a Chrome trace-event JSON of the run to FILE (Perfetto, chrome://tracing), also when the run\n"
         "fails: grid steps, block copies, DMAs, semaphore waits, races; a logical clock (docs/pictures.md)");
  a.toggle("--stats",
           "after the outputs, print what the run did per pallas_call / core_map and in total: flops,\n"
           "transcendentals, bytes copied in and out by block copies and by DMAs (the figures of `tessera cost`)");
  a.toggle("--allow-hbm-scoped", "allow run_scoped to allocate HBM buffers");
  a.flag("--backend", "interp|jit|cuda",
         "what runs the pallas_calls: the interpreter, compiled code on the host (LLVM ORC JIT), or an NVIDIA\n"
         "GPU (PTX through the CUDA driver, libcuda.so.1); the ops between kernels are always interpreted",
         "interp");
  a.toggle("--check",
           "with --backend=jit|cuda: also run the interpreter and print each output's largest relative\n"
           "error; exit 1 when one exceeds the tolerance");
  a.flag("--tol", "X", "the --check tolerance (default per dtype: f32 1e-5, f64 1e-12, bf16 2^-7, f16 2^-10, ints 0)");
  a.flag("--threads", "N", "--backend=jit: threads sharing the parallel grid points of each kernel", "1");
  a.flag("--time-launches", "N", "--backend=cuda: time N more launches of each kernel and print ms and GB/s", "0");
  a.flag("--max-steps", "N", "stop with an error after N steps: ops and grid iterations (0: no limit)",
         std::to_string(interp::kDefaultMaxSteps));
  a.flag("--max-work", "N",
         "stop with an error after N units of work: elements each op reads, writes and computes, block copies "
         "and DMAs (0: no limit)",
         "0");
  a.flag("--max-memory", "BYTES",
         "stop with an error before the arrays alive at once exceed BYTES (suffix K, M, G, T; 0: no limit)",
         std::to_string(interp::default_memory_limit() >> 20) + "M");
  if (!a.parse(argv)) return a.exit_code();
  if (a.positionals().size() != 1) {
    std::cerr << "error: tessera run takes exactly one FILE ('-' for stdin)\n";
    return 1;
  }
  const std::string& path = a.positionals()[0];
  const std::string backend = a.get("--backend");
  if (backend != "interp" && backend != "jit" && backend != "cuda") {
    std::cerr << "error: --backend must be interp, jit or cuda, got '" << backend << "'\n";
    return 1;
  }
  if (a.has("--check") && backend == "interp") {
    std::cerr << "error: --check compares a compiled backend with the interpreter: give --backend=jit or --backend=cuda\n";
    return 1;
  }
#if TESSERA_HAVE_LLVM
  if (backend == "cuda") {
    if (std::optional<std::string> why = backends::llvm_lowering::cuda_unavailable()) {
      std::cerr << "error: tessera run --backend=cuda: " << *why << "\n";
      return 1;
    }
  }
#endif
  try {
    interp::RunOptions opts;
    for (const char* name : {"dma", "oob", "uninit"})
      interp::set_option_word(opts, name, a.get(std::string("--") + name), std::string("--") + name);
    opts.detect_races = a.has("--detect-races");
    opts.debug_checks = !a.has("--no-debug-checks");
    opts.cores = static_cast<int>(parse_int("--cores", a.get("--cores")));
    if (opts.cores < 1 || opts.cores > 1024) throw Error("--cores must be between 1 and 1024");
    if (a.has("--grid-seed")) opts.grid_seed = static_cast<uint64_t>(parse_int("--grid-seed", a.get("--grid-seed")));
    opts.trace_file = a.get("--trace");
    opts.timeline_file = a.get("--timeline");
    opts.allow_hbm_scoped = a.has("--allow-hbm-scoped");
    opts.max_steps = parse_int("--max-steps", a.get("--max-steps"));
    opts.max_work = parse_int("--max-work", a.get("--max-work"));
    opts.max_memory = parse_bytes("--max-memory", a.get("--max-memory"));
    interp::RunStats stats;
    if (a.has("--stats")) opts.stats = &stats;
    // Inputs count too: .npy headers and parameter types choose their size.
    interp::MemoryLimitScope memory_limit(opts.max_memory);

    std::optional<Module> m = load_module(path, /*verify=*/true);
    if (!m) return 1;
    BodyPtr f = m->entry(a.get("--func"));

    std::map<std::string, std::string> given = named_inputs(a.all("--input"));
    for (const auto& [name, _] : given) {
      bool known = false;
      for (const Var* p : f->params()) known |= p->name == name;
      if (!known) {
        std::string names;
        for (const Var* p : f->params()) names += (names.empty() ? "%" : ", %") + p->name;
        throw Error("--input " + name + ": @" + f->name() + " has no parameter %" + name + " (its parameters: " + names + ")");
      }
    }
    std::vector<interp::Array> inputs;
    for (size_t i = 0; i < f->params().size(); ++i) {
      const Var* p = f->params()[i];
      auto it = given.find(p->name);
      std::string what = "parameter %" + p->name + " of @" + f->name();
      if (it != given.end()) {
        inputs.push_back(interp::read_npy_as(it->second, p->type.array_type(), what));
      } else if (a.has("--random-inputs")) {
        uint64_t seed = static_cast<uint64_t>(parse_int("--random-inputs", a.get("--random-inputs")));
        inputs.push_back(random_input(*p, i, seed));
      } else {
        throw Error("missing input for parameter %" + p->name + " of @" + f->name() + ": give --input " + p->name +
                    "=PATH.npy or --random-inputs SEED");
      }
    }
    std::vector<interp::Array> outs;
    if (backend == "interp") {
      outs = interp::run_function(*m, f->name(), inputs, opts);
    } else {
      std::ostringstream timing;
      outs = run_compiled(*m, f->name(), inputs, opts, backend, a, timing);
      std::cout << timing.str();
    }
    bool check_ok = true;
    std::ostringstream check_report;
    if (a.has("--check")) {
      std::optional<double> tol;
      if (a.has("--tol")) {
        try {
          tol = std::stod(a.get("--tol"));
        } catch (const std::exception&) {
          throw Error("--tol needs a number, got '" + a.get("--tol") + "'");
        }
      }
      interp::RunOptions plain = opts;
      plain.stats = nullptr;
      check_ok = check_outputs(outs, interp::run_function(*m, f->name(), inputs, plain), tol, backend, check_report);
    }
    std::string dir = a.get("--out");
    if (!dir.empty()) std::filesystem::create_directories(dir);
    for (size_t i = 0; i < outs.size(); ++i) {
      std::string name = "out" + std::to_string(i);
      std::cout << name << ": " << interp::summarize(outs[i]) << "\n";
      if (!dir.empty()) interp::write_npy((std::filesystem::path(dir) / (name + ".npy")).string(), outs[i]);
    }
    if (opts.stats) print_stats(stats, std::cout);
    std::cout << check_report.str();
    return check_ok ? 0 : 1;
  } catch (const Error& e) {
    std::cerr << e.formatted() << "\n";
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace tessera::cli
