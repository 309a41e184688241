#include "tests/engine/reference.hpp"

#include <fmt/format.h>

#include <cmath>

#include "ops/op.hpp"
#include "engine/fusion.hpp"
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

std::vector<std::vector<double>> evaluate(const Graph& g, const std::map<std::string, std::vector<unsigned char>>& inputs,
                                          const Rounding& rounding) {
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
    } else {
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
    if (id < rounding.size() && rounding[id]) {
      unsigned char bytes[8];
      for (double& v : out) store_element(*rounding[id], v, bytes), v = load_element(*rounding[id], bytes);
    }
  }
  return vals;
}

Rounding rounding_of(const Graph& g, bool fused) {
  Rounding r(g.nodes().size());
  for (const auto& group : fuse(g, fused))
    for (int id : group.outputs) r[std::size_t(id)] = g.node(id).dtype;
  for (std::size_t id = 0; id < r.size(); ++id)
    if (g.nodes()[id].op == "cast") r[id] = g.nodes()[id].dtype;
  return r;
}

namespace {

double tolerance(DType t) { return t == DType::f32 ? 2e-5 : t == DType::f16 ? 2e-3 : 1.6e-2; }

// The references of one plan: `model` rounds where the plan rounds; `f32` also rounds every
// other float value to f32 (what computing it in f32 does, roughly). With `smooth`, which rounds
// nowhere, they tell how sensitive an element is to rounding on the way: an element computed
// from a value that the GPU rounded the other way (it computes in f32, not fp64) may move by
// about that much.
struct PlanRun {
  std::vector<std::vector<double>> model, f32;
  std::map<int, std::vector<double>> got;  ///< what the GPU wrote, per output node
};

PlanRun references(const Graph& g, const std::map<std::string, std::vector<unsigned char>>& host, bool fused) {
  Rounding r = rounding_of(g, fused);
  PlanRun out;
  out.model = evaluate(g, host, r);
  for (std::size_t id = 0; id < r.size(); ++id)
    if (!r[id] && is_float(g.nodes()[id].dtype)) r[id] = DType::f32;
  out.f32 = evaluate(g, host, r);
  return out;
}

struct Element {
  double want, f32, smooth;
  double sensitivity() const { return std::fabs(want - smooth) + std::fabs(f32 - want); }
};

// Why `have` is not acceptable for `x` (an element of node n), or "".
std::string verdict(const Graph::Node& n, double have, const Element& x, double more_slack) {
  if (!std::isfinite(x.want) || !std::isfinite(x.f32) || !std::isfinite(x.smooth)) {
    // NaN or infinite in every reference alike: the GPU must agree exactly. Otherwise the
    // element sits on the edge of overflow or of a domain, and any value is acceptable.
    if (std::isnan(x.want) && std::isnan(x.f32) && std::isnan(x.smooth)) return std::isnan(have) ? "" : "want NaN";
    if (x.want == x.f32 && x.want == x.smooth) return have == x.want ? "" : fmt::format("want {}", x.want);
    return "";
  }
  if (!std::isfinite(have)) return fmt::format("want {}", x.want);
  const double scale = std::max(std::fabs(x.want), n.op == "softmax" ? 1.0 / double(n.shape.back()) : 1.0);
  const double slack = tolerance(n.dtype) * scale + 4 * x.sensitivity() + more_slack;
  return std::fabs(have - x.want) <= slack ? "" : fmt::format("want {} (slack {:.3g})", x.want, slack);
}

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
  const auto smooth = evaluate(g, host);
  std::vector<PlanRun> runs;
  for (bool fuse : {true, false}) {
    if (!fuse && !unfused) break;
    PlanRun run = references(g, host, fuse);
    std::map<std::string, Tensor> outs;
    std::map<std::string, TensorView> out_views;
    for (int o : g.outputs()) {
      const auto& n = g.node(o);
      outs[n.name] = e.empty(n.shape, n.dtype);
      outs[n.name].fill_bytes(0xff);  // NaN in every float dtype: a skipped element shows
      out_views[n.name] = outs[n.name].view();
    }
    Plan(g, fuse).run(e, views, out_views);
    for (int o : g.outputs()) {
      const auto& n = g.node(o);
      std::vector<unsigned char> bytes(outs[n.name].bytes());
      outs[n.name].copy_to_host(bytes.data());
      auto& got = run.got[o];
      for (std::size_t i = 0; i < bytes.size() / size_of(n.dtype); ++i) got.push_back(load_element(n.dtype, bytes.data() + i * size_of(n.dtype)));
    }
    runs.push_back(std::move(run));
  }
  std::vector<std::string> failures;
  for (int o : g.outputs()) {
    const auto& n = g.node(o);
    int bad = 0;
    auto fail = [&](const std::string& what, std::size_t i, double have, const std::string& why) {
      if (!why.empty() && bad++ < 3) failures.push_back(fmt::format("{} {} [{}]: got {}, {}", what, n.name, i, have, why));
    };
    for (std::size_t i = 0; i < smooth[std::size_t(o)].size(); ++i) {
      const double s = smooth[std::size_t(o)][i];
      std::vector<Element> x;
      for (const auto& run : runs) x.push_back({run.model[std::size_t(o)][i], run.f32[std::size_t(o)][i], s});
      fail("fused", i, runs[0].got[o][i], verdict(n, runs[0].got[o][i], x[0], 0));
      if (runs.size() < 2) continue;
      const double have = runs[1].got[o][i];
      fail("unfused", i, have, verdict(n, have, x[1], 0));
      // Fused and unfused round in different places; each is also checked against the other.
      const Element fused_as_ref{runs[0].got[o][i], runs[0].got[o][i], runs[0].got[o][i]};
      if (std::isfinite(x[0].want) && std::isfinite(x[1].want) && std::isfinite(runs[0].got[o][i]))
        fail("unfused", i, have, verdict(n, have, fused_as_ref, 4 * (x[0].sensitivity() + x[1].sensitivity())));
    }
  }
  return failures;
}

}  // namespace kiln::test
