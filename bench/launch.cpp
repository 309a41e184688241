// Launch-cost benchmark driver: 1000 dependent tiny elementwise kernels (x + 1 on one element,
// a plan with fusion off), run kernel by kernel, replayed as a CUDA graph, and called op by op
// through kiln::call_into; for each path the GPU time per kernel (events) and the host time per
// kernel (the calls alone, before the GPU is waited for). Then a plan of 20 small kernels
// replayed with new buffers on every call: host and GPU time per replay. Prints one JSON object
// for bench/run.py, which times PyTorch's eager and CUDA-graph equivalents beside it.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <kiln/kiln.hpp>

#include "bench/common.hpp"

namespace {

// Median microseconds the host spends in `fn` (one call, the GPU not waited for), over `reps`
// calls, each after the GPU finished the last one (so that a full queue never blocks the host).
double host_us(kiln::Engine& e, const std::function<void()>& fn, int reps = 20) {
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    e.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  e.synchronize();
  std::nth_element(us.begin(), us.begin() + reps / 2, us.end());
  return us[std::size_t(reps / 2)];
}

struct Chain {
  double gpu_ms = 0, host_us = 0;
  bool ok = false;
};

// 20 small kernels (a chain of unfused elementwise ops on 4096 floats) replayed with a new set
// of input and output buffers on every call: what a loop over batches does.
std::string replay_new_buffers(kiln::Engine& e) {
  constexpr int kKernels = 20, kSets = 4;
  kiln::Graph g;
  kiln::Value t = g.input("x", {4096}, kiln::DType::f32);
  for (int i = 0; i < kKernels; ++i) t = i % 2 ? t * 0.5 : t + 2.0;
  g.output(t, "y");
  const kiln::Plan plan(g, false);
  std::vector<float> host(4096);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = float(i % 97);
  std::vector<kiln::Tensor> ins, outs;
  for (int s = 0; s < kSets; ++s) {
    ins.push_back(e.from_host({4096}, kiln::DType::f32, host.data()));
    outs.push_back(e.empty({4096}, kiln::DType::f32));
  }
  int call = 0;
  auto replay = [&] {
    const int s = call++ % kSets;
    plan.replay(e, {{"x", ins[std::size_t(s)].view()}}, {{"y", outs[std::size_t(s)].view()}});
  };
  const double replay_host_us = host_us(e, replay, 40);
  const double gpu_us = kiln::bench::per_call_us(e, replay);
  bool ok = true;
  for (int s = 0; s < kSets; ++s) {
    std::vector<float> y(4096);
    outs[std::size_t(s)].copy_to_host(y.data());
    for (std::size_t i = 0; i < y.size(); ++i) {
      double v = host[i];
      for (int k = 0; k < kKernels; ++k) v = k % 2 ? v * 0.5 : v + 2.0;
      ok = ok && y[i] == float(v);
    }
  }
  return fmt::format(
      "{{\"kernels\": {}, \"buffer_sets\": {}, \"host_us_per_replay\": {:.2f}, "
      "\"gpu_us_per_replay\": {:.2f}, "
      "\"check\": \"{}\"}}",
      kKernels, kSets, replay_host_us, gpu_us, ok ? "ok" : "FAIL");
}

int run() {
  constexpr int kKernels = 1000;
  kiln::Engine e;
  kiln::Graph g;
  kiln::Value t = g.input("x", {1}, kiln::DType::f32);
  for (int i = 0; i < kKernels; ++i) t = t + 1.0;
  g.output(t, "y");
  const kiln::Plan plan(g, false);
  const float x = 0.5f;
  kiln::Tensor in = e.from_host({1}, kiln::DType::f32, &x);
  kiln::Tensor out = e.empty({1}, kiln::DType::f32);
  const std::map<std::string, kiln::TensorView> ins = {{"x", in.view()}};
  const std::map<std::string, kiln::TensorView> outs = {{"y", out.view()}};
  auto check = [&](const kiln::Tensor& last) {
    float y = 0;
    last.copy_to_host(&y);
    return y == 1000.5f;  // every step exact in f32
  };
  auto timed = [&](const std::function<void()>& fn, const kiln::Tensor& last) {
    Chain c;
    c.gpu_ms = e.time_median_ms(fn, 2, 20);
    c.host_us = host_us(e, fn, 10);
    c.ok = check(last);
    out.fill_bytes(0xff);
    return c;
  };
  const Chain run = timed([&] { plan.run(e, ins, outs); }, out);
  const Chain replay = timed([&] { plan.replay(e, ins, outs); }, out);
  // The same chain op by op through the eager API (two buffers in turn).
  kiln::Tensor tmp = e.empty({1}, kiln::DType::f32);
  const Chain eager = timed(
      [&] {
        kiln::call_into(e, "add", out, {in.view(), 1.0});
        for (int i = 1; i < kKernels; ++i)
          kiln::call_into(e, "add", i % 2 ? tmp : out, {i % 2 ? out : tmp, 1.0});
      },
      kKernels % 2 == 0 ? tmp : out);  // the buffer the last add wrote
  const bool ok = run.ok && replay.ok && eager.ok;
  auto per = [&](const char* path, const Chain& c) {
    return fmt::format("\"{}_us_per_kernel\": {:.3f}, \"{}_host_us_per_kernel\": {:.3f}", path,
                       c.gpu_ms * 1e3 / kKernels, path, c.host_us / kKernels);
  };
  fmt::print(
      "{{\"launch\": {{\"kernels\": {}, {}, {}, {}, \"check\": \"{}\", \"replay20\": {}}}}}\n",
      kKernels, per("run", run), per("replay", replay), per("eager", eager), ok ? "ok" : "FAIL",
      replay_new_buffers(e));
  return ok ? 0 : 1;
}

}  // namespace

int main(int, char** argv) {
  return kiln::bench::guarded(argv[0], [&] { return run(); });
}
