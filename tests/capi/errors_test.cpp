// The C API's error model: the version, status names, each thread's last error, and every
// exception kiln throws (and any other) turned into its status, never crossing the boundary.
#include <functional>
#include <new>
#include <thread>

#include "capi/handles.hpp"
#include "tests/capi/capi_support.hpp"

using kiln::test::check_fails;

TEST_CASE("c api: kiln_version is the header's ABI number") {
  CHECK(kiln_version() == KILN_ABI_VERSION);
  CHECK(kiln_version() >= 1);
}

TEST_CASE("c api: kiln_gpu_available says what the suite's GPU check says") {
  CHECK(kiln_gpu_available() == (kiln::test::has_gpu() ? 1 : 0));
}

TEST_CASE("c api: kiln_status_name names every status, and an unknown code as such") {
  CHECK(std::string(kiln_status_name(KILN_OK)) == "ok");
  CHECK(std::string(kiln_status_name(KILN_ERROR_ARGUMENT)) == "argument");
  CHECK(std::string(kiln_status_name(KILN_ERROR_SHAPE)) == "shape");
  CHECK(std::string(kiln_status_name(KILN_ERROR_DTYPE)) == "dtype");
  CHECK(std::string(kiln_status_name(KILN_ERROR_GRAPH)) == "graph");
  CHECK(std::string(kiln_status_name(KILN_ERROR_COMPILE)) == "compile");
  CHECK(std::string(kiln_status_name(KILN_ERROR_CUDA)) == "cuda");
  CHECK(std::string(kiln_status_name(KILN_ERROR_CACHE)) == "cache");
  CHECK(std::string(kiln_status_name(KILN_ERROR_OUT_OF_MEMORY)) == "out of memory");
  CHECK(std::string(kiln_status_name(KILN_ERROR_INTERNAL)) == "internal");
  CHECK(std::string(kiln_status_name(kiln_status(42))) == "unknown status");
}

TEST_CASE("c api: every exception class maps to its status, the message prefixed by the call") {
  using kiln::capi::guard;
  struct Case {
    kiln_status want;
    std::function<void()> body;
  };
  const Case cases[] = {
      {KILN_ERROR_CUDA, [] { throw kiln::CudaError(1, "cuInit", "device 0", "boom cuda"); }},
      {KILN_ERROR_COMPILE, [] { throw kiln::CompileError("boom compile", "k", "log", "-O3"); }},
      {KILN_ERROR_CACHE, [] { throw kiln::CacheError("boom cache"); }},
      {KILN_ERROR_SHAPE, [] { throw kiln::ShapeError("boom shape"); }},
      {KILN_ERROR_DTYPE, [] { throw kiln::DtypeError("boom dtype"); }},
      {KILN_ERROR_GRAPH, [] { throw kiln::GraphError("boom graph"); }},
      {KILN_ERROR_ARGUMENT, [] { throw kiln::ArgumentError("boom argument"); }},
      {KILN_ERROR_INTERNAL, [] { throw kiln::Error("boom base"); }},
      {KILN_ERROR_INTERNAL, [] { throw std::logic_error("boom logic"); }},
      {KILN_ERROR_INTERNAL, [] { throw 42; }},
      {KILN_ERROR_OUT_OF_MEMORY, [] { throw std::bad_alloc(); }},
  };
  for (const Case& c : cases) {
    CAPTURE(kiln_status_name(c.want));
    check_fails(guard("kiln_test_call", c.body), c.want, "kiln_test_call: ");
  }
  check_fails(guard("f", [] { throw kiln::ShapeError("x of [3] does not fit"); }),
              KILN_ERROR_SHAPE, "f: x of [3] does not fit");
  check_fails(guard("f", [] { throw 1; }), KILN_ERROR_INTERNAL, "unknown type");
  CHECK(guard("f", [] {}) == KILN_OK);
}

TEST_CASE("c api: the last error is the calling thread's, kept until its next failure") {
  kiln_graph* g = nullptr;
  kiln::test::check_fails(kiln_graph_from_json("{not json", &g), KILN_ERROR_GRAPH,
                          "kiln_graph_from_json");
  CHECK(g == nullptr);
  const std::string mine = kiln_last_error();
  std::string theirs_before, theirs_after;
  kiln_status class_before = kiln_status(-1), class_after = kiln_status(-1);
  std::thread other([&] {
    theirs_before = kiln_last_error();
    class_before = kiln_last_error_class();
    kiln_graph_destroy(nullptr);  // a success leaves the last error alone
    kiln_engine_destroy(nullptr);
    kiln_plan_compile(nullptr, nullptr, nullptr);
    theirs_after = kiln_last_error();
    class_after = kiln_last_error_class();
  });
  other.join();
  CHECK(theirs_before.empty());
  CHECK(class_before == KILN_OK);
  CHECK(theirs_after.find("kiln_plan_compile: plan is NULL") != std::string::npos);
  CHECK(class_after == KILN_ERROR_ARGUMENT);
  CHECK(kiln_last_error() == mine);  // this thread's is untouched
  CHECK(kiln_last_error_class() == KILN_ERROR_GRAPH);
  kiln_graph* ok = nullptr;
  REQUIRE(kiln_graph_create(&ok) == KILN_OK);
  CHECK(kiln_last_error() == mine);
  kiln_graph_destroy(ok);
}
