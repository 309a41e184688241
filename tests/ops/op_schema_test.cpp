// Op schemas: every op declares its attributes, operands and doc; graph JSON reads and writes
// attributes through them (round trip, the bytes of before), and an unknown or mistyped key is
// refused naming the node and the key, with a hint for a near miss.
#include <kiln/graph.hpp>
#include <kiln/op_schema.hpp>
#include <set>

#include "ops/op.hpp"
#include "tests/support.hpp"

namespace {

std::string error_of(const std::string& op, const std::string& attrs, const char* args = "\"x\"") {
  const std::string json = R"({"inputs": [{"name": "x", "shape": [4, 8], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": ")" + op + R"(", "args": [)" + args +
                           R"(], "attrs": )" + attrs + R"(}], "outputs": ["y"]})";
  try {
    kiln::Graph::parse(json, "g.json");
  } catch (const kiln::GraphError& e) {
    return e.what();
  }
  return "(accepted, or another error class)";
}

}  // namespace

TEST_CASE("op schema: every op has a doc, a dtype rule and attributes of valid defaults") {
  for (const auto& op : kiln::ops::all_ops()) {
    CAPTURE(op.name);
    const kiln::OpSchema s = kiln::op_schema(op.name);
    CHECK(s.doc.size() > 3);
    CHECK(s.dtypes.size() > 10);
    CHECK(s.required_operands >= 1);
    CHECK(s.required_operands <= s.operands.size());
    // Operands and attributes share one namespace: Python's signature (keywords) and the
    // docs name both.
    std::set<std::string_view> names(s.operands.begin(), s.operands.end());
    CHECK(names.size() == s.operands.size());
    for (const kiln::AttrSpec& a : s.attrs) {
      CAPTURE(a.name);
      CHECK(names.insert(a.name).second);
      CHECK(!a.doc.empty());
      CHECK_FALSE((a.required && a.fallback.has_value()));
      if (!a.fallback) continue;
      kiln::Attrs attrs;  // the default is a value of the attribute's type, in its range
      kiln::set_attr(attrs, a, *a.fallback);
    }
  }
  CHECK(kiln::range_text(kiln::op_schema("layer_norm").attrs[0].range) == "> 0");
  CHECK_THROWS_AS(kiln::op_schema("frob"), kiln::ArgumentError);
}

TEST_CASE("op schema: graph JSON's attributes round-trip, byte for byte as before") {
  kiln::Graph g;
  auto x = g.input("x", {4, 8}, kiln::DType::f32);
  const kiln::Attrs clamp{{"min", -1.5}};
  const kiln::Attrs sum = kiln::Attrs().set("axis", 1).set("keepdim", true);
  const kiln::Attrs all{{"axis", "all"}};
  const kiln::Attrs cast = kiln::Attrs().set("dtype", kiln::DType::bf16);
  const kiln::Attrs norm{{"eps", 1e-6}};
  const kiln::Attrs reshape = kiln::Attrs().set("shape", {-1, 4});
  g.output(g.add("clamp", {x}, clamp, "c"));
  g.output(g.add("sum", {x}, sum, "s"));
  g.output(g.add("max", {x}, all, "m"));
  g.output(g.add("cast", {x}, cast, "k"));
  g.output(g.add("layer_norm", {x}, norm, "n"));
  g.output(g.add("reshape", {x}, reshape, "r"));
  const std::string json = g.to_json();
  for (const char* written :
       {R"("attrs": {"min":-1.5})", R"("attrs": {"axis":1,"keepdim":true})",
        R"("attrs": {"axis":"all"})", R"("attrs": {"dtype":"bf16"})", R"("attrs": {"eps":1e-06})",
        R"("attrs": {"shape":[-1,4]})"}) {
    CAPTURE(written);
    CHECK(json.find(written) != std::string::npos);
  }
  CHECK(kiln::Graph::parse(json).to_json() == json);
}

TEST_CASE("op schema: an unknown or mistyped attribute names the node and key, with a hint") {
  std::string e = error_of("sum", R"({"dim": 1})");
  CHECK(e.find("g.json: node 'y': field attrs.dim: ") == 0);
  CHECK(e.find("unknown attribute 'dim': kiln calls it axis") != std::string::npos);
  CHECK(e.find("sum's attributes are axis, keepdim") != std::string::npos);
  e = error_of("layer_norm", R"({"epss": 1e-3})");
  CHECK(e.find("field attrs.epss: layer_norm: unknown attribute 'epss': did you mean eps?") !=
        std::string::npos);
  CHECK(error_of("add", R"({"eps": 1})", "\"x\", \"x\"").find("add takes no attributes") !=
        std::string::npos);
  CHECK(error_of("sum", R"({"frobnicate": 1})").find("'frobnicate'; sum's attributes") !=
        std::string::npos);  // nothing near: no hint
  CHECK(error_of("sum", R"({"keepdim": 1})").find("field attrs.keepdim: 1 is not true or false") !=
        std::string::npos);
  CHECK(error_of("softmax", R"({"axis": "all"})").find("is not an integer (op 'softmax')") !=
        std::string::npos);
  CHECK(error_of("layer_norm", R"({"eps": 0})").find("attrs.eps: attribute eps=0 is not > 0") !=
        std::string::npos);
  CHECK(error_of("cast", R"({"dtype": "f64"})").find("field attrs.dtype: ") != std::string::npos);
  // Through the C++ API too: an attribute the op's schema lacks is refused naming the node.
  kiln::Graph g;
  auto x = g.input("x", {4}, kiln::DType::f32);
  CHECK_THROWS_WITH_AS(g.add("add", {x, x}, kiln::Attrs{{"eps", 1e-3}}, "z"),
                       doctest::Contains("node 'z': add: unknown attribute 'eps'"),
                       kiln::GraphError);
}
