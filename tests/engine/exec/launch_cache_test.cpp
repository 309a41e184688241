// The signature cache of plan calls (engine/exec/launch_cache.hpp, engine/exec/executor.cpp) on an offline
// engine (prepared without a device: specialized and compiled, never launched): a call with the
// signature of an earlier one reuses what it prepared, with its own pointers written in; a change
// of any component of the signature prepares anew, and what it prepares is what a fresh
// specialization for those views gives.
#include <cstring>
#include <kiln/kiln.hpp>
#include <set>

#include "engine/compiler/compiler.hpp"
#include "engine/exec/executor.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "tests/support.hpp"

namespace {

using kiln::DType;
using Views = std::map<std::string, kiln::TensorView>;

kiln::TensorView view(kiln::Shape shape, DType t, std::uint64_t data, kiln::Shape strides = {}) {
  kiln::TensorView v;
  v.shape = std::move(shape);
  v.dtype = t;
  v.data = data;
  v.strides = std::move(strides);
  return v;
}

// softmax(x * 2 + b) and x + 1: two kernels, no intermediates (no arena to allocate offline).
kiln::Graph graph(std::int64_t rows) {
  kiln::Graph g;
  auto x = g.input("x", {rows, 128}, DType::f32);
  auto b = g.input("b", {128}, DType::bf16);
  g.output(kiln::softmax(x * 2.0 + b), "y");
  g.output(x + 1.0, "z");
  return g;
}

std::vector<std::string> spec_ids(const kiln::detail::PreparedCall& call) {
  std::vector<std::string> ids;
  for (const auto& l : call.launches) ids.push_back(kiln::compiler::spec_id(l.launch.spec));
  return ids;
}

// What plan_specs specializes for a static graph and these views (outputs contiguous).
std::vector<std::string> fresh_ids(const kiln::Graph& g, const Views& inputs,
                                   const std::string& arch) {
  std::vector<std::string> ids;
  for (const auto& s : kiln::plan_specs(g, true, inputs, nullptr, arch))
    ids.push_back(kiln::compiler::spec_id(s));
  return ids;
}

}  // namespace

TEST_CASE(
    "launch cache: a seen signature reuses its kernels with new pointers; each changed component "
    "prepares anew") {
  kiln::Engine e(kiln::test::offline("sm_90a"));
  const kiln::Graph g = graph(64);
  const kiln::Plan plan(g);
  const auto& impl = kiln::detail::PlanAccess::impl(plan);
  const Views base = {{"x", view({64, 128}, DType::f32, 0x100000)},
                      {"b", view({128}, DType::bf16, 0x200000)}};
  const Views outs = {{"y", view({64, 128}, DType::f32, 0x300000)},
                      {"z", view({64, 128}, DType::f32, 0x400000)}};
  const auto first = impl.prepared(e, base, outs, false);
  REQUIRE(first->launches.size() == 2);
  CHECK(spec_ids(*first) == fresh_ids(g, base, "sm_90a"));

  // Same signature, other buffers (as aligned): the same entry, the new pointers written in.
  Views moved = base;
  moved["x"].data = 0x500000;
  moved["b"].data = 0x600100;
  Views moved_outs = outs;
  moved_outs["z"].data = 0x700000;
  const auto again = impl.prepared(e, moved, moved_outs, false);
  CHECK((again == first));
  {
    std::lock_guard<std::mutex> lock(again->mutex);
    kiln::detail::bind_data(*again, impl, e, moved, moved_outs);
  }
  std::set<std::uint64_t> written;
  for (auto& l : again->launches) {
    auto* args = static_cast<const unsigned char*>(l.params->pointers()[0]);
    for (std::size_t i = 0; i < l.nodes.size(); ++i) {
      std::uint64_t p = 0;
      std::memcpy(&p, args + 8 * i, 8);
      written.insert(p);
    }
  }
  CHECK(written == std::set<std::uint64_t>{0x500000, 0x600100, 0x300000, 0x700000});

  auto different = [&](const Views& ins, const Views& os, const char* what) {
    CAPTURE(what);
    const auto other = impl.prepared(e, ins, os, false);
    CHECK((other != first));
    CHECK(spec_ids(*other) == fresh_ids(g, ins, "sm_90a"));
    CHECK((impl.prepared(e, ins, os, false) == other));  // and it is kept
  };
  Views misaligned = base;
  misaligned["x"].data = 0x100004;  // 4-byte aligned: no 16-byte packs
  different(misaligned, outs, "alignment class of an input");
  Views transposed = base;
  transposed["x"] = view({64, 128}, DType::f32, 0x100000, {1, 64});
  different(transposed, outs, "strides of an input");
  Views out_misaligned = outs;
  out_misaligned["z"].data = 0x400008;
  CHECK((impl.prepared(e, base, out_misaligned, false) != first));  // an output's alignment class
  CHECK(
      (impl.prepared(e, base, {{"y", outs.at("y")}}, false) != first));  // which outputs are given
  Views out_strided = outs;
  out_strided["y"] = view({64, 128}, DType::f32, 0x300000, {1, 64});
  CHECK((impl.prepared(e, base, out_strided, false) != first));  // an output's strides
  kiln::Engine other_engine(kiln::test::offline("sm_90a"));
  CHECK((impl.prepared(other_engine, base, outs, false) != first));  // another engine
  // A dtype or shape the graph does not take is refused, never served.
  Views f16 = base;
  f16["x"].dtype = DType::f16;
  CHECK_THROWS_AS(impl.prepared(e, f16, outs, false), kiln::DtypeError);
  Views wide = base;
  wide["x"].shape = {64, 256};
  CHECK_THROWS_AS(impl.prepared(e, wide, outs, false), kiln::ShapeError);
  CHECK((impl.prepared(e, base, outs, false) == first));
}

TEST_CASE(
    "launch cache: each extent of a dynamic dim is its own signature, specialized as a static "
    "graph of it") {
  kiln::Engine e(kiln::test::offline("sm_80"));
  kiln::Graph g;
  auto x = g.input("x", {-1, 96}, DType::f16);
  g.output(kiln::softmax(x), "y");
  const kiln::Plan plan(g);
  const auto& impl = kiln::detail::PlanAccess::impl(plan);
  std::vector<std::shared_ptr<kiln::detail::PreparedCall>> seen;
  for (std::int64_t rows : {1, 2, 3, 1000}) {
    CAPTURE(rows);
    const Views ins = {{"x", view({rows, 96}, DType::f16, 0x100000)}};
    const Views outs = {{"y", view({rows, 96}, DType::f16, 0x200000)}};
    const auto call = impl.prepared(e, ins, outs, false);
    for (const auto& s : seen) CHECK((call != s));
    seen.push_back(call);
    kiln::Graph fixed;
    fixed.output(kiln::softmax(fixed.input("x", {rows, 96}, DType::f16)), "y");
    CHECK(spec_ids(*call) == fresh_ids(fixed, ins, "sm_80"));
  }
  CHECK((impl.prepared(e, {{"x", view({2, 96}, DType::f16, 0x900000)}},
                       {{"y", view({2, 96}, DType::f16, 0xa00000)}}, false) == seen[1]));
}

TEST_CASE("launch cache: a bounded LRU of signatures") {
  kiln::detail::SignatureCache<int> cache(2);
  auto sig = [](int w) {
    kiln::detail::Signature s;
    s.add(w);
    return s;
  };
  cache.insert(sig(1), std::make_shared<int>(1));
  cache.insert(sig(2), std::make_shared<int>(2));
  REQUIRE((cache.find(sig(1)) != nullptr));        // 1 is now the most recent
  cache.insert(sig(3), std::make_shared<int>(3));  // 2 goes
  CHECK((cache.find(sig(2)) == nullptr));
  CHECK(*cache.find(sig(1)) == 1);
  CHECK(*cache.find(sig(3)) == 3);
  CHECK(cache.size() == 2);
  CHECK(*cache.insert(sig(3), std::make_shared<int>(30)) == 3);  // the first one stays
  kiln::detail::Signature a, b;
  a.add(1);
  a.add(2);
  b.add(2);
  b.add(1);
  CHECK_FALSE(a == b);
  // A view with fewer strides than dims signs apart from a contiguous one (without reading past
  // its strides), so the call goes on to be refused by check_view.
  kiln::detail::Signature good, bad;
  good.add_view(view({4, 4}, DType::f32, 0x1000));
  bad.add_view(view({4, 4}, DType::f32, 0x1000, {1}));
  CHECK_FALSE(good == bad);
  CHECK_FALSE(view({4, 4}, DType::f32, 0x1000, {1}).is_contiguous());
  CHECK(kiln::detail::alignment_class(0x100004) == 4);
  CHECK(kiln::detail::alignment_class(0x100000) == 16);
  CHECK(kiln::detail::alignment_class(0) == 16);
}
