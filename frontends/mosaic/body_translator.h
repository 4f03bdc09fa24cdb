// The walk that turns a Mosaic func body (a kernel, an index map, a region)
// into a tessera Body, op by op.
//
// MLIR values become one of two things:
//  - scalars and vectors become tessera Values (the value rules of
//    import_rules.h make them);
//  - memrefs become RefViews: a tessera Ref plus, per dim of that Ref, the
//    window `tpu.memref_slice` cut and whether `tpu.memref_squeeze` dropped
//    the dim. Ops that read or write a memref turn its view plus their own
//    indices into a tessera indexer (`get %r[ds(%i, 8), 3]`).
// Ops on memrefs, DMAs, semaphores and regions are structural rules, a table
// keyed by op name (structural_memory.cpp, structural_dma.cpp,
// structural_control.cpp).
//
// MLIR regions see enclosing values; tessera bodies are closed. A region
// becomes a nested body whose parameters are the region's free names: a
// value is passed as itself, a view as its Ref and its dynamic starts.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/mosaic/mlir_ast.h"
#include "ir/builder.h"

namespace tessera::mlir_text {

// tessera's Ref type of a memref type (`memref<2x!tpu.dma_semaphore,
// #tpu.memory_space<semaphore_mem>>` is `ref<dma_sem[2], semaphore>`; no
// memory space means VMEM).
Type import_ref_type(const MType& t, const Loc& loc);

// One dim of the Ref under a view.
struct ViewDim {
  int64_t start = 0;          // static start, when `dyn` is empty
  std::optional<Value> dyn;   // dynamic start (an i32 scalar)
  int64_t size = 1;           // the size, or the static bound of a dynamic size
  std::optional<Value> dyn_size;  // a dynamic size (`memref<?x...>` slices; DMAs only)
  bool squeezed = false;      // dropped by memref_squeeze: the memref has no such dim
  // A size-1 dim the memref has and the Ref lacks: a squeezed block dim
  // (Mosaic keeps it as 1, tessera drops it). It takes no indexer entry.
  bool phantom = false;
};

// A memref value: a window onto a tessera Ref.
struct RefView {
  Value base;
  std::vector<ViewDim> dims;  // one per dim of `base`, plus the phantom dims

  static RefView whole(Value ref);
  // `ref` seen as a memref whose dims `phantom[d]` are size-1 dims `ref` lacks.
  static RefView with_phantoms(Value ref, const std::vector<bool>& phantom);
  // The dims the memref has (not squeezed), as positions in `dims`.
  std::vector<int> visible() const;
  Shape shape() const;
};

// A Ref operand and its indexer, before it joins an op's operand list:
// `dyn_start` / `dyn_size` of the entries are positions in `dyn`.
struct IndexedRef {
  Value base;
  std::vector<IndexEntry> entries;
  std::vector<Value> dyn;
};

// The operands and indexers of one op, in order.
struct OperandList {
  std::vector<Value> operands;
  std::vector<Indexer> indexers;
  void add(Value v) { operands.push_back(v); }
  void add(const IndexedRef& r);
};

// The pmap axis `--devices` maps a pallas_call over (mosaic_import.cpp).
inline constexpr const char* kDeviceAxis = "dev";

class BodyTranslator;
using StructuralRule = std::function<void(BodyTranslator&, const Operation&)>;
using StructuralTable = std::map<std::string, StructuralRule, std::less<>>;
void add_memory_rules(StructuralTable& t);   // structural_memory.cpp
void add_dma_rules(StructuralTable& t);      // structural_dma.cpp
void add_control_rules(StructuralTable& t);  // structural_control.cpp
const StructuralTable& structural_rules();

// The operand groups of `op` (`count` of them): its segments when it has
// `operandSegmentSizes`, else `singles` single operands, then the rest as one
// group, then empty groups.
std::vector<std::vector<std::string>> operand_groups(const Operation& op, size_t singles, size_t count);

// An error at `op`: "`op.name`: message".
[[noreturn]] void fail_at(const Operation& op, const std::string& message);

class BodyTranslator {
 public:
  explicit BodyTranslator(Body& body) : body_(&body), b_(body) {}
  BodyTranslator(const BodyTranslator&) = delete;
  BodyTranslator& operator=(const BodyTranslator&) = delete;

  Builder& builder() { return b_; }
  Body& body() { return *body_; }

  void bind(const std::string& name, Value v);
  void bind(const std::string& name, RefView v);
  bool is_bound(const std::string& name) const { return values_.count(name) || refs_.count(name); }
  bool is_ref(const std::string& name) const { return refs_.count(name) != 0; }
  // The translation of an SSA name used by `op`; a located error when it is
  // unknown or of the other kind.
  Value value(const std::string& name, const Operation& op) const;
  const RefView& ref(const std::string& name, const Operation& op) const;
  std::vector<Value> values(const std::vector<std::string>& names, const Operation& op) const;

  // Translates the ops of `block` before its terminator and returns the
  // terminator (null when the block is empty).
  const Operation* translate_ops(const Block& block);
  void translate_op(const Operation& op);

  // ---- views ----
  // The region of `view` a `vector<shape>` access at `indices` (one per
  // memref dim) touches: leading memref dims the vector lacks are points.
  IndexedRef window(const RefView& view, const std::vector<Value>& indices, const Shape& shape,
                    const std::vector<int64_t>& strides, const Operation& op);
  // The whole view (semaphores, DMA operands).
  IndexedRef whole(const RefView& view);
  // `v` reshaped to `shape` when it differs (vectors across phantom dims).
  Value reshape_to(Value v, const Shape& shape);
  // a + b on i32 index scalars, folded when both are literals.
  Value add_index(Value a, Value b);

  // ---- regions ----
  // The free names of `regions` (used inside, defined outside), in order of
  // first use, and the tessera Vars they stand for (each once).
  struct Captures {
    std::vector<std::string> names;
    std::vector<Var*> vars;
  };
  Captures capture(const std::vector<const Region*>& regions) const;
  // Makes one parameter of `child`'s body per captured Var and binds the
  // captured names there.
  void bind_captures(BodyTranslator& child, const Captures& c) const;

 private:
  Body* body_;
  Builder b_;
  std::map<std::string, Value, std::less<>> values_;
  std::map<std::string, RefView, std::less<>> refs_;
};

// Folds chains of `reshape` in `body` and its nested bodies: a reshape of a
// reshape reads the first one's operand, and a reshape to the operand's own
// shape is replaced by the operand. Phantom dims (a load in Mosaic's shape,
// then `vector.shape_cast` to the kernel's) make such chains; the dead
// reshapes left behind are for dce. A slice of a whole value is the value.
void fold_reshape_chains(Body& body);

// The names used by ops of `regions` (nested regions included) and not
// defined inside them, in order of first use.
std::vector<std::string> free_names(const std::vector<const Region*>& regions);

}  // namespace tessera::mlir_text
