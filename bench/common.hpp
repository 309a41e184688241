#pragma once
// Helpers the benchmark drivers share: random host data, fetching a tensor, comparing outputs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <kiln/kiln.hpp>

namespace kiln::bench {

inline std::vector<unsigned char> random_host(DType t, std::int64_t n, std::uint64_t seed) {
  std::vector<unsigned char> h(std::size_t(n) * size_of(t));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(-3, 3);
  for (std::int64_t i = 0; i < n; ++i) store_element(t, d(rng), h.data() + i * size_of(t));
  return h;
}

inline std::vector<unsigned char> fetch(const Tensor& t) {
  std::vector<unsigned char> h(t.bytes());
  t.copy_to_host(h.data());
  return h;
}

/// The largest difference of two outputs of dtype `t`, relative to max(1, |a|); a NaN on one
/// side only (or a size mismatch) is infinite, NaN on both sides agrees.
inline double max_diff(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b, DType t) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (std::size_t i = 0; i < a.size() / size_of(t); ++i) {
    const double x = load_element(t, a.data() + i * size_of(t));
    const double y = load_element(t, b.data() + i * size_of(t));
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return INFINITY;
      continue;
    }
    if (x != y) worst = std::max(worst, std::fabs(x - y) / std::max(1.0, std::fabs(x)));
  }
  return worst;
}

}  // namespace kiln::bench
