// Differential test: Z3 verdicts against brute-force enumeration.
//
// Random small grids and index maps (affine forms, div / rem by constants,
// min / max, shifts by constants, `and` with a low-bit mask, select_n on
// comparisons); the reference enumerates every grid
// point with the interpreter's index-map evaluation (which shares nothing
// with the Z3 encoding) and, for non-revisiting, simulates the
// interpreter's visiting orders directly: every permutation of every parallel
// axis, every core count, and the revisiting check per core of
// jax/_src/pallas/mosaic/interpret/interpret_pallas_call.py (`_check_for_revisiting`).
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <random>

#include "protocol_test_util.h"

using namespace tessera;
using namespace tessera::prove;
using namespace tessera::prove::testing;

namespace {

struct Case {
  std::vector<int64_t> grid;
  int parallel = 0;               // leading parallel axes
  std::vector<int64_t> dims;      // array shape (blocks of 1)
  std::string text;
};

class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}

  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

  // An integer expression over the grid variables; returns the SSA name or a literal.
  std::string expr(int depth, int rank) {
    int64_t kind = depth <= 0 ? pick(0, 1) : pick(0, 12);
    if (kind == 0) return std::to_string(pick(-2, 4));
    if (kind == 1) return "%a" + std::to_string(pick(0, rank - 1));
    std::string a = var(depth - 1, rank);
    std::string out = "%t" + std::to_string(next_++);
    switch (kind) {
      case 2: body_ += "  " + out + " = add " + a + ", " + expr(depth - 1, rank) + "\n"; break;
      case 3: body_ += "  " + out + " = sub " + a + ", " + expr(depth - 1, rank) + "\n"; break;
      case 4: body_ += "  " + out + " = mul " + a + ", " + std::to_string(pick(-2, 3)) + "\n"; break;
      case 5: {
        int64_t d = pick(-3, 3);
        if (d == 0) d = 2;
        body_ += "  " + out + " = div " + a + ", " + std::to_string(d) + "\n";
        break;
      }
      case 6: {
        int64_t d = pick(-3, 3);
        if (d == 0) d = 3;
        body_ += "  " + out + " = rem " + a + ", " + std::to_string(d) + "\n";
        break;
      }
      case 7: body_ += "  " + out + " = min " + a + ", " + expr(depth - 1, rank) + "\n"; break;
      case 8: body_ += "  " + out + " = max " + a + ", " + expr(depth - 1, rank) + "\n"; break;
      case 9: body_ += "  " + out + " = shift_left " + a + ", " + std::to_string(pick(0, 2)) + "\n"; break;
      case 10: body_ += "  " + out + " = shift_right_arithmetic " + a + ", " + std::to_string(pick(0, 2)) + "\n"; break;
      case 11: {
        std::string mask = std::to_string((int64_t{1} << pick(0, 3)) - 1);  // 0, 1, 3 or 7
        body_ += "  " + out + " = and " + (pick(0, 1) ? a + ", " + mask : mask + ", " + a) + "\n";
        break;
      }
      default: {
        std::string b = expr(depth - 1, rank);
        std::string c = var(depth - 1, rank), d = expr(depth - 1, rank);
        std::string p = "%t" + std::to_string(next_++);
        const char* cmp[] = {"lt", "le", "eq", "ne", "gt", "ge"};
        body_ += "  " + p + " = " + cmp[pick(0, 5)] + " " + a + ", " + b + "\n";
        body_ += "  " + out + " = select_n " + p + ", " + c + ", " + d + "\n";
      }
    }
    return out;
  }

  Case make() {
    Case c;
    body_.clear();
    next_ = 0;
    int rank = static_cast<int>(pick(1, 3));
    for (int a = 0; a < rank; ++a) c.grid.push_back(pick(1, rank == 3 ? 3 : 4));
    c.parallel = static_cast<int>(pick(0, rank));
    int outs = static_cast<int>(pick(1, 2));
    std::vector<std::string> results;
    for (int k = 0; k < outs; ++k) {
      results.push_back(var(static_cast<int>(pick(0, 3)), rank));
      c.dims.push_back(pick(1, 6));
    }
    std::string params, rets, sem, grid, shape;
    for (int a = 0; a < rank; ++a) {
      params += (a ? ", " : "") + std::string("%a") + std::to_string(a) + ": i32";
      sem += std::string(a ? ", " : "") + (a < c.parallel ? "parallel" : "arbitrary");
      grid += (a ? ", " : "") + std::to_string(c.grid[a]);
    }
    for (int k = 0; k < outs; ++k) {
      rets += std::string(k ? ", " : "") + "i32";
      shape += (k ? "," : "") + std::to_string(c.dims[k]);
    }
    std::string ret;
    for (int k = 0; k < outs; ++k) ret += (k ? ", " : "") + results[k];
    std::string block = outs == 1 ? "1" : "1, 1";
    std::string kshape = outs == 1 ? "1" : "1,1";
    std::string full = outs == 1 ? ":" : ":, :";
    c.text = "index_map @m(" + params + ") -> (" + rets + ") {\n" + body_ + "  return " + ret + "\n}\n" +
             "kernel @k(%x: ref<f32[" + kshape + "], vmem>, %o: ref<f32[" + kshape + "], vmem>) {\n  %v = get %x[" + full +
             "]\n  swap %o[" + full + "], %v\n}\n" + "func @main(%x: f32[" + shape + "]) -> f32[" + shape + "] {\n" +
             "  %out = pallas_call[kernel=@k, grid=(" + grid + "), in_specs=[spec((" + block + "), @m)], out_specs=[spec((" +
             block + "), @m)], out_shapes=[f32[" + shape + "]], dimension_semantics=(" + sem + ")] %x\n  return %out\n}\n";
    return c;
  }

 private:
  // Like expr, but never a bare literal (so every op has a variable operand first).
  std::string var(int depth, int rank) {
    std::string e = expr(depth, rank);
    if (e[0] == '%') return e;
    std::string out = "%t" + std::to_string(next_++);
    body_ += "  " + out + " = add %a" + std::to_string(pick(0, rank - 1)) + ", " + e + "\n";
    return out;
  }

  std::mt19937 rng_;
  std::string body_;
  int next_ = 0;
};

using Point = std::vector<int64_t>;

std::vector<Point> all_points(const std::vector<int64_t>& grid) {
  std::vector<Point> pts;
  Point p(grid.size(), 0);
  int64_t total = 1;
  for (int64_t g : grid) total *= g;
  for (int64_t n = 0; n < total; ++n) {
    int64_t r = n;
    for (size_t a = grid.size(); a-- > 0;) p[a] = r % grid[a], r /= grid[a];
    pts.push_back(p);
  }
  return pts;
}

// The visiting orders of interpret_pallas_call.py (`_execute_grid_for_core`,
// `_get_randomized_grid_coordinates`): per core, a contiguous run of parallel points
// (coordinates relabelled by one permutation per parallel axis), each with its
// whole arbitrary suffix in row-major order. True if some order revisits.
bool brute_revisits(const Case& c, const std::map<Point, Point>& block) {
  int k = c.parallel;
  std::vector<std::vector<int64_t>> perms(k);
  for (int a = 0; a < k; ++a) {
    perms[a].resize(c.grid[a]);
    std::iota(perms[a].begin(), perms[a].end(), 0);
  }
  int64_t S = 1, A = 1;
  for (int a = 0; a < static_cast<int>(c.grid.size()); ++a) (a < k ? S : A) *= c.grid[a];
  std::vector<Point> loops = all_points(c.grid);  // loop indices in row-major order
  // Enumerate the product of the per-axis permutations.
  std::function<bool(int)> rec = [&](int axis) -> bool {
    if (axis == k) {
      for (int64_t cores = 1; cores <= S; ++cores) {
        int64_t per_core = (S + cores - 1) / cores * A;
        for (int64_t core = 0; core < cores; ++core) {
          std::vector<Point> seen;  // blocks visited on this core, consecutive repeats merged
          for (int64_t it = core * per_core; it < std::min<int64_t>((core + 1) * per_core, S * A); ++it) {
            Point gp = loops[it];
            for (int a = 0; a < k; ++a) gp[a] = perms[a][gp[a]];
            const Point& b = block.at(gp);
            if (!seen.empty() && seen.back() == b) continue;
            if (std::find(seen.begin(), seen.end(), b) != seen.end()) return true;
            seen.push_back(b);
          }
        }
      }
      return false;
    }
    std::sort(perms[axis].begin(), perms[axis].end());
    do {
      if (rec(axis + 1)) return true;
    } while (std::next_permutation(perms[axis].begin(), perms[axis].end()));
    return false;
  };
  return rec(0);
}

}  // namespace

TEST_CASE("Z3 verdicts equal brute-force enumeration on random index maps") {
  Gen gen(20261122);
  int cases = 0;
  std::map<std::string, int> failed_counts;
  for (int n = 0; n < 240; ++n) {
    Case c = gen.make();
    CAPTURE(c.text);
    Module m = parse_verified(c.text);
    std::map<Point, Point> block;
    bool oob = false;
    for (const Point& p : all_points(c.grid)) {
      Point b = block_at(m, "m", p);
      for (size_t d = 0; d < b.size(); ++d) oob |= b[d] < 0 || b[d] >= c.dims[d];
      block[p] = b;
    }
    bool unsafe = false;
    for (const auto& [p, bp] : block)
      for (const auto& [q, bq] : block) {
        bool differ = false;
        for (int a = 0; a < c.parallel; ++a) differ |= p[a] != q[a];
        unsafe |= differ && bp == bq;
      }
    bool revisits = brute_revisits(c, block);

    std::vector<Obligation> obs = prove_module(m);
    auto verdict = [&](const std::string& s, const std::string& k) { return find(obs, s, k).verdict; };
    auto expect = [](bool bad) { return bad ? Verdict::failed : Verdict::proved; };
    CHECK(verdict("in[0]", "bounds") == expect(oob));
    CHECK(verdict("out[0]", "bounds") == expect(oob));
    CHECK(verdict("out[0]", "parallel safety") == expect(unsafe));
    CHECK(verdict("out[0]", "non-revisiting") == expect(revisits));
    failed_counts["bounds"] += oob;
    failed_counts["parallel safety"] += unsafe;
    failed_counts["non-revisiting"] += revisits;
    failed_counts["cases"] += 1;
    ++cases;
  }
  CHECK(cases >= 200);
  // Both verdicts occur for every obligation, or the comparison would prove little.
  for (const char* k : {"bounds", "parallel safety", "non-revisiting"}) {
    CAPTURE(k);
    CHECK(failed_counts[k] >= 10);
    CHECK(failed_counts[k] <= cases - 10);
  }
}

// Semaphore balance (and deadlocks) against the interpreter's runs.
namespace {

// Random kernels of semaphore_signal / semaphore_wait on a ref<sem[2]>, some
// under a `cond` on the grid index, some in a `for` loop, over grids of 1 to 4
// steps. The reference is the interpreter's run: a deadlock or a semaphore
// left non-zero at kernel exit is a broken protocol.
class SemGen {
 public:
  explicit SemGen(uint32_t seed) : rng_(seed) {}
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

  // One signal or wait on `sem` at an element from `elems`; mostly a signal
  // and its matching wait, so that balanced protocols are common.
  std::string op(const std::string& sem, const std::vector<std::string>& elems) {
    auto elem = [&] { return elems[pick(0, static_cast<int64_t>(elems.size()) - 1)]; };
    std::string e = elem(), n = std::to_string(pick(1, 2));
    if (pick(0, 9) < 7) return "semaphore_signal " + sem + "[" + e + "], " + n + "\n  semaphore_wait " + sem + "[" + e + "], " + n + "\n";
    return std::string(pick(0, 1) ? "semaphore_signal " : "semaphore_wait ") + sem + "[" + e + "], " + n + "\n";
  }
  std::string stmts(int n, const std::string& sem, const std::vector<std::string>& elems, int depth) {
    std::string s;
    for (int k = 0; k < n; ++k) {
      int kind = depth > 0 ? 0 : static_cast<int>(pick(0, 3));
      std::string id = std::to_string(next_++);
      if (kind <= 1) {
        s += "  " + op(sem, elems);
      } else if (kind == 2) {
        // cond on the grid index: branch 1 runs when the comparison holds.
        s += "  %c" + id + " = " + (pick(0, 1) ? "eq" : "lt") + " %i, " + std::to_string(pick(0, 3)) + "\n";
        std::string inner = stmts(static_cast<int>(pick(1, 2)), "%s" + id, {"0", "1", "%p" + id}, depth + 1);
        s += "  cond[branches=[fn(%s0_" + id + ": ref<sem[2], semaphore>, %q0_" + id + ": i32) { }, fn(%s" + id +
             ": ref<sem[2], semaphore>, %p" + id + ": i32) {\n" + inner + "  }]] %c" + id + ", " + sem + ", %p\n";
      } else {
        std::string inner = "  %r" + id + " = rem %j" + id + ", 2\n" +
                            stmts(static_cast<int>(pick(1, 2)), "%s" + id, {"0", "%r" + id, "%p" + id}, depth + 1);
        s += "  for[body=fn(%j" + id + ": i32, %s" + id + ": ref<sem[2], semaphore>, %p" + id + ": i32) {\n" + inner +
             "  }, num_consts=2] 0:i32, " + std::to_string(pick(1, 3)) + ":i32, " + sem + ", %p\n";
      }
    }
    return s;
  }
  std::string program(int64_t grid) {
    std::string body = stmts(static_cast<int>(pick(2, 4)), "%sem", {"0", "1", "%p"}, 0);
    std::string rows = std::to_string(8 * grid);
    return "index_map @rows(%i: i32) -> (i32, i32) { return %i, 0 }\n"
           "kernel @k(%x: ref<f32[8,128], vmem>, %o: ref<f32[8,128], vmem>, %sem: ref<sem[2], semaphore>) {\n"
           "  %i = program_id[axis=0]\n  %p = rem %i, 2\n" + body +
           "  %v = get %x[:, :]\n  swap %o[:, :], %v\n}\n"
           "func @main(%x: f32[" + rows + ",128]) -> f32[" + rows + ",128] {\n"
           "  %out = pallas_call[kernel=@k, grid=(" + std::to_string(grid) + "), in_specs=[spec((8, 128), @rows)],\n"
           "    out_specs=[spec((8, 128), @rows)], out_shapes=[f32[" + rows + ",128]], scratch=[ref<sem[2], semaphore>],\n"
           "    dimension_semantics=(arbitrary)] %x\n  return %out\n}\n";
  }

 private:
  std::mt19937 rng_;
  int next_ = 0;
};

// One program of a campaign: the balance verdict against a run of it on
// `inputs`, counted in `seen` by verdict and outcome.
void compare_with_run(const std::string& text, const std::vector<interp::Array>& inputs, std::map<std::string, int>& seen) {
  Obligation o = balance(text);
  std::string err = run_error(text, inputs);
  bool broken = has(err, "non-zero count") || has(err, "deadlock");
  CHECK_MESSAGE((err.empty() || broken), err);
  if (o.verdict == Verdict::proved) CHECK_MESSAGE(!broken, o.line() << "\n" << err);
  if (o.verdict == Verdict::failed) CHECK_MESSAGE(broken, o.line());
  ++seen[std::string(verdict_name(o.verdict)) + (broken ? " broken" : " ok")];
}

std::string summary(const std::map<std::string, int>& seen) {
  std::string s;
  for (const auto& [k, n] : seen) s += k + " " + std::to_string(n) + "; ";
  return s;
}

}  // namespace

TEST_CASE("semaphore balance: verdicts agree with the interpreter on random protocols") {
  std::map<std::string, int> seen;
  for (uint32_t seed = 0; seed < 150; ++seed) {
    SemGen gen(seed);
    int64_t grid = gen.pick(1, 4);
    std::string text = gen.program(grid);
    CAPTURE(text);
    compare_with_run(text, {zeros(DType::f32, {8 * grid, 128})}, seen);
  }
  MESSAGE("verdict / run: " << summary(seen));
  // The campaign reaches both verdicts, and most programs get one.
  CHECK(seen["proved ok"] >= 30);
  CHECK(seen["FAILED broken"] >= 30);
  CHECK(seen["unknown ok"] + seen["unknown broken"] <= 40);
}

namespace {

// Random protocols across the devices of a pmap (2 to 4 devices, one grid
// step): signals to this device, the next or the previous one on the ring,
// waits, some under a `cond` on the device index. The reference is the
// interpreter's run, all devices together: a deadlock or a semaphore left
// non-zero is a broken protocol.
class RingGen {
 public:
  explicit RingGen(uint32_t seed) : rng_(seed) {}
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

  std::string op(const std::string& sem, const std::string& me, const std::string& next, const std::string& prev) {
    std::string e = std::to_string(pick(0, 1)), n = std::to_string(pick(1, 2));
    const std::string targets[] = {me, next, prev};
    std::string signal = "semaphore_signal " + sem + "[" + e + "], " + n + ", " + targets[pick(0, 2)] + "\n";
    std::string wait = "semaphore_wait " + sem + "[" + e + "], " + n + "\n";
    // Mostly a signal to a neighbour and a wait for what the other neighbour sends: balanced on a ring.
    int64_t kind = pick(0, 9);
    if (kind < 7) return signal + "  " + wait;
    if (kind < 8) return wait + "  " + signal;
    return kind < 9 ? signal : wait;
  }
  // `generic`: the neighbours come from axis_size, so the program is the
  // same for every device count but the pmap's.
  std::string program(int64_t devices, bool generic = false) {
    std::string body;
    for (int64_t k = 0, n = pick(2, 5); k < n; ++k) {
      if (pick(0, 5) > 0) {
        body += "  " + op("%sem", "%me", "%next", "%prev");
        continue;
      }
      std::string id = std::to_string(k);
      body += "  %c" + id + " = eq %me, " + std::to_string(pick(0, devices - 1)) + "\n";
      std::string params = "%s" + id + ": ref<sem[2], semaphore>, %m" + id + ": i32, %n" + id + ": i32, %p" + id + ": i32";
      std::string inner = "    " + op("%s" + id, "%m" + id, "%n" + id, "%p" + id);
      body += "  cond[branches=[fn(" + params + ") { }, fn(" + params + ") {\n" + inner + "  }]] %c" + id +
              ", %sem, %me, %next, %prev\n";
    }
    std::string d = std::to_string(devices);
    std::string ring = generic ? "  %n = axis_size[axis_name=dev]\n  %me1 = add %me, 1\n  %next = rem %me1, %n\n"
                                 "  %n1 = sub %n, 1\n  %mep = add %me, %n1\n  %prev = rem %mep, %n\n"
                               : "  %me1 = add %me, 1\n  %next = rem %me1, " + d + "\n  %mep = add %me, " +
                                     std::to_string(devices - 1) + "\n  %prev = rem %mep, " + d + "\n";
    return "kernel @k(%x: ref<f32[8], vmem>, %o: ref<f32[8], vmem>, %sem: ref<sem[2], semaphore>) {\n"
           "  %me = axis_index[axis_name=dev]\n" + ring + body +
           "  %a = get %x[:]\n  swap %o[:], %a\n}\n"
           "func @main(%x: f32[" + d + ",8]) -> f32[" + d + ",8] {\n"
           "  %out = pmap[axis_name=dev, axis_size=" + d + ", in_axes=(0), out_axes=(0), body=fn(%xs: f32[8]) -> f32[8] {\n"
           "    %r = pallas_call[kernel=@k, grid=(1), in_specs=[spec()], out_specs=[spec()], out_shapes=[f32[8]],\n"
           "                     scratch=[ref<sem[2], semaphore>]] %xs\n    return %r\n  }] %x\n  return %out\n}\n";
  }

 private:
  std::mt19937 rng_;
};

}  // namespace

TEST_CASE("semaphore balance across devices: verdicts agree with the interpreter on random ring protocols") {
  std::map<std::string, int> seen;
  for (uint32_t seed = 0; seed < 150; ++seed) {
    RingGen gen(seed);
    int64_t devices = gen.pick(2, 4);
    std::string text = gen.program(devices);
    CAPTURE(text);
    compare_with_run(text, {zeros(DType::f32, {devices, 8})}, seen);
  }
  MESSAGE("verdict / run: " << summary(seen));
  CHECK(seen["proved ok"] >= 20);
  CHECK(seen["FAILED broken"] >= 20);
  CHECK(seen["unknown ok"] + seen["unknown broken"] <= 20);
}

TEST_CASE("semaphore balance for every device count: a protocol proved so runs on every ring the interpreter tries") {
  std::map<std::string, int> seen;
  int every = 0;
  for (uint32_t seed = 0; seed < 100; ++seed) {
    RingGen gen(seed + 1000);
    int64_t devices = gen.pick(2, 4);
    std::string text = gen.program(devices, true);
    CAPTURE(text);
    compare_with_run(text, {zeros(DType::f32, {devices, 8})}, seen);
    Obligation o = balance(text);
    if (o.verdict != Verdict::proved || !has(o.detail, "for every device count")) continue;
    ++every;
    std::string d = std::to_string(devices);
    for (int64_t n = 2; n <= 6; ++n) {
      CAPTURE(n);
      std::string other = replace_once(text, "axis_size=" + d, "axis_size=" + std::to_string(n));
      other = replace_once(other, "f32[" + d + ",8]) -> f32[" + d + ",8]",
                           "f32[" + std::to_string(n) + ",8]) -> f32[" + std::to_string(n) + ",8]");
      CHECK(run_error(other, {zeros(DType::f32, {n, 8})}) == "");
    }
  }
  MESSAGE("verdict / run: " << summary(seen) << "proved for every count: " << every);
  CHECK(every >= 20);
  CHECK(seen["FAILED broken"] >= 20);
}

TEST_CASE("semaphore balance across devices with a parallel grid axis: proved protocols run in every order tried") {
  // The ring protocols above, each step of a grid of 3 along a parallel axis.
  int proved = 0;
  std::map<std::string, int> seen;
  for (uint32_t seed = 0; seed < 150; ++seed) {
    RingGen gen(seed + 2000);
    int64_t devices = gen.pick(2, 3);
    std::string text = replace_once(gen.program(devices), "grid=(1), in_specs=[spec()], out_specs=[spec()]",
                                    "grid=(3), dimension_semantics=(parallel), in_specs=[spec()], out_specs=[spec()]");
    CAPTURE(text);
    compare_with_run(text, {zeros(DType::f32, {devices, 8})}, seen);
    Obligation o = balance(text);
    if (o.verdict != Verdict::proved) continue;
    ++proved;
    check_runs_in_orders(text, {zeros(DType::f32, {devices, 8})});
  }
  MESSAGE("verdict / run: " << summary(seen));
  CHECK(proved >= 10);
  CHECK(seen["FAILED broken"] >= 20);
}
