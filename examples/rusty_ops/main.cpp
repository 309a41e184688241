// rusty_ops: the backend op set of seed 003 (RustyGradients) on kiln, each op at 1K, 16K, 256K
// and 1M elements in f32, f16 and bf16: called op by op through kiln's eager API (kiln::call_into;
// relu_backward, a where over a comparison, as a plan run) and as a one-op plan replayed. Each
// output is checked against an fp64 reference of the op computed here from the stored inputs;
// timings print as JSON lines (bench/rusty_ops.py puts PyTorch beside them). Row ops (softmax,
// layernorm) take rows of 1024; sum reduces every element. With --offline (or no GPU) it compiles
// the kernels for --arch instead.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <kiln/kiln.hpp>
#include <numeric>
#include <random>

#include "../common/seed_app.hpp"

namespace {

using kiln::DType;
using Values = std::vector<double>;
using seed_app::per_call_us;
using seed_app::values_of;

constexpr std::int64_t kCols = 1024;
const std::vector<std::int64_t> kSizes = {1 << 10, 1 << 14, 1 << 18, 1 << 20};
const std::vector<DType> kDTypes = {DType::f32, DType::f16, DType::bf16};

// One op of the set: its kiln form (a catalog op and its scalar arguments, or a graph), which
// inputs it takes (x in [-2, 2], p in [0.5, 2], the norm's weight and bias) and its reference.
struct Op {
  std::string name;
  std::string catalog;          ///< the kiln op; empty: `graph` builds it
  std::vector<char> inputs;     ///< 'x', 'p', 'w', 'b', in the kiln op's order
  std::vector<double> scalars;  ///< after the inputs
  kiln::Attrs attrs;
  std::function<double(double, double)> ref;  ///< elementwise: on (first input, second input)
};

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

const std::vector<Op>& op_set() {
  static const std::vector<Op> ops = {
      {"add", "add", {'x', 'p'}, {}, {}, [](double a, double b) { return a + b; }},
      {"sub", "sub", {'x', 'p'}, {}, {}, [](double a, double b) { return a - b; }},
      {"mul", "mul", {'x', 'p'}, {}, {}, [](double a, double b) { return a * b; }},
      {"div", "div", {'x', 'p'}, {}, {}, [](double a, double b) { return a / b; }},
      {"relu", "relu", {'x'}, {}, {}, [](double a, double) { return a < 0 ? 0.0 : a; }},
      {"relu_backward", "", {'x', 'p'}, {}, {}, [](double a, double g) { return a > 0 ? g : 0.0; }},
      {"sigmoid",
       "sigmoid",
       {'x'},
       {},
       {},
       [](double a, double) { return 1 / (1 + std::exp(-a)); }},
      {"gelu", "gelu", {'x'}, {}, {}, [](double a, double) { return gelu(a); }},
      {"exp", "exp", {'x'}, {}, {}, [](double a, double) { return std::exp(a); }},
      {"log", "log", {'p'}, {}, {}, [](double a, double) { return std::log(a); }},
      {"powf", "pow", {'p'}, {1.5}, {}, [](double a, double) { return std::pow(a, 1.5); }},
      {"softmax", "softmax", {'x'}, {}, {}, nullptr},
      {"layernorm", "layer_norm", {'x', 'w', 'b'}, {}, {}, nullptr},
      {"sum", "sum", {'x'}, {}, {{"axis", "all"}}, nullptr},
      {"fill", "fill", {'x'}, {0.5}, {}, [](double, double) { return 0.5; }},
      {"copy", "copy", {'x'}, {}, {}, [](double a, double) { return a; }},
      {"scalar_mul", "mul", {'x'}, {1.5}, {}, [](double a, double) { return a * 1.5; }},
      {"scalar_add", "add", {'x'}, {1.5}, {}, [](double a, double) { return a + 1.5; }},
  };
  return ops;
}

kiln::Shape shape_of(char input, std::int64_t n) {
  return input == 'w' || input == 'b' ? kiln::Shape{kCols} : kiln::Shape{n / kCols, kCols};
}

// The op as a one-node graph (relu_backward: where(x > 0, g, 0), fused into one kernel).
kiln::Graph graph_of(const Op& op, std::int64_t n, DType t) {
  kiln::Graph g;
  std::vector<kiln::GraphArg> args;
  for (char c : op.inputs) args.push_back(g.input(std::string(1, c), shape_of(c, n), t));
  if (op.catalog.empty()) {
    const kiln::Value x = std::get<kiln::Value>(args[0]), grad = std::get<kiln::Value>(args[1]);
    g.output(kiln::cast(kiln::where(kiln::gt(x, 0.0), grad, 0.0), t), "out");
    return g;
  }
  for (double s : op.scalars) args.emplace_back(s);
  g.output(g.add(op.catalog, args, op.attrs), "out");
  return g;
}

// The op's fp64 result on the stored inputs.
Values reference(const Op& op, const std::map<char, Values>& in, std::int64_t n) {
  const Values& x = in.at(op.inputs[0]);
  Values out;
  if (op.ref) {
    const Values* y = op.inputs.size() > 1 ? &in.at(op.inputs[1]) : nullptr;
    for (std::int64_t i = 0; i < n; ++i)
      out.push_back(op.ref(x[std::size_t(i)], y ? (*y)[std::size_t(i)] : 0.0));
    return out;
  }
  if (op.name == "sum") {
    double s = 0;
    for (double v : x) s += v;
    return {s};
  }
  for (std::int64_t r = 0; r < n / kCols; ++r) {
    const double* row = &x[std::size_t(r * kCols)];
    double a = 0, b = 0;
    if (op.name == "softmax") {
      a = *std::max_element(row, row + kCols);
      for (std::int64_t c = 0; c < kCols; ++c) b += std::exp(row[c] - a);
      for (std::int64_t c = 0; c < kCols; ++c) out.push_back(std::exp(row[c] - a) / b);
      continue;
    }
    for (std::int64_t c = 0; c < kCols; ++c) a += row[c] / kCols;  // layernorm: mean, variance
    for (std::int64_t c = 0; c < kCols; ++c) b += (row[c] - a) * (row[c] - a) / kCols;
    for (std::int64_t c = 0; c < kCols; ++c)
      out.push_back((row[c] - a) / std::sqrt(b + 1e-5) * in.at('w')[std::size_t(c)] +
                    in.at('b')[std::size_t(c)]);
  }
  return out;
}

std::vector<unsigned char> random_of(DType t, std::int64_t n, double lo, double hi,
                                     std::mt19937_64& rng) {
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<unsigned char> h(std::size_t(n) * kiln::size_of(t));
  for (std::int64_t i = 0; i < n; ++i)
    kiln::store_element(t, d(rng), &h[std::size_t(i) * kiln::size_of(t)]);
  return h;
}

// The worst error of `got` against `want`, each relative to max(|want|, `floor`).
double worst_error(const Values& got, const Values& want, double floor) {
  double worst = got.size() == want.size() ? 0 : INFINITY;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double e = std::fabs(got[i] - want[i]) / std::max(std::fabs(want[i]), floor);
    worst = std::max(worst, std::isnan(e) ? INFINITY : e);
  }
  return worst;
}

int run_op(kiln::Engine& e, const Op& op, std::int64_t n, DType t, std::mt19937_64& rng) {
  std::map<char, std::vector<unsigned char>> host;
  std::map<char, Values> values;
  std::map<char, kiln::Tensor> dev;
  std::map<std::string, kiln::TensorView> in;
  for (char c : op.inputs) {
    const kiln::Shape s = shape_of(c, n);
    host[c] = c == 'x' ? random_of(t, kiln::numel_of(s), -2, 2, rng)
                       : random_of(t, kiln::numel_of(s), 0.5, 2, rng);
    values[c] = values_of(t, host[c]);
    dev.emplace(c, e.from_host(s, t, host[c].data()));
    in[std::string(1, c)] = dev.at(c).view();
  }
  const kiln::Graph g = graph_of(op, n, t);
  const kiln::Plan plan(g);
  kiln::Tensor out = e.empty(g.node(g.outputs().at(0)).shape, t);
  std::vector<kiln::Operand> args;
  for (char c : op.inputs) args.emplace_back(dev.at(c).view());
  for (double s : op.scalars) args.emplace_back(s);
  const std::function<void()> eager =
      op.catalog.empty() ? std::function<void()>([&] {
        plan.run(e, in, {{"out", out.view()}});
      })
                         : [&] { kiln::call_into(e, op.catalog, out.view(), args, op.attrs); };
  const Values want = reference(op, values, n);
  const auto check = [&] {
    std::vector<unsigned char> got(out.bytes());
    out.copy_to_host(got.data());
    double scale = 1;  // a sum's error scales with the sum of magnitudes
    if (op.name == "sum")
      scale = std::accumulate(values['x'].begin(), values['x'].end(), 0.0,
                              [](double s, double v) { return s + std::fabs(v); });
    return worst_error(values_of(t, got), want, op.name == "sum" ? scale : 1.0);
  };
  out.fill_bytes(0xff);
  eager();
  const double err_eager = check();
  out.fill_bytes(0xff);
  plan.replay(e, in, {{"out", out.view()}});
  const double err_replay = check();
  const double eager_us = per_call_us(e, eager);
  const double replay_us = per_call_us(e, [&] { plan.replay(e, in, {{"out", out.view()}}); });
  const double tol = t == DType::f32 ? 1e-5 : t == DType::f16 ? 1e-3 : 8e-3;
  const bool ok = err_eager <= tol && err_replay <= tol;
  fmt::print(
      "{{\"op\": \"{}\", \"dtype\": \"{}\", \"n\": {}, \"eager_us\": {:.2f}, \"replay_us\": "
      "{:.2f}, "
      "\"kernels\": {}, \"err\": {:.2e}, \"check\": \"{}\"}}\n",
      op.name, kiln::name_of(t), n, eager_us, replay_us, plan.kernels(e.arch()).size(),
      std::max(err_eager, err_replay), ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rusty_ops: seed 003's backend op set on kiln, op by op and replayed", "rusty_ops"};
  std::string only;
  app.add_option("--op", only, "Run only this op");
  return seed_app::run_main(
      app, argc, argv,
      [](const std::string& arch) {
        kiln::Engine e = seed_app::offline_engine(arch);
        for (const Op& op : op_set())
          for (DType t : kDTypes)
            for (std::int64_t n : kSizes) seed_app::compile(e, graph_of(op, n, t));
        return seed_app::print_kernels(e);
      },
      [&](kiln::Engine& e) {
        std::mt19937_64 rng(3);
        int status = 0;
        for (const Op& op : op_set())
          if (only.empty() || op.name == only)
            for (DType t : kDTypes)
              for (std::int64_t n : kSizes) status |= run_op(e, op, n, t, rng);
        return status;
      });
}
