// A generator of random small pallas_calls in the .tsr text format, for the
// property test (test_property.cpp). Every program is its own readable
// reproducer: `tessera prove` reads its assumptions from the text, and
// `tessera run --random-inputs SEED` gives it the inputs the test used.
//
// A program has one pallas_call over a grid of 1-3 small axes (a parallel
// prefix, then arbitrary axes; sometimes a literal dynamic size), inputs and
// outputs cut by blocked / element(n, lo, hi) / squeezed / bounded(n) block
// dims, random integer index maps (+, -, *, div/rem by constants, min/max,
// select_n, shifts, i64 arithmetic through convert_element_type, multiple_of,
// scalar-prefetch reads), input_output_aliases, and VMEM scratch. The kernel
// reads its blocks, mixes in its grid position and prefetched scalars, reads
// and writes blocks at dynamic offsets (some masked, their windows reaching
// past the block where the mask is off), carries state in scratch or in a
// resident output block, and sometimes writes its input or prefetch Refs.
// Every input and output block has the same kernel-visible shape, so the
// kernel combines them elementwise and its outputs depend on every element.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace tessera::robustness {

// What the generator may produce. A long campaign can switch a feature off
// by its member name (TESSERA_PROPERTY_SKIP=aliases,stale_state) to look past
// a known bug it reaches; by default everything is on.
struct GenFeatures {
  bool element_dims = true;     // element(n, lo, hi) block dims
  bool prefetch_writes = true;  // the kernel writes its scalar-prefetch Ref
  bool i64_math = true;         // i64 index arithmetic that may wrap
  bool multiple_of = true;      // multiple_of hints, true or false
  bool aliases = true;          // input_output_aliases
  bool stale_state = true;      // scratch / output blocks read before written
  bool dynamic_grid = true;     // a literal dynamic grid size
  bool input_writes = true;     // the kernel writes its input blocks
  bool bounded_dims = true;     // bounded(n) block dims
  bool masked_overhang = true;  // masked loads / stores whose window overhangs the block where the mask is off
};

// One generated program and what the checks need to know about it.
struct GenProgram {
  std::string text;
  bool has_parallel_points = false;  // some parallel axis has two or more points
  bool stale_reads = false;          // reads scratch / output state that no write of this step set
  bool writes_prefetch = false;
  bool writes_inputs = false;
  bool has_alias = false;
  std::vector<std::string> notes;    // features used, for the failure summary
};

class ProgramGen {
 public:
  ProgramGen(uint64_t seed, GenFeatures f) : rng_(seed), f_(f) {}

  GenProgram make();

 private:
  enum class DimKind { blocked, element, squeezed, bounded };
  struct Dim {
    DimKind kind = DimKind::blocked;
    int64_t n = 1, lo = 0, hi = 0;  // block size, element padding
    int64_t array = 1;              // the array's dim
  };
  struct Operand {
    std::string param;     // kernel parameter name (x0, o1), also named in run-time errors
    std::vector<Dim> dims;
    int excluded_axis = -1;  // an axis the index map must not depend on (accumulation)
  };
  // The integer code being emitted into one body (an index map or the kernel).
  struct Scope {
    std::string* lines = nullptr;
    std::string prefix;
    int next = 0;
    bool kernel = false;
    std::vector<std::string> axis;  // SSA name of each grid axis' program id ("" = not emitted yet)
    int excluded_axis = -1;
    std::string indent = "  ";
  };

  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  std::string emit(Scope& s, const std::string& rhs);
  std::string axis_value(Scope& s, int a);
  int usable_axis(const Scope& s);
  std::string prefetch_read(Scope& s, bool tame = false);
  std::string leaf(Scope& s);
  std::string var(Scope& s, int depth);
  std::string dynamic(Scope& s, const std::string& e);
  std::string expr(Scope& s, int depth);
  std::string i64_detour(Scope& s, const std::string& a);
  std::string fit(Scope& s, int64_t lo, int64_t hi, int axis = -1);
  std::string tame_fit(Scope& s, int64_t lo, int64_t hi, int axis);
  std::string wild_fit(Scope& s, int64_t lo, int64_t hi);

  Operand make_operand(const std::string& param, const std::vector<int64_t>& block);
  std::string spec_text(const Operand& op, const std::string& map);
  std::string index_map(const Operand& op, const std::string& name);
  std::string array_type(const Operand& op) const;
  std::string block_type() const;
  std::string full_indexer() const;
  std::string zeros() const;
  std::string init_on_first(Scope& s, const std::string& ref, int axis);
  std::string kernel_text(GenProgram& g);

  std::mt19937_64 rng_;
  GenFeatures f_;
  // The program being made.
  std::string dtype_;
  std::vector<int64_t> grid_, block_;
  int parallel_ = 0;
  int64_t prefetch_size_ = 0, prefetch_lo_ = 0, prefetch_hi_ = 0;
  std::vector<Operand> ins_, outs_;
  int scratch_ = 0;
  int64_t alias_in_ = -1, alias_out_ = -1;
  std::set<std::string> notes_;
  // A wild program's index expressions leave their range now and then; a tame
  // one's never do, and its output maps visit each block in one run.
  bool wild_ = false;
};

inline std::string ProgramGen::emit(Scope& s, const std::string& rhs) {
  std::string name = "%" + s.prefix + std::to_string(s.next++);
  *s.lines += s.indent + name + " = " + rhs + "\n";
  return name;
}

inline std::string ProgramGen::axis_value(Scope& s, int a) {
  if (s.axis[a].empty()) s.axis[a] = emit(s, "program_id[axis=" + std::to_string(a) + "]");
  return s.axis[a];
}

// A grid axis the expression may use (-1: none).
inline int ProgramGen::usable_axis(const Scope& s) {
  std::vector<int> ok;
  for (int a = 0; a < static_cast<int>(grid_.size()); ++a)
    if (a != s.excluded_axis) ok.push_back(a);
  return ok.empty() ? -1 : ok[static_cast<size_t>(pick(0, static_cast<int64_t>(ok.size()) - 1))];
}

// `get %p[i]` of the scalar-prefetch Ref, with i usually in range.
inline std::string ProgramGen::prefetch_read(Scope& s, bool tame) {
  std::string idx;
  int a = usable_axis(s);
  switch (pick(0, tame ? 4 : 7)) {
    case 0: case 1: case 2:
      idx = a < 0 ? "0" : emit(s, "rem " + axis_value(s, a) + ", " + std::to_string(prefetch_size_));
      break;
    case 3: case 4: idx = std::to_string(pick(0, prefetch_size_ - 1)); break;
    case 5: idx = a < 0 ? "1" : axis_value(s, a); break;
    case 6: idx = dynamic(s, std::to_string(chance(0.5) ? prefetch_size_ : -1)); break;  // out of bounds
    default: idx = var(s, 1); break;
  }
  return emit(s, "get %p[" + idx + "]");
}

inline std::string ProgramGen::leaf(Scope& s) {
  int64_t k = pick(0, 9);
  int a = usable_axis(s);
  if (k < 5 && a >= 0) return axis_value(s, a);
  if (k < 7 && prefetch_size_ > 0) return prefetch_read(s);
  return std::to_string(pick(-2, 4));
}

// Like expr, but never a bare literal.
inline std::string ProgramGen::var(Scope& s, int depth) {
  std::string e = expr(s, depth);
  if (e[0] == '%') return e;
  int a = usable_axis(s);
  if (a >= 0) return emit(s, "add " + axis_value(s, a) + ", " + e);
  // Only the excluded axis: a zero made from it keeps the map independent of it.
  return emit(s, "add " + emit(s, "mul " + axis_value(s, s.excluded_axis) + ", 0") + ", " + e);
}

// `e` as an SSA value: a literal L becomes max(min(v, L), L).
inline std::string ProgramGen::dynamic(Scope& s, const std::string& e) {
  if (e[0] == '%') return e;
  return emit(s, "max " + emit(s, "min " + var(s, 0) + ", " + e) + ", " + e);
}

inline std::string ProgramGen::i64_detour(Scope& s, const std::string& a) {
  notes_.insert("i64");
  std::string w = emit(s, "convert_element_type[new_dtype=i64] " + a);
  if (chance(0.4)) {
    // (a + 1) * 2^32 * 2^32 wraps to 0 in i64: a select on "== 0" sees it.
    std::string w1 = emit(s, "add " + w + ", 1:i64");
    std::string w2 = emit(s, "mul " + w1 + ", 4294967296:i64");
    std::string w3 = emit(s, "mul " + w2 + ", 4294967296:i64");
    std::string z = emit(s, "eq " + w3 + ", 0:i64");
    return emit(s, "select_n " + z + ", " + a + ", " + emit(s, "add " + a + ", " + std::to_string(pick(-1, 99))));
  }
  std::string w1 = emit(s, "mul " + w + ", " + std::to_string(pick(-2, 3)) + ":i64");
  std::string w2 = emit(s, "add " + w1 + ", " + std::to_string(pick(-2, 4)) + ":i64");
  if (chance(0.3)) w2 = emit(s, "div " + w2 + ", " + std::to_string(pick(1, 3)) + ":i64");
  return emit(s, "convert_element_type[new_dtype=i32] " + w2);
}

// A random i32 expression; returns an SSA name or a literal.
inline std::string ProgramGen::expr(Scope& s, int depth) {
  if (depth <= 0 || chance(0.25)) return leaf(s);
  std::string a = var(s, depth - 1);
  switch (pick(0, 13)) {
    case 0: return emit(s, "add " + a + ", " + expr(s, depth - 1));
    case 1: return emit(s, "sub " + a + ", " + expr(s, depth - 1));
    case 2: return emit(s, "mul " + a + ", " + std::to_string(pick(-2, 3)));
    case 3: {
      int64_t d = pick(-3, 4);
      if (d == 0 && !chance(0.1)) d = 2;  // now and then a division by zero
      return emit(s, "div " + a + ", " + std::to_string(d));
    }
    case 4: {
      int64_t d = pick(-3, 4);
      if (d == 0 && !chance(0.1)) d = 3;
      return emit(s, "rem " + a + ", " + std::to_string(d));
    }
    case 5: return emit(s, "min " + a + ", " + expr(s, depth - 1));
    case 6: return emit(s, "max " + a + ", " + expr(s, depth - 1));
    case 7: case 8: {
      const char* cmp[] = {"lt", "le", "eq", "ne", "gt", "ge"};
      std::string p = emit(s, std::string(cmp[pick(0, 5)]) + " " + a + ", " + expr(s, depth - 1));
      std::string c0 = var(s, depth - 1), c1 = var(s, depth - 1);
      return emit(s, "select_n " + p + ", " + c0 + ", " + c1);
    }
    case 9: case 10: {
      if (!f_.multiple_of) return emit(s, "add " + a + ", 1");
      notes_.insert("multiple_of");
      int64_t k = pick(0, 1) ? 2 : 4;
      // Mostly a true hint; sometimes a false one on a value that may not be a multiple.
      std::string v = chance(0.7) ? emit(s, "mul " + a + ", " + std::to_string(k)) : a;
      return emit(s, "multiple_of[value=" + std::to_string(k) + "] " + v);
    }
    case 11: return f_.i64_math ? i64_detour(s, a) : emit(s, "sub " + a + ", 1");
    case 12: return emit(s, "shift_left " + a + ", " + std::to_string(pick(0, 2)));
    default: return emit(s, "shift_right_arithmetic " + a + ", " + std::to_string(pick(0, 1)));
  }
}

// An expression meant to lie in [lo, hi), increasing with grid axis `axis`
// where one is given and fits. Wild programs sometimes get an expression that
// may fall outside (off by one, raw arithmetic, wrapping i64, false hints).
inline std::string ProgramGen::fit(Scope& s, int64_t lo, int64_t hi, int axis) {
  if (hi <= lo) hi = lo + 1;
  if (wild_ && chance(0.3)) return wild_fit(s, lo, hi);
  return tame_fit(s, lo, hi, axis);
}

inline std::string ProgramGen::tame_fit(Scope& s, int64_t lo, int64_t hi, int axis) {
  int64_t span = hi - lo;
  auto plus_lo = [&](const std::string& e) { return lo == 0 ? e : emit(s, "add " + e + ", " + std::to_string(lo)); };
  if (axis >= 0 && grid_[axis] <= span) {
    std::string g = axis_value(s, axis);
    switch (pick(0, 6)) {
      case 0: case 1: return plus_lo(g);
      case 2: {
        if (!f_.i64_math) return plus_lo(g);
        notes_.insert("i64");
        std::string w = emit(s, "convert_element_type[new_dtype=i64] " + g);
        w = emit(s, "add " + w + ", " + std::to_string(lo) + ":i64");
        return emit(s, "convert_element_type[new_dtype=i32] " + w);
      }
      case 3: {
        if (!f_.multiple_of) return plus_lo(g);
        notes_.insert("multiple_of");
        int64_t k = chance(0.5) ? 2 : 4;
        std::string m = emit(s, "multiple_of[value=" + std::to_string(k) + "] " + emit(s, "mul " + g + ", " + std::to_string(k)));
        return plus_lo(emit(s, "div " + m + ", " + std::to_string(k)));
      }
      case 4: {
        int64_t c = std::max<int64_t>(1, span / grid_[axis]);
        return plus_lo(emit(s, "mul " + g + ", " + std::to_string(c)));
      }
      case 5: return emit(s, "min " + plus_lo(g) + ", " + std::to_string(hi - 1));
      default: {
        std::string p = emit(s, "lt " + g + ", " + std::to_string(grid_[axis]));
        return emit(s, "select_n " + p + ", " + dynamic(s, std::to_string(lo)) + ", " + plus_lo(g));
      }
    }
  }
  int a = usable_axis(s);
  switch (pick(0, 5)) {
    case 0: return emit(s, "max " + emit(s, "min " + var(s, 2) + ", " + std::to_string(hi - 1)) + ", " + std::to_string(lo));
    case 1:
      if (a >= 0) return plus_lo(emit(s, "rem " + axis_value(s, a) + ", " + std::to_string(span)));
      return std::to_string(lo);
    case 2:
      if (prefetch_size_ > 0) {
        std::string r = prefetch_read(s, true);
        if (prefetch_lo_ >= 0) return plus_lo(emit(s, "rem " + r + ", " + std::to_string(span)));
        return emit(s, "max " + emit(s, "min " + r + ", " + std::to_string(hi - 1)) + ", " + std::to_string(lo));
      }
      return std::to_string(pick(lo, hi - 1));
    case 3: {
      std::string p = emit(s, "lt " + var(s, 1) + ", " + std::to_string(pick(0, 3)));
      std::string c0 = dynamic(s, tame_fit(s, lo, hi, -1)), c1 = dynamic(s, tame_fit(s, lo, hi, -1));
      return emit(s, "select_n " + p + ", " + c0 + ", " + c1);
    }
    default: return std::to_string(pick(lo, hi - 1));
  }
}

inline std::string ProgramGen::wild_fit(Scope& s, int64_t lo, int64_t hi) {
  int64_t span = hi - lo;
  int a = usable_axis(s);
  std::string e;
  switch (pick(0, 7)) {
    case 0: {
      if (a < 0) { e = std::to_string(pick(lo, hi - 1)); break; }
      int64_t c1 = std::max<int64_t>(1, span / std::max<int64_t>(1, grid_[a]));
      if (chance(0.5)) c1 = -c1;
      int64_t c0 = c1 > 0 ? lo : hi - 1;
      e = emit(s, "add " + emit(s, "mul " + axis_value(s, a) + ", " + std::to_string(c1)) + ", " + std::to_string(c0));
      break;
    }
    case 1: {
      std::string r = emit(s, "rem " + var(s, 2) + ", " + std::to_string(span));
      e = lo == 0 ? r : emit(s, "add " + r + ", " + std::to_string(lo));
      break;
    }
    case 2: case 3: e = expr(s, 2); break;
    case 4: e = f_.i64_math ? i64_detour(s, a < 0 ? var(s, 0) : axis_value(s, a)) : var(s, 1); break;
    case 5:
      if (prefetch_size_ > 0) {
        std::string r = emit(s, "rem " + prefetch_read(s) + ", " + std::to_string(span));
        e = lo == 0 ? r : emit(s, "add " + r + ", " + std::to_string(lo));
      } else {
        e = expr(s, 1);
      }
      break;
    default: e = tame_fit(s, lo, hi, a); break;
  }
  if (chance(0.4)) e = emit(s, "add " + (e[0] == '%' ? e : var(s, 0)) + ", " + std::to_string(chance(0.5) ? 1 : -1));
  return e;
}

inline ProgramGen::Operand ProgramGen::make_operand(const std::string& param, const std::vector<int64_t>& block) {
  Operand op;
  op.param = param;
  int squeezed_at = chance(0.3) ? static_cast<int>(pick(0, static_cast<int64_t>(block.size()))) : -1;
  for (size_t d = 0; d <= block.size(); ++d) {
    if (static_cast<int>(d) == squeezed_at) {
      op.dims.push_back(Dim{DimKind::squeezed, 1, 0, 0, pick(1, 5)});
      notes_.insert("squeezed");
    }
    if (d == block.size()) break;
    int64_t n = block[d];
    Dim dim;
    dim.n = n;
    int64_t kind = pick(0, 9);
    if (kind < 3 && f_.element_dims) {
      dim.kind = DimKind::element;
      dim.lo = pick(0, 2) == 0 ? 0 : pick(0, n);
      dim.hi = pick(0, 2) == 0 ? 0 : pick(0, n);
      dim.array = n + pick(0, 4) * (chance(0.5) ? 1 : n);
      notes_.insert("element");
    } else if (kind == 3 && f_.bounded_dims) {
      dim.kind = DimKind::bounded;
      dim.array = n + pick(0, 4) * (chance(0.5) ? 1 : n);
      notes_.insert("bounded");
    } else {
      dim.kind = DimKind::blocked;
      dim.array = n * pick(1, 4) + (chance(0.25) ? pick(0, n - 1) : 0);  // sometimes a partial last block
    }
    op.dims.push_back(dim);
  }
  return op;
}

inline std::string ProgramGen::spec_text(const Operand& op, const std::string& map) {
  std::string s = "spec((";
  for (size_t d = 0; d < op.dims.size(); ++d) {
    const Dim& dim = op.dims[d];
    if (d) s += ", ";
    switch (dim.kind) {
      case DimKind::blocked: s += std::to_string(dim.n); break;
      case DimKind::squeezed: s += "squeezed"; break;
      case DimKind::element:
        s += "element(" + std::to_string(dim.n) + ", " + std::to_string(dim.lo) + ", " + std::to_string(dim.hi) + ")";
        break;
      case DimKind::bounded: s += "bounded(" + std::to_string(dim.n) + ")"; break;
    }
  }
  return s + "), @" + map + ")";
}

inline std::string ProgramGen::index_map(const Operand& op, const std::string& name) {
  std::string body;
  Scope s;
  s.lines = &body;
  s.prefix = "t";
  s.excluded_axis = op.excluded_axis;
  std::string params, rets;
  for (size_t a = 0; a < grid_.size(); ++a) {
    s.axis.push_back("%g" + std::to_string(a));
    params += (a ? ", " : "") + s.axis.back() + ": i32";
  }
  if (prefetch_size_ > 0) params += std::string(grid_.empty() ? "" : ", ") + "%p: ref<i32[" + std::to_string(prefetch_size_) + "], smem>";
  // An output's map is an injective function of a prefix of the grid axes
  // (before the axis it accumulates over), so each block is visited in one run.
  std::vector<int> driver(op.dims.size(), -1);
  if (op.param[0] == 'o') {
    int limit = op.excluded_axis >= 0 ? op.excluded_axis : static_cast<int>(grid_.size());
    int used = std::min<int>(limit, static_cast<int>(op.dims.size()));
    if (chance(0.15)) used = static_cast<int>(pick(0, used));
    std::vector<int> slots(op.dims.size());
    for (size_t d = 0; d < slots.size(); ++d) slots[d] = static_cast<int>(d);
    std::shuffle(slots.begin(), slots.end(), rng_);
    for (int a = 0; a < used; ++a) driver[static_cast<size_t>(slots[static_cast<size_t>(a)])] = a;
  } else {
    for (int& a : driver) a = chance(0.6) ? usable_axis(s) : -1;
  }
  std::vector<std::string> results;
  for (size_t k = 0; k < op.dims.size(); ++k) {
    const Dim& d = op.dims[k];
    int a = driver[k];
    switch (d.kind) {
      case DimKind::blocked: results.push_back(fit(s, 0, (d.array + d.n - 1) / d.n, a)); break;
      case DimKind::squeezed: results.push_back(fit(s, 0, d.array, a)); break;
      case DimKind::element: {
        // Offsets into the unpadded array (JAX's reading) or into the padded one.
        int64_t lo = chance(0.5) ? -d.lo : 0;
        int64_t hi = chance(0.5) ? d.array + d.hi - d.n : d.array + d.lo + d.hi - d.n;
        results.push_back(fit(s, lo, hi + 1, a));
        break;
      }
      case DimKind::bounded: {
        std::string size = chance(0.5) ? std::to_string(pick(1, d.n)) : fit(s, 1, d.n + 1);
        results.push_back(fit(s, 0, d.array - d.n + 1, a));
        results.push_back(size);
        break;
      }
    }
  }
  // Literal results need a dtype of their own in a return.
  std::string ret;
  for (size_t k = 0; k < results.size(); ++k) {
    std::string r = results[k][0] == '%' ? results[k] : results[k] + ":i32";
    ret += (k ? ", " : "") + r;
    rets += std::string(k ? ", " : "") + "i32";
  }
  return "index_map @" + name + "(" + params + ") -> (" + rets + ") {\n" + body + "  return " + ret + "\n}\n";
}

inline std::string ProgramGen::array_type(const Operand& op) const {
  std::string s = dtype_ + "[";
  for (size_t d = 0; d < op.dims.size(); ++d) s += (d ? "," : "") + std::to_string(op.dims[d].array);
  return s + "]";
}

inline std::string ProgramGen::block_type() const {
  std::string s = dtype_ + "[";
  for (size_t d = 0; d < block_.size(); ++d) s += (d ? "," : "") + std::to_string(block_[d]);
  return s + "]";
}

inline std::string ProgramGen::full_indexer() const {
  std::string s = "[";
  for (size_t d = 0; d < block_.size(); ++d) s += d ? ", :" : ":";
  return s + "]";
}

inline std::string ProgramGen::zeros() const {
  std::string shape;
  for (size_t d = 0; d < block_.size(); ++d) shape += (d ? ", " : "") + std::to_string(block_[d]);
  return "broadcast_in_dim[shape=(" + shape + "), broadcast_dimensions=()] " + (dtype_ == "f32" ? "0.0:f32" : "0:i32");
}

// `cond` that zeroes `ref` at the first step of grid axis `axis`.
inline std::string ProgramGen::init_on_first(Scope& s, const std::string& ref, int axis) {
  std::string first = emit(s, "eq " + axis_value(s, axis) + ", 0");
  std::string b = s.prefix + std::to_string(s.next++);
  std::string rt = "ref<" + block_type() + ", vmem>";
  *s.lines += "  cond[branches=[fn(%" + b + "_a: " + rt + ") { }, fn(%" + b + "_b: " + rt + ") {\n" + "    %" + b +
              "_z = " + zeros() + "\n    swap %" + b + "_b" + full_indexer() + ", %" + b + "_z\n  }]] " + first + ", " +
              ref + "\n";
  return first;
}

inline std::string ProgramGen::kernel_text(GenProgram& g) {
  std::string body;
  Scope s;
  s.lines = &body;
  s.prefix = "v";
  s.kernel = true;
  s.axis.assign(grid_.size(), "");
  std::string blk = block_type();
  // A scalar of the data dtype made from an i32 value.
  auto as_data = [&](const std::string& i) { return dtype_ == "i32" ? i : emit(s, "convert_element_type[new_dtype=f32] " + i); };
  std::string axes_all;
  for (size_t d = 0; d < block_.size(); ++d) axes_all += (d ? ", " : "") + std::to_string(d);
  // A dynamic slice of `k` rows along dim 0 at an offset meant to be in range.
  auto dyn_indexer = [&](int64_t k) {
    std::string at = fit(s, 0, block_[0] - k + 1);
    at = dynamic(s, at);  // a literal start would be checked when the op is built
    std::string ix = "[ds(" + at + ", " + std::to_string(k) + ")";
    for (size_t d = 1; d < block_.size(); ++d) ix += ", :";
    return ix + "]";
  };
  // A window of all the block's rows at a dynamic row start in (-rows, rows),
  // and the mask of its rows that lie inside the block: a masked access
  // touches only those (the rest overhang the block's ends).
  auto overhang = [&]() {
    notes_.insert("masked overhang");
    int64_t rows = block_[0];
    std::string at = dynamic(s, fit(s, -(rows - 1), rows));
    std::string shape;
    for (size_t d = 0; d < block_.size(); ++d) shape += (d ? ", " : "") + std::to_string(block_[d]);
    std::string row = emit(s, "add " + emit(s, "iota[dtype=i32, shape=(" + shape + "), dimension=0]") + ", " + at);
    std::string inside = emit(s, "and " + emit(s, "ge " + row + ", 0") + ", " + emit(s, "lt " + row + ", " + std::to_string(rows)));
    std::string ix = "[ds(" + at + ", " + std::to_string(rows) + ")";
    for (size_t d = 1; d < block_.size(); ++d) ix += ", :";
    return std::make_pair(ix + "]", inside);
  };

  std::string acc;
  for (const Operand& in : ins_) {
    std::string v = emit(s, "get %" + in.param + full_indexer());
    acc = acc.empty() ? v : emit(s, "add " + acc + ", " + v);
  }
  if (acc.empty()) acc = emit(s, zeros());
  if (!grid_.empty() && chance(0.7)) acc = emit(s, "add " + acc + ", " + as_data(axis_value(s, static_cast<int>(pick(0, static_cast<int64_t>(grid_.size()) - 1)))));
  if (prefetch_size_ > 0 && chance(0.5)) acc = emit(s, "add " + acc + ", " + as_data(prefetch_read(s)));
  // Reads at dynamic offsets (kernel bounds).
  if (!ins_.empty() && chance(0.5)) {
    notes_.insert("dynamic get");
    const Operand& in = ins_[static_cast<size_t>(pick(0, static_cast<int64_t>(ins_.size()) - 1))];
    std::string e = emit(s, "get %" + in.param + dyn_indexer(pick(1, block_[0])));
    acc = emit(s, "add " + acc + ", " + emit(s, "reduce_sum[axes=(" + axes_all + ")] " + e));
  }
  if (f_.masked_overhang && !ins_.empty() && chance(0.2)) {
    auto [ix, mask] = overhang();
    std::string other = dtype_ == "f32" ? "0.5:f32" : "3:i32";
    acc = emit(s, "add " + acc + ", " + emit(s, "load %" + ins_[0].param + ix + ", " + mask + ", " + other));
  }
  // Scratch: written then read, carried from the first step of an arbitrary
  // axis, or read before any write (stale).
  for (int k = 0; k < scratch_; ++k) {
    std::string sr = "%s" + std::to_string(k);
    int64_t mode = pick(0, 2);
    // Without stale state, a carry needs an arbitrary axis to be carried along.
    if (!f_.stale_state && (mode == 2 || parallel_ >= static_cast<int>(grid_.size()))) mode = 0;
    if (mode == 1 && !grid_.empty()) {
      notes_.insert("scratch carry");
      int axis = static_cast<int>(pick(0, static_cast<int64_t>(grid_.size()) - 1));
      if (!f_.stale_state) axis = std::max(axis, std::min(parallel_, static_cast<int>(grid_.size()) - 1));
      init_on_first(s, sr, axis);
      // Carried across `axis`: stale when the axis is parallel, or when an
      // earlier axis moves while it restarts (the carry is then re-zeroed: fine).
      if (axis < parallel_) g.stale_reads = true;
      acc = emit(s, "add " + acc + ", " + emit(s, "get " + sr + full_indexer()));
      *s.lines += "  swap " + sr + full_indexer() + ", " + acc + "\n";
    } else if (mode == 2) {
      notes_.insert("scratch stale");
      g.stale_reads = true;
      acc = emit(s, "add " + acc + ", " + emit(s, "get " + sr + full_indexer()));
      *s.lines += "  swap " + sr + full_indexer() + ", " + acc + "\n";
    } else {
      *s.lines += "  swap " + sr + full_indexer() + ", " + acc + "\n";
      acc = emit(s, "add " + acc + ", " + emit(s, "get " + sr + full_indexer()));
    }
  }
  if (f_.input_writes && !ins_.empty() && chance(0.1)) {
    notes_.insert("input write");
    g.writes_inputs = true;
    *s.lines += "  swap %" + ins_[0].param + full_indexer() + ", " + acc + "\n";
  }
  if (f_.prefetch_writes && prefetch_size_ > 0 && chance(0.1)) {
    notes_.insert("prefetch write");
    g.writes_prefetch = true;
    std::string at = chance(0.5) ? std::to_string(pick(0, prefetch_size_ - 1)) : emit(s, "rem " + var(s, 0) + ", " + std::to_string(prefetch_size_));
    int64_t value = chance(0.5) ? pick(prefetch_lo_, prefetch_hi_ - 1) : 5000;
    *s.lines += "  swap %p[" + at + "], " + std::to_string(value) + ":i32\n";
  }
  for (size_t o = 0; o < outs_.size(); ++o) {
    const Operand& out = outs_[o];
    std::string ref = "%" + out.param;
    if (out.excluded_axis >= 0) {
      // Accumulates across an axis its index map ignores.
      notes_.insert("accumulate");
      init_on_first(s, ref, out.excluded_axis);
      if (out.excluded_axis < parallel_) g.stale_reads = true;
      *s.lines += "  addupdate " + ref + full_indexer() + ", " + acc + "\n";
    } else if (f_.stale_state && chance(0.1)) {
      notes_.insert("output stale");
      g.stale_reads = true;
      *s.lines += "  addupdate " + ref + full_indexer() + ", " + acc + "\n";
    } else {
      *s.lines += "  swap " + ref + full_indexer() + ", " + acc + "\n";
    }
    if (f_.masked_overhang && chance(0.2)) {
      auto [ix, mask] = overhang();
      *s.lines += "  store " + ref + ix + ", " + acc + ", " + mask + "\n";
    }
    if (chance(0.25)) {
      notes_.insert("dynamic swap");
      std::string v = emit(s, "reduce_sum[axes=(" + axes_all + ")] " + acc);
      *s.lines += "  swap " + ref + dyn_indexer(pick(1, block_[0])) + ", " + v + "\n";
    }
  }
  std::vector<std::string> ps;
  if (prefetch_size_ > 0) ps.push_back("%p: ref<i32[" + std::to_string(prefetch_size_) + "], smem>");
  for (const Operand& in : ins_) ps.push_back("%" + in.param + ": ref<" + blk + ", vmem>");
  for (const Operand& out : outs_) ps.push_back("%" + out.param + ": ref<" + blk + ", vmem>");
  for (int k = 0; k < scratch_; ++k) ps.push_back("%s" + std::to_string(k) + ": ref<" + blk + ", vmem>");
  std::string params;
  for (size_t k = 0; k < ps.size(); ++k) params += (k ? ", " : "") + ps[k];
  return "kernel @k(" + params + ") {\n" + body + "}\n";
}

inline GenProgram ProgramGen::make() {
  GenProgram g;
  notes_.clear();
  wild_ = chance(0.4);
  dtype_ = chance(0.8) ? "f32" : "i32";
  int rank = static_cast<int>(pick(1, 3));
  grid_.clear();
  for (int a = 0; a < rank; ++a) grid_.push_back(pick(1, rank == 3 ? 3 : 4));
  parallel_ = static_cast<int>(pick(0, rank));
  for (int a = 0; a < parallel_; ++a) g.has_parallel_points |= grid_[a] > 1;
  bool dynamic = f_.dynamic_grid && chance(0.08);
  block_.clear();
  int brank = static_cast<int>(pick(1, 2));
  const int64_t sizes[] = {1, 2, 4, 8};
  for (int d = 0; d < brank; ++d) block_.push_back(sizes[pick(d == 0 ? 1 : 0, 3)]);
  prefetch_size_ = chance(0.4) ? (chance(0.5) ? 4 : 8) : 0;
  // The prefetch operand is the i32 input (values in [0, 8), as random_array
  // and `tessera run --random-inputs` make them), maybe shifted or reduced.
  std::string prefetch_expr;
  prefetch_lo_ = 0, prefetch_hi_ = 8;
  if (prefetch_size_ > 0) {
    notes_.insert("prefetch");
    switch (pick(0, 3)) {
      case 0: prefetch_expr = "rem %praw, 3"; prefetch_hi_ = 3; break;
      case 1: prefetch_expr = "sub %praw, 2"; prefetch_lo_ = -2; prefetch_hi_ = 6; break;
      default: break;
    }
  }
  ins_.clear();
  outs_.clear();
  int nin = static_cast<int>(pick(0, 2)), nout = static_cast<int>(pick(1, 2));
  for (int i = 0; i < nout; ++i) {
    outs_.push_back(make_operand("o" + std::to_string(i), block_));
    // Sometimes an accumulator over an arbitrary axis its map ignores.
    if (rank > 0 && chance(0.25)) {
      int axis = static_cast<int>(pick(0, rank - 1));
      if (axis >= parallel_ || (f_.stale_state && chance(0.2))) outs_.back().excluded_axis = axis;
    }
  }
  alias_in_ = alias_out_ = -1;
  for (int i = 0; i < nin; ++i) ins_.push_back(make_operand("x" + std::to_string(i), block_));
  if (f_.aliases && nin > 0 && chance(0.3)) {
    alias_in_ = pick(0, nin - 1);
    alias_out_ = pick(0, nout - 1);
    // Same array shape as the output, its own block dims' kinds kept.
    Operand& in = ins_[static_cast<size_t>(alias_in_)];
    in.dims = outs_[static_cast<size_t>(alias_out_)].dims;
    g.has_alias = true;
    notes_.insert("alias");
  }
  // A bounded(n) input block shorter than n leaves the rest of the kernel's
  // buffer as the previous block left it.
  for (const Operand& in : ins_)
    for (const Dim& d : in.dims) g.stale_reads |= d.kind == DimKind::bounded;
  scratch_ = static_cast<int>(chance(0.35) ? pick(1, 2) : 0);

  std::string text;
  if (prefetch_size_ > 0 && !chance(0.05))
    text += "# prove: assume p in [" + std::to_string(prefetch_lo_) + ", " + std::to_string(prefetch_hi_) + ")\n";
  std::vector<std::string> in_specs, out_specs;
  for (const Operand& in : ins_) {
    text += index_map(in, "m_" + in.param);
    in_specs.push_back(spec_text(in, "m_" + in.param));
  }
  for (const Operand& out : outs_) {
    text += index_map(out, "m_" + out.param);
    out_specs.push_back(spec_text(out, "m_" + out.param));
  }
  text += kernel_text(g);

  std::string params, rets, results, call_operands, out_shapes;
  if (prefetch_size_ > 0) params = "%praw: i32[" + std::to_string(prefetch_size_) + "]";
  for (size_t i = 0; i < ins_.size(); ++i) params += std::string(params.empty() ? "" : ", ") + "%a" + std::to_string(i) + ": " + array_type(ins_[i]);
  for (size_t o = 0; o < outs_.size(); ++o) {
    rets += (o ? ", " : "") + array_type(outs_[o]);
    results += (o ? ", %r" : "%r") + std::to_string(o);
    out_shapes += (o ? ", " : "") + array_type(outs_[o]);
  }
  std::string grid, sem;
  for (int a = 0; a < rank; ++a) {
    grid += (a ? ", " : "") + (a == 0 && dynamic ? std::string("?") : std::to_string(grid_[a]));
    sem += std::string(a ? ", " : "") + (a < parallel_ ? "parallel" : "arbitrary");
  }
  if (dynamic) {
    call_operands = std::to_string(grid_[0]) + ":i32";
    notes_.insert("dynamic grid");
  }
  std::string body;
  if (prefetch_size_ > 0) {
    std::string p = "%praw";
    if (!prefetch_expr.empty()) {
      body += "  %p = " + prefetch_expr + "\n";
      p = "%p";
    } else {
      // The assumption names the operand: call it %p either way.
      body += "  %p = add %praw, 0\n";
      p = "%p";
    }
    call_operands += std::string(call_operands.empty() ? "" : ", ") + p;
  }
  for (size_t i = 0; i < ins_.size(); ++i) call_operands += std::string(call_operands.empty() ? "" : ", ") + "%a" + std::to_string(i);
  std::string call = "pallas_call[kernel=@k, grid=(" + grid + "), ";
  if (prefetch_size_ > 0) call += "num_scalar_prefetch=1, ";
  std::string in_list, out_list;
  for (size_t i = 0; i < in_specs.size(); ++i) in_list += (i ? ", " : "") + in_specs[i];
  for (size_t o = 0; o < out_specs.size(); ++o) out_list += (o ? ", " : "") + out_specs[o];
  call += "in_specs=[" + in_list + "],\n      out_specs=[" + out_list + "],\n      out_shapes=[" + out_shapes + "]";
  if (scratch_ > 0) {
    call += ", scratch=[";
    for (int k = 0; k < scratch_; ++k) call += std::string(k ? ", " : "") + "ref<" + block_type() + ", vmem>";
    call += "]";
    notes_.insert("scratch");
  }
  if (alias_in_ >= 0) {
    // tessera numbers array inputs only; JAX counts the prefetch operand too
    // (as Pallas does). Both numberings occur; the other one mostly fails to verify.
    int64_t in = alias_in_ + (prefetch_size_ > 0 && chance(0.5) ? 1 : 0);
    call += ", input_output_aliases=[(" + std::to_string(in) + ", " + std::to_string(alias_out_) + ")]";
  }
  call += ",\n      dimension_semantics=(" + sem + ")] " + call_operands;
  text += "func @main(" + params + ") -> " + (outs_.size() == 1 ? rets : "(" + rets + ")") + " {\n" + body + "  " +
          results + " = " + call + "\n  return " + results + "\n}\n";
  g.text = text;
  g.notes.assign(notes_.begin(), notes_.end());
  return g;
}

}  // namespace tessera::robustness
