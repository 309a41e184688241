// Launch-cost benchmark driver: 1000 dependent tiny elementwise kernels (x + 1 on one element,
// a plan with fusion off), run kernel by kernel, replayed as a CUDA graph, and called op by op
// through kiln::call_into. Prints one JSON
// object for bench/run.py, which times PyTorch's eager and CUDA-graph equivalents beside it.
#include <fmt/format.h>

#include <kiln/kiln.hpp>

#include "bench/common.hpp"

namespace {

int run() {
  constexpr int kKernels = 1000;
  kiln::Engine e;
  kiln::Graph g;
  kiln::Value t = g.input("x", {1}, kiln::DType::f32);
  for (int i = 0; i < kKernels; ++i) t = t + 1.0;
  g.output(t);
  const kiln::Plan plan(g, false);
  const float x = 0.5f;
  kiln::Tensor in = e.from_host({1}, kiln::DType::f32, &x);
  kiln::Tensor out = e.empty({1}, kiln::DType::f32);
  const std::map<std::string, kiln::TensorView> ins = {{"x", in.view()}};
  const std::map<std::string, kiln::TensorView> outs = {{g.node(t.id()).name, out.view()}};
  auto check = [&] {
    float y = 0;
    out.copy_to_host(&y);
    return y == 1000.5f;  // every step exact in f32
  };
  const double run_ms = e.time_median_ms([&] { plan.run(e, ins, outs); }, 2, 20);
  const bool run_ok = check();
  out.fill_bytes(0xff);
  const double replay_ms = e.time_median_ms([&] { plan.replay(e, ins, outs); }, 2, 20);
  const bool replay_ok = check();
  // The same chain op by op through the eager API (two buffers in turn).
  kiln::Tensor tmp = e.empty({1}, kiln::DType::f32);
  const double eager_ms = e.time_median_ms(
      [&] {
        kiln::call_into(e, "add", out, {in.view(), 1.0});
        for (int i = 1; i < kKernels; ++i) kiln::call_into(e, "add", i % 2 ? tmp : out, {i % 2 ? out : tmp, 1.0});
      },
      2, 20);
  float last = 0;
  (kKernels % 2 == 0 ? tmp : out).copy_to_host(&last);  // the buffer the last add wrote
  const bool eager_ok = last == 1000.5f;
  const bool ok = run_ok && replay_ok && eager_ok;
  fmt::print("{{\"launch\": {{\"kernels\": {}, \"run_us_per_kernel\": {:.3f}, \"replay_us_per_kernel\": {:.3f}, "
             "\"eager_us_per_kernel\": {:.3f}, \"check\": \"{}\"}}}}\n",
             kKernels, run_ms * 1e3 / kKernels, replay_ms * 1e3 / kKernels, eager_ms * 1e3 / kKernels, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int, char** argv) {
  return kiln::bench::guarded(argv[0], [&] { return run(); });
}
