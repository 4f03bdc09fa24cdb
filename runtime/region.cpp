#include "runtime/region.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "runtime/kernels/util.h"

namespace tessera::interp {
namespace {

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * shape[d + 1];
  return s;
}

// A box walk: `counts` elements per dim; each side advances by its own
// element strides. Calls run(dst_offset, src_offset, n) per innermost row.
template <class Row>
void walk_box(const std::vector<int64_t>& counts, const std::vector<int64_t>& dst_str, int64_t dst0,
              const std::vector<int64_t>& src_str, int64_t src0, Row&& run) {
  int rank = static_cast<int>(counts.size());
  for (int64_t c : counts)
    if (c <= 0) return;
  if (rank == 0) {
    run(dst0, src0, 1, 1, 1);
    return;
  }
  int inner = rank - 1;
  std::vector<int64_t> idx(rank, 0);
  int64_t d_off = dst0, s_off = src0;
  while (true) {
    run(d_off, s_off, counts[inner], dst_str[inner], src_str[inner]);
    int d = inner - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < counts[d]) {
        d_off += dst_str[d];
        s_off += src_str[d];
        break;
      }
      d_off -= dst_str[d] * (counts[d] - 1);
      s_off -= src_str[d] * (counts[d] - 1);
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

// Copies `bytes` with non-temporal stores: they skip reading the destination
// lines first and keep a large destination (a whole HBM array written block by
// block) from evicting the blocks still being computed. The caller fences.
void stream_bytes(void* dst, const void* src, size_t bytes) {
#if defined(__SSE2__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t i = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;  // up to 16-byte alignment
  if (i > bytes) i = bytes;
  std::memcpy(d, s, i);
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
#endif
}

template <class T>
void copy_row(T* dst, int64_t ds, const T* src, int64_t ss, int64_t n, bool stream) {
  if (ds == 1 && ss == 1) {
    if (stream) stream_bytes(dst, src, static_cast<size_t>(n) * sizeof(T));
    else std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
  } else if (ds == 1 && ss == 0) {
    T v = *src;
    for (int64_t i = 0; i < n; ++i) dst[i] = v;
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i * ds] = src[i * ss];
  }
}

// Byte-generic strided copy: the storage size picks a typed row loop.
void copy_box(void* dst, const std::vector<int64_t>& dst_str, int64_t dst0, const void* src,
              const std::vector<int64_t>& src_str, int64_t src0, const std::vector<int64_t>& counts, int esize,
              bool stream = false) {
  // Rows of a block inside a wider array start a new hardware prefetch stream
  // each; fetching a few rows ahead keeps the copy near memory bandwidth.
  int rank = static_cast<int>(counts.size());
  int64_t ahead = 0, row_bytes = 0;
  if (rank >= 2 && src_str[rank - 1] == 1 && src_str[rank - 2] != counts[rank - 1]) {
    ahead = 4 * src_str[rank - 2] * esize;
    row_bytes = counts[rank - 1] * esize;
  }
  auto run = [&](auto tag) {
    using T = decltype(tag);
    T* d = static_cast<T*>(dst);
    const T* s = static_cast<const T*>(src);
    walk_box(counts, dst_str, dst0, src_str, src0, [&](int64_t doff, int64_t soff, int64_t n, int64_t ds, int64_t ss) {
      // Integer arithmetic: the address may lie past the array (a prefetch never faults).
      uintptr_t next = reinterpret_cast<uintptr_t>(s + soff) + static_cast<uintptr_t>(ahead);
      for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(reinterpret_cast<const void*>(next + b));
      copy_row(d + doff, ds, s + soff, ss, n, stream);
    });
  };
  switch (esize) {
    case 1: run(uint8_t{}); break;
    case 2: run(uint16_t{}); break;
    case 4: run(uint32_t{}); break;
    case 8: run(uint64_t{}); break;
    default: throw Error("unsupported element size " + std::to_string(esize));
  }
}

// Element strides and base offset of region `r` inside an array of `shape`.
void region_layout(const Region& r, const Shape& shape, std::vector<int64_t>& str, int64_t& base) {
  std::vector<int64_t> s = row_major_strides(shape);
  str.resize(r.size());
  base = 0;
  for (size_t d = 0; d < r.size(); ++d) {
    str[d] = s[d] * r[d].stride;
    base += s[d] * r[d].start;
  }
}

std::vector<int64_t> counts_of(const Region& r) {
  std::vector<int64_t> c(r.size());
  for (size_t d = 0; d < r.size(); ++d) c[d] = r[d].size;
  return c;
}

// Source strides of a value written into a region: dense, or all zero for a
// rank-0 value (broadcast).
std::vector<int64_t> value_strides(const Region& r, const Array& value) {
  if (value.rank() == 0 && region_elements(r) != 1) return std::vector<int64_t>(r.size(), 0);
  if (value.rank() == 0) return std::vector<int64_t>(r.size(), 0);
  return row_major_strides(counts_of(r));
}

void check_value(const Region& r, const Array& value, DType dtype) {
  if (value.dtype() != dtype)
    throw Error("value of dtype " + std::string(dtype_name(value.dtype())) + " written to a buffer of dtype " +
                std::string(dtype_name(dtype)));
  if (value.rank() != 0 && value.size() != region_elements(r))
    throw Error("value of shape " + shape_str(value.shape()) + " does not fit region " + region_str(r));
}

// dst + src as an accumulating store adds: integers wrap (two's complement,
// as XLA's adds do) rather than overflow.
template <class T>
T plus(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<kern::WrapT<T>>(a) + static_cast<kern::WrapT<T>>(b));
  else
    return static_cast<T>(a + b);
}

template <class T, class Round>
void add_rows(T* dst, const T* src, const Region& r, const std::vector<int64_t>& dstr, int64_t d0,
              const std::vector<int64_t>& sstr, Round round) {
  walk_box(counts_of(r), dstr, d0, sstr, 0, [&](int64_t doff, int64_t soff, int64_t n, int64_t ds, int64_t ss) {
    T* dp = dst + doff;
    const T* sp = src + soff;
    if (ds == 1 && ss == 1) {
      for (int64_t i = 0; i < n; ++i) dp[i] = round(plus(dp[i], sp[i]));
    } else {
      for (int64_t i = 0; i < n; ++i) dp[i * ds] = round(plus(dp[i * ds], sp[i * ss]));
    }
  });
}

// Positions of a region, one by one: calls f(dense index, flat buffer index or
// -1 when out of bounds).
template <class F>
void for_each_position(const Region& r, const Shape& shape, F&& f) {
  int rank = static_cast<int>(r.size());
  std::vector<int64_t> s = row_major_strides(shape);
  int64_t total = region_elements(r);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < total; ++k) {
    int64_t flat = 0;
    bool in = true;
    for (int d = 0; d < rank; ++d) {
      int64_t pos = r[d].start + idx[d] * r[d].stride;
      if (pos < 0 || pos >= shape[d]) in = false;
      flat += pos * s[d];
    }
    f(k, in ? flat : -1);
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < r[d].size) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

Region full_region(const Shape& shape) {
  Region r(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) r[d] = Sel{0, shape[d], 1, true};
  return r;
}

Shape region_shape(const Region& r) {
  Shape s;
  for (const Sel& x : r)
    if (x.keep) s.push_back(x.size);
  return s;
}

int64_t region_elements(const Region& r) {
  int64_t n = 1;
  for (const Sel& x : r) n *= x.size;
  return n;
}

bool region_in_bounds(const Region& r, const Shape& shape) {
  if (r.size() != shape.size()) return false;
  for (size_t d = 0; d < r.size(); ++d) {
    const Sel& x = r[d];
    if (x.size == 0) continue;
    int64_t last = x.start + (x.size - 1) * x.stride;
    if (x.start < 0 || last < 0 || x.start >= shape[d] || last >= shape[d]) return false;
  }
  return true;
}

bool region_is_full(const Region& r, const Shape& shape) {
  if (r.size() != shape.size()) return false;
  for (size_t d = 0; d < r.size(); ++d)
    if (r[d].start != 0 || r[d].size != shape[d] || (r[d].stride != 1 && shape[d] > 1) || !r[d].keep) return false;
  return true;
}

std::string region_str(const Region& r) {
  std::string s = "[";
  for (size_t d = 0; d < r.size(); ++d) {
    if (d) s += ", ";
    const Sel& x = r[d];
    if (!x.keep) {
      s += std::to_string(x.start);
      continue;
    }
    s += std::to_string(x.start) + ":" + std::to_string(x.start + x.size * x.stride);
    if (x.stride != 1) s += ":" + std::to_string(x.stride);
  }
  return s + "]";
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() == 1) s += ",";
  return s + ")";
}

void fill_uninitialized(Array& a, bool zero) {
  if (a.size() == 0) return;
  if (zero) {
    std::memset(a.raw(), 0, a.storage_bytes());
    return;
  }
  DType d = a.dtype();
  visit(a, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    T v;
    if constexpr (std::is_floating_point_v<T>) v = std::numeric_limits<T>::quiet_NaN();
    else if (is_bool(d)) v = 1;
    else v = std::numeric_limits<T>::max();
    for (int64_t i = 0; i < a.size(); ++i) p[i] = v;
  });
}

Array uninitialized_array(DType d, const Shape& shape, bool zero) {
  Array a = Array::uninitialized(d, shape);
  fill_uninitialized(a, zero);
  return a;
}

void read_region_into(const Array& src, const Region& r, Array& out) {
  std::vector<int64_t> counts = counts_of(r);
  std::vector<int64_t> sstr;
  int64_t base;
  region_layout(r, src.shape(), sstr, base);
  copy_box(out.raw(), row_major_strides(counts), 0, src.raw(), sstr, base, counts, storage_size(src.dtype()));
}

Array read_region(const Array& src, const Region& r, bool allow_oob, bool uninit_zero) {
  Shape out_shape = region_shape(r);
  if (region_is_full(r, src.shape())) return src.rank() == 0 ? src : src.reshaped(out_shape);
  if (region_in_bounds(r, src.shape())) {
    Array out = Array::uninitialized(src.dtype(), out_shape);
    read_region_into(src, r, out);
    return out;
  }
  if (!allow_oob) throw Error("out-of-bounds read " + region_str(r) + " of shape " + shape_str(src.shape()));
  int esize = storage_size(src.dtype());
  std::vector<int64_t> dstr = row_major_strides(counts_of(r));
  // Copy the in-bounds sub-box; everything else is uninitialized memory.
  Array out = uninitialized_array(src.dtype(), out_shape, uninit_zero);
  Region sub = r;
  std::vector<int64_t> klo(r.size());
  for (size_t d = 0; d < r.size(); ++d) {
    const Sel& x = r[d];
    int64_t lo = 0, hi = x.size;
    while (lo < hi && (x.start + lo * x.stride < 0 || x.start + lo * x.stride >= src.shape()[d])) ++lo;
    while (hi > lo && (x.start + (hi - 1) * x.stride < 0 || x.start + (hi - 1) * x.stride >= src.shape()[d])) --hi;
    if (lo >= hi) return out;
    klo[d] = lo;
    sub[d].start = x.start + lo * x.stride;
    sub[d].size = hi - lo;
  }
  std::vector<int64_t> sstr;
  int64_t base;
  region_layout(sub, src.shape(), sstr, base);
  int64_t d0 = 0;
  for (size_t d = 0; d < r.size(); ++d) d0 += klo[d] * dstr[d];
  copy_box(out.raw(), dstr, d0, src.raw(), sstr, base, counts_of(sub), esize);
  return out;
}

void write_region(Array& dst, const Region& r, const Array& value) {
  check_value(r, value, dst.dtype());
  std::vector<int64_t> dstr;
  int64_t base;
  region_layout(r, dst.shape(), dstr, base);
  // Rows of at least 256 bytes into an array bigger than a core's caches
  // (block copy-outs into an HBM output) are streamed.
  std::vector<int64_t> counts = counts_of(r);
  int esize = storage_size(dst.dtype());
  bool stream = dst.storage_bytes() >= (size_t{16} << 20) && !counts.empty() && counts.back() * esize >= 256;
  copy_box(dst.raw(), dstr, base, value.raw(), value_strides(r, value), 0, counts, esize, stream);
#if defined(__SSE2__)
  if (stream) _mm_sfence();  // order the streamed stores before whatever reads them next
#endif
}

void accumulate_region(Array& dst, const Region& r, const Array& value) {
  check_value(r, value, dst.dtype());
  if (is_bool(dst.dtype())) throw Error("cannot accumulate into a bool buffer");
  std::vector<int64_t> dstr;
  int64_t base;
  region_layout(r, dst.shape(), dstr, base);
  std::vector<int64_t> sstr = value_strides(r, value);
  DType d = dst.dtype();
  visit(dst, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    const T* s = value.data<T>();
    if constexpr (std::is_same_v<T, float>) {
      if (d == DType::bf16) return add_rows(p, s, r, dstr, base, sstr, [](float x) { return round_to_bf16(x); });
      if (d == DType::f16) return add_rows(p, s, r, dstr, base, sstr, [](float x) { return round_to_f16(x); });
    }
    add_rows(p, s, r, dstr, base, sstr, [](T x) { return x; });
  });
}

bool masked_write_region(Array& dst, const Region& r, const Array& value, const Array& mask) {
  check_value(r, value, dst.dtype());
  const uint8_t* m = mask.data<uint8_t>();
  bool mask_scalar = mask.rank() == 0, value_scalar = value.rank() == 0;
  bool ok = true;
  for_each_position(r, dst.shape(), [&](int64_t k, int64_t flat) {
    if (m[mask_scalar ? 0 : k] && flat < 0) ok = false;
  });
  if (!ok) return false;
  int esize = storage_size(dst.dtype());
  auto* out = static_cast<std::byte*>(dst.raw());
  auto* in = static_cast<const std::byte*>(value.raw());
  for_each_position(r, dst.shape(), [&](int64_t k, int64_t flat) {
    if (m[mask_scalar ? 0 : k]) std::memcpy(out + flat * esize, in + (value_scalar ? 0 : k) * esize, esize);
  });
  return true;
}

bool masked_read_region(const Array& src, const Region& r, const Array& mask, const Array* other, bool uninit_zero,
                        Array& out) {
  const uint8_t* m = mask.data<uint8_t>();
  bool mask_scalar = mask.rank() == 0;
  out = uninitialized_array(src.dtype(), region_shape(r), uninit_zero);
  int esize = storage_size(src.dtype());
  auto* o = static_cast<std::byte*>(out.raw());
  auto* in = static_cast<const std::byte*>(src.raw());
  const std::byte* oth = other ? static_cast<const std::byte*>(other->raw()) : nullptr;
  bool other_scalar = other && other->rank() == 0;
  bool ok = true;
  for_each_position(r, src.shape(), [&](int64_t k, int64_t flat) {
    if (m[mask_scalar ? 0 : k]) {
      if (flat < 0) ok = false;
      else std::memcpy(o + k * esize, in + flat * esize, esize);
    } else if (oth) {
      std::memcpy(o + k * esize, oth + (other_scalar ? 0 : k) * esize, esize);
    }
  });
  return ok;
}

Array take_index(const Array& a, int axis, int64_t i) {
  Region r = full_region(a.shape());
  r[axis] = Sel{i, 1, 1, false};
  return read_region(a, r);
}

void put_index(Array& whole, int axis, int64_t i, const Array& part) {
  Region r = full_region(whole.shape());
  r[axis] = Sel{i, 1, 1, false};
  write_region(whole, r, part);
}

}  // namespace tessera::interp
