#include "backends/llvm/kernel_args.h"

#include <bit>
#include <cstring>

#include "backends/llvm/output_coverage.h"
#include "ir/effects.h"
#include "ir/grid_mapping.h"
#include "runtime/float_bits.h"
#include "runtime/region.h"

namespace tessera::backends::llvm_lowering {

// bf16 / f16 values (kept as float by the interpreter) as the 2-byte
// patterns the kernel ABI stores, and back (runtime/float_bits.h).
uint16_t half_bits(DType d, float value) { return d == DType::bf16 ? interp::bf16_bits(value) : interp::f16_bits(value); }
float half_value(DType d, uint16_t bits) {
  return d == DType::bf16 ? interp::bf16_from_bits(bits) : interp::f16_from_bits(bits);
}

KernelArrays::KernelArrays(const Op& call, const std::vector<int>& operand_of_pointer,
                           const std::vector<interp::Array>& operands, bool uninit_zero,
                           std::vector<interp::Array>* into) {
  GridMapping g = grid_mapping(call);
  for (int out = 0; out < g.num_outputs(); ++out) {
    const interp::Array* aliased = nullptr;
    for (auto [in, to] : g.aliases)
      if (to == out && in >= 0) aliased = &operands.at(static_cast<size_t>(g.input_operand(static_cast<int>(in))));
    const Type& t = g.out_types[static_cast<size_t>(out)];
    // Filled with uninitialized values only where the kernel might leave an
    // element unwritten (output_coverage.h): the fill costs a pass over memory.
    bool filled = !aliased && !writes_every_element(g, out);
    if (into) {
      interp::Array& a = into->at(static_cast<size_t>(out));
      if (aliased) std::memcpy(a.raw(), aliased->raw(), a.storage_bytes());
      else if (filled) interp::fill_uninitialized(a, uninit_zero);
      outputs_.push_back(a);  // shares the caller's buffer: the kernel writes it
    } else {
      outputs_.push_back(aliased  ? aliased->copy()
                         : filled ? interp::uninitialized_array(t.dtype(), t.shape(), uninit_zero)
                                  : interp::Array::uninitialized(t.dtype(), t.shape()));
    }
    unfilled_.push_back(!aliased && !filled);
  }
  Effects effects = compute_effects(*g.kernel);
  written_.resize(operands.size());
  auto copy_if_written = [&](int param, int operand) {
    if (effects.writes(param) || effects.accums(param))
      written_[static_cast<size_t>(operand)] = operands[static_cast<size_t>(operand)].copy();
  };
  for (int j = 0; j < g.num_scalar_prefetch(); ++j) copy_if_written(j, g.scalar_prefetch_operand(j));
  for (int i = 0; i < g.num_inputs(); ++i) copy_if_written(g.input_param(i), g.input_operand(i));

  size_t next_output = 0;
  for (int operand : operand_of_pointer) {
    bool unfilled = operand < 0 && unfilled_.at(next_output);
    interp::Array* output = operand < 0 ? &outputs_.at(next_output++) : nullptr;
    const interp::Array& a = output                            ? *output
                             : written_.at(static_cast<size_t>(operand)) ? *written_[static_cast<size_t>(operand)]
                                                                          : operands.at(static_cast<size_t>(operand));
    if (interp::is_rounded_float(a.dtype())) {
      Packed p{pointers_.size(), output, std::vector<uint16_t>(static_cast<size_t>(a.size()))};
      const float* f = a.data<float>();
      if (!unfilled)  // an unfilled output's bits are all written by the kernel
        for (size_t i = 0; i < p.bits.size(); ++i) p.bits[i] = half_bits(a.dtype(), f[i]);
      packed_.push_back(std::move(p));
      pointers_.push_back(packed_.back().bits.data());
      bytes_.push_back(packed_.back().bits.size() * sizeof(uint16_t));
    } else {
      pointers_.push_back(const_cast<void*>(a.raw()));  // written only when it is an output or a private copy
      bytes_.push_back(a.storage_bytes());
    }
  }
}

std::vector<interp::Array> KernelArrays::outputs() {
  for (const Packed& p : packed_) {
    if (!p.array) continue;
    float* f = p.array->data<float>();
    for (size_t i = 0; i < p.bits.size(); ++i) f[i] = half_value(p.array->dtype(), p.bits[i]);
  }
  return std::move(outputs_);
}

}  // namespace tessera::backends::llvm_lowering
