#pragma once
// Helpers the benchmark drivers share: random host data, fetching a tensor, comparing outputs
// (the tuner's own, engine/tuner.hpp).
#include <cstdint>
#include <vector>

#include <kiln/kiln.hpp>

#include "engine/tuner.hpp"

namespace kiln::bench {

using autotune::max_diff;
using autotune::random_host;

inline std::vector<unsigned char> fetch(const Tensor& t) {
  std::vector<unsigned char> h(t.bytes());
  t.copy_to_host(h.data());
  return h;
}

}  // namespace kiln::bench
