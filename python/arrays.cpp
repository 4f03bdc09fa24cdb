#include "python/arrays.h"

#include <cstring>

namespace py = pybind11;
using namespace pybind11::literals;

namespace tessera::python {
namespace {

// The NumPy dtype holding each tessera dtype's storage type (array.h): bf16
// and f16 are stored as float, so their storage dtype is float32.
struct NumpyDType {
  DType dtype;
  const char* storage;   // the dtype whose bytes are tessera's storage
  const char* exchange;  // what run() returns (float16 for f16)
};
const NumpyDType kNumpyDTypes[] = {
    {DType::f32, "float32", "float32"}, {DType::bf16, "float32", "float32"}, {DType::f16, "float32", "float16"},
    {DType::f64, "float64", "float64"}, {DType::i1, "bool", "bool"},         {DType::i8, "int8", "int8"},
    {DType::i16, "int16", "int16"},     {DType::i32, "int32", "int32"},      {DType::i64, "int64", "int64"},
    {DType::u8, "uint8", "uint8"},      {DType::u32, "uint32", "uint32"},
};

const NumpyDType& numpy_dtype(DType d) {
  for (const NumpyDType& n : kNumpyDTypes)
    if (n.dtype == d) return n;
  throw Error(std::string("arrays of ") + std::string(dtype_name(d)) + " have no NumPy equivalent");
}

std::string shape_tuple(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += std::to_string(a.shape(i)) + (a.ndim() == 1 ? "," : i + 1 < a.ndim() ? ", " : "");
  return s + ")";
}

bool same_shape(const py::array& a, const Shape& shape) {
  if (a.ndim() != static_cast<py::ssize_t>(shape.size())) return false;
  for (size_t i = 0; i < shape.size(); ++i)
    if (a.shape(static_cast<py::ssize_t>(i)) != shape[i]) return false;
  return true;
}

// An ndarray over `a`'s elements (no copy); `a` must outlive it.
py::array storage_view(interp::Array& a) {
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  // A base object makes pybind11 wrap the pointer instead of copying from it.
  return py::array(py::dtype(numpy_dtype(a.dtype()).storage), shape, a.raw(), py::none());
}

bool borrowable(const py::array& arr, DType d, const py::dtype& storage) {
  int flags = arr.flags();
  return !interp::is_rounded_float(d) && arr.dtype().equal(storage) && (flags & py::array::c_style) &&
         (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_);
}

}  // namespace

interp::Array to_array(const py::handle& value, const ArrayType& want, const std::string& what, const Loc& loc) {
  py::module_ np = py::module_::import("numpy");
  const NumpyDType& nd = numpy_dtype(want.dtype);
  py::dtype storage(nd.storage);
  std::string expected = what + " is " + Type::array(want).str();
  py::array arr;
  try {
    arr = np.attr("asarray")(value);
  } catch (py::error_already_set& e) {
    throw Error(loc, expected + ", got something NumPy cannot make an array of: " + std::string(py::str(e.value())));
  }
  if (!same_shape(arr, want.shape))
    throw Error(loc, expected + ", got an array of shape " + shape_tuple(arr) + " (dtype " +
                         std::string(py::str(arr.dtype())) + ")");
  if (!np.attr("can_cast")(arr.dtype(), storage, "same_kind").cast<bool>())
    throw Error(loc, expected + ": cannot convert NumPy dtype " + std::string(py::str(arr.dtype())) + " to " +
                         nd.storage + " (NumPy's casting='same_kind' does not allow it)" +
                         (want.dtype == DType::bf16 ? "; bf16 is given as floats and rounded" : ""));
  if (borrowable(arr, want.dtype, storage)) {
    // The owner holds a reference to the ndarray; dropping it needs the GIL.
    auto* ref = new py::object(arr);
    std::shared_ptr<const void> owner(ref, [](const void* p) {
      py::gil_scoped_acquire gil;
      delete static_cast<const py::object*>(p);
    });
    return interp::Array::borrowed(want.dtype, want.shape, arr.data(), std::move(owner));
  }
  interp::Array out = interp::Array::uninitialized(want.dtype, want.shape);
  if (interp::is_rounded_float(want.dtype)) {
    // One rounding, from the exact value to bf16 / f16 (as Array::set does).
    py::array_t<double, py::array::c_style> exact = np.attr("ascontiguousarray")(arr, "float64");
    const double* src = exact.data();
    for (int64_t i = 0; i < out.size(); ++i) out.set(i, src[i]);
  } else {
    np.attr("copyto")(storage_view(out), arr, "casting"_a = "same_kind");
  }
  return out;
}

py::array to_numpy(const interp::Array& a) {
  const NumpyDType& nd = numpy_dtype(a.dtype());
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  py::array out(py::dtype(nd.storage), shape);
  if (a.storage_bytes()) std::memcpy(out.mutable_data(), a.raw(), a.storage_bytes());
  if (std::strcmp(nd.storage, nd.exchange) != 0) return out.attr("astype")(nd.exchange);  // f16: exact
  return out;
}

}  // namespace tessera::python
