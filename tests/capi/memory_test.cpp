// The C API's device memory: buffers made, written, run on by a plan and read back on a GPU;
// every entry point's error paths (NULLs, a wrong size, an offline engine) without one.
#include <random>
#include <vector>

#include "tests/capi/capi_support.hpp"

using kiln::test::EnginePtr;
using kiln::test::GraphPtr;
using kiln::test::PlanPtr;

namespace {

struct BufferDeleter {
  void operator()(kiln_buffer* b) const { kiln_buffer_destroy(b); }
};
using BufferPtr = std::unique_ptr<kiln_buffer, BufferDeleter>;

BufferPtr buffer_of(kiln_engine* e, std::size_t bytes) {
  kiln_buffer* b = nullptr;
  KILN_REQUIRE_OK(kiln_buffer_create(e, bytes, &b));
  return BufferPtr(b);
}

}  // namespace

TEST_CASE("c api: kiln_buffer_* refuse NULLs, offline engines and wrong sizes") {
  EnginePtr offline = kiln::test::offline_engine();
  kiln_buffer* b = reinterpret_cast<kiln_buffer*>(1);
  KILN_CHECK_FAILS(kiln_buffer_create(offline.get(), 64, &b), KILN_ERROR_CUDA, "offline");
  CHECK(b == nullptr);
  KILN_CHECK_FAILS(kiln_buffer_create(nullptr, 64, &b), KILN_ERROR_ARGUMENT, "engine is NULL");
  KILN_CHECK_FAILS(kiln_buffer_create(offline.get(), 64, nullptr), KILN_ERROR_ARGUMENT,
                   "out is NULL");
  uint64_t data = 0;
  std::size_t bytes = 0;
  char host[4] = {};
  KILN_CHECK_FAILS(kiln_buffer_data(nullptr, &data, &bytes), KILN_ERROR_ARGUMENT,
                   "kiln_buffer_create");
  KILN_CHECK_FAILS(kiln_buffer_write(nullptr, host, 4), KILN_ERROR_ARGUMENT, "buffer is NULL");
  KILN_CHECK_FAILS(kiln_buffer_read(nullptr, host, 4), KILN_ERROR_ARGUMENT, "buffer is NULL");
  CHECK(kiln_buffer_destroy(nullptr) == KILN_OK);
}

TEST_CASE("gpu: c api: a plan runs on kiln_buffer memory written and read from the host" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln_engine* raw = nullptr;
  KILN_REQUIRE_OK(kiln_engine_create(0, "", &raw));
  EnginePtr e(raw);
  GraphPtr g = kiln::test::graph_of(R"({
    "inputs": [{"name": "x", "shape": [5, 77], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "sub", "args": ["x", 1.5]}],
    "outputs": ["y"]})");
  kiln_plan* rp = nullptr;
  KILN_REQUIRE_OK(kiln_plan_create(g.get(), 1, &rp));
  PlanPtr p(rp);
  auto rng = kiln::test::make_rng(541);
  std::uniform_real_distribution<float> u(-4, 4);
  std::vector<float> x(5 * 77), y(5 * 77, 0.f);
  for (float& v : x) v = u(rng);
  BufferPtr xb = buffer_of(e.get(), x.size() * 4), yb = buffer_of(e.get(), y.size() * 4);
  BufferPtr empty = buffer_of(e.get(), 0);
  uint64_t xd = 0, yd = 0;
  std::size_t bytes = 0;
  KILN_REQUIRE_OK(kiln_buffer_data(xb.get(), &xd, &bytes));
  CHECK(bytes == x.size() * 4);
  CHECK(xd != 0);
  KILN_REQUIRE_OK(kiln_buffer_data(yb.get(), &yd, nullptr));
  KILN_REQUIRE_OK(kiln_buffer_write(xb.get(), x.data(), bytes));
  std::vector<float> poison(y.size(), std::nanf(""));
  KILN_REQUIRE_OK(kiln_buffer_write(yb.get(), poison.data(), bytes));
  KILN_CHECK_FAILS(kiln_buffer_write(xb.get(), x.data(), bytes - 4), KILN_ERROR_ARGUMENT,
                   "the buffer holds");
  KILN_CHECK_FAILS(kiln_buffer_read(xb.get(), nullptr, bytes), KILN_ERROR_ARGUMENT, "dst is NULL");
  KILN_CHECK_FAILS(kiln_buffer_write(xb.get(), nullptr, bytes), KILN_ERROR_ARGUMENT, "src is NULL");
  const int64_t shape[] = {5, 77};
  const kiln_tensor in = {xd, 0, KILN_F32, 2, shape, nullptr};
  const kiln_tensor out = {yd, 0, KILN_F32, 2, shape, nullptr};
  const char* in_name = "x";
  const char* out_name = "y";
  KILN_REQUIRE_OK(kiln_plan_run(p.get(), e.get(), &in_name, &in, 1, &out_name, &out, 1, nullptr));
  KILN_REQUIRE_OK(kiln_buffer_read(yb.get(), y.data(), bytes));
  for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == x[i] - 1.5f);
  // A buffer keeps its context: it outlives the engine.
  e.reset();
  KILN_REQUIRE_OK(kiln_buffer_read(xb.get(), y.data(), bytes));
  CHECK(y == x);
  KILN_REQUIRE_OK(kiln_buffer_read(empty.get(), nullptr, 0));
}
