#pragma once
// Helpers of the C API's tests: a failure's status, class and message checked at once, and
// handles that destroy themselves.

#include <kiln/kiln.h>

#include <memory>
#include <string>

#include "tests/support.hpp"

namespace kiln::test {

/// `got` is `want`, the thread's last error has class `want`, and its message contains
/// `needle` (the message is printed on failure).
inline void check_fails(kiln_status got, kiln_status want, const std::string& needle) {
  const std::string status_name = kiln_status_name(got), message = kiln_last_error();
  INFO("status: " << status_name << "; last error: " << message);
  CHECK(got == want);
  CHECK(kiln_last_error_class() == want);
  CHECK(std::string(kiln_last_error()).find(needle) != std::string::npos);
}

#define KILN_CHECK_FAILS(call, want, needle) \
  do {                                       \
    INFO("call: " #call);                    \
    kiln::test::check_fails((call), (want), (needle)); \
  } while (0)

#define KILN_REQUIRE_OK(call)                                        \
  do {                                                               \
    const kiln_status status_ = (call);                              \
    const std::string message_ = kiln_last_error();                  \
    INFO("call: " #call "; last error: " << message_);               \
    REQUIRE(status_ == KILN_OK);                                     \
  } while (0)

struct EngineDeleter {
  void operator()(kiln_engine* e) const { kiln_engine_destroy(e); }
};
struct GraphDeleter {
  void operator()(kiln_graph* g) const { kiln_graph_destroy(g); }
};
struct PlanDeleter {
  void operator()(kiln_plan* p) const { kiln_plan_destroy(p); }
};
using EnginePtr = std::unique_ptr<kiln_engine, EngineDeleter>;
using GraphPtr = std::unique_ptr<kiln_graph, GraphDeleter>;
using PlanPtr = std::unique_ptr<kiln_plan, PlanDeleter>;

/// An offline engine for `arch` keeping kernels in memory only.
inline EnginePtr offline_engine(const char* arch = "sm_80") {
  kiln_engine* e = nullptr;
  KILN_REQUIRE_OK(kiln_engine_create_offline(arch, "", &e));
  return EnginePtr(e);
}

/// The graph of `json`.
inline GraphPtr graph_of(const char* json) {
  kiln_graph* g = nullptr;
  KILN_REQUIRE_OK(kiln_graph_from_json(json, &g));
  return GraphPtr(g);
}

/// y = softmax(x * 2 + b) over rows of 64: one fused kernel.
constexpr const char* kSoftmaxGraph = R"({
  "inputs": [{"name": "x", "shape": [16, 64], "dtype": "f32"},
             {"name": "b", "shape": [64], "dtype": "f32"}],
  "nodes": [{"name": "s", "op": "mul", "args": ["x", 2.0]},
            {"name": "t", "op": "add", "args": ["s", "b"]},
            {"name": "y", "op": "softmax", "args": ["t"]}],
  "outputs": ["y"]})";

}  // namespace kiln::test
