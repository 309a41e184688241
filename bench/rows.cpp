// Row-op benchmark driver (softmax, norms, reductions over the last axis, a fused
// softmax(x*0.125 + mask), and cumsum): times kiln's plan, checks a sample of rows against the fp64
// reference, prints one JSON object a line for bench/run.py.
#include <fmt/format.h>

#include <cmath>
#include <kiln/kiln.hpp>
#include <map>
#include <random>

#include "bench/common.hpp"
#include "ops/op.hpp"

namespace {

struct Workload {
  const char* name;  // also the key bench/run.py uses for PyTorch
  const char* op;
  std::int64_t rows, cols;
  kiln::DType dtype;
  bool masked;  // x*0.125 + mask prologue
  std::int64_t axis = -1;
};

// The workload as a graph: inputs x, and mask, w, b where it takes them.
kiln::Graph workload_graph(const Workload& w) {
  kiln::Graph g;
  const kiln::DType t = w.dtype;
  auto gx = g.input("x", {w.rows, w.cols}, t);
  kiln::Value v = gx;
  if (w.masked) v = gx * 0.125 + g.input("mask", {w.cols}, t);
  std::vector<kiln::GraphArg> args = {v};
  const std::string op = w.op;
  if (op == "layer_norm" || op == "rms_norm") args.push_back(g.input("w", {w.cols}, t));
  if (op == "layer_norm") args.push_back(g.input("b", {w.cols}, t));
  kiln::Attrs a;
  if (w.axis != -1) a.set("axis", w.axis);
  g.output(kiln::apply(w.op, args, a));
  return g;
}

}  // namespace

// kiln_bench_rows [--save-graphs DIR]: the latter writes each workload's graph to DIR (for
// `kiln tune`) instead of timing.
int run(int argc, char** argv) {
  using kiln::DType;
  std::vector<Workload> work;
  for (DType t : {DType::f32, DType::bf16})
    for (auto [R, C] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {32768, 4096}, {65536, 1024}, {4096, 16384}, {1024, 65536}})
      for (const char* op : {"softmax", "layer_norm", "rms_norm"})
        work.push_back({op, op, R, C, t, false});
  work.push_back({"sum", "sum", 32768, 4096, DType::f32, false});
  work.push_back({"sum (first axis)", "sum", 32768, 4096, DType::f32, false, 0});
  work.push_back({"softmax(x*0.125+mask)", "softmax", 32768, 4096, DType::bf16, true});
  for (DType t : {DType::f32, DType::bf16})
    work.push_back({"cumsum", "cumsum", 32768, 4096, t, false});
  if (argc == 3 && std::string(argv[1]) == "--save-graphs") {
    for (std::size_t i = 0; i < work.size(); ++i)
      workload_graph(work[i]).save(fmt::format(
          "{}/rows{:02}_{}{}_{}_{}x{}.json", argv[2], i,
          work[i].masked ? "masked_softmax" : work[i].op, work[i].axis == 0 ? "_axis0" : "",
          kiln::name_of(work[i].dtype), work[i].rows, work[i].cols));
    fmt::print("wrote {} graphs to {}\n", work.size(), argv[2]);
    return 0;
  }

  kiln::Engine e;
  for (const Workload& w : work) {
    const DType t = w.dtype;
    const std::int64_t n = w.rows * w.cols;
    const auto hx = kiln::bench::random_host(t, n, 1), hw = kiln::bench::random_host(t, w.cols, 2),
               hb = kiln::bench::random_host(t, w.cols, 3);
    const auto hm = kiln::bench::random_host(t, w.cols, 4);
    kiln::Tensor x = e.from_host({w.rows, w.cols}, t, hx.data()),
                 wt = e.from_host({w.cols}, t, hw.data()), bt = e.from_host({w.cols}, t, hb.data()),
                 mt = e.from_host({w.cols}, t, hm.data());
    const kiln::Graph g = workload_graph(w);
    const std::map<std::string, kiln::TensorView> all = {
        {"x", x}, {"mask", mt}, {"w", wt}, {"b", bt}};
    std::map<std::string, kiln::TensorView> ins;
    for (const auto& node : g.nodes())
      if (node.op == "input") ins[node.name] = all.at(node.name);
    const auto& out_node = g.node(g.outputs().at(0));
    kiln::Tensor out = e.empty(out_node.shape, t);
    out.fill_bytes(0xff);
    const kiln::Plan plan(g);
    const std::map<std::string, kiln::TensorView> outs = {{out_node.name, out}};
    const double us = kiln::bench::per_call_us(e, [&] { plan.run(e, ins, outs); });

    // Check every 16th row (column, along axis 0) against fp64.
    std::vector<unsigned char> got(out.bytes());
    out.copy_to_host(got.data());
    const auto& op = kiln::ops::find_op(w.op);
    auto at = [&](const std::vector<unsigned char>& h, std::int64_t i) {
      return kiln::load_element(t, h.data() + i * kiln::size_of(t));
    };
    std::vector<double> row(std::size_t(w.cols)), wv(std::size_t(w.cols)), bv(std::size_t(w.cols)),
        ref(std::size_t(w.cols));
    for (std::int64_t c = 0; c < w.cols; ++c)
      wv[std::size_t(c)] = at(hw, c), bv[std::size_t(c)] = at(hb, c);
    double worst = 0;
    if (w.axis == 0) {
      std::vector<double> col(std::size_t(w.rows));
      for (std::int64_t c = 0; c < w.cols; c += 16) {
        for (std::int64_t r = 0; r < w.rows; ++r) col[std::size_t(r)] = at(hx, r * w.cols + c);
        op.row_reference(col.data(), w.rows, nullptr, nullptr, kiln::Attrs{}, ref.data());
        worst = std::max(worst, std::fabs(at(got, c) - ref[0]) / std::max(1.0, std::fabs(ref[0])));
      }
    }
    for (std::int64_t r = 0; r < w.rows && w.axis != 0; r += 16) {
      for (std::int64_t c = 0; c < w.cols; ++c)
        row[std::size_t(c)] =
            w.masked ? at(hx, r * w.cols + c) * 0.125 + at(hm, c) : at(hx, r * w.cols + c);
      op.row_reference(row.data(), w.cols, ins.count("w") ? wv.data() : nullptr,
                       ins.count("b") ? bv.data() : nullptr, kiln::Attrs{}, ref.data());
      const std::int64_t outs_per_row = op.reduces ? 1 : w.cols;
      for (std::int64_t c = 0; c < outs_per_row; ++c) {
        const double want = ref[std::size_t(c)], have = at(got, r * outs_per_row + c);
        const double scale = std::string(w.op) == "softmax"
                                 ? std::max(std::fabs(want), 1.0 / double(w.cols))
                                 : std::max(1.0, std::fabs(want));
        const double err = std::fabs(have - want) / scale;
        if (!(err <= worst)) worst = err;
      }
    }
    const double tol = t == DType::f32 ? 1e-4 : 2e-2;
    const std::size_t bytes = x.bytes() + out.bytes();
    fmt::print(
        "{{\"workload\": \"{}\", \"dtype\": \"{}\", \"numel\": {}, \"shape\": \"{}x{}\", "
        "\"kiln_us\": {:.2f}, \"bytes\": {}, "
        "\"check\": \"{}\", \"max_err\": {:.3g}}}\n",
        w.name, kiln::name_of(t), n, w.rows, w.cols, us, bytes, worst <= tol ? "ok" : "FAIL",
        worst);
    std::fflush(stdout);
  }
  kiln::bench::print_jit_counters(e);
  return 0;
}

int main(int argc, char** argv) {
  return kiln::bench::guarded(argv[0], [&] { return run(argc, argv); });
}
