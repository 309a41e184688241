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

ParamLayout kiln_layout(const std::vector<std::uint64_t>& pointers,
                        const std::vector<float>& scalars, std::uint64_t index, bool index64,
                        std::vector<unsigned char> geometry) {
  ParamLayout l;
  const std::size_t floats = std::max<std::size_t>(scalars.size(), 1);
  ParamBytes args((pointers.size() * 8 + floats * 4 + 7) / 8 * 8);
  if (!pointers.empty()) std::memcpy(args.data(), pointers.data(), pointers.size() * 8);
  if (!scalars.empty())
    std::memcpy(args.data() + pointers.size() * 8, scalars.data(), scalars.size() * 4);
  l.params.push_back(std::move(args));
  for (std::uint32_t i = 0; i < pointers.size(); ++i) l.pointers.push_back({0, 8 * i});
  for (std::uint32_t i = 0; i < scalars.size(); ++i)
    l.scalars.push_back({0, std::uint32_t(8 * pointers.size()) + 4 * i});
  if (index64) {
    l.params.emplace_back(&index, 8);
  } else {
    const unsigned int i32 = unsigned(index);
    l.params.emplace_back(&i32, 4);
  }
  if (!geometry.empty()) l.params.emplace_back(geometry);
  return l;
}

std::uint64_t kiln_index(const ParamLayout& layout) {
  const ParamBytes& p = layout.params.at(1);
  if (p.size() == 8) {
    std::uint64_t v;
    std::memcpy(&v, p.data(), 8);
    return v;
  }
  unsigned int v;
  std::memcpy(&v, p.data(), 4);
  return v;
}

LaunchParams::LaunchParams(const KernelLaunch& L)
    : params_(L.layout.params),
      pointer_at_(L.layout.pointers),
      scalar_at_(L.layout.scalars),
      offsets_(L.offsets) {
  if (pointer_at_.size() != L.pointers.size())
    throw Error(fmt::format("internal error: kernel {} lays out {} pointers for its {}",
                            L.spec.name, pointer_at_.size(), L.pointers.size()));
  for (ParamBytes& p : params_) ptrs_.push_back(p.data());
  if (L.layout.maps.empty()) return;
  map_of_.assign(L.pointers.size(), -1);
  for (const TensorMapParam& m : L.layout.maps) {
    map_of_.at(m.map.pointer) = int(maps_.size());
    maps_.emplace_back(m, L.pointers[m.map.pointer]);
  }
  stale_ = true;
}

void LaunchParams::encode_maps() {
  for (auto& [m, address] : maps_)
    runtime::encode_tensor_map(m.map.desc, address, params_[m.map.param].data(), m.what);
  stale_ = false;
}

void LaunchParams::throw_no_scalar(std::size_t i) const {
  throw Error(
      fmt::format("internal error: scalar {} of a kernel that lays out {}", i, scalar_at_.size()));
}

std::vector<unsigned char> LaunchParams::bytes() const {
  std::vector<unsigned char> b;
  for (const ParamBytes& p : params_) b.insert(b.end(), p.data(), p.data() + p.size());
  return b;
}

std::vector<unsigned char> LaunchParams::pointer_bytes(std::size_t n) const {
  std::vector<unsigned char> b(8 * n);
  for (std::size_t i = 0; i < n; ++i) std::memcpy(b.data() + 8 * i, pointer(i), 8);
  return b;
}

bool LaunchParams::pointers_equal(const std::vector<unsigned char>& bytes) const {
  if (bytes.size() > 8 * pointer_at_.size()) return false;
  for (std::size_t i = 0; 8 * i < bytes.size(); ++i)
    if (std::memcmp(bytes.data() + 8 * i, pointer(i), 8) != 0) return false;
  return true;
}

}  // namespace kiln
