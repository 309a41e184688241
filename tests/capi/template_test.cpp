// The C API's kernel templates: from a JSON object, precompiled offline with tunables, declared
// as an op of a graph; every entry point's error paths.
#include <vector>

#include "capi/handles.hpp"
#include "tests/capi/capi_support.hpp"

using kiln::test::EnginePtr;
using kiln::test::GraphPtr;

namespace {

// docs/graph-format.md's template.
constexpr const char* kScale = R"json({"name": "scale", "source": "template <class T, int B> __global__ void scale(const T* x, T* y, long long n, float a) { long long i = (long long)blockIdx.x * B + threadIdx.x; if (i < n) y[i] = T(float(x[i]) * a); }",
  "params": [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"},
             {"name": "n", "kind": "i64"}, {"name": "a", "kind": "f32"}],
  "instance": "scale<{x}, {B}>",
  "tunables": [{"name": "B", "candidates": [256, 128, 512]}],
  "grid": ["ceilf(n / B)"], "block": ["B"],
  "output": {"param": "y", "like": "x"}})json";

struct TemplateDeleter {
  void operator()(kiln_template* t) const { kiln_template_destroy(t); }
};
using TemplatePtr = std::unique_ptr<kiln_template, TemplateDeleter>;

TemplatePtr template_of(const char* json) {
  kiln_template* t = nullptr;
  KILN_REQUIRE_OK(kiln_template_from_json(json, &t));
  REQUIRE(t != nullptr);
  return TemplatePtr(t);
}

kiln_operand tensor(int32_t dtype, const int64_t* shape) {
  kiln_operand o{};
  o.tensor = {0, 0, dtype, 1, shape, nullptr};
  return o;
}

kiln_operand scalar(double v) {
  kiln_operand o{};
  o.is_scalar = 1;
  o.scalar = v;
  return o;
}

}  // namespace

TEST_CASE("c api: a template precompiles offline, each tunable value a kernel of its own") {
  EnginePtr e = kiln::test::offline_engine();
  TemplatePtr t = template_of(kScale);
  const int64_t n[] = {1024};
  const kiln_operand args[] = {tensor(KILN_F32, n), tensor(KILN_F32, n), scalar(1024), scalar(3)};
  KILN_REQUIRE_OK(kiln_template_precompile(e.get(), t.get(), args, 4, nullptr));
  KILN_REQUIRE_OK(kiln_template_precompile(e.get(), t.get(), args, 4, R"({"B": 128})"));
  KILN_REQUIRE_OK(kiln_template_precompile(e.get(), t.get(), args, 4, R"({"B": 256})"));
  kiln_cache_stats stats{};
  KILN_REQUIRE_OK(kiln_engine_cache_stats(e.get(), &stats));
  CHECK(stats.compiles == 2);  // 256 is the default's kernel
  KILN_CHECK_FAILS(kiln_template_launch(e.get(), t.get(), args, 4, nullptr), KILN_ERROR_CUDA,
                   "offline");
}

TEST_CASE("c api: a template declared in a graph is an op its nodes use") {
  TemplatePtr t = template_of(kScale);
  kiln_graph* raw = nullptr;
  KILN_REQUIRE_OK(kiln_graph_create(&raw));
  GraphPtr g(raw);
  KILN_REQUIRE_OK(kiln_graph_define_template(g.get(), nullptr, t.get()));  // as "scale"
  KILN_REQUIRE_OK(kiln_graph_define_template(g.get(), "scale2", t.get()));
  const int64_t n[] = {4096};
  int32_t x = -1, y = -1, z = -1;
  KILN_REQUIRE_OK(kiln_graph_input(g.get(), "x", n, 1, KILN_F32, &x));
  const kiln_arg args[] = {kiln_node(x), kiln_scalar(4096), kiln_scalar(0.5)};
  KILN_REQUIRE_OK(kiln_graph_add(g.get(), "scale", args, 3, nullptr, "y", &y));
  const kiln_arg args2[] = {kiln_node(y), kiln_scalar(4096), kiln_scalar(2)};
  KILN_REQUIRE_OK(kiln_graph_add(g.get(), "scale2", args2, 3, nullptr, "z", &z));
  KILN_REQUIRE_OK(kiln_graph_output(g.get(), z, nullptr));
  kiln_cache_stats stats{};
  KILN_REQUIRE_OK(kiln_precompile(g.get(), "sm_80", "", &stats));
  CHECK(stats.compiles == 1);  // the same kernel twice
  KILN_CHECK_FAILS(kiln_graph_define_template(g.get(), "scale", t.get()), KILN_ERROR_GRAPH,
                   "scale");
  KILN_CHECK_FAILS(kiln_graph_define_template(nullptr, "s3", t.get()), KILN_ERROR_ARGUMENT,
                   "kiln_graph_define_template: graph is NULL");
  KILN_CHECK_FAILS(kiln_graph_define_template(g.get(), "s3", nullptr), KILN_ERROR_ARGUMENT,
                   "template is NULL");
}

TEST_CASE("c api: template calls refuse bad JSON, NULLs, bad operands and code that does not compile") {
  kiln_template* t = reinterpret_cast<kiln_template*>(0x1);
  KILN_CHECK_FAILS(kiln_template_from_json(nullptr, &t), KILN_ERROR_ARGUMENT, "json is NULL");
  CHECK(t == nullptr);
  KILN_CHECK_FAILS(kiln_template_from_json("{", &t), KILN_ERROR_GRAPH, "json is not JSON");
  KILN_CHECK_FAILS(kiln_template_from_json("[]", &t), KILN_ERROR_GRAPH, "not a JSON object");
  KILN_CHECK_FAILS(kiln_template_from_json(R"({"name": "k", "colour": 1})", &t), KILN_ERROR_GRAPH,
                   "unknown field 'colour'");
  KILN_CHECK_FAILS(kiln_template_from_json(R"({"name": "k"})", &t), KILN_ERROR_GRAPH,
                   "give its code as file (a path) or source");
  KILN_CHECK_FAILS(kiln_template_from_json(kScale, nullptr), KILN_ERROR_ARGUMENT, "out is NULL");
  CHECK(kiln_template_destroy(nullptr) == KILN_OK);

  EnginePtr e = kiln::test::offline_engine();
  TemplatePtr scale = template_of(kScale);
  const int64_t n[] = {1024};
  kiln_operand args[] = {tensor(KILN_F32, n), tensor(KILN_F32, n), scalar(1024), scalar(3)};
  KILN_CHECK_FAILS(kiln_template_precompile(nullptr, scale.get(), args, 4, nullptr),
                   KILN_ERROR_ARGUMENT, "kiln_template_precompile: engine is NULL");
  KILN_CHECK_FAILS(kiln_template_precompile(e.get(), nullptr, args, 4, nullptr),
                   KILN_ERROR_ARGUMENT, "template is NULL");
  KILN_CHECK_FAILS(kiln_template_launch(e.get(), nullptr, args, 4, nullptr), KILN_ERROR_ARGUMENT,
                   "kiln_template_launch: template is NULL");
  KILN_CHECK_FAILS(kiln_template_precompile(e.get(), scale.get(), nullptr, 4, nullptr),
                   KILN_ERROR_ARGUMENT, "args is NULL but n_args is 4");
  KILN_CHECK_FAILS(kiln_template_precompile(e.get(), scale.get(), args, 4, "{\"B\": "),
                   KILN_ERROR_GRAPH, "tunables_json is not JSON");
  KILN_CHECK_FAILS(kiln_template_precompile(e.get(), scale.get(), args, 4, R"({"B": "big"})"),
                   KILN_ERROR_ARGUMENT, "tunables_json: B is \"big\", not an integer");
  KILN_CHECK_FAILS(kiln_template_precompile(e.get(), scale.get(), args, 2, nullptr),
                   KILN_ERROR_ARGUMENT, "2 arguments for its 4 parameters");
  args[1].tensor.dtype = 9;
  KILN_CHECK_FAILS(kiln_template_precompile(e.get(), scale.get(), args, 4, nullptr),
                   KILN_ERROR_DTYPE, "args[1]: dtype code 9");
  args[1].tensor.dtype = KILN_F32;
  args[1].tensor.rank = -4;
  KILN_CHECK_FAILS(kiln_template_precompile(e.get(), scale.get(), args, 4, nullptr),
                   KILN_ERROR_SHAPE, "args[1]: rank -4 is negative");

  TemplatePtr broken = template_of(R"({"name": "broken", "source": "template <class T> __global__ void broken(const T* x, T* y) { y[0] = x[0] +; }",
    "params": [{"name": "x", "kind": "tensor"}, {"name": "y", "kind": "tensor"}],
    "instance": "broken<{x}>", "grid": ["1"], "block": ["1"], "output": {"param": "y", "like": "x"}})");
  args[1].tensor.rank = 1;
  KILN_CHECK_FAILS(kiln_template_precompile(e.get(), broken.get(), args, 2, nullptr),
                   KILN_ERROR_COMPILE, "broken");
}

TEST_CASE("gpu: c api: a template launches on device memory with a tunable" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln_engine* raw = nullptr;
  KILN_REQUIRE_OK(kiln_engine_create(0, "", &raw));
  EnginePtr e(raw);
  TemplatePtr t = template_of(kScale);
  auto rng = kiln::test::make_rng(541);
  std::uniform_real_distribution<float> u(-4, 4);
  std::vector<float> x(5000), y(5000);
  for (float& v : x) v = u(rng);
  kiln::Tensor xt = e->engine.from_host({5000}, kiln::DType::f32, x.data());
  kiln::Tensor yt = e->engine.empty({5000}, kiln::DType::f32);
  const int64_t n[] = {5000};
  kiln_operand args[] = {tensor(KILN_F32, n), tensor(KILN_F32, n), scalar(5000), scalar(3)};
  args[0].tensor.data = xt.view().data;
  args[1].tensor.data = yt.view().data;
  for (const char* tunables : {static_cast<const char*>(nullptr), R"({"B": 128})"}) {
    CAPTURE(tunables ? tunables : "defaults");
    yt.fill_bytes(0xff);  // NaN
    KILN_REQUIRE_OK(kiln_template_launch(e.get(), t.get(), args, 4, tunables));
    KILN_REQUIRE_OK(kiln_engine_synchronize(e.get()));
    yt.copy_to_host(y.data());
    for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == x[i] * 3.0f);
  }
}
