// kiln::launch's per-signature cache of a user's template: a call with a signature seen before
// reuses what that call prepared (new pointers and floats written in), and a template whose
// content changed, even the same object, never gets the old kernel.
#include <doctest/doctest.h>

#include <cstring>
#include <kiln/kiln.hpp>
#include <vector>

#include "engine/codegen/launch.hpp"
#include "engine/families/user/user_template.hpp"
#include "tests/support.hpp"

using kiln::DType;

namespace {

std::uint64_t read64(const void* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace

TEST_CASE("template launches: one parameter each, the output's pointer first, floats rewritten") {
  using K = kiln::TemplateParam::Kind;
  kiln::Template t("axpy.cuh",
                   "template <class T> __global__ void axpy(const T* x, T* y, double a, int n, "
                   "float b) {}\n");
  t.params({{"x", K::tensor}, {"y", K::tensor}, {"a", K::f64}, {"n", K::i32}, {"b", K::f32}})
      .instance("axpy<{x}>")
      .launch({"1"}, {"n"})
      .output("y", "x");
  kiln::TensorView x = kiln::test::desc({64}, DType::f32), y = x;
  x.data = 0x10000;
  y.data = 0x20000;
  const kiln::KernelLaunch L = kiln::specialize_template(t, {x, y, 0.5, 64.0, 2.0}, {}, false);
  CHECK(L.groups == 1);
  REQUIRE(L.layout.params.size() == 5);
  CHECK(L.layout.params[2].size() == 8);  // a double
  CHECK(L.layout.params[3].size() == 4);
  REQUIRE(L.pointers.size() == 2);
  CHECK(L.pointers == std::vector<std::uint64_t>{0x20000, 0x10000});  // the output first
  CHECK(L.layout.pointers[0].param == 1);
  CHECK(L.layout.pointers[1].param == 0);
  REQUIRE(L.layout.scalars.size() == 2);  // a and b, in order; n picks the kernel
  CHECK(L.layout.scalars[0].param == 2);
  CHECK(L.layout.scalars[0].f64);
  CHECK(L.layout.scalars[1].param == 4);
  CHECK(!L.layout.scalars[1].f64);
  CHECK(L.layout.maps.empty());
  kiln::LaunchParams p(L);
  void** ptrs = p.pointers();
  CHECK(read64(ptrs[0]) == 0x10000);
  CHECK(read64(ptrs[1]) == 0x20000);
  x.data = 0x30000;
  y.data = 0x40000;
  kiln::set_template_args(t, {x, y, 0.125, 64.0, 3.0}, p);
  CHECK(read64(ptrs[0]) == 0x30000);
  CHECK(read64(ptrs[1]) == 0x40000);
  double a;
  std::memcpy(&a, ptrs[2], 8);
  CHECK(a == 0.125);
  float b;
  std::memcpy(&b, ptrs[4], 4);
  CHECK(b == 3.f);
  int n;
  std::memcpy(&n, ptrs[3], 4);
  CHECK(n == 64);
}

TEST_CASE("gpu: a launch reuses what a call of its signature prepared, never another's" *
          doctest::skip(!kiln::test::has_gpu())) {
  using K = kiln::TemplateParam::Kind;
  kiln::Engine e(kiln::test::on_gpu());
  kiln::Template t("fill.cuh",
                   "#include \"scale.h\"\n"
                   "template <class T> __global__ void fill(T* y, float a, int n) {\n"
                   "  if (threadIdx.x < n) y[threadIdx.x] = a * SCALE;\n}\n");
  t.header("scale.h", "#define SCALE 1\n")
      .params({{"y", K::tensor}, {"a", K::f32}, {"n", K::i32}})
      .instance("fill<{y}>")
      .launch({"1"}, {"n"});
  kiln::Tensor y = e.empty({64}, DType::f32), z = e.empty({64}, DType::f32);
  const auto filled = [&](const kiln::Tensor& out, int n, float value) {
    const std::vector<unsigned char> b = kiln::test::bytes_of(out);
    const auto* f = reinterpret_cast<const float*>(b.data());
    for (int i = 0; i < 64; ++i)
      if (f[i] != (i < n ? value : -1.f)) return false;
    return true;
  };
  const auto poisoned = [&](kiln::Tensor& out) {
    const std::vector<float> minus(64, -1.f);
    out.copy_from_host(minus.data());
  };
  poisoned(y);
  kiln::launch(e, t, {y.view(), 2.0, 64.0});
  CHECK(filled(y, 64, 2.f));
  const kiln::CacheCounters first = e.counters();
  poisoned(z);
  kiln::launch(e, t, {z.view(), 5.0, 64.0});  // same signature: new pointer, new float
  CHECK(filled(z, 64, 5.f));
  const kiln::CacheCounters second = e.counters();
  CHECK(second.memory_hits == first.memory_hits + 1);
  CHECK(second.compiles == first.compiles);
  CHECK(second.disk_hits == first.disk_hits);
  poisoned(y);
  kiln::launch(e, t, {y.view(), 3.0, 17.0});  // an integer picks the launch shape
  CHECK(filled(y, 17, 3.f));
  poisoned(y);
  t.header("scale.h", "#define SCALE 3\n");  // the same object, changed: another kernel
  kiln::launch(e, t, {y.view(), 2.0, 64.0});
  CHECK(filled(y, 64, 6.f));
  const kiln::Template copy = t;  // a copy is the same template
  poisoned(z);
  kiln::launch(e, copy, {z.view(), 1.0, 64.0});
  CHECK(filled(z, 64, 3.f));
  CHECK_THROWS_AS(kiln::launch(e, t, {y.view(), 2.0}), kiln::ArgumentError);
  CHECK_THROWS_AS(kiln::launch(e, t, {y.view(), 2.0, 1.5}), kiln::ArgumentError);
}
