// The generic parameter layout (kiln's: the Args block, the Index, the geometry; or a user
// template's, one parameter each) and LaunchParams, the parameters a launch points
// cuLaunchKernel (or a CUDA graph node) at: pointers and scalars written and compared by slot.
#include "engine/codegen/launch.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <kiln/error.hpp>

namespace {

std::uint64_t read64(const void* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

float read_float(const void* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

TEST_CASE("kiln's layout: the Args block, the Index and the geometry, slots at their bytes") {
  const kiln::ParamLayout l = kiln::kiln_layout({0x1000, 0x2000}, {1.5f, -2.f}, 77, false,
                                                std::vector<unsigned char>(24, 7));
  REQUIRE(l.params.size() == 3);
  CHECK(l.params[0].size() == 24);  // 2 pointers, 2 floats
  CHECK(read64(l.params[0].data()) == 0x1000);
  CHECK(read64(l.params[0].data() + 8) == 0x2000);
  CHECK(read_float(l.params[0].data() + 20) == -2.f);
  CHECK(l.params[1].size() == 4);
  CHECK(l.params[2].bytes() == std::vector<unsigned char>(24, 7));
  REQUIRE(l.pointers.size() == 2);
  CHECK(l.pointers[1].param == 0);
  CHECK(l.pointers[1].offset == 8);
  REQUIRE(l.scalars.size() == 2);
  CHECK(l.scalars[0].offset == 16);
  CHECK(l.scalars[1].offset == 20);
  CHECK(!l.scalars[1].f64);
  CHECK(l.maps.empty());
  CHECK(kiln::kiln_index(l) == 77);
  // Every parameter's storage is 8-byte aligned, whatever its size.
  for (const kiln::ParamBytes& b : l.params)
    CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % 8 == 0);
}

TEST_CASE("kiln's layout without geometry: a 64-bit Index, one float slot when no scalars") {
  const kiln::ParamLayout l = kiln::kiln_layout({0x10}, {}, (1ull << 33) + 5, true);
  REQUIRE(l.params.size() == 2);    // no geometry parameter
  CHECK(l.params[0].size() == 16);  // 1 pointer, 1 float slot (Args<P, 0> keeps one), padded
  CHECK(l.params[1].size() == 8);
  CHECK(read64(l.params[1].data()) == (1ull << 33) + 5);
  CHECK(kiln::kiln_index(l) == (1ull << 33) + 5);
  CHECK(l.scalars.empty());
}

TEST_CASE("launch params: kiln's layout, pointers and scalars written at their slots") {
  kiln::KernelLaunch L;
  L.pointers = {0x1000, 0x2000};
  L.scalars = {1.5f};
  L.layout = kiln::kiln_layout(L.pointers, L.scalars, 77, false, std::vector<unsigned char>(24, 7));
  kiln::LaunchParams p(L);
  void** ptrs = p.pointers();
  CHECK(read64(ptrs[0]) == 0x1000);
  CHECK(read64(static_cast<char*>(ptrs[0]) + 8) == 0x2000);
  CHECK(read_float(static_cast<char*>(ptrs[0]) + 16) == 1.5f);
  unsigned index32;
  std::memcpy(&index32, ptrs[1], 4);
  CHECK(index32 == 77);
  CHECK(static_cast<unsigned char*>(ptrs[2])[23] == 7);
  CHECK(p.bytes().size() == 24 + 4 + 24);  // Args (2 pointers, 1 float, padded), Index, geometry
  p.set_pointer(1, 0x3000);
  p.set_scalar(0, 2.5);
  CHECK(read64(static_cast<char*>(ptrs[0]) + 8) == 0x3000);
  CHECK(read_float(static_cast<char*>(ptrs[0]) + 16) == 2.5f);
  CHECK(read64(ptrs[0]) == 0x1000);                    // the other pointer untouched
  CHECK_THROWS_AS(p.set_scalar(1, 0.0), kiln::Error);  // a scalar the layout lacks
  const std::vector<unsigned char> both = p.pointer_bytes(2);
  CHECK(read64(both.data() + 8) == 0x3000);
  CHECK(p.pointers_equal(both));
  p.set_pointer(0, 0x4000);
  CHECK(!p.pointers_equal(both));
}

TEST_CASE("launch params: a user template's layout, one parameter each, f32 and f64 scalars") {
  const int n = 5;
  const float a = 0.5f;
  const double b = 0.25;
  const std::uint64_t x = 0x10, y = 0x20;
  kiln::KernelLaunch L;
  L.layout.params = {{&x, 8}, {&n, 4}, {&y, 8}, {&a, 4}, {&b, 8}};
  L.layout.pointers = {{2, 0}, {0, 0}};  // the output (parameter 2), then the input (0)
  L.layout.scalars = {{3, 0, false}, {4, 0, true}};
  L.pointers = {y, x};
  kiln::LaunchParams p(L);
  void** ptrs = p.pointers();
  CHECK(read64(ptrs[0]) == 0x10);
  int n_read;
  std::memcpy(&n_read, ptrs[1], 4);
  CHECK(n_read == 5);
  CHECK(read64(ptrs[2]) == 0x20);
  CHECK(p.bytes().size() == 8 + 4 + 8 + 4 + 8);
  p.set_pointer(0, 0x30);  // the output's slot: parameter 2
  CHECK(read64(ptrs[2]) == 0x30);
  CHECK(read64(ptrs[0]) == 0x10);
  p.set_scalar(0, 4.0);
  p.set_scalar(1, 1e300);  // a double keeps what a float cannot hold
  CHECK(read_float(ptrs[3]) == 4.0f);
  double b_read;
  std::memcpy(&b_read, ptrs[4], 8);
  CHECK(b_read == 1e300);
  std::memcpy(&n_read, ptrs[1], 4);
  CHECK(n_read == 5);  // integers are never rewritten
  const std::vector<unsigned char> slots = p.pointer_bytes(2);
  CHECK(read64(slots.data()) == 0x30);
  CHECK(read64(slots.data() + 8) == 0x10);
  CHECK(p.pointers_equal(slots));
  CHECK(L.config.empty());  // no grid given: nothing to launch
}

TEST_CASE("launch params: a layout that places a different number of pointers is refused") {
  kiln::KernelLaunch L;
  L.pointers = {0x10, 0x20};
  L.layout = kiln::kiln_layout({0x10}, {}, 1, false);
  CHECK_THROWS_AS(kiln::LaunchParams{L}, kiln::Error);
}

TEST_CASE("launch params: a tensor map's pointer is the map's address, never written bytes") {
  kiln::KernelLaunch L;
  const std::uint64_t out = 0x2000;
  L.layout.params = {kiln::ParamBytes(128), {&out, 8}};
  L.layout.pointers = {{1, 0}, {0, 0}};  // the output, then the mapped input
  kiln::TensorMapDesc desc;
  desc.rank = 1;
  L.layout.maps = {{{0, 1, desc}, "template t: tensor map a"}};
  L.pointers = {out, 0x1000};
  kiln::LaunchParams p(L);
  CHECK(p.maps_stale());  // encoded by the first pointers()
  const std::vector<unsigned char> zero(128, 0);
  p.set_pointer(1, 0x1000);
  CHECK(p.bytes() == [&] {
    std::vector<unsigned char> b = zero;
    b.resize(136);
    std::memcpy(b.data() + 128, &out, 8);
    return b;
  }());  // the map's bytes untouched: only encoding writes them
  const std::vector<unsigned char> before = p.pointer_bytes(2);
  CHECK(read64(before.data() + 8) == 0x1000);  // its address, as a graph node compares it
  p.set_pointer(1, 0x5000);
  CHECK(p.maps_stale());
  CHECK(!p.pointers_equal(before));
  CHECK(read64(p.pointer_bytes(2).data() + 8) == 0x5000);
  CHECK(std::equal(zero.begin(), zero.end(), p.bytes().begin()));
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
  L.layout = kiln::kiln_layout(L.pointers, {}, 1, false);
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
  plain.layout = kiln::kiln_layout(plain.pointers, {}, 1, false);
  kiln::LaunchParams q(plain);
  q.set_pointer(0, 0x5000);
  CHECK(read64(q.pointers()[0]) == 0x5000);
}
