#include "runtime/npy.h"

#include "runtime/float_bits.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tessera::interp {
namespace {

struct Descr {
  DType dtype;
  int bytes;
  const char* text;
};

// The on-disk element type of each dtype (bf16 is written as f4).
const Descr kDescrs[] = {
    {DType::f32, 4, "<f4"}, {DType::f64, 8, "<f8"}, {DType::f16, 2, "<f2"}, {DType::i8, 1, "|i1"},
    {DType::i16, 2, "<i2"}, {DType::i32, 4, "<i4"}, {DType::i64, 8, "<i8"}, {DType::u8, 1, "|u1"},
    {DType::u32, 4, "<u4"}, {DType::i1, 1, "|b1"},
};

[[noreturn]] void bad(const std::string& path, const std::string& msg) { throw Error(path + ": " + msg); }

std::string header_value(const std::string& h, const std::string& key, const std::string& path) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) bad(path, "the .npy header has no '" + key + "' entry");
  size_t c = h.find(':', k);
  if (c == std::string::npos) bad(path, "malformed .npy header");
  size_t s = c + 1;
  while (s < h.size() && h[s] == ' ') ++s;
  size_t e = s;
  if (h[s] == '(') e = h.find(')', s) + 1;
  else if (h[s] == '\'') e = h.find('\'', s + 1) + 1;
  else
    while (e < h.size() && h[e] != ',' && h[e] != '}') ++e;
  return h.substr(s, e - s);
}

}  // namespace

Array read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) bad(path, "cannot open file");
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad(path, "not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(magic[6]);
  uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    bad(path, "unsupported .npy version " + std::to_string(major));
  }
  std::string h(hlen, '\0');
  if (!f.read(h.data(), hlen)) bad(path, "truncated .npy header");
  std::string descr = header_value(h, "descr", path);
  std::string fortran = header_value(h, "fortran_order", path);
  std::string shape_text = header_value(h, "shape", path);
  if (descr.size() < 3) bad(path, "malformed dtype " + descr);
  descr = descr.substr(1, descr.size() - 2);
  if (fortran != "False") bad(path, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  if (descr[0] == '>') bad(path, "big-endian arrays are not supported (dtype " + descr + ")");
  if (descr[0] == '=') descr[0] = '<';
  if (descr == "<i1" || descr == "<u1" || descr == "<b1") descr[0] = '|';
  const Descr* d = nullptr;
  for (const Descr& x : kDescrs)
    if (descr == x.text) d = &x;
  if (!d) bad(path, "unsupported dtype '" + descr + "'");
  Shape shape;
  std::string inner = shape_text.substr(1, shape_text.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(' ');
    if (a == std::string::npos) continue;
    shape.push_back(std::stoll(item.substr(a)));
  }
  Array out = Array::uninitialized(d->dtype, shape);
  int64_t n = out.size();
  std::vector<char> raw(static_cast<size_t>(n) * d->bytes);
  if (n && !f.read(raw.data(), static_cast<std::streamsize>(raw.size())))
    bad(path, "file is shorter than its header says (" + std::to_string(n) + " elements of " + descr + ")");
  if (d->dtype == DType::f16) {
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h16;
      std::memcpy(&h16, raw.data() + 2 * i, 2);
      out.data<float>()[i] = f16_from_bits(h16);
    }
  } else {
    std::memcpy(out.raw(), raw.data(), raw.size());  // storage types match the file's on little-endian hosts
  }
  return out;
}

Array read_npy_as(const std::string& path, const ArrayType& want, const std::string& what) {
  Array a = read_npy(path);
  bool dtype_ok = a.dtype() == want.dtype || (want.dtype == DType::bf16 && a.dtype() == DType::f32);
  if (!dtype_ok || a.shape() != want.shape)
    throw Error(path + ": holds " + Type::array(a.type()).str() + " but " + what + " is " + Type::array(want).str() +
                (want.dtype == DType::bf16 ? " (bf16 inputs are read from float32 .npy files)" : ""));
  if (want.dtype == DType::bf16) {
    Array b = Array::uninitialized(DType::bf16, a.shape());
    for (int64_t i = 0; i < a.size(); ++i) b.data<float>()[i] = round_to_bf16(a.data<float>()[i]);
    return b;
  }
  return a;
}

void write_npy(const std::string& path, const Array& a) {
  DType file_dtype = a.dtype() == DType::bf16 ? DType::f32 : a.dtype();
  const Descr* d = nullptr;
  for (const Descr& x : kDescrs)
    if (x.dtype == file_dtype) d = &x;
  if (!d) throw Error("cannot write an array of dtype " + std::string(dtype_name(a.dtype())) + " to .npy");
  std::string shape = "(";
  for (size_t i = 0; i < a.shape().size(); ++i) shape += std::to_string(a.shape()[i]) + (a.shape().size() == 1 || i + 1 < a.shape().size() ? ", " : "");
  if (a.shape().size() == 1) shape.pop_back(), shape.pop_back(), shape += ",";
  shape += ")";
  std::string h = "{'descr': '" + std::string(d->text) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + h.size() + 1;
  h += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write " + path);
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t hl = static_cast<uint16_t>(h.size());
  char hb[2] = {static_cast<char>(hl & 0xFF), static_cast<char>(hl >> 8)};
  f.write(hb, 2);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  if (a.dtype() == DType::f16) {
    for (int64_t i = 0; i < a.size(); ++i) {
      uint16_t v = f16_bits(a.data<float>()[i]);
      f.write(reinterpret_cast<const char*>(&v), 2);
    }
  } else {
    f.write(static_cast<const char*>(a.raw()), static_cast<std::streamsize>(a.storage_bytes()));
  }
  if (!f) throw Error("error while writing " + path);
}

}  // namespace tessera::interp
