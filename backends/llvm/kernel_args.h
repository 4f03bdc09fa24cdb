// The arrays one run of a compiled pallas_call gets, laid out as the kernel
// ABI wants them (lower_kernel.h): one buffer per KernelInfo pointer, in
// storage dtype. interp::Array keeps bf16 / f16 as rounded floats, the kernel
// reads and writes 16-bit values: those arrays are packed before the run and
// unpacked after it. Shared by the host JIT and the CUDA runner; no LLVM here.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ir.h"
#include "runtime/array.h"

namespace tessera::backends::llvm_lowering {

class KernelArrays {
 public:
  // `operand_of_pointer`: KernelInfo's (a pallas_call operand index, or -1 for
  // the next output). Outputs start as the interpreter's HBM buffers do: an
  // aliased output as its input's values, the others uninitialized (NaN /
  // int max / true, or zeros with `uninit_zero`), except those the kernel
  // writes in full before reading (output_coverage.h): no fill there. An
  // operand the kernel writes (its effects) is copied first: the caller's
  // arrays are never written.
  // With `into` (one array per output, of the call's output types, checked by
  // the caller) the outputs are those arrays, started as above in place: the
  // kernel writes the caller's buffers and nothing is allocated for them.
  KernelArrays(const Op& call, const std::vector<int>& operand_of_pointer, const std::vector<interp::Array>& operands,
               bool uninit_zero, std::vector<interp::Array>* into = nullptr);

  // The kernel's pointers, in order, and the bytes each points to.
  const std::vector<void*>& pointers() const { return pointers_; }
  const std::vector<size_t>& bytes() const { return bytes_; }

  // After the run: the outputs, 16-bit ones unpacked (with `into`: handles
  // sharing the caller's arrays' buffers).
  std::vector<interp::Array> outputs();

 private:
  struct Packed {
    size_t pointer;       // which pointer
    interp::Array* array; // the output it unpacks into (null: an operand)
    std::vector<uint16_t> bits;
  };
  std::vector<interp::Array> outputs_;
  std::vector<bool> unfilled_;  // per output: allocated without the uninitialized fill (the kernel writes it all)
  std::vector<std::optional<interp::Array>> written_;  // private copies of operands the kernel writes
  std::vector<Packed> packed_;
  std::vector<void*> pointers_;
  std::vector<size_t> bytes_;
};

// bf16 / f16 bits of a float that holds a value of that type (as interp::Array
// keeps them), and back. Exact both ways.
uint16_t half_bits(DType d, float value);
float half_value(DType d, uint16_t bits);

}  // namespace tessera::backends::llvm_lowering
