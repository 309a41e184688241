// LaunchParams: the parameters a launch points cuLaunchKernel (or a CUDA graph node) at, in
// kiln's layout (the Args block, the Index, the geometry) or a family's own; pointers written
// and compared by slot.
#include "engine/codegen/launch.hpp"

#include <doctest/doctest.h>

#include <cstring>

namespace {

std::uint64_t read64(const void* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

TEST_CASE("launch params: kiln's layout holds the Args block, the Index and the geometry") {
  kiln::KernelLaunch L;
  L.pointers = {0x1000, 0x2000};
  L.scalars = {1.5f};
  L.index_arg = 77;
  L.geometry = std::vector<unsigned char>(24, 7);
  kiln::LaunchParams p(L);
  void** ptrs = p.pointers();
  CHECK(read64(ptrs[0]) == 0x1000);
  CHECK(read64(static_cast<char*>(ptrs[0]) + 8) == 0x2000);
  float s;
  std::memcpy(&s, static_cast<char*>(ptrs[0]) + 16, 4);
  CHECK(s == 1.5f);
  unsigned index32;
  std::memcpy(&index32, ptrs[1], 4);
  CHECK(index32 == 77);
  CHECK(static_cast<unsigned char*>(ptrs[2])[23] == 7);
  CHECK(p.bytes().size() == 24 + 4 + 24);  // Args (2 pointers, 1 float, padded), Index, geometry
  p.set_pointer(1, 0x3000);
  p.set_scalar(2, 0, 2.5f);
  CHECK(read64(static_cast<char*>(ptrs[0]) + 8) == 0x3000);
  std::memcpy(&s, static_cast<char*>(ptrs[0]) + 16, 4);
  CHECK(s == 2.5f);
  const std::vector<unsigned char> both = p.pointer_bytes(2);
  CHECK(read64(both.data() + 8) == 0x3000);
  CHECK(p.pointers_equal(both));
  p.set_pointer(0, 0x4000);
  CHECK(!p.pointers_equal(both));
}

TEST_CASE("launch params: a family's own layout, pointers by (parameter, offset)") {
  kiln::KernelLaunch L;
  const int n = 5;
  const float a = 0.5f;
  const std::uint64_t x = 0x10, y = 0x20;
  const auto blob = [](const void* v, std::size_t size) {
    const auto* b = static_cast<const unsigned char*>(v);
    return std::vector<unsigned char>(b, b + size);
  };
  L.own_params = {blob(&x, 8), blob(&n, 4), blob(&y, 8), blob(&a, 4)};
  L.pointer_at = {{2, 0}, {0, 0}};  // the output (parameter 2), then the input (parameter 0)
  L.pointers = {y, x};
  kiln::LaunchParams p(L);
  void** ptrs = p.pointers();
  CHECK(read64(ptrs[0]) == 0x10);
  int n_read;
  std::memcpy(&n_read, ptrs[1], 4);
  CHECK(n_read == 5);
  CHECK(read64(ptrs[2]) == 0x20);
  CHECK(p.bytes().size() == 8 + 4 + 8 + 4);
  p.set_pointer(0, 0x30);  // the output's slot: parameter 2
  CHECK(read64(ptrs[2]) == 0x30);
  CHECK(read64(ptrs[0]) == 0x10);
  const std::vector<unsigned char> slots = p.pointer_bytes(2);
  CHECK(read64(slots.data()) == 0x30);
  CHECK(read64(slots.data() + 8) == 0x10);
  CHECK(p.pointers_equal(slots));
  CHECK(L.config.empty());  // no grid given: nothing to launch
}

TEST_CASE("LaunchConfig: empty grids, clusters and what it prints") {
  kiln::LaunchConfig c;
  CHECK(c.empty());
  c.grid = {128, 2, 1};
  c.block = {256, 1, 1};
  CHECK(!c.empty());
  CHECK(!c.clustered());
  CHECK(c.describe() == "grid 128x2x1 block 256x1x1");
  c.cluster = {1, 2, 1};
  c.shared = 4096;
  CHECK(c.clustered());
  CHECK(c.describe() == "grid 128x2x1 block 256x1x1 cluster 1x2x1 shared 4096");
  c.grid[2] = 0;
  CHECK(c.empty());
}

TEST_CASE("launch params: a pointer's offset (a slice, a column window) follows every address") {
  kiln::KernelLaunch L;
  L.pointers = {0x1000 - 128, 0x2000 + 40};  // specialized with the offsets applied
  L.offsets = {-128, 40};
  kiln::LaunchParams p(L);
  void** ptrs = p.pointers();
  CHECK(read64(ptrs[0]) == 0x1000 - 128);
  CHECK(read64(static_cast<char*>(ptrs[0]) + 8) == 0x2000 + 40);
  p.set_pointer(0, 0x9000);  // a new tensor address for each node
  p.set_pointer(1, 0xa000);
  CHECK(read64(ptrs[0]) == 0x9000 - 128);
  CHECK(read64(static_cast<char*>(ptrs[0]) + 8) == 0xa000 + 40);
  kiln::KernelLaunch plain;  // no offsets: the address as given
  plain.pointers = {0x1000};
  kiln::LaunchParams q(plain);
  q.set_pointer(0, 0x5000);
  CHECK(read64(q.pointers()[0]) == 0x5000);
}
