// A generator of random small protocol programs in the .tsr text format, for
// the protocol campaign (test_protocol_campaign.cpp): kernels that coordinate
// devices of a `pmap` or cores of a `core_map` with semaphores and DMAs, in
// exactly the shapes where the prover's protocol and state claims have been
// wrong before:
//
// * pmaps of 1 to 5 devices around one pallas_call, and core_maps of 1 to 5
//   cores;
// * scalar prefetch that differs per device: split over the pmap axis
//   (in_axes=0) or computed from axis_index in the pmap body, used as signal
//   flags (a `cond` around a signal or a wait) and as signal amounts;
// * per-device dynamic grid sizes (computed from axis_index, or read from an
//   input split over the pmap axis);
// * semaphore_signal and remote dma_start targets computed with a modulo (a
//   ring) and without one (so that some leave the devices / cores);
// * dma_wait naming another region than the DMA wrote (same byte count);
// * output blocks the kernel writes only partly;
// * core_map cores sharing a VMEM Ref: each writes its own row and reads
//   another core's, with a semaphore ordering them or without.
//
// Every program is its own reproducer: its values are computed in the program
// or drawn by `tessera run --random-inputs SEED` (integers in [0, 8), declared
// to the prover with a `# prove: assume` line).
#pragma once

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace tessera::robustness {

// The shapes, by name (the names are what failure summaries, the open-class
// list and TESSERA_CAMPAIGN_SHAPES use).
inline const std::vector<std::string>& protocol_shapes() {
  static const std::vector<std::string> names = {
      "pmap",                // a pallas_call inside a pmap of 1 to 5 devices
      "core-map",            // a core_map of 1 to 5 cores sharing a VMEM Ref
      "prefetch-split",      // scalar prefetch split over the pmap axis
      "prefetch-axis",       // scalar prefetch computed from axis_index
      "prefetch-flag",       // a signal or wait under a cond on a prefetch value
      "prefetch-amount",     // a signal / wait amount read from scalar prefetch
      "dynamic-grid-axis",   // a grid size computed from axis_index
      "dynamic-grid-split",  // a grid size read from an input split over the pmap axis
      "dynamic-grid-zero",   // a per-device grid size that is 0 on some devices (they run no step)
      "unmodded-target",     // a signal / DMA target or core index without a modulo
      "remote-dma",          // a dma_start to another device, in a grid of one step
      "remote-dma-steps",    // the same in a grid of several steps (or a dynamic one)
      "skip-self-signal",    // a signal skipped when its target is this device (a ring of 1 waits forever)
      "wait-other-region",   // a dma_wait naming another region than the DMA wrote
      "scratch-read-before-write",  // such a wait on a grid with no parallel axis: step 0 reads unwritten scratch
      "partial-output",      // an output block written only in part
      "core-unordered",      // a core reads a row another core writes, no semaphore between
  };
  return names;
}

// Whether the generator can make `shape` with the shapes in `off` left out
// (the uses of scalar prefetch need one of its sources, the pmap shapes a pmap).
inline bool shape_possible(const std::string& shape, const std::set<std::string>& off) {
  if (off.count(shape)) return false;
  if (shape == "prefetch-flag" || shape == "prefetch-amount")
    return shape_possible("prefetch-split", off) || shape_possible("prefetch-axis", off);
  if (shape == "core-map" || shape == "core-unordered") return !off.count("core-map");
  if (shape == "scratch-read-before-write") return shape_possible("wait-other-region", off);
  if (shape == "dynamic-grid-zero")
    return shape_possible("dynamic-grid-axis", off) || shape_possible("dynamic-grid-split", off);
  if (shape != "pmap" && off.count("pmap")) return shape == "unmodded-target" || shape == "skip-self-signal";
  return true;
}

// One generated program and what the checks need to know about it.
struct ProtocolProgram {
  std::string text;
  std::set<std::string> shapes;  // the shapes it uses
};

class ProtocolGen {
 public:
  // `off`: shapes the generator must not use.
  ProtocolGen(uint64_t seed, std::set<std::string> off) : rng_(seed), off_(std::move(off)) {}

  ProtocolProgram make() {
    text_.clear();
    used_.clear();
    next_ = 0;
    bool pmap = may("pmap"), core = may("core-map");
    if (pmap && (!core || chance(0.7))) make_pmap();
    else if (core) make_core_map();
    return {text_, used_};
  }

 private:
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  bool may(const std::string& shape) const { return !off_.count(shape); }
  // Decides to use `shape` with probability p (never when it is off).
  bool use(const std::string& shape, double p) {
    if (!may(shape) || !chance(p)) return false;
    used_.insert(shape);
    return true;
  }
  std::string fresh(const std::string& stem) { return "%" + stem + std::to_string(next_++); }
  std::string line(std::string& body, const std::string& stem, const std::string& rhs) {
    std::string name = fresh(stem);
    body += "  " + name + " = " + rhs + "\n";
    return name;
  }
  static std::string str(int64_t v) { return std::to_string(v); }

  // ---- pmap around a pallas_call -------------------------------------------

  // What the kernel body being made has available.
  struct Kernel {
    int64_t devices = 1;
    bool prefetch = false;
    bool static_grid = true;
    bool parallel = false;
    int64_t grid = 1;
    std::string body;
    std::vector<std::string> scratch_params, scratch_types;
    std::string acc;  // the f32[4,8] value the output is made of
  };

  // A device index: a neighbour on the ring (with a modulo), a neighbour
  // without one, this device, or device 0.
  std::string target(Kernel& k) {
    if (use("unmodded-target", 0.2)) return line(k.body, "t", "add %me, " + str(chance(0.6) ? 1 : -1));
    int64_t kind = pick(0, 19);
    if (kind == 0) return "0";
    if (kind < 5) return "%me";
    // The ring's size: the literal, or axis_size (a kernel for every device count).
    std::string n = chance(0.6) ? str(k.devices) : line(k.body, "t", "axis_size[axis_name=dev]");
    std::string back = n[0] == '%' ? line(k.body, "t", "sub " + n + ", 1") : str(k.devices - 1);
    std::string a = line(k.body, "t", "add %me, " + (chance(0.6) ? std::string("1") : back));
    return line(k.body, "t", "rem " + a + ", " + n);
  }

  // A signal amount: a literal, or 1 + a prefetch value mod 3 (per device).
  std::string amount(Kernel& k) {
    if (k.prefetch && use("prefetch-amount", 0.3)) {
      std::string p = line(k.body, "a", "get %p[" + str(pick(0, 1)) + "]");
      std::string m = line(k.body, "a", "rem " + p + ", 3");
      return line(k.body, "a", "add " + m + ", 1");
    }
    return str(pick(1, 2));
  }

  // `stmt` (one line, no indent, naming %sem, %tgt and %amt), under a cond on
  // a guard or not. The branch body gets the three as parameters.
  // `signal`: the statement is a signal, which may be skipped when it targets this device.
  void guarded(Kernel& k, const std::string& stmt, const std::string& sem, const std::string& tgt,
               const std::string& amt, bool signal = false) {
    const std::string sem_type = "ref<sem[2], semaphore>";
    auto operand = [](const std::string& v) { return v[0] == '%' ? v : v + ":i32"; };
    std::string guard;
    if (k.prefetch && use("prefetch-flag", 0.35)) {
      std::string p = line(k.body, "f", "get %p[" + str(pick(0, 1)) + "]");
      std::string r = line(k.body, "f", "rem " + p + ", 2");
      guard = line(k.body, "f", "ne " + r + ", 0");
    } else if (signal && tgt[0] == '%' && tgt != "%me" && use("skip-self-signal", 0.2)) {
      guard = line(k.body, "f", "ne " + tgt + ", %me");
    } else if (chance(0.2)) {
      guard = line(k.body, "f", "lt %me, " + str(k.devices - 1));  // a chain: the last device skips it
    }
    auto with = [&](const std::string& s, const std::string& t, const std::string& a) {
      std::string out = stmt;
      for (auto [from, to] : {std::pair<std::string, std::string>{"%sem", s}, {"%tgt", t}, {"%amt", a}}) {
        for (size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size()))
          out.replace(at, from.size(), to);
      }
      return out;
    };
    if (guard.empty()) {
      k.body += "  " + with(sem, tgt, amt) + "\n";
      return;
    }
    std::string id = str(next_++);
    std::string params = "(%gs" + id + ": " + sem_type + ", %gt" + id + ": i32, %ga" + id + ": i32)";
    std::string params0 = "(%hs" + id + ": " + sem_type + ", %ht" + id + ": i32, %ha" + id + ": i32)";
    k.body += "  cond[branches=[fn" + params0 + " { }, fn" + params + " {\n    " +
              with("%gs" + id, "%gt" + id, "%ga" + id) + "\n  }]] " + guard + ", " + sem + ", " + operand(tgt) + ", " + operand(amt) + "\n";
  }

  // A signal to another device and a wait for what this one receives, on
  // one element of %s (the wait mostly for the amount this device sends).
  void ring_signal(Kernel& k) {
    std::string e = "[" + str(pick(0, 1)) + "]";
    std::string t = target(k);
    std::string a = amount(k);
    auto signal = [&] { guarded(k, "semaphore_signal %sem" + e + ", %amt, %tgt", "%s", t, a, true); };
    auto wait = [&] { guarded(k, "semaphore_wait %sem" + e + ", %amt", "%s", t, chance(0.8) ? a : amount(k)); };
    if (chance(0.1)) wait(), signal();
    else signal(), wait();
  }

  // Copies the accumulator to a neighbour's scratch and waits for what the
  // other neighbour sends (a remote DMA).
  void remote_dma(Kernel& k) {
    std::string buf = "%rb" + str(next_++), sem = "%rs" + str(next_++);
    k.scratch_params.push_back(buf), k.scratch_types.push_back("ref<f32[2,4,8], vmem>");
    k.scratch_params.push_back(sem), k.scratch_types.push_back("ref<dma_sem[2], semaphore>");
    std::string t = target(k);
    k.body += "  swap " + buf + "[0, :, :], " + k.acc + "\n";
    k.body += "  dma_start " + buf + "[0, :, :], " + buf + "[1, :, :], " + sem + "[1], " + sem + "[0], " + t + "\n";
    std::string slot = use("wait-other-region", 0.25) ? "0" : "1";
    k.body += "  dma_wait " + sem + "[1], " + buf + "[" + slot + ", :, :]\n";
    k.body += "  dma_wait " + sem + "[0], " + buf + "[0, :, :]\n";
    std::string r = line(k.body, "v", "get " + buf + "[1, :, :]");
    k.acc = line(k.body, "v", "add " + k.acc + ", " + r);
  }

  // Copies this step's rows of x (in HBM) into a slot of a scratch buffer and
  // reads the slot (or, waiting on the other slot, reads that one).
  void local_dma(Kernel& k) {
    std::string buf = "%lb" + str(next_++), sem = "%ls" + str(next_++);
    k.scratch_params.push_back(buf), k.scratch_types.push_back("ref<f32[2,4,8], vmem>");
    k.scratch_params.push_back(sem), k.scratch_types.push_back("ref<dma_sem, semaphore>");
    std::string row = k.static_grid ? line(k.body, "l", "mul %i, 4") : "0";
    std::string slot = line(k.body, "l", "rem %i, 2");
    k.body += "  dma_start %x[ds(" + row + ", 4), :], " + buf + "[" + slot + ", :, :], " + sem + "\n";
    std::string waited = slot;
    // Without a parallel axis the other slot is read before any step wrote it.
    bool first_read = !k.parallel && may("scratch-read-before-write");
    if ((k.parallel || first_read) && use("wait-other-region", 0.4)) {
      if (!k.parallel) used_.insert("scratch-read-before-write");
      waited = line(k.body, "l", "sub 1, " + slot);
    }
    k.body += "  dma_wait " + sem + ", " + buf + "[" + waited + ", :, :]\n";
    std::string r = line(k.body, "v", "get " + buf + "[" + waited + ", :, :]");
    k.acc = k.acc.empty() ? r : line(k.body, "v", "add " + k.acc + ", " + r);
  }

  void make_pmap() {
    used_.insert("pmap");
    Kernel k;
    k.devices = pick(1, 5);
    std::string d = str(k.devices);
    // Scalar prefetch: none, split over the devices, or made from axis_index.
    bool split = use("prefetch-split", 0.35);
    bool axis = !split && use("prefetch-axis", 0.45);
    k.prefetch = split || axis;
    // The grid: static, or a per-device dynamic size.
    std::string size_source;
    if (use("dynamic-grid-axis", 0.25)) size_source = "axis";
    else if (use("dynamic-grid-split", 0.15)) size_source = "split";
    k.static_grid = size_source.empty();
    k.grid = k.static_grid ? pick(1, 3) : 0;
    k.parallel = k.static_grid && k.grid > 1 && chance(0.4);
    bool x_in_hbm = chance(0.4);

    k.body += "  %me = axis_index[axis_name=dev]\n  %i = program_id[axis=0]\n";
    if (!x_in_hbm) k.acc = line(k.body, "v", "get %x[:, :]");
    if (x_in_hbm) local_dma(k);
    bool one_step = k.static_grid && k.grid == 1;
    int64_t n = pick(1, 2);
    for (int64_t s = 0; s < n; ++s) {
      int64_t kind = pick(0, 9);
      if (kind < 5) ring_signal(k);
      else if (kind < 8 && may("remote-dma") && (one_step || may("remote-dma-steps")))
        used_.insert(one_step ? "remote-dma" : "remote-dma-steps"), remote_dma(k);
      else if (x_in_hbm) local_dma(k);
      else ring_signal(k);
    }
    // The output block: all of it, or its first rows only.
    if (use("partial-output", 0.3)) {
      int64_t rows = pick(1, 3);
      std::string part = line(k.body, "v", "slice[start_indices=(0, 0), limit_indices=(" + str(rows) + ", 8)] " + k.acc);
      k.body += "  swap %o[0:" + str(rows) + ", :], " + part + "\n";
    } else {
      k.body += "  swap %o[:, :], " + k.acc + "\n";
    }

    // Shapes: a static grid has one 4-row block per step; a dynamic one
    // revisits block 0 (arbitrary axis) and its x is one block.
    int64_t rows = k.static_grid ? 4 * k.grid : 4;
    std::string xr = str(rows);
    std::string kparams;
    if (k.prefetch) kparams += "%p: ref<i32[2], smem>, ";
    kparams += x_in_hbm ? "%x: ref<f32[" + xr + ",8], any>, " : "%x: ref<f32[4,8], vmem>, ";
    kparams += "%o: ref<f32[4,8], vmem>, %s: ref<sem[2], semaphore>";
    for (size_t j = 0; j < k.scratch_params.size(); ++j) kparams += ", " + k.scratch_params[j] + ": " + k.scratch_types[j];
    std::string assume = split ? "# prove: assume p in [0, 8)\n" : "";
    text_ = assume + "kernel @k(" + kparams + ") {\n" + k.body + "}\n";

    std::string map_params = "%mi: i32" + std::string(k.prefetch ? ", %mp: ref<i32[2], smem>" : "");
    std::string block_map = k.static_grid ? "fn(" + map_params + ") -> (i32, i32) { return %mi, 0 }"
                                          : "fn(" + map_params + ") -> (i32, i32) { return 0, 0 }";
    std::string in_spec = x_in_hbm ? "spec(mem=any)" : "spec((4, 8), " + block_map + ")";
    std::string scratch = "ref<sem[2], semaphore>";
    for (const std::string& t : k.scratch_types) scratch += ", " + t;

    // @main's parameters, the pmap body's parameters and operands.
    std::vector<std::string> main_params, body_params, pmap_operands, in_axes;
    std::string pre;  // the pmap body's code before the call
    std::string call_operands;
    if (!k.static_grid) {
      // The size: 1 + (v mod m), or with dynamic-grid-zero v mod m, which
      // is 0 on some devices; v is axis_index or an input in [0, 8).
      std::string v = "%d";
      if (size_source == "split") {
        main_params.push_back("%n: i32[" + d + "]"), body_params.push_back("%ns: i32");
        pmap_operands.push_back("%n"), in_axes.push_back("0");
        v = "%ns";
      } else {
        pre += "                %d = axis_index[axis_name=dev]\n";
      }
      pre += "                %gm = rem " + v + ", " + str(pick(2, 3)) + "\n";
      pre += use("dynamic-grid-zero", 0.4) ? "                %gs = add %gm, 0\n" : "                %gs = add %gm, 1\n";
      call_operands += "%gs, ";
    }
    if (split) {
      main_params.push_back("%pf: i32[" + d + ",2]"), body_params.push_back("%ps: i32[2]");
      pmap_operands.push_back("%pf"), in_axes.push_back("0");
      call_operands += "%ps, ";
    } else if (axis) {
      if (pre.find("%d = ") == std::string::npos) pre += "                %d = axis_index[axis_name=dev]\n";
      pre += "                %io = iota[dtype=i32, shape=(2), dimension=0]\n";
      pre += "                %im = mul %io, " + str(pick(1, 3)) + "\n";
      pre += "                %dm = mul %d, " + str(pick(1, 3)) + "\n";
      pre += "                %ps = add %im, %dm\n";
      call_operands += "%ps, ";
    }
    main_params.push_back("%x: f32[" + d + "," + xr + ",8]"), body_params.push_back("%xs: f32[" + xr + ",8]");
    pmap_operands.push_back("%x"), in_axes.push_back("0");
    call_operands += "%xs";
    std::string out_rows = str(k.static_grid ? rows : 4);
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const std::string& e : v) s += (s.empty() ? "" : ", ") + e;
      return s;
    };
    text_ += "func @main(" + join(main_params) + ") -> f32[" + d + "," + out_rows + ",8] {\n" +
             "  %out = pmap[axis_name=dev, axis_size=" + d + ", in_axes=(" + join(in_axes) + "), out_axes=(0),\n" +
             "              body=fn(" + join(body_params) + ") -> f32[" + out_rows + ",8] {\n" + pre +
             "                %r = pallas_call[kernel=@k, grid=(" + (k.static_grid ? str(k.grid) : "?") + ")" +
             (k.prefetch ? ", num_scalar_prefetch=1" : "") + ",\n" +
             "                                 in_specs=[" + in_spec + "], out_specs=[spec((4, 8), " + block_map + ")],\n" +
             "                                 out_shapes=[f32[" + out_rows + ",8]], scratch=[" + scratch + "],\n" +
             "                                 dimension_semantics=(" + (k.parallel ? "parallel" : "arbitrary") + ")] " +
             call_operands + "\n" + "                return %r\n              }] " + join(pmap_operands) + "\n" +
             "  return %out\n}\n";
  }

  // ---- core_map cores sharing a Ref ----------------------------------------

  // Cores of a mesh of 1 to 5 share %sh: f32[2C, 8] in VMEM. Core c writes row
  // c, then reads the row of its neighbour n (with or without a modulo) and
  // writes it to row C + c. With ordering, each core signals the core that
  // reads its row after writing it, and waits for its own neighbour's signal
  // before reading.
  void make_core_map() {
    used_.insert("core-map");
    int64_t c = pick(1, 5);
    std::string cs = str(c), rows = str(2 * c);
    std::string body;
    body += "      %v = get %r[%c, :]\n";
    body += "      %w = mul %v, 2.0\n";
    body += "      swap %r[%c, :], %w\n";
    bool unmodded = use("unmodded-target", 0.3);
    int64_t step = chance(0.7) ? 1 : c - 1;
    std::string next, reader;  // the row this core reads; the core that reads this core's row
    if (unmodded) {
      body += "      %n = add %c, 1\n      %b = sub %c, 1\n";
      next = "%n", reader = "%b";
    } else {
      body += "      %n1 = add %c, " + str(step) + "\n      %n = rem %n1, " + cs + "\n";
      body += "      %b1 = add %c, " + str(c - step) + "\n      %b = rem %b1, " + cs + "\n";
      next = "%n", reader = "%b";
    }
    bool ordered = !use("core-unordered", 0.35);
    if (ordered && use("skip-self-signal", 0.2)) {
      body += "      %self = ne " + reader + ", %c\n";
      body += "      cond[branches=[fn(%q0: ref<sem, semaphore>, %q1: i32, %q2: i32) { }, "
              "fn(%z0: ref<sem, semaphore>, %z1: i32, %z2: i32) {\n"
              "        semaphore_signal %z0, 1, %z1, %z2\n      }]] %self, %s, %dv, " + reader + "\n";
      body += "      semaphore_wait %s, 1\n";
    } else if (ordered) {
      body += "      semaphore_signal %s, 1, %dv, " + reader + "\n";
      body += "      semaphore_wait %s, 1\n";
    }
    body += "      %u = get %r[" + next + ", :]\n";
    body += "      %row = add %c, " + cs + "\n";
    body += "      swap %r[%row, :], %u\n";
    text_ = "func @main(%sh: ref<f32[" + rows + ",8], vmem>) -> ref<f32[" + rows + ",8], vmem> {\n" +
            "  core_map[body=fn(%hr: ref<f32[" + rows + ",8], vmem>) {\n" +
            "    %cc = axis_index[axis_name=core]\n    %dev = device_id\n" +
            "    run_scoped[body=fn(%r: ref<f32[" + rows + ",8], vmem>, %c: i32, %dv: i32, %s: ref<sem, semaphore>) {\n" +
            body + "    }] %hr, %cc, %dev\n  }, mesh_axes=(core), mesh_shape=(" + cs + ")] %sh\n  return %sh\n}\n";
  }

  std::mt19937_64 rng_;
  std::set<std::string> off_;
  std::string text_;
  std::set<std::string> used_;
  int next_ = 0;
};

}  // namespace tessera::robustness
