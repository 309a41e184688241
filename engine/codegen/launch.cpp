#include "engine/codegen/launch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "engine/runtime/tensor_map.hpp"

namespace kiln {

void throw_grid_too_large(std::uint64_t blocks, const std::string& what) {
  throw ShapeError(fmt::format(
      "{}: needs {} blocks, more than a grid holds (2^31 - 1): split the tensor", what, blocks));
}

std::vector<unsigned char> KernelLaunch::args() const {
  const std::size_t floats = std::max<std::size_t>(scalars.size(), 1);
  std::vector<unsigned char> bytes((pointers.size() * 8 + floats * 4 + 7) / 8 * 8, 0);
  std::memcpy(bytes.data(), pointers.data(), pointers.size() * 8);
  if (!scalars.empty())
    std::memcpy(bytes.data() + pointers.size() * 8, scalars.data(), scalars.size() * 4);
  return bytes;
}

LaunchParams::LaunchParams(const KernelLaunch& L) {
  std::vector<std::vector<unsigned char>> blobs = L.own_params;
  at_ = L.pointer_at;
  if (blobs.empty()) {  // kiln's layout
    blobs.push_back(L.args());
    std::vector<unsigned char> index(L.index64 ? 8 : 4);
    if (L.index64)
      std::memcpy(index.data(), &L.index_arg, 8);
    else {
      const unsigned int i32 = unsigned(L.index_arg);
      std::memcpy(index.data(), &i32, 4);
    }
    blobs.push_back(std::move(index));
    if (!L.geometry.empty()) blobs.push_back(L.geometry);
    at_.clear();
    for (std::uint32_t i = 0; i < L.pointers.size(); ++i) at_.emplace_back(0, 8 * i);
  }
  for (const auto& b : blobs) {
    params_.emplace_back((b.size() + 7) / 8);
    std::memcpy(params_.back().data(), b.data(), b.size());
    sizes_.push_back(b.size());
  }
  for (auto& p : params_) ptrs_.push_back(p.data());
  offsets_ = L.offsets;
  if (L.maps.empty()) return;
  map_of_.assign(L.pointers.size(), -1);
  for (const TensorMapArg& m : L.maps) {
    map_of_.at(m.pointer) = int(maps_.size());
    maps_.emplace_back(m, L.pointers[m.pointer]);
  }
  stale_ = true;
}

void LaunchParams::encode_maps() {
  for (auto& [map, address] : maps_)
    runtime::encode_tensor_map(map.desc, address, data(map.param),
                               fmt::format("the tensor map of parameter {}", map.param));
  stale_ = false;
}

std::vector<unsigned char> LaunchParams::bytes() const {
  std::vector<unsigned char> b;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const auto* p = reinterpret_cast<const unsigned char*>(params_[i].data());
    b.insert(b.end(), p, p + sizes_[i]);
  }
  return b;
}

std::vector<unsigned char> LaunchParams::pointer_bytes(std::size_t n) const {
  std::vector<unsigned char> b(8 * n);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(b.data() + 8 * i, pointer(i), 8);
  return b;
}

bool LaunchParams::pointers_equal(const std::vector<unsigned char>& bytes) const {
  if (bytes.size() > 8 * at_.size()) return false;
  for (std::size_t i = 0; 8 * i < bytes.size(); ++i)
    if (std::memcmp(bytes.data() + 8 * i, pointer(i), 8) != 0) return false;
  return true;
}

}  // namespace kiln
