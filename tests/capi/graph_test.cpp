// The C API's graphs: from JSON, node by node, back to JSON; every entry point's error paths.
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "tests/capi/capi_support.hpp"

using kiln::test::GraphPtr;

namespace {

GraphPtr empty_graph() {
  kiln_graph* g = nullptr;
  KILN_REQUIRE_OK(kiln_graph_create(&g));
  REQUIRE(g != nullptr);
  return GraphPtr(g);
}

std::string json_of(const kiln_graph* g) {
  size_t len = 0;
  KILN_REQUIRE_OK(kiln_graph_to_json(g, nullptr, 0, &len));
  std::vector<char> buf(len + 1, 'z');
  KILN_REQUIRE_OK(kiln_graph_to_json(g, buf.data(), buf.size(), &len));
  CHECK(buf[len] == '\0');
  return std::string(buf.data(), len);
}

}  // namespace

TEST_CASE("c api: a graph built node by node plans as the same graph from its JSON") {
  GraphPtr g = empty_graph();
  const int64_t shape[] = {-1, 64};  // a dynamic batch
  const int64_t bias_shape[] = {64};
  int32_t x = -1, b = -1, s = -1, t = -1, y = -1;
  KILN_REQUIRE_OK(kiln_graph_input(g.get(), "x", shape, 2, KILN_BF16, &x));
  KILN_REQUIRE_OK(kiln_graph_input(g.get(), "b", bias_shape, 1, KILN_BF16, &b));
  const kiln_arg mul_args[] = {kiln_node(x), kiln_scalar(0.125)};
  KILN_REQUIRE_OK(kiln_graph_add(g.get(), "mul", mul_args, 2, nullptr, nullptr, &s));
  const kiln_arg add_args[] = {kiln_node(s), kiln_node(b)};
  KILN_REQUIRE_OK(kiln_graph_add(g.get(), "add", add_args, 2, "{}", "", &t));
  const kiln_arg sum_args[] = {kiln_node(t)};
  KILN_REQUIRE_OK(kiln_graph_add(g.get(), "sum", sum_args, 1, R"({"axis": 1, "keepdim": true})",
                                 "total", &y));
  KILN_REQUIRE_OK(kiln_graph_output(g.get(), y, "y"));
  CHECK(x == 0);
  CHECK(b == 1);
  CHECK(s == 2);
  CHECK(t == 3);
  CHECK(y == 4);

  const std::string json = json_of(g.get());
  const nlohmann::json j = nlohmann::json::parse(json);
  CHECK(j["inputs"][0]["shape"] == nlohmann::json::parse(R"(["?", 64])"));
  CHECK(j["nodes"][2]["name"] == "y");  // renamed by kiln_graph_output
  CHECK(j["nodes"][2]["attrs"] == nlohmann::json::parse(R"({"axis": 1, "keepdim": true})"));
  CHECK(j["outputs"] == nlohmann::json::parse(R"(["y"])"));
  GraphPtr back = kiln::test::graph_of(json.c_str());
  CHECK(json_of(back.get()) == json);
  CHECK(kiln::Graph::parse(json).to_json() == json);  // what the C++ API reads too
}

TEST_CASE("c api: kiln_graph_to_json refuses a buffer too small, naming the size it needs") {
  GraphPtr g = kiln::test::graph_of(kiln::test::kSoftmaxGraph);
  size_t len = 0;
  KILN_REQUIRE_OK(kiln_graph_to_json(g.get(), nullptr, 0, &len));
  std::vector<char> buf(len, 'z');  // no room for the NUL
  KILN_CHECK_FAILS(kiln_graph_to_json(g.get(), buf.data(), buf.size(), &len),
                   KILN_ERROR_ARGUMENT, "pass cap >= " + std::to_string(len + 1));
  KILN_CHECK_FAILS(kiln_graph_to_json(nullptr, nullptr, 0, &len), KILN_ERROR_ARGUMENT,
                   "kiln_graph_to_json: graph is NULL");
  KILN_CHECK_FAILS(kiln_graph_to_json(g.get(), nullptr, 0, nullptr), KILN_ERROR_ARGUMENT,
                   "len is NULL");
}

TEST_CASE("c api: graph JSON that does not parse, or is malformed, is a graph error") {
  kiln_graph* g = reinterpret_cast<kiln_graph*>(0x1);  // set to NULL on failure
  KILN_CHECK_FAILS(kiln_graph_from_json("{\"inputs\": [", &g), KILN_ERROR_GRAPH,
                   "kiln_graph_from_json: ");
  CHECK(g == nullptr);
  KILN_CHECK_FAILS(kiln_graph_from_json(R"({"inputs": [], "nodes": [], "outputs": ["nope"]})", &g),
                   KILN_ERROR_GRAPH, "nope");
  KILN_CHECK_FAILS(kiln_graph_from_json(nullptr, &g), KILN_ERROR_ARGUMENT, "json is NULL");
  KILN_CHECK_FAILS(kiln_graph_from_json("{}", nullptr), KILN_ERROR_ARGUMENT, "out is NULL");
  KILN_CHECK_FAILS(kiln_graph_create(nullptr), KILN_ERROR_ARGUMENT,
                   "kiln_graph_create: out is NULL");
  CHECK(kiln_graph_destroy(nullptr) == KILN_OK);
}

TEST_CASE("c api: kiln_graph_input refuses NULLs, a negative rank and a bad dtype code") {
  GraphPtr g = empty_graph();
  const int64_t shape[] = {4, 8};
  int32_t id = 7;
  KILN_CHECK_FAILS(kiln_graph_input(nullptr, "x", shape, 2, KILN_F32, &id), KILN_ERROR_ARGUMENT,
                   "graph is NULL");
  KILN_CHECK_FAILS(kiln_graph_input(g.get(), nullptr, shape, 2, KILN_F32, &id),
                   KILN_ERROR_ARGUMENT, "name is NULL");
  KILN_CHECK_FAILS(kiln_graph_input(g.get(), "x", shape, 2, KILN_F32, nullptr),
                   KILN_ERROR_ARGUMENT, "node is NULL");
  KILN_CHECK_FAILS(kiln_graph_input(g.get(), "x", nullptr, 2, KILN_F32, &id), KILN_ERROR_ARGUMENT,
                   "input 'x': rank 2 but its extents are NULL");
  KILN_CHECK_FAILS(kiln_graph_input(g.get(), "x", shape, -1, KILN_F32, &id), KILN_ERROR_SHAPE,
                   "input 'x': rank -1 is negative");
  CHECK(id == -1);
  KILN_CHECK_FAILS(kiln_graph_input(g.get(), "x", shape, 2, 6, &id), KILN_ERROR_DTYPE,
                   "input 'x': dtype code 6 is not a kiln_dtype");
  KILN_CHECK_FAILS(kiln_graph_input(g.get(), "x", shape, 2, -3, &id), KILN_ERROR_DTYPE,
                   "dtype code -3");
  const int64_t negative[] = {4, -2};
  KILN_CHECK_FAILS(kiln_graph_input(g.get(), "x", negative, 2, KILN_F32, &id), KILN_ERROR_GRAPH,
                   "x");
  KILN_REQUIRE_OK(kiln_graph_input(g.get(), "s", nullptr, 0, KILN_I64, &id));  // a scalar
  CHECK(id == 0);
  KILN_CHECK_FAILS(kiln_graph_input(g.get(), "s", shape, 2, KILN_F32, &id), KILN_ERROR_GRAPH,
                   "'s'");
}

TEST_CASE("c api: kiln_graph_add names an unknown op, a shape error, bad args and bad attrs") {
  GraphPtr g = empty_graph();
  const int64_t a_shape[] = {4, 8}, b_shape[] = {3};
  int32_t a = -1, b = -1, id = 9;
  KILN_REQUIRE_OK(kiln_graph_input(g.get(), "a", a_shape, 2, KILN_F32, &a));
  KILN_REQUIRE_OK(kiln_graph_input(g.get(), "b", b_shape, 1, KILN_F32, &b));
  const kiln_arg ab[] = {kiln_node(a), kiln_node(b)};
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "frobnicate", ab, 2, nullptr, "f", &id),
                   KILN_ERROR_GRAPH, "frobnicate");
  CHECK(id == -1);
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "frobnicate", ab, 2, "{}", "f", &id), KILN_ERROR_GRAPH,
                   "frobnicate");
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "add", ab, 2, nullptr, "sum", &id), KILN_ERROR_SHAPE,
                   "[4, 8]");
  const kiln_arg dangling[] = {kiln_node(a), kiln_node(5)};
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "add", dangling, 2, nullptr, nullptr, &id),
                   KILN_ERROR_ARGUMENT, "args[1]: node 5 is not a node of this graph");
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "add", nullptr, 2, nullptr, nullptr, &id),
                   KILN_ERROR_ARGUMENT, "args is NULL but n_args is 2");
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), nullptr, ab, 2, nullptr, nullptr, &id),
                   KILN_ERROR_ARGUMENT, "op is NULL");
  KILN_CHECK_FAILS(kiln_graph_add(nullptr, "add", ab, 2, nullptr, nullptr, &id),
                   KILN_ERROR_ARGUMENT, "graph is NULL");
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "add", ab, 2, nullptr, nullptr, nullptr),
                   KILN_ERROR_ARGUMENT, "node is NULL");
  const kiln_arg x[] = {kiln_node(a)};
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "sum", x, 1, "{\"axis\": ", nullptr, &id),
                   KILN_ERROR_GRAPH, "attrs_json is not JSON");
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "sum", x, 1, "[1]", nullptr, &id), KILN_ERROR_GRAPH,
                   "not a JSON object");
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "sum", x, 1, R"({"axes": 1})", nullptr, &id),
                   KILN_ERROR_GRAPH, "axes");
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "sum", x, 1, R"({"keepdim": 3})", nullptr, &id),
                   KILN_ERROR_GRAPH, "keepdim");
  const kiln_arg scalars[] = {kiln_scalar(1), kiln_scalar(2)};
  KILN_CHECK_FAILS(kiln_graph_add(g.get(), "add", scalars, 2, nullptr, nullptr, &id),
                   KILN_ERROR_GRAPH, "needs at least one tensor operand");
  KILN_REQUIRE_OK(kiln_graph_add(g.get(), "relu", x, 1, nullptr, nullptr, &id));
  CHECK(id == 2);  // the failures added nothing
}

TEST_CASE("c api: kiln_graph_output refuses a node not in the graph and a name taken") {
  GraphPtr g = empty_graph();
  const int64_t shape[] = {8};
  int32_t x = -1, y = -1;
  KILN_REQUIRE_OK(kiln_graph_input(g.get(), "x", shape, 1, KILN_F16, &x));
  const kiln_arg args[] = {kiln_node(x)};
  KILN_REQUIRE_OK(kiln_graph_add(g.get(), "silu", args, 1, nullptr, "h", &y));
  KILN_CHECK_FAILS(kiln_graph_output(g.get(), 2, "y"), KILN_ERROR_ARGUMENT,
                   "node 2 is not a node of this graph (its ids are 0 to 1)");
  KILN_CHECK_FAILS(kiln_graph_output(g.get(), -1, "y"), KILN_ERROR_ARGUMENT, "node -1");
  KILN_CHECK_FAILS(kiln_graph_output(nullptr, y, "y"), KILN_ERROR_ARGUMENT, "graph is NULL");
  KILN_CHECK_FAILS(kiln_graph_output(g.get(), y, "x"), KILN_ERROR_GRAPH, "'x'");
  KILN_REQUIRE_OK(kiln_graph_output(g.get(), y, nullptr));
  CHECK(json_of(g.get()).find("\"outputs\": [\"h\"]") != std::string::npos);
}
