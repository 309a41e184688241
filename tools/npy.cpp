#include "tools/npy.hpp"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <kiln/error.hpp>
#include <limits>
#include <regex>

#include "cache/atomic_file.hpp"

namespace kiln::tools {
namespace {

const char* descr_of(DType t) {
  switch (t) {
    case DType::f32:
      return "<f4";
    case DType::f16:
      return "<f2";
    case DType::bf16:
      return "<u2";
    case DType::boolean:
      return "|b1";
    case DType::i32:
      return "<i4";
    case DType::i64:
      return "<i8";
  }
  return "?";
}

// The extents of a header's shape tuple ("3, 4" or "7,"): integers >= 0 that fit int64.
template <class Bad>
Shape parse_shape(const std::string& dims, const Bad& bad) {
  Shape shape;
  std::size_t at = 0;
  while (at < dims.size()) {
    std::size_t end = dims.find(',', at);
    if (end == std::string::npos) end = dims.size();
    std::string item = dims.substr(at, end - at);
    at = end + 1;
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \tL") + 1);
    if (item.empty() && at >= dims.size()) break;  // the trailing comma of a 1-tuple
    std::int64_t e = 0;
    bool ok = !item.empty();
    for (char c : item) {
      ok = ok && c >= '0' && c <= '9' &&
           e <= (std::numeric_limits<std::int64_t>::max() - (c - '0')) / 10;
      if (ok) e = e * 10 + (c - '0');
    }
    if (!ok)
      throw bad(
          fmt::format("shape ({}): extent '{}' is not an integer from 0 to 2^63-1", dims, item));
    shape.push_back(e);
  }
  return shape;
}

}  // namespace

NpyArray read_npy(const std::string& path, DType want) {
  std::string data, why;
  if (!cache::read_file(path, data, why, std::size_t(1) << 40))
    throw ArgumentError(fmt::format("cannot read {}: {}", path, why));
  auto bad = [&](const std::string& why) {
    return ArgumentError(fmt::format("{}: {}", path, why));
  };
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) throw bad("not a .npy file");
  const int major = static_cast<unsigned char>(data[6]);
  std::size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(data[8]) | static_cast<unsigned char>(data[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) throw bad("truncated header");
    std::uint32_t n;
    std::memcpy(&n, data.data() + 8, 4);
    header_len = n;
    start = 12;
  } else {
    throw bad(fmt::format("unsupported .npy version {}", major));
  }
  if (start + header_len > data.size()) throw bad("truncated header");
  const std::string header = data.substr(start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr':\s*'([^']*)')")))
    throw bad("no descr in the header");
  const std::string descr = m[1];
  if (descr != descr_of(want) && !(want == DType::boolean && descr == "|u1"))
    throw bad(fmt::format("dtype {} but the graph input is {} (expected {})", descr, name_of(want),
                          descr_of(want)));
  if (std::regex_search(header, std::regex(R"('fortran_order':\s*True)")))
    throw bad("Fortran order is not supported; save a C-contiguous array");
  if (!std::regex_search(header, m, std::regex(R"('shape':\s*\(([^)]*)\))")))
    throw bad("no shape in the header");
  NpyArray a;
  a.dtype = want;
  a.shape = parse_shape(m[1], bad);
  std::int64_t numel = 0;
  try {
    numel = numel_of(a.shape);
  } catch (const Error& e) {
    throw bad(e.what());
  }
  const std::size_t bytes = std::size_t(numel) * size_of(want);
  if (data.size() - start - header_len != bytes)
    throw bad(fmt::format("{} bytes of data for shape {} (expected {})",
                          data.size() - start - header_len, to_string(a.shape), bytes));
  a.bytes.assign(data.begin() + std::ptrdiff_t(start + header_len), data.end());
  return a;
}

void write_npy(const std::string& path, const NpyArray& a) {
  std::vector<std::string> dims;
  for (auto e : a.shape) dims.push_back(std::to_string(e));
  std::string shape = fmt::format("({}{})", fmt::join(dims, ", "), dims.size() == 1 ? "," : "");
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   descr_of(a.dtype), shape);
  const std::size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  const unsigned short len = static_cast<unsigned short>(header.size());
  out << "\x93NUMPY" << char(1) << char(0) << char(len & 0xff) << char(len >> 8) << header;
  out.write(reinterpret_cast<const char*>(a.bytes.data()), std::streamsize(a.bytes.size()));
  if (!out) throw ArgumentError(fmt::format("cannot write {}", path));
}

}  // namespace kiln::tools
