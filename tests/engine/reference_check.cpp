// Runs a graph's plan on the GPU and checks its outputs against the plan's fp64 model
// (reference.cpp), within each dtype's tolerance plus the model's sensitivity to f32 rounding.
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "tests/engine/reference.hpp"
#include "tests/support.hpp"

namespace kiln::test {

namespace {

double tolerance(DType t) {
  return t == DType::f32 ? 2e-5 : t == DType::f16 ? 2e-3 : is_integer(t) ? 0 : 1.6e-2;
}

// A plan's model, and what its GPU run wrote per output node.
struct PlanRun : PlanModel {
  std::map<int, std::vector<double>> got;
};

// Why `have` is not acceptable for element i of output o, or "". `slack` is added to the
// tolerance (the sensitivity, and the distance to an fp64 model of another plan).
std::string verdict(const Graph::Node& n, double have, double want, double slack, bool edge) {
  if (!std::isfinite(want) || edge) {
    // NaN or infinite in every reference alike: the GPU must agree exactly. Otherwise (edge)
    // the element sits on the edge of overflow or of a domain, and any value is acceptable.
    if (edge) return "";
    if (std::isnan(want)) return std::isnan(have) ? "" : "want NaN";
    return have == want ? "" : fmt::format("want {}", want);
  }
  // Outputs are poisoned with NaN before the run: a NaN where a number belongs may be an
  // element the kernel never wrote.
  if (std::isnan(have))
    return fmt::format("want {} (NaN: computed, or an element never written)", want);
  if (!std::isfinite(have)) return fmt::format("want {}", want);
  const double scale =
      std::max(std::fabs(want), n.op == "softmax" ? 1.0 / double(n.shape.back()) : 1.0);
  const double limit = tolerance(n.dtype) * scale + slack;
  return std::fabs(have - want) <= limit ? ""
                                         : fmt::format("want {} (tolerance {:.3g})", want, limit);
}

// Where the element of row-major index `i` of `v` is, in elements from its start.
std::size_t element_offset(const TensorView& v, std::size_t i) {
  if (v.strides.empty()) return i;
  std::int64_t at = 0, rest = std::int64_t(i);
  for (std::size_t d = v.shape.size(); d-- > 0;) {
    at += rest % v.shape[d] * v.strides[d];
    rest /= v.shape[d];
  }
  return std::size_t(at);
}

}  // namespace

HostInputs random_inputs(const Graph& g, std::mt19937_64& rng) {
  HostInputs host;
  for (const auto& n : g.nodes())
    if (n.op == "input")
      host[n.name] = random_bytes(n.dtype, std::size_t(numel_of(n.shape)), -3, 3, rng);
  return host;
}

std::vector<std::string> check_on_gpu(Engine& e, const Graph& g, std::mt19937_64& rng, bool unfused,
                                      const Plan* plan, bool plan_order) {
  return check_inputs_on_gpu(e, g, random_inputs(g, rng), unfused, plan, plan_order);
}

DeviceInputs upload(Engine& e, const Graph& g, const HostInputs& host) {
  DeviceInputs d;
  for (const auto& n : g.nodes())
    if (n.op == "input") {
      d.tensors[n.name] = e.from_host(n.shape, n.dtype, host.at(n.name).data());
      d.views[n.name] = d.tensors[n.name].view();
    }
  return d;
}

std::vector<std::string> check_inputs_on_gpu(Engine& e, const Graph& g, const HostInputs& host,
                                             bool unfused, const Plan* plan, bool plan_order) {
  const DeviceInputs dev = upload(e, g, host);
  const std::map<std::string, TensorView>& views = dev.views;
  std::vector<PlanRun> runs;
  for (bool fuse : {true, false}) {
    if (!fuse && !unfused) break;
    PlanRun run{model_plan(g, host, fuse), {}};
    std::optional<Plan> own;
    const Plan& p = plan && fuse ? *plan : own.emplace(g, fuse);
    const auto order = plan_order ? p.outputs(views) : std::map<std::string, TensorView>{};
    std::map<std::string, Tensor> outs;
    std::map<std::string, TensorView> out_views;
    for (int o : g.outputs()) {
      const auto& n = g.node(o);
      outs[n.name] = e.empty(n.shape, n.dtype);
      outs[n.name].fill_bytes(0xff);  // NaN in every float dtype: a skipped element shows
      out_views[n.name] = outs[n.name].view();
      if (plan_order) out_views[n.name].strides = order.at(n.name).strides;  // dense, permuted
    }
    p.run(e, views, out_views);
    for (int o : g.outputs()) {
      const auto& n = g.node(o);
      std::vector<unsigned char> bytes(outs[n.name].bytes());
      outs[n.name].copy_to_host(bytes.data());
      auto& got = run.got[o];
      for (std::size_t i = 0; i < bytes.size() / size_of(n.dtype); ++i)
        got.push_back(load_element(
            n.dtype, bytes.data() + element_offset(out_views[n.name], i) * size_of(n.dtype)));
    }
    runs.push_back(std::move(run));
  }
  std::vector<std::string> failures;
  for (int o : g.outputs()) {
    const auto& n = g.node(o);
    int bad = 0;
    auto fail = [&](const char* what, std::size_t i, double have, const std::string& why) {
      if (!why.empty() && bad++ < 3)
        failures.push_back(fmt::format("{} {} [{}]: got {}, {}", what, n.name, i, have, why));
    };
    auto edge = [&](const PlanRun& r, std::size_t i) {
      const double want = r.model[std::size_t(o)][i];
      for (const auto& j : r.jittered) {
        const double v = j[std::size_t(o)][i];
        if (std::isnan(v) != std::isnan(want) ||
            (!std::isnan(v) && std::isinf(v) != std::isinf(want)))
          return true;
      }
      return false;
    };
    for (const PlanRun& r : runs)  // a model the plan's kernels left empty would check nothing
      if (r.model[std::size_t(o)].size() != r.got.at(o).size())
        failures.push_back(fmt::format("{}: the model has {} values, the GPU wrote {}", n.name,
                                       r.model[std::size_t(o)].size(), r.got.at(o).size()));
    for (std::size_t i = 0; i < runs[0].model[std::size_t(o)].size(); ++i) {
      const PlanRun& f = runs[0];
      const double fused = f.got.at(o)[i];
      fail("fused", i, fused,
           verdict(n, fused, f.model[std::size_t(o)][i], 4 * f.sensitivity(o, i), edge(f, i)));
      if (runs.size() < 2) continue;
      const PlanRun& u = runs[1];
      const double have = u.got.at(o)[i];
      fail("unfused", i, have,
           verdict(n, have, u.model[std::size_t(o)][i], 4 * u.sensitivity(o, i), edge(u, i)));
      // Fused and unfused round in different places: their models differ by that much.
      const double apart = std::fabs(f.model[std::size_t(o)][i] - u.model[std::size_t(o)][i]);
      if (std::isfinite(fused) && std::isfinite(apart))
        fail("unfused vs fused", i, have,
             verdict(n, have, fused, apart + 4 * (f.sensitivity(o, i) + u.sensitivity(o, i)),
                     edge(f, i) || edge(u, i)));
    }
  }
  return failures;
}

std::vector<std::string> model_differences(const Graph& g, std::mt19937_64& rng, double epsilon) {
  const HostInputs inputs = random_inputs(g, rng);
  const std::vector<std::vector<double>> exact = evaluate(g, inputs);
  std::vector<std::string> out;
  for (bool fused : {true, false}) {
    const std::vector<std::vector<double>> model = evaluate_plan(g, inputs, fused);
    for (int o : g.outputs()) {
      const auto& m = model[std::size_t(o)];
      const auto& x = exact[std::size_t(o)];
      if (m.size() != x.size()) {
        out.push_back(fmt::format("{} {}: {} values, the exact evaluation has {}",
                                  fused ? "fused" : "unfused", g.node(o).name, m.size(), x.size()));
        continue;
      }
      for (std::size_t i = 0; i < x.size() && out.size() < 8; ++i)
        if (!(std::fabs(m[i] - x[i]) <= epsilon * std::max(1.0, std::fabs(x[i]))))
          out.push_back(fmt::format("{} {} [{}]: model {}, exact {}", fused ? "fused" : "unfused",
                                    g.node(o).name, i, m[i], x[i]));
    }
  }
  return out;
}

}  // namespace kiln::test
