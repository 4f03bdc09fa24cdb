// run_function: checks the inputs against the function's signature, sets up
// the simulated TPU and evaluates the function.
#include "interpreter/interpreter.h"

#include <fstream>
#include <memory>
#include <optional>
#include <range/v3/view/zip.hpp>
#include <set>

#include "interpreter/eval.h"

namespace tessera::interp {
namespace {

// The largest core_map mesh in the module: a core_map needs that many cores
// per device.
int64_t max_mesh_cores(const Module& m) {
  int64_t best = 1;
  std::set<const Body*> seen;
  std::vector<const Body*> todo;
  for (const BodyPtr& b : m.symbols()) todo.push_back(b.get());
  while (!todo.empty()) {
    const Body* b = todo.back();
    todo.pop_back();
    if (!b || !seen.insert(b).second) continue;
    for (const Op& op : b->ops()) {
      if (op.name() == "core_map") {
        int64_t n = 1;
        for (int64_t s : op.param(keys::mesh_shape)) n *= s;
        best = std::max(best, n);
      }
      for (const BodyPtr& nb : op.nested_bodies()) todo.push_back(nb.get());
    }
  }
  return best;
}

// Writes the grid points visited to `path` (none when empty). `quiet`: on the
// way out of an error, whose message matters more than a failed write.
void write_trace(Interp& in, const std::string& path, bool quiet) {
  if (path.empty()) return;
  std::ofstream t(path);
  for (const std::string& line : in.machine().trace()) t << line << "\n";
  t.close();
  if (!t && !quiet) throw Error("cannot write the trace file " + path);
}

// The failure as a last instant event of the timeline: what kind of stop it
// was (by the phrases of the interpreter's own messages, which op names may
// precede) and its message.
void record_failure(Timeline& t, const Error& e) {
  static const std::pair<const char*, const char*> kinds[] = {
      {"RACE DETECTED", "race"},
      {"deadlock: every core is waiting", "deadlock"},
      {"Revisited block", "revisit"},
      {"Out-of-bounds", "out of bounds"}};
  std::string kind = "error";
  for (const auto& [phrase, name] : kinds)
    if (e.message().find(phrase) != std::string::npos) kind = name;
  t.instant(-1, kind, "error", {arg("message", e.formatted())});
  t.close_open();
}

// Writes the timeline to `path`; `quiet` as for write_trace.
void write_timeline(const Timeline& t, const std::string& path, bool quiet) {
  std::ofstream f(path, std::ios::binary);
  f << t.json();
  f.close();
  if (!f && !quiet) throw Error("cannot write the timeline file " + path);
}

}  // namespace

std::vector<Array> run_function(const Module& m, std::string_view func, const std::vector<Array>& inputs,
                                const RunOptions& opts) {
  BodyPtr f = m.entry(func);
  MemoryLimitScope memory_limit(opts.max_memory);
  if (opts.cores < 1) throw Error("--cores must be at least 1, got " + std::to_string(opts.cores));
  const auto& params = f->params();
  if (inputs.size() != params.size())
    throw Error(f->loc(), "@" + f->name() + " takes " + std::to_string(params.size()) + " input(s), got " +
                              std::to_string(inputs.size()));
  int cores = static_cast<int>(std::max<int64_t>(opts.cores, max_mesh_cores(m)));
  // The timeline outlives the interpreter, so that every simulated core has
  // stopped (and recorded its last events) before it is written.
  std::unique_ptr<Timeline> timeline;
  if (!opts.timeline_file.empty()) timeline = std::make_unique<Timeline>(cores);
  std::vector<Array> result;
  std::optional<Error> failure;
  {
    Interp in(m, opts, cores, timeline.get());
    std::vector<Val> args;
    for (const auto& [param, a] : ranges::views::zip(params, inputs)) {
      const Type& t = param->type;
      if (a.dtype() != t.dtype() || a.shape() != t.shape())
        throw Error(param->loc, "input %" + param->name + " of @" + f->name() + " must be " +
                                    Type::array(t.array_type()).str() + ", got " + Type::array(a.type()).str());
      if (t.is_ref()) {
        auto b = in.machine().allocate(0, -1, t.mem_space(), a, "argument \"" + param->name + "\"");
        args.push_back(Val{Array(), b});
      } else {
        args.push_back(Val{a, nullptr});
      }
    }
    Ctx ctx;
    std::vector<Val> outs;
    try {
      outs = in.eval(*f, std::move(args), ctx);
    } catch (const Error& e) {
      // The trace matters most when the run stops on an error: it shows the
      // grid points visited up to the failing one.
      write_trace(in, opts.trace_file, /*quiet=*/true);
      failure = e;
    }
    if (!failure) {
      write_trace(in, opts.trace_file, /*quiet=*/false);
      for (Val& v : outs) {
        if (v.is_ref()) result.push_back(v.ref->data);
        else result.push_back(std::move(v.arr));
      }
    }
  }
  if (timeline) {
    if (failure) record_failure(*timeline, *failure);
    timeline->close_open();
    write_timeline(*timeline, opts.timeline_file, /*quiet=*/failure.has_value());
  }
  if (failure) throw *failure;
  return result;
}

struct IndexMapEvaluator::State {
  State(const Module& m, const RunOptions& opts) : in(m, opts, 1) {}
  Interp in;
  const Body* map = nullptr;
  std::vector<Val> prefetch;
};

IndexMapEvaluator::IndexMapEvaluator(const Module& m, const Body& map, const std::vector<Array>& prefetch,
                                     const RunOptions& opts)
    : state_(std::make_unique<State>(m, opts)) {
  state_->map = &map;
  for (size_t i = 0; i < prefetch.size(); ++i)
    state_->prefetch.push_back(Val{Array(), state_->in.machine().allocate(0, -1, MemSpace::smem, prefetch[i],
                                                                          "scalar prefetch " + std::to_string(i))});
}

IndexMapEvaluator::IndexMapEvaluator(IndexMapEvaluator&&) noexcept = default;
IndexMapEvaluator::~IndexMapEvaluator() = default;

std::vector<int64_t> IndexMapEvaluator::operator()(const std::vector<int64_t>& program_ids) {
  std::vector<Val> args;
  for (int64_t id : program_ids) args.push_back(Val{Array::scalar(DType::i32, static_cast<double>(id)), nullptr});
  args.insert(args.end(), state_->prefetch.begin(), state_->prefetch.end());
  Ctx ctx;
  std::vector<int64_t> out;
  for (const Val& v : state_->in.eval(*state_->map, std::move(args), ctx)) out.push_back(v.arr.get_int(0));
  return out;
}

std::vector<int64_t> eval_index_map(const Module& m, const Body& map, const std::vector<int64_t>& program_ids,
                                    const std::vector<Array>& prefetch, const RunOptions& opts) {
  return IndexMapEvaluator(m, map, prefetch, opts)(program_ids);
}

std::function<std::vector<int64_t>(const std::vector<int64_t>&)> index_map_function(const Module& m, const Body& map,
                                                                                    const std::vector<Array>& prefetch) {
  // std::function must be copyable; the evaluator is move-only.
  auto eval = std::make_shared<IndexMapEvaluator>(m, map, prefetch);
  return [eval](const std::vector<int64_t>& program_ids) { return (*eval)(program_ids); };
}

}  // namespace tessera::interp
