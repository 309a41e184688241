#pragma once
// Fake kernels for cache tests: no NVRTC, deterministic bytes per key.

#include <functional>
#include <string>

#include "cache/key.hpp"
#include "stages/kernel.hpp"

namespace kiln::test {

inline cache::CacheKey key_of(int i) {
  return cache::CacheKey{0xabcdull, std::uint64_t(i) * 7919 + 1};
}

inline CompiledKernel kernel_of(int i, std::size_t extra = 0) {
  CompiledKernel k;
  k.name = "k" + std::to_string(i);
  k.lowered_name = "_Z1kv";
  k.arch = "sm_90a";
  k.image = std::string(1000 + std::size_t(i % 50) * 37 + extra, char('a' + i % 26));
  return k;
}

/// A compile step that counts its calls.
struct Counting {
  int calls = 0;
  std::function<CompiledKernel()> for_key(int i) {
    return [this, i] {
      ++calls;
      return kernel_of(i);
    };
  }
};

}  // namespace kiln::test
