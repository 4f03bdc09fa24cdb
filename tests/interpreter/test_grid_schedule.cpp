// The grid schedule of ir/grid_schedule.h against what the interpreter does:
// its decisions (copy in, copy out, carried), evaluated concretely from the
// index maps, must be exactly the block copies the interpreter's timeline
// records, step by step and core by core, and a block that is neither carried
// nor new must be the interpreter's "Revisited block" error.
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "interp_test_util.h"
#include "interpreter/axis_order.h"
#include "runtime/region.h"
#include "ir/grid_schedule.h"

using namespace itest;

namespace {

// x @ y with the output block resident over the arbitrary k axis (3 steps).
const char* kMatmul = R"(
index_map @x_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) {
  return %i, %k
}
index_map @y_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) {
  return %k, %j
}
index_map @out_tile(%i: i32, %j: i32, %k: i32) -> (i32, i32) {
  return %i, %j
}
kernel @mm(%x: ref<f32[8,8], vmem>, %y: ref<f32[8,8], vmem>, %o: ref<f32[8,8], vmem>) {
  %k = program_id[axis=2]
  %first = eq %k, 0
  cond[branches=[
    fn(%o0: ref<f32[8,8], vmem>) { },
    fn(%o1: ref<f32[8,8], vmem>) {
      %zeros = broadcast_in_dim[shape=(8, 8), broadcast_dimensions=()] 0.0:f32
      swap %o1[:, :], %zeros
    }
  ]] %first, %o
  %a = get %x[:, :]
  %b = get %y[:, :]
  %p = dot_general[lhs_contracting=(1), rhs_contracting=(0)] %a, %b
  addupdate %o[:, :], %p
}
func @main(%x: f32[16,24], %y: f32[24,16]) -> f32[16,16] {
  %out = pallas_call[kernel=@mm, grid=(2, 2, 3),
                     in_specs=[spec((8, 8), @x_tile), spec((8, 8), @y_tile)],
                     out_specs=[spec((8, 8), @out_tile)], out_shapes=[f32[16,16]],
                     dimension_semantics=(parallel, parallel, arbitrary)] %x, %y
  return %out
}
)";

// Blocks that come back after another one: `a` and the output (aliased to
// `a`, so no revisit error) hold blocks 0, 0, 1, 1, 0, 0 (carried, moved,
// back); `c` stays on block 0.
const char* kAlternating = R"(
index_map @alt(%i: i32) -> (i32) {
  %h = div %i, 2
  %r = rem %h, 2
  return %r
}
index_map @zero(%i: i32) -> (i32) {
  return 0
}
kernel @k(%a: ref<f32[4], vmem>, %c: ref<f32[4], vmem>, %o: ref<f32[4], vmem>) {
  %x = get %a[:]
  %y = get %c[:]
  %z = add %x, %y
  swap %o[:], %z
}
func @main(%a: f32[8], %c: f32[4]) -> f32[8] {
  %out = pallas_call[kernel=@k, grid=(6),
                     in_specs=[spec((4), @alt), spec((4), @zero)],
                     out_specs=[spec((4), @alt)], out_shapes=[f32[8]],
                     input_output_aliases=[(0, 0)]] %a, %c
  return %out
}
)";

const Op& pallas_call_of(const Module& m) {
  for (const Op& op : m.find("main")->ops())
    if (op.name() == "pallas_call") return op;
  FAIL("no pallas_call in @main");
  throw 0;
}

// "copy in \"x\"" -> copy in "x"
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += s[i] == '\\' && i + 1 < s.size() ? s[++i] : s[i];
  return out;
}

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

using Events = std::map<int, std::vector<std::string>>;  // per core, in order

// The copies and steps the interpreter's timeline recorded, per core, in the
// order they ended (a step ends after its copies out).
Events observed(const std::filesystem::path& timeline) {
  std::ifstream f(timeline);
  REQUIRE(f);
  static const std::regex name(R"re("name": "((?:[^"\\]|\\.)*)")re"), tid(R"re("tid": (\d+))re"),
      block(R"re("block": (\[[^\]]*\]))re"), point(R"re("point": (\[[^\]]*\]))re");
  Events ev;
  std::string line;
  while (std::getline(f, line)) {
    std::smatch n, t, b;
    if (!std::regex_search(line, n, name) || !std::regex_search(line, t, tid)) continue;
    std::string what = unescape(n[1]);
    int core = std::stoi(t[1]);
    if (what.rfind("copy ", 0) == 0 && std::regex_search(line, b, block)) ev[core].push_back(what + " " + b[1].str());
    else if (what.rfind("step ", 0) == 0 && std::regex_search(line, b, point)) ev[core].push_back("step " + b[1].str());
  }
  return ev;
}

// What the grid schedule says the interpreter does, evaluated concretely:
// per core, before each step its copies in, after it its copies out.
struct Prediction {
  Events events;
  std::string revisit;  // "output 0 at [..]": the first block neither carried nor new, or ""
};

Prediction predict(const Module& m, const Op& call, int cores, std::optional<uint64_t> seed) {
  GridMapping g = grid_mapping(call);
  GridOrder order = *grid_order(g, g.grid);
  std::vector<AxisOrder> perm(g.grid.size());
  if (seed) {
    std::mt19937_64 rng(*seed);
    for (int d = 0; d < order.parallel; ++d) perm[d] = AxisOrder(g.grid[d], rng);
  }
  int maps = g.num_inputs() + g.num_outputs();
  std::vector<std::function<std::vector<int64_t>(const std::vector<int64_t>&)>> index(maps);
  for (int j = 0; j < maps; ++j) index[j] = interp::index_map_function(m, *g.spec(j).index_map, {});
  std::vector<bool> aliased(g.num_outputs());
  for (auto [i, o] : g.aliases) aliased[o] = true;
  Prediction pr;
  for (int core = 0; core < cores; ++core) {
    GridOrder::Range steps = order.core_steps(core, cores);
    int64_t first = steps.first, last = steps.last;
    std::vector<int64_t> loop = order.coords(first);
    auto point_at = [&](const std::vector<int64_t>& l) {
      std::vector<int64_t> p(l.size());
      for (size_t d = 0; d < l.size(); ++d) p[d] = perm[d].at(l[d]);
      return p;
    };
    // Per mapping: the block index and its place at the previous, current and next step.
    auto blocks_at = [&](const std::vector<int64_t>& p) {
      std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> b;
      for (int j = 0; j < maps; ++j) {
        std::vector<int64_t> idx = index[j](p), place;
        for (const BlockGeometry::Extent& e : g.geometry(j).block_at(idx)) place.insert(place.end(), {e.start, e.size});
        b.push_back({idx, place});
      }
      return b;
    };
    std::vector<std::set<std::vector<int64_t>>> seen(g.num_outputs());
    decltype(blocks_at({})) prev, cur = blocks_at(point_at(loop)), next;
    for (int64_t s = first; s < last; ++s) {
      std::vector<int64_t> point = point_at(loop);
      bool has_next = s + 1 < last;
      if (has_next) order.advance(loop), next = blocks_at(point_at(loop));
      auto at = [&](int j) {
        static const std::vector<int64_t> none;
        return residency_at(s == first, !has_next, s == first ? none : prev[j].second, cur[j].second,
                            has_next ? next[j].second : none);
      };
      auto name = [&](int j) {
        std::string d = g.describe(j);
        return d.substr(d.find(' ') + 1);
      };
      std::vector<std::string>& ev = pr.events[core];
      for (int j = 0; j < g.num_inputs(); ++j)
        if (at(j).copy_in) ev.push_back("copy in " + name(j) + " " + list(cur[j].first));
      for (int o = 0; o < g.num_outputs(); ++o) {
        int j = g.num_inputs() + o;
        StepResidency r = at(j);
        if (r.copy_out) ev.push_back("copy out " + name(j) + " " + list(cur[j].first));
        if (!aliased[o] && !r.carried && !seen[o].insert(cur[j].second).second && pr.revisit.empty())
          pr.revisit = "output " + name(j) + " in iteration " + ints_str(point);
      }
      ev.push_back("step " + list(point));
      prev = std::move(cur);
      cur = std::move(next);
    }
  }
  return pr;
}

// How many events of all cores start with `prefix`.
int64_t count(const Events& ev, const std::string& prefix) {
  int64_t n = 0;
  for (const auto& [core, list] : ev)
    for (const std::string& e : list) n += e.rfind(prefix, 0) == 0;
  return n;
}

// Runs @main with a timeline and compares its copies with the prediction;
// returns the prediction.
Events check_schedule(const char* text, const std::vector<Array>& in, int cores, std::optional<uint64_t> seed = {}) {
  Module m = parse_checked(text);
  Prediction pr = predict(m, pallas_call_of(m), cores, seed);
  REQUIRE(pr.revisit.empty());
  std::filesystem::path dir = temp_dir("grid_schedule");
  RunOptions o;
  o.cores = cores;
  o.grid_seed = seed;
  o.timeline_file = (dir / "timeline.json").string();
  run_function(m, "main", in, o);
  Events seen = observed(o.timeline_file);
  std::filesystem::remove_all(dir);
  CHECK(seen == pr.events);
  for (auto& [core, ev] : pr.events) {
    if (seen[core] == ev) continue;
    for (size_t k = 0; k < std::max(ev.size(), seen[core].size()); ++k)
      MESSAGE("core " << core << " #" << k << ": predicted " << (k < ev.size() ? ev[k] : "-") << ", ran "
                      << (k < seen[core].size() ? seen[core][k] : "-"));
  }
  return pr.events;
}

Array ramp(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(k % 7);
  return Array::from_values(DType::f32, shape, v);
}

std::vector<Array> matmul_inputs() { return {ramp({16, 24}), ramp({24, 16})}; }
std::vector<Array> alternating_inputs() { return {ramp({8}), ramp({4})}; }

}  // namespace

TEST_CASE("grid schedule: matmul's k-accumulation copies as the schedule says, on one and two cores") {
  // One core, grid (2, 2, 3): x (i, k) and y (k, j) move at every step, the
  // output (i, j) only when k wraps, so it goes out once per (i, j).
  Events one = check_schedule(kMatmul, matmul_inputs(), 1);
  CHECK(count(one, "copy in \"x\"") == 12);
  CHECK(count(one, "copy in \"y\"") == 12);
  CHECK(count(one, "copy out") == 4);
  check_schedule(kMatmul, matmul_inputs(), 2);
  check_schedule(kMatmul, matmul_inputs(), 3, 7);
}

TEST_CASE("grid schedule: blocks that come back after another are copied again; aliased outputs too") {
  // `a` holds 0, 0, 1, 1, 0, 0: in at steps 0, 2, 4; `c` once; the output out after steps 1, 3, 5.
  Events ev = check_schedule(kAlternating, alternating_inputs(), 1);
  CHECK(count(ev, "copy in \"a\"") == 3);
  CHECK(count(ev, "copy in \"c\"") == 1);
  CHECK(count(ev, "copy out") == 3);
}

TEST_CASE("grid schedule: a block neither carried nor new is the interpreter's revisit error") {
  std::string text = kAlternating;
  text.replace(text.find(",\n                     input_output_aliases=[(0, 0)]"),
               std::string(",\n                     input_output_aliases=[(0, 0)]").size(), "");
  Module m = parse_checked(text);
  Prediction pr = predict(m, pallas_call_of(m), 1, {});
  REQUIRE(!pr.revisit.empty());
  std::string err = run_error(text, alternating_inputs());
  CHECK(err.find("Revisited block") != std::string::npos);
  CHECK(err.find(pr.revisit) != std::string::npos);
}

TEST_CASE("grid schedule: the comparison can fail") {
  // A schedule that copies an input in only on its first visit ever (a cache)
  // differs from the interpreter's on blocks that come back.
  Module m = parse_checked(kAlternating);
  Prediction pr = predict(m, pallas_call_of(m), 1, {});
  std::vector<std::string>& ev = pr.events[0];
  std::set<std::string> once;
  std::vector<std::string> cached;
  for (const std::string& e : ev)
    if (e.rfind("copy in", 0) != 0 || once.insert(e).second) cached.push_back(e);
  CHECK(cached != ev);
  // And the symbolic and concrete forms of "the block stays" agree.
  ConcreteAlgebra a;
  for (auto [x, y] : {std::pair{std::vector<int64_t>{1, 2}, std::vector<int64_t>{1, 2}}, {{1, 2}, {1, 3}}, {{0}, {4}}})
    CHECK(same_block(a, x, y) == !block_moved(a, false, x, y));
}
