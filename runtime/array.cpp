#include "runtime/array.h"

#include <cfloat>
#include <cmath>
#include <limits>
#include <type_traits>

#include "runtime/kernels/convert.h"

namespace tessera::interp {
namespace {

int64_t checked_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0) throw Error("array shape " + shape_str(shape) + " has a negative dimension");
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) throw Error("array shape " + shape_str(shape) + " has more than 2^63 elements");
  return n;
}

}  // namespace

int storage_size(DType d) {
  return visit_dtype(d, [](auto tag) { return static_cast<int>(sizeof(typename decltype(tag)::type)); });
}

double round_double_to(DType d, double x) {
  if (d == DType::f64) return x;
  if (d == DType::f32) return static_cast<double>(double_to_float(x));
  if (!std::isfinite(x) || x == 0) return x;
  // Significand bits after the leading one, smallest normal exponent, largest finite value.
  int mant = d == DType::bf16 ? 7 : 10;
  int emin = d == DType::bf16 ? -126 : -14;
  double maxval = d == DType::bf16 ? std::ldexp(2.0 - std::ldexp(1.0, -7), 127) : 65504.0;
  int e = 0;
  std::frexp(x, &e);  // |x| = m * 2^e with m in [0.5, 1): leading bit at 2^(e-1)
  int lead = std::max(e - 1, emin);
  double quantum = std::ldexp(1.0, lead - mant);
  double r = std::nearbyint(x / quantum) * quantum;  // exact scaling; default mode rounds half to even
  if (std::fabs(r) > maxval) return std::copysign(INFINITY, x);
  return r;
}

Array::Array(DType dtype, Shape shape) : Array(uninitialized(dtype, std::move(shape))) {
  if (buf_ && !buf_->empty()) std::memset(buf_->data(), 0, buf_->size());
}

Array Array::uninitialized(DType dtype, Shape shape) {
  Array a;
  a.dtype_ = dtype;
  a.size_ = checked_size(shape);
  int64_t bytes = 0;
  if (__builtin_mul_overflow(a.size_, storage_size(dtype), &bytes))
    throw Error("array " + Type::array(dtype, shape).str() + " has more than 2^63 bytes");
  if (!allocation_fits(bytes)) fail_allocation(bytes, Type::array(dtype, shape).str());
  a.shape_ = std::move(shape);
  a.buf_ = std::make_shared<Buffer>(static_cast<size_t>(bytes));
  return a;
}

Array Array::borrowed(DType dtype, Shape shape, const void* data, std::shared_ptr<const void> owner) {
  if (!owner) throw Error("Array::borrowed needs the owner of the memory");
  Array a;
  a.dtype_ = dtype;
  a.size_ = checked_size(shape);
  a.shape_ = std::move(shape);
  a.borrowed_owner_ = std::move(owner);
  a.borrowed_data_ = data;
  return a;
}

Array Array::scalar(DType dtype, double value) {
  Array a(dtype, {});
  a.set(0, value);
  return a;
}

Array Array::from_values(DType dtype, Shape shape, const std::vector<double>& values) {
  Array a(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != a.size())
    throw Error("from_values: " + std::to_string(values.size()) + " values for shape " + shape_str(a.shape()));
  for (int64_t i = 0; i < a.size(); ++i) a.set(i, values[static_cast<size_t>(i)]);
  return a;
}

size_t Array::storage_bytes() const { return static_cast<size_t>(size_) * storage_size(dtype_); }

double Array::get(int64_t flat) const {
  return visit(*this, [&](const auto* p) { return static_cast<double>(p[flat]); });
}

void Array::set(int64_t flat, double v) {
  DType d = dtype_;
  visit(*this, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    if constexpr (std::is_floating_point_v<T>) {
      p[flat] = is_rounded_float(d) ? static_cast<float>(round_double_to(d, v)) : convert_scalar<double, T>(v);
    } else if (d == DType::i1) {
      p[flat] = v != 0;
    } else {
      p[flat] = convert_scalar<double, T>(v);
    }
  });
}

int64_t Array::get_int(int64_t flat) const {
  return visit(*this, [&](const auto* p) -> int64_t {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(p)>>;
    if constexpr (std::is_floating_point_v<T>) return convert_scalar<T, int64_t>(p[flat]);
    else return static_cast<int64_t>(p[flat]);
  });
}

void Array::make_unique_copy() {
  if (!shared()) return;
  *this = copy();
}

Array Array::copy() const {
  Array a = uninitialized(dtype_, shape_);
  if (storage_bytes()) std::memcpy(a.raw(), raw(), storage_bytes());
  return a;
}

Array Array::reshaped(Shape new_shape) const {
  if (checked_size(new_shape) != size_)
    throw Error("cannot reshape an array of shape " + shape_str(shape_) + " to " + shape_str(new_shape));
  Array a = *this;
  a.shape_ = std::move(new_shape);
  if (!a.buf_ && !a.borrowed_owner_) a = uninitialized(dtype_, a.shape_);
  return a;
}

}  // namespace tessera::interp
