// Static parameters of ops: the typed vocabulary a primitive's schema speaks.
//
// Each primitive declares its parameters (name, kind, default) in its schema
// (ir/primitive.h); ops store values of these kinds. The text format prints a
// parameter by its kind, so one printer and one parser serve every primitive.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ir/type.h"

namespace tessera {

class Body;
using BodyPtr = std::shared_ptr<Body>;

// ---- Indexers: `%ref[%i, 0:8, ds(%j, 128), ds(0, %n), :]` -------------------
// One entry per dimension of the indexed Ref. Dynamic starts and sizes are
// operands of the op; an entry names them by operand position.
//
// A dynamic size (`ds(0, %n)`, Pallas's `pl.ds(0, n)` with a traced n) is
// allowed only in dma_start / dma_wait. Its `size` holds the static bound the
// Ref allows (the dim minus a static start, or the dim for a dynamic start):
// the static type of the selected region uses the bound, the run-time size is
// checked against the Ref when the op runs.
//
// An indirect entry (`%table[%offsets, :]`, Pallas's `table.at[offsets_ref]`)
// selects the rows a 1-D i32 Ref of offsets names, in its order: the indexed
// side of a SparseCore gather / scatter DMA. It is allowed only in dim 0 of a
// dma_start / dma_wait operand; `dyn_start` is the offsets Ref's operand and
// `size` the number of offsets (the Builder fills it in from the Ref's type).
struct IndexEntry {
  enum Kind : uint8_t { Full, Point, Slice, Indirect };
  Kind kind = Full;
  int64_t start = 0;     // static start (Point / Slice), when dyn_start < 0
  int dyn_start = -1;    // operand index of a dynamic start, or -1
  int64_t size = 0;      // Slice only: the size, or the static bound of a dynamic size
  int64_t stride = 1;    // Slice only
  int dyn_size = -1;     // Slice only: operand index of a dynamic size, or -1

  static IndexEntry full() { return {}; }
  static IndexEntry point(int64_t i) { return {Point, i, -1, 1, 1}; }
  static IndexEntry dyn_point(int operand) { return {Point, 0, operand, 1, 1}; }
  static IndexEntry slice(int64_t start, int64_t size, int64_t stride = 1) { return {Slice, start, -1, size, stride}; }
  static IndexEntry dyn_slice(int operand, int64_t size, int64_t stride = 1) { return {Slice, 0, operand, size, stride}; }
  // `ds(start, %n)`: a slice whose size is operand `size_operand`; the
  // Builder fills in the static bound.
  static IndexEntry dyn_sized(int64_t start, int size_operand) { return {Slice, start, -1, 0, 1, size_operand}; }
  // The rows named by the offsets Ref at operand `offsets_operand`.
  static IndexEntry indirect(int offsets_operand) { return {Indirect, 0, offsets_operand, 0, 1}; }
  IndexEntry with_dyn_size(int size_operand) const {
    IndexEntry e = *this;
    e.dyn_size = size_operand;
    return e;
  }
  bool is_dynamic() const { return dyn_start >= 0; }
  bool is_indirect() const { return kind == Indirect; }
  bool has_dynamic_size() const { return dyn_size >= 0; }
  bool operator==(const IndexEntry&) const = default;
};

struct Indexer {
  int base = 0;                     // operand index of the indexed Ref
  std::vector<IndexEntry> entries;  // exactly the Ref's rank after building
  bool operator==(const Indexer&) const = default;
};

// Whether operand `i` of an op is the dynamic start or size of an entry of one
// of its `indexers`: an index operand, not one of the op's main operands.
bool is_index_operand(const std::vector<Indexer>& indexers, int i);

// Shape of the value an indexer selects from a Ref of shape `ref_shape`:
// Point entries drop their dimension, Full keeps it, Slice gives `size` (the
// static bound of a dynamic size), Indirect the number of offsets.
Shape indexed_shape(const Indexer& ix, const Shape& ref_shape);
// Whether an entry of `ix` has a dynamic size.
bool has_dynamic_size(const Indexer& ix);
// The indirect entry of `ix` (always dim 0 in a well-typed op), or null.
const IndexEntry* indirect_entry(const Indexer& ix);

// ---- Block specs: how pallas_call cuts an operand into blocks ---------------
enum class BlockDimKind : uint8_t { Blocked, Element, Squeezed, BoundedSlice };

struct BlockDim {
  BlockDimKind kind = BlockDimKind::Blocked;
  int64_t size = 1;      // block extent (1 for Squeezed)
  int64_t pad_lo = 0;    // Element only
  int64_t pad_hi = 0;    // Element only

  static BlockDim blocked(int64_t n) { return {BlockDimKind::Blocked, n, 0, 0}; }
  static BlockDim element(int64_t n, int64_t lo = 0, int64_t hi = 0) { return {BlockDimKind::Element, n, lo, hi}; }
  static BlockDim squeezed() { return {BlockDimKind::Squeezed, 1, 0, 0}; }
  static BlockDim bounded(int64_t n) { return {BlockDimKind::BoundedSlice, n, 0, 0}; }
  bool operator==(const BlockDim&) const = default;
};

struct BlockSpec {
  // nullopt: the block is the whole array (Pallas's BlockSpec without a shape).
  std::optional<std::vector<BlockDim>> block;
  // `*program_ids, *scalar_prefetch -> one i32 per array dim` (two, start and
  // size, for a BoundedSlice dim). Null: every index is 0.
  BodyPtr index_map;
  MemSpace mem = MemSpace::vmem;
  int64_t buffer_count = 0;  // Buffered(k); 0 means the default pipelining

  bool operator==(const BlockSpec&) const = default;
};

// Block dims of `spec` for an array of `shape`: the explicit ones, or the whole
// array as Blocked dims.
std::vector<BlockDim> block_dims(const BlockSpec& spec, const Shape& shape);
// Shape of the kernel's view of one block: Squeezed dims dropped.
Shape kernel_block_shape(const std::vector<BlockDim>& dims);
// Number of values the index map returns for these dims.
int index_map_arity(const std::vector<BlockDim>& dims);

// ---- Parameter values ---------------------------------------------------------
enum class ParamKind : uint8_t {
  Int, Float, Bool, Str, Ident, DType, Type,
  Ints,      // (1, 2, 3)
  Dims,      // like Ints, -1 printed as `?` (a dynamic grid size)
  OptInts,   // like Ints, -1 printed as `none` (an unmapped axis)
  Idents,    // (parallel, arbitrary)
  Types,     // [f32[8], ref<i32[4], smem>]
  Body,      // @name or an inline fn(...) { ... }
  Bodies,    // [fn ..., fn ...]
  Specs,     // [spec((128, 128), @ij), ...]
  IntPairs,  // [(0, 0), (1, 2)]
};

using IntPairs = std::vector<std::pair<int64_t, int64_t>>;

using Param = std::variant<std::monostate, int64_t, double, bool, std::string, DType, Type,
                           std::vector<int64_t>, std::vector<std::string>, std::vector<Type>,
                           BodyPtr, std::vector<BodyPtr>, std::vector<BlockSpec>, IntPairs>;

struct NamedParam {
  std::string name;
  Param value;
};
using Params = std::vector<NamedParam>;

// Does `value` hold the C++ alternative that params of `kind` are stored as?
bool holds_kind(const Param& value, ParamKind kind);

// A param's name together with the C++ type its value is stored as: the
// typed key `Op::param` reads (ir/param_keys.h declares one per name).
template <class T>
struct ParamKey {
  using value_type = T;
  std::string_view name;
};

}  // namespace tessera
