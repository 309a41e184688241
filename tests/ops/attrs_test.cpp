// kiln::Attrs, the typed map of an op call's attributes: its getters convert or refuse by type,
// and every entry point checks a C++ caller's map against the op's schema, so a wrong name, type
// or range is an ArgumentError naming the op and the attribute, never a crash.
#include <kiln/graph.hpp>
#include <kiln/op_schema.hpp>

#include "ops/op.hpp"
#include "tests/support.hpp"

namespace {

// The message of the ArgumentError `f` throws; empty when it throws none.
template <class F>
std::string argument_error(F&& f) {
  try {
    f();
  } catch (const kiln::ArgumentError& e) {
    return e.what();
  }
  return "";
}

const kiln::TensorView kX = kiln::test::desc({4, 8}, kiln::DType::f32);

}  // namespace

TEST_CASE("attrs: the typed getters convert an integer to a number and refuse other types") {
  const kiln::Attrs a{{"eps", std::int64_t(3)}, {"min", 7.5}, {"keepdim", true}};
  CHECK(a.number("eps") == 3.0);
  CHECK(a.number("min") == 7.5);
  CHECK(a.integer("eps") == 3);
  CHECK_FALSE(a.number("max").has_value());
  CHECK_FALSE(a.integer("axis").has_value());
  const std::string e = argument_error([&] { (void)a.integer("min"); });
  CHECK(e == "attribute min=7.5 is not an integer");
  CHECK_THROWS_WITH_AS((void)a.number("keepdim"), "attribute keepdim=true is not a number",
                       kiln::ArgumentError);
  CHECK_THROWS_WITH_AS((void)a.flag("eps"), "attribute eps=3 is not true or false",
                       kiln::ArgumentError);
  CHECK_THROWS_AS((void)a.extents("eps"), kiln::ArgumentError);
  CHECK_THROWS_AS((void)a.text("eps"), kiln::ArgumentError);
}

TEST_CASE("attrs: a flag is false when absent; dtype, extents and \"all\" round-trip") {
  kiln::Attrs a;
  CHECK(a.empty());
  CHECK_FALSE(a.flag("keepdim"));
  a.set("keepdim", true).set("dtype", kiln::DType::bf16).set("shape", {4, -1}).set("axis", "all");
  CHECK(a.flag("keepdim"));
  CHECK(*a.find("dtype") == kiln::AttrValue(std::string("bf16")));  // stored as its name
  CHECK(a.dtype("dtype") == kiln::DType::bf16);
  CHECK(a.extents("shape") == std::vector<std::int64_t>{4, -1});
  CHECK(a.text("axis") == std::string("all"));
  CHECK(kiln::ops::all_axes(a));
  CHECK(kiln::ops::axis_of(a) == -1);  // "all" has no integer axis
  CHECK(kiln::ops::axis_of(kiln::Attrs{{"axis", std::int64_t(2)}}) == 2);
  CHECK_FALSE(kiln::ops::all_axes(kiln::Attrs{{"axis", std::int64_t(2)}}));
  CHECK(kiln::ops::eps_of(kiln::Attrs{}) == 1e-5);
  CHECK(kiln::ops::eps_of(kiln::Attrs{{"eps", 1e-3}}) == 1e-3);
  CHECK_THROWS_AS((void)kiln::Attrs().set("dtype", "f64").dtype("dtype"), kiln::DtypeError);
}

TEST_CASE("attrs: set replaces, erase removes, equality compares names and values") {
  kiln::Attrs a{{"axis", std::int64_t(1)}, {"keepdim", true}};
  CHECK(a.values().size() == 2);
  CHECK(a.values().begin()->first == "axis");  // name order
  a.set("axis", 0);
  CHECK(a.integer("axis") == 0);
  CHECK(a != kiln::Attrs{{"axis", std::int64_t(1)}, {"keepdim", true}});
  CHECK(a == kiln::Attrs{{"keepdim", true}, {"axis", std::int64_t(0)}});
  CHECK(a.has("keepdim"));
  a.erase("keepdim").erase("never_set");
  CHECK_FALSE(a.has("keepdim"));
  CHECK(a.find("keepdim") == nullptr);
  CHECK(a == kiln::Attrs{{"axis", std::int64_t(0)}});
  // A string literal is a string, not a bool.
  CHECK(std::holds_alternative<std::string>(*kiln::Attrs().set("k", "x").find("k")));
  CHECK(std::holds_alternative<std::string>(*kiln::Attrs{{"k", "x"}}.find("k")));
}

TEST_CASE("attrs: check_attrs refuses an unknown key, a wrong type and a value out of range") {
  const kiln::ops::OpDef& sum = kiln::ops::find_op("sum");
  const kiln::ops::OpDef& norm = kiln::ops::find_op("layer_norm");
  kiln::ops::check_attrs(sum, {{"axis", "all"}, {"keepdim", true}});
  kiln::ops::check_attrs(norm, {{"eps", std::int64_t(1)}});  // an integer is a number too
  CHECK(argument_error([&] {
          kiln::ops::check_attrs(sum, {{"axis", 1.5}});
        }) == "sum: attribute axis=1.5 is not an integer, a list of adjacent ones or \"all\"");
  CHECK(argument_error([&] {
          kiln::ops::check_attrs(sum, {{"keepdim", std::int64_t(1)}});
        }) == "sum: attribute keepdim=1 is not true or false");
  CHECK(argument_error([&] {
          kiln::ops::check_attrs(norm, {{"eps", 0.0}});
        }) == "layer_norm: attribute eps=0 is not > 0");
  CHECK(argument_error([&] {
          kiln::ops::check_attrs(norm, {{"eps", -1e-3}});
        }) == "layer_norm: attribute eps=-0.001 is not > 0");
  std::string e = argument_error([&] { kiln::ops::check_attrs(sum, {{"dim", std::int64_t(0)}}); });
  CHECK(e ==
        "sum: unknown attribute 'dim': kiln calls it axis; sum's attributes are axis, keepdim");
  e = argument_error([&] { kiln::ops::check_attrs(norm, {{"epss", 1e-3}}); });
  CHECK(e.find("unknown attribute 'epss': did you mean eps?") != std::string::npos);
  CHECK_THROWS_AS(kiln::ops::check_attrs(kiln::ops::find_op("cast"), {{"dtype", "f64"}}),
                  kiln::DtypeError);
}

TEST_CASE("attrs: a C++ caller's wrong attribute is an ArgumentError at every entry point") {
  std::string e = argument_error([] { kiln::infer("sum", {kX}, kiln::Attrs{{"axis", "x"}}); });
  CHECK(e == "sum: attribute axis=\"x\" is not an integer, a list of adjacent ones or \"all\"");
  e = argument_error([] { kiln::infer("sum", {kX}, kiln::Attrs{{"dim", std::int64_t(0)}}); });
  CHECK(e.find("sum: unknown attribute 'dim': kiln calls it axis") == 0);
  e = argument_error(
      [] { kiln::infer("slice", {kX}, kiln::Attrs().set("start", 0).set("stop", 2.0)); });
  CHECK(e == "slice: attribute stop=2 is not an integer");
  e = argument_error([] { kiln::infer("cast", {kX}, kiln::Attrs{{"dtype", true}}); });
  CHECK(e == "cast: attribute dtype=true is not a dtype (f32, f16, bf16, bool)");
  CHECK(kiln::infer("sum", {kX}, kiln::Attrs{{"axis", std::int64_t(0)}}).shape == kiln::Shape{8});
  CHECK(kiln::infer("sum", {kX}, kiln::Attrs{{"axis", "all"}}).shape == kiln::Shape{});
  kiln::Engine engine(kiln::test::offline("sm_80"));
  e = argument_error([&] { kiln::precompile(engine, "softmax", {kX}, {{"axis", "all"}}); });
  CHECK(e == "softmax: attribute axis=\"all\" is not an integer");
  e = argument_error([&] { kiln::call(engine, "layer_norm", {kX}, kiln::Attrs{{"eps", -1.0}}); });
  CHECK(e == "layer_norm: attribute eps=-1 is not > 0");
  kiln::Graph g;
  const kiln::Value x = g.input("x", {4, 8}, kiln::DType::f32);
  CHECK_THROWS_WITH_AS(g.add("sum", {x}, kiln::Attrs{{"keepdim", "yes"}}, "s"),
                       "node 's': sum: attribute keepdim=\"yes\" is not true or false",
                       kiln::GraphError);
}
