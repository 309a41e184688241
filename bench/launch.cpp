// Launch-cost benchmark driver: 1000 dependent tiny elementwise kernels (x + 1 on one element,
// a plan with fusion off), run kernel by kernel and replayed as a CUDA graph. Prints one JSON
// object for bench/run.py, which times PyTorch's eager and CUDA-graph equivalents beside it.
#include <fmt/format.h>

#include <kiln/kiln.hpp>

int main() {
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
  fmt::print("{{\"launch\": {{\"kernels\": {}, \"run_us_per_kernel\": {:.3f}, \"replay_us_per_kernel\": {:.3f}, "
             "\"check\": \"{}\"}}}}\n",
             kKernels, run_ms * 1e3 / kKernels, replay_ms * 1e3 / kKernels, run_ok && replay_ok ? "ok" : "FAIL");
  return run_ok && replay_ok ? 0 : 1;
}
