// kiln_fuzz: differential fuzzing of fused graphs.
//   --compile-only: build, fuse, plan and NVRTC-compile every kernel (no GPU; CI runs this).
//   otherwise: run on the GPU, compare fused and unfused outputs with the fp64 reference.
// A failure prints its seed and graph, is shrunk, and is written to --regressions DIR.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <kiln/kiln.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <typeinfo>

#include "engine/exec/engine_impl.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "tests/engine/reference.hpp"
#include "tests/fuzz/generator.hpp"
#include "tests/fuzz/shrink.hpp"
#include "tests/support.hpp"
#include "tools/npy.hpp"

namespace {

volatile std::sig_atomic_t g_stop = 0;  // SIGTERM/SIGINT: finish the graphs under way, then report
extern "C" void on_stop(int) { g_stop = 1; }

struct Options {
  std::string seeds = "0:500";
  bool compile_only = false;
  std::string arch = "sm_90a";
  int jobs = 2;
  std::string regressions;
  bool shrink = true;
  std::vector<std::string> with;  ///< check only graphs with one of these ops
};

// Whether `g` has a node of one of `ops` (every graph when `ops` is empty).
bool has_any(const kiln::Graph& g, const std::vector<std::string>& ops) {
  if (ops.empty()) return true;
  for (const auto& n : g.nodes())
    if (std::find(ops.begin(), ops.end(), n.op) != ops.end()) return true;
  return false;
}

// Input views of odd layouts for compile-only runs: contiguous, one element past an aligned
// address (no 16-byte packs), or the last two dims transposed (no coalescing, no packs).
std::map<std::string, kiln::TensorView> random_views(const kiln::Graph& g, std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5eedull);
  std::map<std::string, kiln::TensorView> views;
  for (const auto& n : g.nodes()) {
    if (n.op != "input") continue;
    kiln::TensorView v;
    v.shape = n.shape;
    v.dtype = n.dtype;
    v.data = 0x100000;
    const int kind = int(rng() % 3);
    if (kind == 1) v.data += kiln::size_of(n.dtype);
    if (kind == 2 && n.shape.size() >= 2) {
      const std::size_t r = n.shape.size();
      v.strides = kiln::contiguous_strides(n.shape);
      v.strides[r - 1] = n.shape[r - 2];  // element (i, j) of each matrix at j * rows + i
      v.strides[r - 2] = 1;
    }
    views[n.name] = v;
  }
  return views;
}

// Why `g` fails, or an empty string.
std::string check(kiln::Engine& e, const kiln::Graph& g, std::uint64_t seed, bool compile_only) {
  try {
    if (compile_only) {
      kiln::Plan(g).compile(e);
      for (const auto& spec : kiln::plan_specs(g, true, random_views(g, seed), nullptr, e.arch()))
        kiln::detail::impl_of(e).prepare(spec);
      return "";
    }
    std::mt19937_64 rng(seed);
    const auto failures = kiln::test::check_on_gpu(e, g, rng, true);
    return failures.empty() ? "" : failures.front();
  } catch (const std::exception& ex) {
    return fmt::format("threw {}: {}", typeid(ex).name(), ex.what());
  }
}

// Writes the inputs check() draws for `g` and `seed` as `<stem>-<input>.npy` (`kiln run` reads
// them; bf16 as uint16 bits); returns what it wrote. The outputs were poisoned with NaN: a
// NaN reported where a number belongs may be an element the kernel never wrote.
std::string save_inputs(const kiln::Graph& g, std::uint64_t seed, const std::string& stem) {
  std::mt19937_64 rng(seed);
  std::string said;
  for (const auto& [name, bytes] : kiln::test::random_inputs(g, rng)) {
    const auto& n = g.node(g.find(name));
    const std::string path = fmt::format("{}-{}.npy", stem, name);
    kiln::tools::write_npy(path, {n.shape, n.dtype, bytes});
    said += fmt::format("fuzz: seed {} input {} written to {}\n", seed, name, path);
  }
  return said;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kiln_fuzz: differential fuzzing of fused graphs"};
  Options o;
  app.add_option("--seeds", o.seeds, "Seed range A:B (B excluded)")->capture_default_str();
  app.add_flag("--compile-only", o.compile_only, "Plan and NVRTC-compile only; no GPU");
  app.add_option("--arch", o.arch, "Arch for --compile-only")->capture_default_str();
  app.add_option("-j,--jobs", o.jobs, "Threads, each with its own engine (and stream on the GPU)")
      ->capture_default_str();
  app.add_option("--regressions", o.regressions, "Write shrunk failing graphs here");
  app.add_flag("!--no-shrink", o.shrink, "Do not shrink failures");
  app.add_option("--with", o.with,
                 "Check only the seeds whose graph has one of these ops (comma-separated); the "
                 "others count as done, unchecked")
      ->delimiter(',');
  bool print_graphs = false;
  app.add_flag("--print", print_graphs, "Print each seed's graph (JSON, a line each) and stop");
  CLI11_PARSE(app, argc, argv);
  std::uint64_t first = 0, last = 0;
  if (std::sscanf(o.seeds.c_str(), "%lu:%lu", &first, &last) != 2 || last <= first) {
    fmt::print(stderr, "kiln_fuzz: --seeds '{}': expected A:B with A < B\n", o.seeds);
    return 2;
  }
  if (print_graphs) {
    for (std::uint64_t seed = first; seed < last; ++seed)
      fmt::print("{} {}\n", seed, kiln::fuzz::random_graph(seed).to_json());
    return 0;
  }
  ::setenv("KILN_LOG_LEVEL", "error", 0);
  std::signal(SIGTERM, on_stop);
  std::signal(SIGINT, on_stop);
  kiln::test::TempDir shared_cache;  // GPU runs: the workers share compiled kernels
  std::atomic<std::uint64_t> next{first}, done{0}, checked{0};
  std::atomic<int> failures{0};
  std::mutex print;
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto say = [&](const std::string& text) {
    std::lock_guard<std::mutex> lock(print);
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);  // a run cut short by a timeout still shows what it found
  };
  // What each worker is on, for the watchdog: a graph that runs long, or is under way when
  // the run is stopped, is named (a killed process would otherwise leave no trace of it).
  struct Busy {
    std::atomic<long long> seed{-1};
    std::atomic<double> since{0};
  };
  std::vector<Busy> busy(std::size_t(std::max(1, o.jobs)));
  std::atomic<int> next_slot{0};
  auto work = [&](kiln::Engine& e) {
    Busy& me = busy[std::size_t(next_slot++)];
    for (std::uint64_t seed; !g_stop && (seed = next++) < last; me.seed = -1) {
      me.since = seconds();
      me.seed = static_cast<long long>(seed);
      const kiln::Graph g = kiln::fuzz::random_graph(seed);
      const bool wanted = has_any(g, o.with);
      const std::string why = wanted ? check(e, g, seed, o.compile_only) : "";
      checked += wanted;
      if (const auto n = ++done; n % 250 == 0)
        say(fmt::format("fuzz: {}/{} graphs, {} failures, {:.0f} s\n", n, last - first,
                        failures.load(), seconds()));
      if (why.empty()) continue;
      ++failures;
      say(fmt::format("fuzz: seed {} FAILED: {}\n{}", seed, why.substr(0, why.find('\n')),
                      g.to_json()));
      if (!o.regressions.empty()) {
        std::ofstream(fmt::format("{}/seed-{}-full.json", o.regressions, seed)) << g.to_json();
        if (!o.compile_only)
          say(save_inputs(g, seed, fmt::format("{}/seed-{}-full", o.regressions, seed)));
      }
      if (!o.shrink) continue;
      // A smaller graph counts only if it fails the same way (a wrong value, or a throw of the
      // same error), not merely by becoming a graph the engine rightly refuses. At most 2 min.
      const bool threw = why.rfind("threw ", 0) == 0;
      const std::string kind = threw ? why.substr(0, why.find(':')) : "";
      const double deadline = seconds() + 120;
      std::string last_why = why;
      const auto fails = [&](const kiln::Graph& c) {
        if (g_stop || seconds() > deadline) return false;  // stopping: report what was found so far
        const std::string w = check(e, c, seed, o.compile_only);
        const bool same =
            !w.empty() && (threw ? w.rfind(kind + ":", 0) == 0 : w.rfind("threw ", 0) != 0);
        if (same) last_why = w;
        return same;
      };
      const std::string small = kiln::fuzz::shrink(g.to_json(), fails);
      say(fmt::format("fuzz: seed {} shrunk: {}\n{}", seed, last_why.substr(0, last_why.find('\n')),
                      small));
      if (!o.regressions.empty()) {
        std::ofstream(fmt::format("{}/seed-{}.json", o.regressions, seed)) << small;
        if (!o.compile_only)
          say(save_inputs(kiln::Graph::parse(small), seed,
                          fmt::format("{}/seed-{}", o.regressions, seed)));
      }
    }
  };
  std::string fatal;
  auto worker = [&] {
    try {
      kiln::EngineOptions eo = o.compile_only ? kiln::test::offline(o.arch) : kiln::EngineOptions{};
      if (!o.compile_only) eo.cache_dir = shared_cache.path();
      kiln::Engine e(eo);
      work(e);
    } catch (const std::exception& ex) {
      std::lock_guard<std::mutex> lock(print);
      fatal = ex.what();
      next = last;  // stop the others
    }
  };
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    std::vector<long long> warned(busy.size(), -1);
    bool stop_reported = false;
    while (!finished) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      for (std::size_t i = 0; i < busy.size(); ++i) {
        const long long seed = busy[i].seed;
        const double age = seconds() - busy[i].since;
        if (seed < 0) continue;
        if ((g_stop && !stop_reported) || (age > 60 && warned[i] != seed)) {
          say(fmt::format("fuzz: seed {} {} for {:.0f} s\n", seed,
                          g_stop ? "under way when stopped, running" : "still running", age));
          warned[i] = seed;
        }
      }
      stop_reported = stop_reported || g_stop;
    }
  });
  std::vector<std::thread> pool;
  for (int j = 1; j < o.jobs; ++j) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  finished = true;
  watchdog.join();
  if (!fatal.empty()) {
    fmt::print(stderr, "kiln_fuzz: {}\n", fatal);
    return 2;
  }
  if (done < last - first)
    fmt::print("fuzz: stopped early, after {} of {} graphs\n", done.load(), last - first);
  fmt::print("fuzz: {} graphs in {:.0f} s\n", done.load(), seconds());
  if (!o.with.empty())
    fmt::print("fuzz: {} of the {} graphs have {} and were checked\n", checked.load(),
               done.load(), fmt::join(o.with, " or "));
  fmt::print("fuzz: {} graphs, {} failures\n", done.load(), failures.load());
  return failures ? 1 : 0;
}
