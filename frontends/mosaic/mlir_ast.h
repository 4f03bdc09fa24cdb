// The parsed form of MLIR text, as the Mosaic importer reads it.
//
// The importer never links MLIR: it reads the printed text of a Mosaic TPU
// module (what `pallas_call(debug=True)` prints, or what `tessera emit mosaic`
// writes) into this small syntax tree, then translates the tree to tessera IR
// (mosaic_import.h). Every op is held in its *generic* shape, whichever syntax
// the text used: operands in the op's declared (ODS) order, inherent
// properties and discardable attributes in one dictionary, and every result
// type. The pretty forms (`vector.load %m[%i] : ...`,
// `tpu.enqueue_dma source(...) target(...)`) are normalised into that shape by
// the parser, so a translation rule sees one form of each op.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/diagnostics.h"

namespace tessera::mlir_text {

// An MLIR type. Scalars are `i1`..`i64`, `f16`/`bf16`/`f32`/`f64`, `index`
// and the Mosaic semaphore types; `vector<...>` and `memref<...>` hold a
// scalar element type and a shape.
struct MType {
  enum Kind : uint8_t { Scalar, Vector, MemRef, Function, None };
  Kind kind = None;
  // Scalar, or the element of a Vector / MemRef: "i1", "i32", "f32", "bf16",
  // "index", "!tpu.dma_semaphore", "!tpu.semaphore", ...
  std::string element;
  std::vector<int64_t> shape;  // Vector / MemRef; -1 for a `?` dim
  // MemRef only: "vmem", "smem", "any", "hbm", "semaphore_mem",
  // "vmem_shared" from `#tpu.memory_space<X>`; "" when none is printed.
  std::string memory_space;
  // Function only: `(inputs) -> results`.
  std::vector<MType> inputs, results;
  std::string text;  // as spelled in the source, for messages

  bool is_scalar() const { return kind == Scalar; }
  bool is_vector() const { return kind == Vector; }
  bool is_memref() const { return kind == MemRef; }
  bool is_semaphore_element() const { return element == "!tpu.dma_semaphore" || element == "!tpu.semaphore"; }
};

// An attribute value.
struct Attr {
  enum Kind : uint8_t {
    Unit,        // a bare name in a dictionary: `{sc.persistent}`
    Bool,        // true / false
    Int,         // `4 : i64`, `0 : index` (type in `type`, i64 when omitted)
    Float,       // `1.0 : f32`, `0xFF800000 : f32` (the value decoded)
    String,      // "gd,td->gt"
    Symbol,      // @transform_0
    Array,       // [a, b, ...]
    DenseArray,  // array<i64: 4, 3, 2> / array<i32> (ints), array<i1: true, false>
    Dense,       // dense<0.0> : vector<8x128xf32> (values in `floats` or `ints`; one value = splat)
    Dict,        // {k = v, ...}
    Dialect,     // #tpu.dimension_semantics<parallel>: `dialect_name` + raw `text` between <>
    TypeAttr,    // a type used as an attribute (e.g. `function_type`)
  };
  Kind kind = Unit;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;  // String contents; Symbol name without '@'; Dialect: "tpu.dimension_semantics"
  std::string text;  // Dialect: the text between the angle brackets ("parallel", "[1], [0], ...")
  std::vector<int64_t> ints;   // DenseArray / Dense of integers or i1
  std::vector<double> floats;  // Dense of floats
  std::vector<Attr> list;      // Array
  std::vector<std::pair<std::string, Attr>> dict;  // Dict
  MType type;  // Int / Float / Dense / TypeAttr; DenseArray: element type (i32, i64)

  const Attr* find(std::string_view key) const;  // Dict entry, or null

  // Declared so that the destructor is defined after the class (below):
  // clang++ with libstdc++ otherwise instantiates std::pair<std::string, Attr>
  // (for `dict`) while Attr is still incomplete, and rejects the header.
  Attr() = default;
  Attr(const Attr&) = default;
  Attr(Attr&&) noexcept = default;
  Attr& operator=(const Attr&) = default;
  Attr& operator=(Attr&&) noexcept = default;
  ~Attr();
};
inline Attr::~Attr() = default;

struct Region;

// One operation, in generic shape (see the file comment).
struct Operation {
  std::string name;  // "arith.addf", "tpu.enqueue_dma", "scf.if", "func.return"
  Loc loc;           // where the op starts in the source text
  // SSA names without '%'. A multi-result def `%5:3 = ...` gives "5#0",
  // "5#1", "5#2" (how later uses `%5#1` spell them).
  std::vector<std::string> results;
  std::vector<MType> result_types;  // always one per result
  std::vector<std::string> operands;   // ODS order (operandSegmentSizes splits them)
  std::vector<MType> operand_types;    // one per operand where the text gives it, else empty
  std::vector<std::pair<std::string, Attr>> attrs;  // properties and attributes together
  std::vector<Region> regions;
  std::vector<std::string> successors;  // block successors (unsupported by the importer; kept for its error)

  const Attr* attr(std::string_view key) const;
  // The operands of segment `k` of a variadic op: from `operandSegmentSizes`
  // when present, else all operands for k == 0.
  std::vector<std::string> segment(size_t k) const;
};

struct BlockArg {
  std::string name;  // without '%'
  MType type;
  Loc loc;
};

struct Block {
  std::string label;  // "" for an entry block without a label (`^bb1` otherwise)
  std::vector<BlockArg> args;
  std::vector<Operation> ops;
};

struct Region {
  std::vector<Block> blocks;
};

// Adds every SSA name `r` defines (block arguments and op results, nested
// regions included) to `out`.
void collect_defined_names(const Region& r, std::unordered_set<std::string>& out);

// A `func.func`.
struct Func {
  std::string name;  // without '@'
  Loc loc;
  std::vector<BlockArg> args;
  std::vector<std::vector<std::pair<std::string, Attr>>> arg_attrs;  // one dict per arg (often empty)
  std::vector<MType> results;
  std::vector<std::pair<std::string, Attr>> attrs;  // the `attributes {...}` dictionary
  Region body;  // empty for a declaration; its entry block's args are `args`

  const Attr* attr(std::string_view key) const;
};

struct ModuleAst {
  Loc loc;
  // The `// ...` line just before `module`, if any, as written (`//`
  // included, trailing blanks dropped): `tessera emit mosaic` names the
  // pallas_call there ("// examples/add.tsr:19:3: pallas_call of @add_kernel").
  std::string leading_comment;
  std::vector<Func> funcs;
  std::vector<std::pair<std::string, Attr>> attrs;  // `module attributes {...}`
};

// Every `module { ... }` of a text, in order. Text outside modules is skipped
// (the kernel jaxpr that `pallas_call(debug=True)` prints first, comments),
// except alias definitions (`#map = ...`, `!t = ...`, substituted on use) and
// `#loc = loc(...)` lines (dropped, as are `loc(...)` trailers). A module
// starts at a line whose first word is `module` followed by `{`,
// `attributes` or `@name`. A text with no module is an error. Throws
// tessera::Error at the offending line:col for malformed text, including an
// op in pretty syntax the parser has no form for (the generic form of any op
// parses), and input nested deeper than 256 regions / attributes / types.
std::vector<ModuleAst> parse_mlir(std::string_view text, const std::string& filename);

}  // namespace tessera::mlir_text
