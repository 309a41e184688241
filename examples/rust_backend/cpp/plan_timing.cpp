// The C++ side of examples/rust_backend's timing: each graph file given (written by the Rust
// example) as a plan run and replayed from C++ on device memory, the host time of one call
// timed as the Rust side times it. Prints "<file stem> <run_us> <replay_us>" per graph.
// Usage: rust_backend_cpp_timing REPS GRAPH.json...
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <kiln/kiln.hpp>
#include <string>
#include <vector>

namespace {

// Median microseconds the host spends in one call of `fn`, each after the GPU finished the last.
double host_us(kiln::Engine& e, const std::function<void()>& fn, int reps) {
  for (int i = 0; i < 5; ++i) fn();
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fmt::print(stderr, "usage: {} REPS GRAPH.json...\n", argv[0]);
    return 2;
  }
  try {
    const int reps = std::max(1, std::stoi(argv[1]));
    kiln::Engine e;
    for (int i = 2; i < argc; ++i) {
      const kiln::Graph g = kiln::Graph::load(argv[i]);
      const kiln::Plan plan(g);
      std::vector<kiln::Tensor> keep;
      std::map<std::string, kiln::TensorView> in, out;
      for (const auto& n : g.nodes())
        if (n.op == "input") {
          keep.push_back(e.empty(n.shape, n.dtype));
          keep.back().fill_bytes(0x3c);  // small positive floats: log and pow stay finite
          in[n.name] = keep.back().view();
        }
      for (int id : g.outputs()) {
        keep.push_back(e.empty(g.node(id).shape, g.node(id).dtype));
        out[g.node(id).name] = keep.back().view();
      }
      const double run = host_us(
          e, [&] { plan.run(e, in, out); }, reps);
      const double replay = host_us(
          e, [&] { plan.replay(e, in, out); }, reps);
      fmt::print("{} {:.3f} {:.3f}\n", std::filesystem::path(argv[i]).stem().string(), run, replay);
    }
  } catch (const std::exception& ex) {
    fmt::print(stderr, "rust_backend_cpp_timing: {}\n", ex.what());
    return 1;
  }
  return 0;
}
