// The C API's engines and plans: offline compiles, precompile into a cache, cache counters,
// runs' argument checks without a GPU, and a run and replay on the GPU.
#include <filesystem>
#include <vector>

#include "capi/handles.hpp"
#include "tests/capi/capi_support.hpp"

using kiln::test::EnginePtr;
using kiln::test::GraphPtr;
using kiln::test::PlanPtr;

namespace {

PlanPtr plan_of(const kiln_graph* g, int fuse = 1) {
  kiln_plan* p = nullptr;
  KILN_REQUIRE_OK(kiln_plan_create(g, fuse, &p));
  REQUIRE(p != nullptr);
  return PlanPtr(p);
}

// A graph whose template does not compile.
constexpr const char* kBrokenTemplate = R"({
  "templates": [{"name": "broken", "source": "template <class T> __global__ void broken(const T* x, T* y) { y[0] = x[0] +; }",
                 "params": [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"}],
                 "instance": "broken<{x}>", "grid": ["1"], "block": ["1"],
                 "output": {"param": "y", "like": "x"}}],
  "inputs": [{"name": "x", "shape": [4], "dtype": "f32"}],
  "nodes": [{"name": "y", "op": "broken", "args": ["x"]}],
  "outputs": ["y"]})";

}  // namespace

TEST_CASE("c api: an offline engine compiles a fused plan; its counters count the cache") {
  EnginePtr e = kiln::test::offline_engine("sm_80");
  const char* arch = nullptr;
  KILN_REQUIRE_OK(kiln_engine_arch(e.get(), &arch));
  CHECK(std::string(arch) == "sm_80");
  GraphPtr g = kiln::test::graph_of(kiln::test::kSoftmaxGraph);
  PlanPtr fused = plan_of(g.get()), unfused = plan_of(g.get(), 0);
  size_t kernels = 0;
  KILN_REQUIRE_OK(kiln_plan_compile(fused.get(), e.get(), &kernels));
  CHECK(kernels == 1);  // mul and add are the softmax's prologue
  kiln_cache_stats stats{};
  KILN_REQUIRE_OK(kiln_engine_cache_stats(e.get(), &stats));
  CHECK(stats.compiles == 1);
  CHECK(stats.compile_ms > 0);
  KILN_REQUIRE_OK(kiln_plan_compile(fused.get(), e.get(), nullptr));  // found in memory
  KILN_REQUIRE_OK(kiln_plan_compile(unfused.get(), e.get(), &kernels));
  CHECK(kernels == 3);
  KILN_REQUIRE_OK(kiln_engine_cache_stats(e.get(), &stats));
  CHECK(stats.compiles == 4);
  CHECK(stats.memory_hits >= 1);
  CHECK(stats.disk_hits == 0);  // "" keeps kernels in memory only
}

TEST_CASE("c api: kiln_precompile fills a cache directory that an engine then reads") {
  kiln::test::TempDir tmp;
  GraphPtr g = kiln::test::graph_of(kiln::test::kSoftmaxGraph);
  kiln_cache_stats first{}, second{};
  KILN_REQUIRE_OK(kiln_precompile(g.get(), "sm_90a", tmp.path().c_str(), &first));
  CHECK(first.compiles == 1);
  KILN_REQUIRE_OK(kiln_precompile(g.get(), "sm_90a", tmp.path().c_str(), &second));
  CHECK(second.compiles == 0);
  CHECK(second.disk_hits == 1);
  KILN_REQUIRE_OK(kiln_precompile(g.get(), "sm_80", "", nullptr));  // memory only, no stats

  kiln_engine* raw = nullptr;
  KILN_REQUIRE_OK(kiln_engine_create_offline("sm_90a", tmp.path().c_str(), &raw));
  EnginePtr e(raw);
  PlanPtr p = plan_of(g.get());
  KILN_REQUIRE_OK(kiln_plan_compile(p.get(), e.get(), nullptr));
  kiln_cache_stats stats{};
  KILN_REQUIRE_OK(kiln_engine_cache_stats(e.get(), &stats));
  CHECK(stats.compiles == 0);
  CHECK(stats.disk_hits == 1);
}

TEST_CASE("c api: precompile and engines refuse NULLs, a bad arch and a cache that is a file") {
  kiln::test::TempDir tmp;
  const std::string file = tmp / "not-a-dir";
  kiln::test::write_file(file, "x");
  GraphPtr g = kiln::test::graph_of(kiln::test::kSoftmaxGraph);
  KILN_CHECK_FAILS(kiln_precompile(nullptr, "sm_80", "", nullptr), KILN_ERROR_ARGUMENT,
                   "kiln_precompile: graph is NULL");
  KILN_CHECK_FAILS(kiln_precompile(g.get(), nullptr, "", nullptr), KILN_ERROR_ARGUMENT,
                   "arch is NULL");
  KILN_CHECK_FAILS(kiln_precompile(g.get(), "sm_8", "", nullptr), KILN_ERROR_ARGUMENT,
                   "bad arch 'sm_8'");
  KILN_CHECK_FAILS(kiln_precompile(g.get(), "sm_80", file.c_str(), nullptr), KILN_ERROR_CACHE,
                   "not-a-dir");

  kiln_engine* e = reinterpret_cast<kiln_engine*>(0x1);
  KILN_CHECK_FAILS(kiln_engine_create_offline(nullptr, "", &e), KILN_ERROR_ARGUMENT,
                   "kiln_engine_create_offline: arch is NULL");
  KILN_CHECK_FAILS(kiln_engine_create_offline("sm_80", "", nullptr), KILN_ERROR_ARGUMENT,
                   "out is NULL");
  KILN_CHECK_FAILS(kiln_engine_create_offline("compute_99x", "", &e), KILN_ERROR_ARGUMENT,
                   "bad arch 'compute_99x'");
  CHECK(e == nullptr);
  KILN_CHECK_FAILS(kiln_engine_create(-1, "", &e), KILN_ERROR_ARGUMENT, "device -1 is negative");
  KILN_CHECK_FAILS(kiln_engine_create(0, "", nullptr), KILN_ERROR_ARGUMENT, "out is NULL");
  if (!kiln::test::has_gpu())
    KILN_CHECK_FAILS(kiln_engine_create(0, "", &e), KILN_ERROR_CUDA, "kiln_engine_create: ");
  CHECK(kiln_engine_destroy(nullptr) == KILN_OK);
}

TEST_CASE("c api: engine calls refuse a NULL engine, and an offline one what needs a GPU") {
  const char* arch = nullptr;
  kiln_cache_stats stats{};
  KILN_CHECK_FAILS(kiln_engine_arch(nullptr, &arch), KILN_ERROR_ARGUMENT, "engine is NULL");
  KILN_CHECK_FAILS(kiln_engine_set_stream(nullptr, nullptr), KILN_ERROR_ARGUMENT,
                   "engine is NULL");
  KILN_CHECK_FAILS(kiln_engine_use_own_stream(nullptr), KILN_ERROR_ARGUMENT, "engine is NULL");
  KILN_CHECK_FAILS(kiln_engine_synchronize(nullptr), KILN_ERROR_ARGUMENT, "engine is NULL");
  KILN_CHECK_FAILS(kiln_engine_cache_stats(nullptr, &stats), KILN_ERROR_ARGUMENT,
                   "kiln_engine_cache_stats: engine is NULL");
  EnginePtr e = kiln::test::offline_engine();
  KILN_CHECK_FAILS(kiln_engine_arch(e.get(), nullptr), KILN_ERROR_ARGUMENT, "out is NULL");
  KILN_CHECK_FAILS(kiln_engine_cache_stats(e.get(), nullptr), KILN_ERROR_ARGUMENT, "out is NULL");
  KILN_CHECK_FAILS(kiln_engine_set_stream(e.get(), nullptr), KILN_ERROR_CUDA,
                   "kiln_engine_set_stream: a stream needs a GPU, but this engine is offline");
  KILN_CHECK_FAILS(kiln_engine_use_own_stream(e.get()), KILN_ERROR_CUDA, "offline");
  KILN_CHECK_FAILS(kiln_engine_synchronize(e.get()), KILN_ERROR_CUDA, "synchronize");
}

TEST_CASE("c api: plan calls refuse NULLs; a template that does not compile is a compile error") {
  EnginePtr e = kiln::test::offline_engine();
  GraphPtr g = kiln::test::graph_of(kiln::test::kSoftmaxGraph);
  kiln_plan* p = reinterpret_cast<kiln_plan*>(0x1);
  KILN_CHECK_FAILS(kiln_plan_create(nullptr, 1, &p), KILN_ERROR_ARGUMENT,
                   "kiln_plan_create: graph is NULL");
  CHECK(p == nullptr);
  KILN_CHECK_FAILS(kiln_plan_create(g.get(), 1, nullptr), KILN_ERROR_ARGUMENT, "out is NULL");
  PlanPtr plan = plan_of(g.get());
  KILN_CHECK_FAILS(kiln_plan_compile(nullptr, e.get(), nullptr), KILN_ERROR_ARGUMENT,
                   "plan is NULL (create one with kiln_plan_create)");
  KILN_CHECK_FAILS(kiln_plan_compile(plan.get(), nullptr, nullptr), KILN_ERROR_ARGUMENT,
                   "engine is NULL");
  CHECK(kiln_plan_destroy(nullptr) == KILN_OK);

  GraphPtr broken = kiln::test::graph_of(kBrokenTemplate);
  PlanPtr bad = plan_of(broken.get());
  KILN_CHECK_FAILS(kiln_plan_compile(bad.get(), e.get(), nullptr), KILN_ERROR_COMPILE, "broken");
  KILN_CHECK_FAILS(kiln_precompile(broken.get(), "sm_80", "", nullptr), KILN_ERROR_COMPILE,
                   "kiln_precompile: ");
}

TEST_CASE("c api: a run checks its descriptors and names before it needs a GPU") {
  EnginePtr e = kiln::test::offline_engine();
  GraphPtr g = kiln::test::graph_of(kiln::test::kSoftmaxGraph);
  PlanPtr p = plan_of(g.get());
  const int64_t xs[] = {16, 64}, bs[] = {64};
  const kiln_tensor x = {0, 0, KILN_F32, 2, xs, nullptr}, b = {0, 0, KILN_F32, 1, bs, nullptr};
  const kiln_tensor in[] = {x, b}, out[] = {x};
  const char* in_names[] = {"x", "b"};
  const char* out_names[] = {"y"};
  for (auto* call : {&kiln_plan_run, &kiln_plan_replay}) {
    CAPTURE(call == &kiln_plan_run ? "run" : "replay");
    KILN_CHECK_FAILS(call(nullptr, e.get(), in_names, in, 2, out_names, out, 1, nullptr),
                     KILN_ERROR_ARGUMENT, "plan is NULL");
    KILN_CHECK_FAILS(call(p.get(), nullptr, in_names, in, 2, out_names, out, 1, nullptr),
                     KILN_ERROR_ARGUMENT, "engine is NULL");
    KILN_CHECK_FAILS(call(p.get(), e.get(), nullptr, in, 2, out_names, out, 1, nullptr),
                     KILN_ERROR_ARGUMENT, "inputs: the names is NULL but their count is 2");
    KILN_CHECK_FAILS(call(p.get(), e.get(), in_names, in, 2, out_names, nullptr, 1, nullptr),
                     KILN_ERROR_ARGUMENT, "outputs: the descriptors is NULL");
    KILN_CHECK_FAILS(call(p.get(), e.get(), in_names, in, 2, nullptr, nullptr, 0, nullptr),
                     KILN_ERROR_ARGUMENT, "output 'y' is not given");
    const char* twice[] = {"x", "x"};
    KILN_CHECK_FAILS(call(p.get(), e.get(), twice, in, 2, out_names, out, 1, nullptr),
                     KILN_ERROR_ARGUMENT, "input 'x' is given twice");
    const char* null_name[] = {"x", nullptr};
    KILN_CHECK_FAILS(call(p.get(), e.get(), null_name, in, 2, out_names, out, 1, nullptr),
                     KILN_ERROR_ARGUMENT, "input name 1 is NULL");
    kiln_tensor bad[] = {x, b};
    bad[1].rank = -1;
    KILN_CHECK_FAILS(call(p.get(), e.get(), in_names, bad, 2, out_names, out, 1, nullptr),
                     KILN_ERROR_SHAPE, "input 'b': rank -1 is negative");
    bad[1].rank = 1;
    bad[1].dtype = 17;
    KILN_CHECK_FAILS(call(p.get(), e.get(), in_names, bad, 2, out_names, out, 1, nullptr),
                     KILN_ERROR_DTYPE, "input 'b': dtype code 17");
    bad[1].dtype = KILN_F32;
    bad[1].shape = nullptr;
    KILN_CHECK_FAILS(call(p.get(), e.get(), in_names, bad, 2, out_names, out, 1, nullptr),
                     KILN_ERROR_ARGUMENT, "input 'b': rank 1 but its extents are NULL");
    KILN_CHECK_FAILS(call(p.get(), e.get(), in_names, in, 2, out_names, out, 1, nullptr),
                     KILN_ERROR_ARGUMENT, "input 'b': f32[64] has a null data pointer");
    // Everything in order: an offline engine cannot launch.
    const kiln_tensor at[] = {{1 << 20, 0, KILN_F32, 2, xs, nullptr},
                              {2 << 20, 0, KILN_F32, 1, bs, nullptr}};
    const kiln_tensor out_at[] = {{3 << 20, 0, KILN_F32, 2, xs, nullptr}};
    KILN_CHECK_FAILS(call(p.get(), e.get(), in_names, at, 2, out_names, out_at, 1, nullptr),
                     KILN_ERROR_CUDA, "this engine is offline");
    KILN_CHECK_FAILS(call(p.get(), e.get(), in_names, at, 2, out_names, out_at, 1,
                          reinterpret_cast<void*>(std::uintptr_t(0x100))),
                     KILN_ERROR_CUDA, "this engine is offline");
  }
}

TEST_CASE("c api: kiln_plan_output gives an output's dtype and shape for these inputs") {
  GraphPtr g = kiln::test::graph_of(R"({
    "inputs": [{"name": "x", "shape": ["?", 64], "dtype": "bf16"}],
    "nodes": [{"name": "s", "op": "sum", "args": ["x"], "attrs": {"keepdim": true}},
              {"name": "c", "op": "cast", "args": ["s"], "attrs": {"dtype": "i32"}}],
    "outputs": ["c"]})");
  PlanPtr p = plan_of(g.get());
  const int64_t xs[] = {37, 64};
  const kiln_tensor x = {0, 0, KILN_BF16, 2, xs, nullptr};
  const char* names[] = {"x"};
  int32_t dtype = -1, rank = -1;
  int64_t shape[4] = {0, 0, 0, 0};
  KILN_REQUIRE_OK(kiln_plan_output(p.get(), names, &x, 1, "c", &dtype, &rank, shape, 4));
  CHECK(dtype == KILN_I32);
  CHECK(rank == 2);
  CHECK(shape[0] == 37);  // the dynamic batch, bound
  CHECK(shape[1] == 1);
  KILN_REQUIRE_OK(kiln_plan_output(p.get(), names, &x, 1, "c", nullptr, &rank, nullptr, 0));
  CHECK(rank == 2);
  KILN_CHECK_FAILS(kiln_plan_output(p.get(), names, &x, 1, "c", &dtype, &rank, shape, 1),
                   KILN_ERROR_ARGUMENT, "output 'c' has rank 2 but shape has room for max_rank 1");
  KILN_CHECK_FAILS(kiln_plan_output(p.get(), names, &x, 1, "s", &dtype, &rank, shape, 4),
                   KILN_ERROR_ARGUMENT, "'s' is not an output of the plan's graph (its outputs: c)");
  KILN_CHECK_FAILS(kiln_plan_output(p.get(), names, &x, 0, "c", &dtype, &rank, shape, 4),
                   KILN_ERROR_GRAPH, "'x'");  // no inputs given
  const kiln_tensor wrong = {0, 0, KILN_F16, 2, xs, nullptr};
  KILN_CHECK_FAILS(kiln_plan_output(p.get(), names, &wrong, 1, "c", &dtype, &rank, shape, 4),
                   KILN_ERROR_DTYPE, "'x'");
  KILN_CHECK_FAILS(kiln_plan_output(nullptr, names, &x, 1, "c", &dtype, &rank, shape, 4),
                   KILN_ERROR_ARGUMENT, "kiln_plan_output: plan is NULL");
  KILN_CHECK_FAILS(kiln_plan_output(p.get(), names, &x, 1, nullptr, &dtype, &rank, shape, 4),
                   KILN_ERROR_ARGUMENT, "name is NULL");
  KILN_CHECK_FAILS(kiln_plan_output(p.get(), names, &x, 1, "c", &dtype, nullptr, shape, 4),
                   KILN_ERROR_ARGUMENT, "rank is NULL");
}

TEST_CASE("c api: kiln_tune refuses NULLs and an offline engine") {
  EnginePtr e = kiln::test::offline_engine();
  GraphPtr g = kiln::test::graph_of(kiln::test::kSoftmaxGraph);
  size_t tuned = 7;
  KILN_CHECK_FAILS(kiln_tune(nullptr, g.get(), 0, &tuned), KILN_ERROR_ARGUMENT,
                   "kiln_tune: engine is NULL");
  KILN_CHECK_FAILS(kiln_tune(e.get(), nullptr, 0, &tuned), KILN_ERROR_ARGUMENT, "graph is NULL");
  KILN_CHECK_FAILS(kiln_tune(e.get(), g.get(), 0, &tuned), KILN_ERROR_CUDA, "offline");
  CHECK(tuned == 7);  // untouched on failure
}

TEST_CASE("gpu: c api: a plan runs and replays on device memory, on a stream per call" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln_engine* raw = nullptr;
  KILN_REQUIRE_OK(kiln_engine_create(0, "", &raw));
  EnginePtr e(raw);
  GraphPtr g = kiln::test::graph_of(R"({
    "inputs": [{"name": "x", "shape": [3, 1000], "dtype": "f32"},
               {"name": "b", "shape": [1000], "dtype": "f32"}],
    "nodes": [{"name": "s", "op": "mul", "args": ["x", 2.0]},
              {"name": "y", "op": "add", "args": ["s", "b"]}],
    "outputs": ["y"]})");
  PlanPtr p = plan_of(g.get());
  auto rng = kiln::test::make_rng(54);
  std::uniform_real_distribution<float> u(-4, 4);
  std::vector<float> x(3000), b(1000), y(3000);
  for (float& v : x) v = u(rng);
  for (float& v : b) v = u(rng);
  kiln::Engine& cpp = e->engine;
  kiln::Tensor xt = cpp.from_host({3, 1000}, kiln::DType::f32, x.data());
  kiln::Tensor bt = cpp.from_host({1000}, kiln::DType::f32, b.data());
  kiln::Tensor yt = cpp.empty({3, 1000}, kiln::DType::f32);
  const int64_t xs[] = {3, 1000}, bs[] = {1000};
  const kiln_tensor in[] = {{xt.view().data, 0, KILN_F32, 2, xs, nullptr},
                            {bt.view().data, 0, KILN_F32, 1, bs, nullptr}};
  const kiln_tensor out[] = {{yt.view().data, 0, KILN_F32, 2, xs, nullptr}};
  const char* in_names[] = {"x", "b"};
  const char* out_names[] = {"y"};
  for (int replay = 0; replay < 2; ++replay) {
    CAPTURE(replay);
    yt.fill_bytes(0xff);  // NaN
    auto call = replay ? &kiln_plan_replay : &kiln_plan_run;
    void* stream = replay ? cpp.stream() : nullptr;  // the engine's own, passed per call
    KILN_REQUIRE_OK(call(p.get(), e.get(), in_names, in, 2, out_names, out, 1, stream));
    KILN_REQUIRE_OK(kiln_engine_synchronize(e.get()));
    yt.copy_to_host(y.data());
    for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == x[i] * 2.0f + b[i % 1000]);
  }
  KILN_REQUIRE_OK(kiln_engine_set_stream(e.get(), nullptr));  // the legacy default stream
  KILN_REQUIRE_OK(kiln_plan_run(p.get(), e.get(), in_names, in, 2, out_names, out, 1, nullptr));
  KILN_REQUIRE_OK(kiln_engine_use_own_stream(e.get()));
  KILN_REQUIRE_OK(kiln_engine_synchronize(e.get()));
  const int64_t wrong[] = {3, 999};
  const kiln_tensor short_x[] = {{xt.view().data, 0, KILN_F32, 2, wrong, nullptr}, in[1]};
  KILN_CHECK_FAILS(kiln_plan_run(p.get(), e.get(), in_names, short_x, 2, out_names, out, 1, nullptr),
                   KILN_ERROR_SHAPE, "'x'");

  kiln::test::TempDir tmp;  // tuning records go to the engine's cache directory
  kiln_engine* tuner = nullptr;
  KILN_REQUIRE_OK(kiln_engine_create(0, tmp.path().c_str(), &tuner));
  EnginePtr owner(tuner);
  size_t tuned = 0;
  KILN_REQUIRE_OK(kiln_tune(tuner, g.get(), 0, &tuned));
  CHECK(tuned >= 1);
  CHECK(std::filesystem::exists(tmp / "tuning"));
}
