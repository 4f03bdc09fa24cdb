// SparseCore kernels (`kernel_type=sc_scalar_subcore|sc_vector_subcore` on a
// pallas_call or core_map): what Pallas's SparseCore lowering
// (jax/_src/pallas/mosaic/sc_lowering.py) rejects, reported at the op with
// its wording. The call's own restrictions (scalar prefetch, block dims,
// scratch) are checked here; each kernel op is checked by the rule its
// primitive has in `sc_op_rules`.
#include <string>

#include "ir/grid_mapping.h"
#include "ir/sparse_core.h"
#include "verify/check.h"

namespace tessera::verify_detail {
namespace {

struct ScKernel {
  std::string kernel_type;
  bool vector() const { return kernel_type == "sc_vector_subcore"; }
};

using ScOpRule = void (*)(const Op&, const ScKernel&, Diags&);

// The array type the indexer of main operand 0 selects (the value a state op moves).
Type selected(const Op& op) {
  const Type& r = op.main_operand(0).type();
  const Indexer* ix = op.indexer_for(op.main_operand_index(0));
  return Type::array(r.dtype(), ix ? indexed_shape(*ix, r.shape()) : r.shape());
}

// get / swap / addupdate / load / store: Mosaic SC moves scalars from SMEM
// and vectors of a few shapes from VMEM, with stride-1 slices.
void state_op(const Op& op, const ScKernel&, Diags& out) {
  const std::string& name = op.name();
  bool reads = name == "get" || name == "load";
  const Type& ref = op.main_operand(0).type();
  Type value = selected(op);
  if (const Indexer* ix = op.indexer_for(op.main_operand_index(0))) {
    std::vector<int64_t> strides;
    bool strided = false;
    for (const IndexEntry& e : ix->entries) {
      strides.push_back(e.kind == IndexEntry::Slice ? e.stride : 1);
      strided |= e.kind == IndexEntry::Slice && e.stride != 1;
    }
    if (strided) report(out, op.loc, name + " only supports slices with stride 1, got " + shape_str(strides));
  }
  if (value.rank() == 0) {
    bool masked = name == "load" || name == "store";
    if (masked) report(out, op.loc, name + " does not support masked scalar " + (reads ? "loads" : "stores"));
    if (name == "addupdate") report(out, op.loc, "addupdate does not support atomic scalar adds");
    return;
  }
  if (ref.mem_space() == MemSpace::smem) {
    report(out, op.loc, name + (reads ? " can only load scalars from SMEM" : " can only store scalars to SMEM"));
    return;
  }
  std::vector<Shape> shapes = sc_vector_shapes(value.dtype());
  for (const Shape& s : shapes)
    if (s == value.shape()) return;
  if (shapes.empty()) {
    report(out, op.loc, name + " does not support " + std::string(dtype_name(value.dtype())) + " arrays");
    return;
  }
  std::string want;
  for (const Shape& s : shapes) want += (want.empty() ? "" : ", ") + shape_str(s);
  report(out, op.loc, name + " only supports " + std::string(dtype_name(value.dtype())) + " arrays of shapes [" + want +
                          "], got " + shape_str(value.shape()));
}

// The vector-only primitives have no scalar-subcore lowering at all.
bool needs_vector_subcore(const Op& op, const ScKernel& k, Diags& out) {
  if (k.vector()) return true;
  report(out, op.loc, op.name() + " is only supported in sc_vector_subcore kernels, not " + k.kernel_type);
  return false;
}

const Shape kLaneShape{kScNumLanes};

void iota(const Op& op, const ScKernel& k, Diags& out) {
  if (!needs_vector_subcore(op, k, out)) return;
  const Shape& s = op.param(keys::shape);
  if (s != kLaneShape)
    report(out, op.loc, "Unsupported iota shape for SC vector subcore. Got " + shape_str(s) + ", supported shape is " +
                            shape_str(kLaneShape) + ".");
}

void sort(const Op& op, const ScKernel& k, Diags& out) {
  if (!needs_vector_subcore(op, k, out)) return;
  int64_t dim = op.param(keys::dimension);
  if (dim != 0 && dim != -1) report(out, op.loc, "Unsupported dimension: " + std::to_string(dim));
  if (op.param(keys::num_keys) != 1) report(out, op.loc, "Multiple sort keys not supported");
  for (size_t i = 0; i < op.num_main_operands(); ++i) {
    const Shape& s = op.main_operand(static_cast<int>(i)).type().shape();
    if (s != kLaneShape)
      report(out, op.loc, "Unsupported shape for operand " + std::to_string(i) + " of SC sort: Got " + shape_str(s) +
                              ", expected " + shape_str(kLaneShape));
  }
}

// take_along_axis and gather lower to `tpu.dynamic_gather` on one vector.
void gather_1d(const Op& op, const ScKernel& k, Diags& out) {
  if (!needs_vector_subcore(op, k, out)) return;
  if (op.main_operand(0).type().rank() != 1) report(out, op.loc, "Only 1D gather is supported");
}

void rev(const Op& op, const ScKernel& k, Diags& out) {
  if (!needs_vector_subcore(op, k, out)) return;
  const auto& dims = op.param(keys::dimensions);
  if (dims != std::vector<int64_t>{0} || op.main_operand(0).type().rank() != 1)
    report(out, op.loc, "Invalid dimensions for SC lax.rev: " + shape_str(dims));
}

const RuleTable<ScOpRule>& sc_op_rules() {
  static const RuleTable<ScOpRule> table = [] {
    RuleTable<ScOpRule> t("SparseCore");
    t.set_default("no restriction on the SparseCore beyond the verifier's other checks");
    for (const char* p : {"get", "swap", "addupdate", "load", "store"}) t.set(p, state_op);
    t.set("iota", iota);
    t.set("sort", sort);
    t.set("take_along_axis", gather_1d);
    t.set("gather", gather_1d);
    t.set("rev", rev);
    return t;
  }();
  return table;
}
const RuleTableRegistration kRegistered("verify.sparse_core", sc_op_rules);

void check_body(const Body& b, const ScKernel& k, Diags& out) {
  for (const Op& op : b.ops()) {
    if (const ScOpRule* rule = sc_op_rules().find(*op.prim)) (*rule)(op, k, out);
    for (const BodyPtr& nb : op.nested_bodies()) check_body(*nb, k, out);
  }
}

void check_call(const Op& op, Diags& out) {
  GridMapping g = grid_mapping(op);
  if (g.num_scalar_prefetch()) report(out, op.loc, "Scalar prefetch not supported.");
  for (int m = 0; m < g.num_inputs() + g.num_outputs(); ++m) {
    std::vector<BlockDim> dims = g.dims(m);
    if (static_cast<int>(dims.size()) != g.array(m).rank()) continue;  // reported by the conventions check
    bool blocked = true;
    for (const BlockDim& d : dims)
      if (d.kind != BlockDimKind::Blocked) {
        report(out, op.loc, g.describe(m) + ": Unsupported block dimension type: " +
                                std::string(d.kind == BlockDimKind::Squeezed  ? "squeezed"
                                            : d.kind == BlockDimKind::Element ? "element"
                                                                              : "bounded") +
                                " for block shape: " + block_dims_str(dims));
        blocked = false;
        break;
      }
    Shape shape = kernel_block_shape(dims);
    if (blocked && shape.size() > 1 && shape.back() % 8 != 0)
      report(out, op.loc, "The minormost dimension of a block for " + g.describe(m) + " must be a multiple of 8, got shape " +
                              shape_str(shape));
  }
  for (size_t s = 0; s < g.scratch_types.size(); ++s) {
    const Type& t = g.scratch_types[s];
    if (t.is_ref() && t.mem_space() == MemSpace::semaphore) continue;
    report(out, op.loc, "scratch " + std::to_string(s) + " " + t.str() +
                            ": MemoryRefs are not supported as scratch operands to a SparseCore kernel. Allocate them in "
                            "the kernel body via `run_scoped`.");
  }
}

}  // namespace

void check_sparse_core(const Op& op, Diags& out) {
  if (op.name() != "pallas_call" && op.name() != "core_map") return;
  ScKernel k{op.param(keys::kernel_type)};
  if (!is_sparse_core(k.kernel_type)) return;
  if (op.name() == "pallas_call") {
    check_call(op, out);
    if (BodyPtr kernel = op.param(keys::kernel)) check_body(*kernel, k, out);
  } else if (BodyPtr body = op.param(keys::body)) {
    check_body(*body, k, out);
  }
}

}  // namespace tessera::verify_detail

namespace tessera {

std::vector<Diagnostic> sparse_core_problems(const Op& op) {
  verify_detail::Diags out;
  verify_detail::check_sparse_core(op, out);
  return out;
}

}  // namespace tessera
