// What the Mosaic rules know about the kernel they lower, beyond the SSA
// names of backends/emit_context.h: how each tessera Ref is laid out as a
// memref, the grid (for num_programs) and the device mesh (for axis_index).
//
// A kernel parameter of a windowed operand is a Ref of the *kernel* block
// shape (squeezed dims dropped: `ref<f32[128], vmem>`), while Mosaic passes
// the memref of the window with squeezed dims kept as size 1
// (`memref<1x128xf32, ...>`, jax/_src/pallas/mosaic/lowering.py). A RefView
// records which memref dims the Ref's dims are; the others are those unit
// dims, indexed at 0 and squeezed away by the rules.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/emit_context.h"

namespace tessera::backends::mosaic {

struct RefView {
  Shape memref_shape;      // the memref's dims, unit dims included
  std::vector<int> dims;   // memref dim of each Ref dim, ascending
  DType dtype = DType::f32;
  MemSpace space = MemSpace::vmem;

  // A Ref laid out as itself (scratch, run_scoped allocations, slices).
  static RefView of(const Type& ref);
  std::string memref_type() const;
  bool is_unit_dim(int memref_dim) const;
};

// One named axis of the devices the kernel runs on (an enclosing pmap).
struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

// A DMA a SparseCore kernel started: its Refs and the memrefs its
// `tpu.enqueue_dma` / `tpu.enqueue_indirect_dma` took.
struct StartedDma {
  const Var* src_ref = nullptr;
  const Var* dst_ref = nullptr;
  std::string src, src_type, dst, dst_type;
  bool indirect = false;
};

class KernelContext : public EmitContext {
 public:
  KernelContext();
  ~KernelContext();
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  std::vector<int64_t> grid;                // -1: dynamic size
  std::vector<std::string> grid_names;      // empty or one per axis
  std::vector<std::string> grid_args;       // the kernel's i32 arguments, `%arg0`...
  std::vector<MeshAxis> mesh;               // outermost first
  // SparseCore: the local DMAs started on each semaphore Var, oldest first,
  // so that a dma_wait names the source and target of the DMA it waits for
  // (sc_dma_rules.cpp).
  std::unordered_map<const Var*, std::vector<StartedDma>> started_dmas;

  // The layout of Ref `v` (a kernel parameter, scratch, or a nested body's
  // parameter forwarding one of those); a Ref the rules never registered is
  // laid out as its type.
  RefView ref_view(const Var* v) const;
  void set_ref_view(const Var* v, RefView view) { views_[v] = std::move(view); }
  // Makes nested-body parameter `param` stand for `operand` (MLIR regions see
  // enclosing values): the same name and, for a Ref, the same layout.
  // `name` is the operand's name, taken (`use`) in the enclosing scope:
  // a literal's constant must be defined once, outside the region.
  void forward(const Var* param, const Value& operand, const std::string& name);

 private:
  std::unordered_map<const Var*, RefView> views_;
};

// The kernel context behind the EmitContext a Mosaic rule receives: the
// Mosaic tables are run by the Mosaic driver, which makes one. A rule run
// through another EmitContext (a test lowering a body by hand) is an Error
// naming the mistake, not undefined behaviour.
KernelContext& kernel(EmitContext& ctx);

}  // namespace tessera::backends::mosaic
