// pad and upsample_nearest, the remap views: their shape rules and errors; the plans they make
// (read in place by the chain, row op or concat part consuming them, no padded or upsampled
// copy; copied as an output or for a product); the fp64 reference against values written out
// by hand; and on the GPU, pad widths 0 to 3 on each side of each axis and upsampling by 2 and 3,
// NCHW and channels_last, every dtype, odd and length-1 extents, fused and unfused, against it.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <kiln/graph.hpp>
#include <kiln/ops.hpp>

#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

using kiln::Attrs;
using kiln::DType;
using kiln::Graph;
using kiln::Shape;
using kiln::test::desc;

namespace {

std::string error_of(const char* op, std::vector<kiln::Operand> args, Attrs attrs = {}) {
  try {
    kiln::infer(op, args, attrs);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

kiln::Value pad(kiln::Value x, std::vector<std::int64_t> pads, double value = 0) {
  return kiln::apply("pad", {x}, Attrs().set("pads", pads).set("value", value));
}
kiln::Value upsample(kiln::Value x, std::int64_t scale) {
  return kiln::apply("upsample_nearest", {x}, Attrs().set("scale", scale));
}
// An [n, c, h, w] tensor stored channels_last: an [n, h, w, c] input permuted.
kiln::Value nhwc(Graph& g, const std::string& name, Shape s, DType t) {
  return kiln::apply("permute", {g.input(name, {s[0], s[2], s[3], s[1]}, t)},
                     Attrs().set("dims", std::vector<std::int64_t>{0, 3, 1, 2}));
}

std::vector<std::string> kernel_names(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& k : kiln::Plan(g).kernels()) out.push_back(k.name);
  return out;
}

// The GPU case's graphs over dtype `t`: every pad width 0-3 on each side of each axis of an
// odd [3, 1, 5, 7] (some as outputs, copied), upsampling by 2 and 3 of NCHW and channels_last
// inputs, and the consumers that read them in place: a chain, a row op, a concat's part.
std::vector<Graph> remap_graphs(DType t) {
  std::vector<Graph> out;
  const bool flt = !kiln::is_integer(t) && t != DType::boolean;
  for (std::size_t axis = 0; axis < 4; ++axis)
    for (std::int64_t lo = 0; lo <= 3; ++lo) {
      const std::int64_t hi = (lo + axis) % 4;
      std::vector<std::int64_t> pads(2 * (4 - axis), 0);
      pads[pads.size() - 2] = lo, pads.back() = hi;
      Graph g;
      const auto x = g.input("x", {3, 1, 5, 7}, t);
      const auto p = pad(x, pads, flt ? -1.5 : 7);
      if (lo % 2 == 0)
        g.output(p, "y");  // the view as an output: its copy
      else
        g.output(flt ? kiln::silu(p) * 2.0 : t == DType::boolean ? p : p + p, "y");
      out.push_back(std::move(g));
    }
  for (std::int64_t scale : {2, 3})
    for (bool cl : {false, true}) {
      Graph g;
      const Shape s = {2, 6, 3, 5};
      const auto x = cl ? nhwc(g, "x", s, t) : g.input("x", s, t);
      const auto up = upsample(x, scale);
      const Shape big = {2, 6, 3 * scale, 5 * scale};
      const auto skip = cl ? nhwc(g, "skip", big, t) : g.input("skip", big, t);
      g.output(t == DType::boolean ? up : up + skip, "y");
      // A U-Net decoder's concat of the upsampled path and a skip: the part reads it in place.
      g.output(kiln::concat({up, cl ? nhwc(g, "s2", big, t) : g.input("s2", big, t)}, 1), "c");
      out.push_back(std::move(g));
    }
  {
    Graph g;  // two axes padded at once (coordinates of several radices), and a crop
    const auto x = g.input("x", {4, 3, 7}, t);
    const auto p = pad(x, {1, 2, 1, 1}, flt ? 0.5 : 1);
    g.output(flt ? kiln::tanh(p) : t == DType::boolean ? p : p + p, "y");
    g.output(pad(x, {-1, 2, 0, 0, 2, -1}), "z");
    out.push_back(std::move(g));
  }
  {
    Graph g;  // length-1 axes, pads on both ends of every axis and a scale on a 1-D signal
    const auto x = g.input("x", {1, 1, 1}, t);
    g.output(pad(x, {2, 1, 0, 3, 1, 1}, flt ? 0.25 : -2), "y");
    g.output(upsample(g.input("s", {2, 3, 1}, t), 3), "u");
    out.push_back(std::move(g));
  }
  if (flt) {
    Graph g;  // a row op reading a padded row in place; a product reading it copies it
    const auto x = g.input("x", {4, 29}, t);
    g.output(kiln::softmax(pad(x, {3, 0}, -1e4)), "y");
    g.output(kiln::matmul(pad(x, {0, 3}), g.input("w", {32, 8}, t)), "m");
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

TEST_CASE("pad and upsample_nearest: shapes, and errors naming the call") {
  const auto x = desc({2, 3, 5, 7}, DType::f16);
  CHECK(kiln::infer("pad", {x}, Attrs().set("pads", std::vector<std::int64_t>{1, 2}))
            .shape == Shape{2, 3, 5, 10});
  CHECK(kiln::infer("pad", {x}, Attrs().set("pads", std::vector<std::int64_t>{0, 0, 3, -1}))
            .shape == Shape{2, 3, 7, 7});
  CHECK(kiln::infer("pad", {x}, Attrs().set("pads", std::vector<std::int64_t>{1, 1, 1, 1, 1, 1,
                                                                              1, 1}))
            .shape == Shape{4, 5, 7, 9});
  CHECK(error_of("pad", {x}, Attrs().set("pads", std::vector<std::int64_t>{1, 2, 3}))
            .find("must be pairs") != std::string::npos);
  CHECK(error_of("pad", {x}, Attrs().set("pads", std::vector<std::int64_t>(10, 1)))
            .find("at most the 4 axes") != std::string::npos);
  CHECK(error_of("pad", {x}, Attrs().set("pads", std::vector<std::int64_t>{-4, -4}))
            .find("below nothing") != std::string::npos);
  CHECK(error_of("pad", {x}).find("pads") != std::string::npos);  // required
  CHECK(kiln::infer("upsample_nearest", {x}, Attrs().set("scale", 3)).shape ==
        Shape{2, 3, 15, 21});
  CHECK(kiln::infer("upsample_nearest", {desc({2, 3, 4}, DType::f32)}).shape == Shape{2, 3, 8});
  CHECK(error_of("upsample_nearest", {desc({3, 4}, DType::f32)}).find("rank 3 to 5") !=
        std::string::npos);
  CHECK(error_of("upsample_nearest", {x}, Attrs().set("scale", 0)).find("scale") !=
        std::string::npos);
}

TEST_CASE("pad and upsample_nearest: the fp64 reference gives torch's values") {
  Graph g;
  const auto x = g.input("x", {1, 1, 2, 3}, DType::f32);
  g.output(pad(x, {1, 0, 0, 1}, 9), "p");
  g.output(upsample(x, 2), "u");
  kiln::test::HostInputs in;
  std::vector<unsigned char> bytes(6 * 4);
  for (int i = 0; i < 6; ++i) kiln::store_element(DType::f32, i + 1, bytes.data() + 4 * i);
  in["x"] = bytes;
  const auto v = kiln::test::evaluate(g, in);
  const auto& outs = g.outputs();
  // F.pad(x, (1, 0, 0, 1), value=9) of [[1, 2, 3], [4, 5, 6]]
  CHECK(v[std::size_t(outs[0])] == std::vector<double>{9, 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9});
  // F.interpolate(x, scale_factor=2, mode="nearest")
  CHECK(v[std::size_t(outs[1])] ==
        std::vector<double>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6});
}

TEST_CASE("pad and upsample_nearest are read in place by their consumers; a copy only as an "
          "output or for a product") {
  Graph a;  // pad + silu: one elementwise kernel
  a.output(kiln::silu(pad(a.input("x", {2, 3, 5, 7}, DType::f16), {1, 2, 3, 0}, 0.5)), "y");
  CHECK(kernel_names(a) == std::vector<std::string>{"silu_f16__r3v2"});
  Graph b;  // a channels_last upsample added to a skip: one kernel, packs of 8 channels
  const auto up = upsample(nhwc(b, "x", {2, 64, 16, 16}, DType::f16), 2);
  b.output(up + nhwc(b, "s", {2, 64, 32, 32}, DType::f16), "y");
  REQUIRE(kiln::Plan(b).kernels().size() == 1);
  Graph c;  // the decoder concat: each part's kernel reads its operand in place
  const auto h = upsample(nhwc(c, "x", {2, 64, 16, 16}, DType::f16), 2);
  c.output(kiln::concat({h, nhwc(c, "s", {2, 64, 32, 32}, DType::f16)}, 1), "y");
  const auto names = kernel_names(c);
  REQUIRE(names.size() == 2);
  for (const auto& n : names) CHECK(n.find("concat") != std::string::npos);
  Graph d;  // a row op's prologue reads a padded row
  d.output(kiln::softmax(pad(d.input("x", {4, 29}, DType::f32), {3, 0}, -1e4)), "y");
  CHECK(kiln::Plan(d).kernels().size() == 1);
  Graph e;  // a product reads contiguous operands: the pad is copied first
  e.output(kiln::matmul(pad(e.input("x", {4, 29}, DType::f32), {0, 3}),
                        e.input("w", {32, 8}, DType::f32)),
           "m");
  CHECK(kiln::Plan(e).kernels().size() == 2);
}

TEST_CASE("pad and upsample_nearest: the GPU case's graphs NVRTC-compile for sm_80 and sm_90a") {
  kiln::Engine sm80(kiln::test::offline("sm_80")), sm90(kiln::test::offline("sm_90a"));
  for (DType t : {DType::f16, DType::i64})
    for (const Graph& g : remap_graphs(t)) {
      CAPTURE(g.to_json());
      for (kiln::Engine* e : {&sm80, &sm90}) CHECK_FALSE(kiln::Plan(g).compile(*e).empty());
    }
}

TEST_CASE("gpu: pad and upsample_nearest match the fp64 reference, fused and unfused" *
          doctest::skip(!kiln::test::has_gpu())) {
  kiln::Engine e(kiln::test::on_gpu());
  auto rng = kiln::test::make_rng(171);
  int graphs = 0;
  for (DType t : kiln::kAllDTypes)
    for (const Graph& g : remap_graphs(t)) {
      CAPTURE(g.to_json());
      for (const auto& f : kiln::test::check_on_gpu(e, g, rng, true)) FAIL_CHECK(f);
      ++graphs;
    }
  MESSAGE(fmt::format("{} remap graphs", graphs));
}
