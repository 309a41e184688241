#include "tests/engine/reference.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ops/op.hpp"
#include "tests/support.hpp"

namespace kiln::test {
namespace {

// Offset into `src` (right-aligned broadcast) of element i of `shape`.
std::int64_t broadcast_offset(std::int64_t i, const Shape& shape, const Shape& src) {
  std::int64_t off = 0, stride = 1;
  const std::size_t lead = shape.size() - src.size();
  for (std::size_t d = shape.size(); d-- > 0;) {
    const std::int64_t c = i % shape[d];
    i /= shape[d];
    if (d < lead) continue;
    if (src[d - lead] != 1) off += c * stride;
    stride *= src[d - lead];
  }
  return off;
}

}  // namespace

std::vector<std::vector<double>> evaluate(const Graph& g, const std::map<std::string, std::vector<unsigned char>>& inputs) {
  std::vector<std::vector<double>> vals(g.nodes().size());
  for (std::size_t id = 0; id < g.nodes().size(); ++id) {
    const auto& n = g.nodes()[id];
    auto& out = vals[id];
    out.resize(std::size_t(numel_of(n.shape)));
    if (n.op == "input") {
      const auto& bytes = inputs.at(n.name);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_element(n.dtype, bytes.data() + i * size_of(n.dtype));
      continue;
    }
    const auto& op = ops::find_op(n.op);
    if (op.fusion == ops::FusionClass::row) {
      const int x = std::get<int>(n.args[0]);
      const auto& xv = vals[std::size_t(x)];
      const std::int64_t C = g.node(x).shape.back(), R = std::int64_t(xv.size()) / C;
      const double* w = n.args.size() > 1 ? vals[std::size_t(std::get<int>(n.args[1]))].data() : nullptr;
      const double* b = n.args.size() > 2 ? vals[std::size_t(std::get<int>(n.args[2]))].data() : nullptr;
      for (std::int64_t r = 0; r < R; ++r)
        op.row_reference(xv.data() + r * C, C, w, b, ops::eps_of(n.attrs), out.data() + (op.reduces ? r : r * C));
      continue;
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      double a[3] = {0, 0, 0};
      std::size_t k = 0;
      for (const auto& arg : n.args) {
        if (std::holds_alternative<double>(arg)) a[k++] = std::get<double>(arg);
        else a[k++] = vals[std::size_t(std::get<int>(arg))][std::size_t(broadcast_offset(std::int64_t(i), n.shape, g.node(std::get<int>(arg)).shape))];
      }
      for (double s : ops::attr_scalars(op, n.attrs)) a[k++] = s;
      out[i] = op.reference(a[0], a[1], a[2]);
    }
  }
  return vals;
}

namespace {

double tolerance(DType t) { return t == DType::f32 ? 2e-5 : t == DType::f16 ? 2e-3 : 1.6e-2; }

}  // namespace

std::vector<std::string> check_on_gpu(Engine& e, const Graph& g, std::mt19937_64& rng, bool unfused) {
  std::map<std::string, std::vector<unsigned char>> host;
  std::map<std::string, Tensor> dev;
  std::map<std::string, TensorView> views;
  for (const auto& n : g.nodes())
    if (n.op == "input") {
      host[n.name] = random_bytes(n.dtype, std::size_t(numel_of(n.shape)), -3, 3, rng);
      dev[n.name] = e.from_host(n.shape, n.dtype, host[n.name].data());
      views[n.name] = dev[n.name].view();
    }
  const auto ref = evaluate(g, host);
  double loosest = 0;
  for (const auto& n : g.nodes()) loosest = std::max(loosest, tolerance(n.dtype));
  std::vector<std::string> failures;
  for (bool fuse : {true, false}) {
    if (!fuse && !unfused) break;
    std::map<std::string, Tensor> outs;
    std::map<std::string, TensorView> out_views;
    for (int o : g.outputs()) {
      const auto& n = g.node(o);
      outs[n.name] = e.empty(n.shape, n.dtype);
      outs[n.name].fill_bytes(0xff);
      out_views[n.name] = outs[n.name].view();
    }
    Plan(g, fuse).run(e, views, out_views);
    for (int o : g.outputs()) {
      const auto& n = g.node(o);
      std::vector<unsigned char> got(outs[n.name].bytes());
      outs[n.name].copy_to_host(got.data());
      int bad = 0;
      for (std::size_t i = 0; i < ref[std::size_t(o)].size(); ++i) {
        const double want = ref[std::size_t(o)][i];
        const double have = load_element(n.dtype, got.data() + i * size_of(n.dtype));
        const double scale = std::max(std::fabs(want), n.op == "softmax" ? 1.0 / double(n.shape.back()) : 1.0);
        const bool ok = std::isnan(want) || std::isnan(have) ? std::isnan(want) && std::isnan(have)
                                                             : std::fabs(have - want) <= loosest * scale;
        if (!ok && bad++ < 3)
          failures.push_back(fmt::format("{} {} [{}]: got {} want {}", fuse ? "fused" : "unfused", n.name, i, have, want));
      }
    }
  }
  return failures;
}

}  // namespace kiln::test
