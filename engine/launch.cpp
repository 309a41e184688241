#include "engine/launch.hpp"

#include <algorithm>

namespace kiln {

std::vector<unsigned char> KernelLaunch::args() const {
  const std::size_t floats = std::max<std::size_t>(scalars.size(), 1);
  std::vector<unsigned char> bytes((pointers.size() * 8 + floats * 4 + 7) / 8 * 8, 0);
  std::memcpy(bytes.data(), pointers.data(), pointers.size() * 8);
  if (!scalars.empty())
    std::memcpy(bytes.data() + pointers.size() * 8, scalars.data(), scalars.size() * 4);
  return bytes;
}

LaunchParams::LaunchParams(const KernelLaunch& L)
    : args_(L.args()), index32_(unsigned(L.index_arg)), index64_(L.index_arg) {
  ptrs_[0] = args_.data();
  ptrs_[1] = L.index64 ? static_cast<void*>(&index64_) : &index32_;
  if (!L.geometry.empty()) {
    geometry_.resize((L.geometry.size() + 7) / 8);
    std::memcpy(geometry_.data(), L.geometry.data(), L.geometry.size());
    ptrs_[2] = geometry_.data();
  }
}

std::vector<unsigned char> LaunchParams::bytes() const {
  std::vector<unsigned char> b = args_;
  const auto* index = static_cast<const unsigned char*>(ptrs_[1]);
  b.insert(b.end(), index, index + (ptrs_[1] == &index64_ ? sizeof index64_ : sizeof index32_));
  const auto* geometry = reinterpret_cast<const unsigned char*>(geometry_.data());
  b.insert(b.end(), geometry, geometry + 8 * geometry_.size());
  return b;
}

}  // namespace kiln
