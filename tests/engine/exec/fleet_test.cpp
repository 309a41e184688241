// The fleet acceptance test of the remote cache (issue 53): 8 processes ("machines", each with
// its own disk cache), started together behind a barrier, compile the same 40-kernel plan
// offline against one real redis-server: 40 compiles in all, the rest remote hits; a second
// round of fresh machines compiles none. Counts only: no assertion on a duration, and every
// wait is bounded (leases and timeouts far longer than the work; each child dies by alarm()
// after 5 minutes rather than hang the suite).

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <kiln/graph.hpp>
#include <map>

#include "cache/disk_cache.hpp"
#include "tests/cache/redis_server.hpp"
#include "tests/support.hpp"

namespace {

constexpr int kMachines = 8;
constexpr int kKernels = 40;

// What a machine did, written whole to a pipe (well under PIPE_BUF: one atomic write).
struct Report {
  std::uint64_t kernels = 0, compiles = 0, remote_hits = 0, remote_waits = 0, remote_errors = 0,
                remote_refused = 0;
  bool ok = false;  ///< every kernel came compiled or from the remote; no exception
};

// 40 kernels: output i is a chain of i + 1 fused ops on its own input (one kernel each, its
// generated functor unlike the others').
kiln::Plan plan_of_40() {
  kiln::Graph g;
  for (int i = 0; i < kKernels; ++i) {
    kiln::Value y = g.input("x" + std::to_string(i), {1000 + i}, kiln::DType::f32);
    for (int j = 0; j <= i; ++j) y = j % 2 ? kiln::silu(y) : kiln::exp(y);
    g.output(y, "y" + std::to_string(i));
  }
  return kiln::Plan(g);
}

struct Fds {
  int ready[2], go[2], report[2];
};

// One machine: makes its engine, says it is ready, waits for the barrier, compiles the plan,
// reports and exits (never returns).
[[noreturn]] void machine(const kiln::Plan& plan, const std::string& dir, const Fds& fds) {
  ::alarm(300);
  ::close(fds.ready[0]), ::close(fds.go[1]), ::close(fds.report[0]);
  Report r;
  bool ready = false;
  char c = 1;
  try {
    kiln::Engine e(kiln::test::offline("sm_90a", dir));
    ready = ::write(fds.ready[1], &c, 1) == 1;
    if (::read(fds.go[0], &c, 1) != 1) ::_exit(2);
    const std::vector<kiln::KernelRecord> records = plan.compile(e);
    r.ok = true;
    for (const kiln::KernelRecord& k : records)
      r.ok &= k.source == "compiled" || k.source == "remote";
    const kiln::CacheCounters n = e.counters();
    r = {records.size(),  n.compiles,       n.remote_hits, n.remote_waits,
         n.remote_errors, n.remote_refused, r.ok};
  } catch (...) {
    r.ok = false;
  }
  if (!ready && ::write(fds.ready[1], &c, 1) != 1) ::_exit(3);
  ::_exit(::write(fds.report[1], &r, sizeof r) == sizeof r ? 0 : 4);
}

// A round: kMachines processes in `dirs`, released together; their reports, summed.
Report round(const kiln::Plan& plan, const std::vector<std::string>& dirs) {
  Fds fds;
  REQUIRE(::pipe(fds.ready) == 0);
  REQUIRE(::pipe(fds.go) == 0);
  REQUIRE(::pipe(fds.report) == 0);
  std::vector<pid_t> kids;
  for (const std::string& dir : dirs) {
    const pid_t pid = ::fork();
    if (pid == 0) machine(plan, dir, fds);
    REQUIRE(pid > 0);
    kids.push_back(pid);
  }
  ::close(fds.ready[1]), ::close(fds.go[0]), ::close(fds.report[1]);
  char c;
  for (std::size_t i = 0; i < kids.size(); ++i) REQUIRE(::read(fds.ready[0], &c, 1) == 1);
  const std::string go(kids.size(), 'g');  // the barrier: all are ready, all go at once
  REQUIRE(::write(fds.go[1], go.data(), go.size()) == ssize_t(go.size()));
  Report sum;
  sum.ok = true;
  int reports = 0;
  for (Report r; ::read(fds.report[0], &r, sizeof r) == sizeof r; ++reports) {
    sum.kernels += r.kernels, sum.compiles += r.compiles, sum.remote_hits += r.remote_hits;
    sum.remote_waits += r.remote_waits, sum.remote_errors += r.remote_errors;
    sum.remote_refused += r.remote_refused, sum.ok &= r.ok;
  }
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  ::close(fds.ready[0]), ::close(fds.go[1]), ::close(fds.report[0]);
  CHECK(reports == int(kids.size()));
  return sum;
}

}  // namespace

TEST_CASE("fleet: 8 machines compile a 40-kernel plan against one Redis: 40 compiles in all" *
          doctest::skip(!kiln::test::RedisServer::installed())) {
  if (kiln::test::skip_without_client()) return;
  kiln::test::RedisServer server;
  kiln::test::TempDir tmp;
  const kiln::Plan plan = plan_of_40();
  struct Env {  // the fleet's settings, for the children; generous, so a loaded machine passes
    explicit Env(const std::string& url) {
      ::setenv("KILN_REMOTE_CACHE", url.c_str(), 1);
      ::setenv("KILN_REMOTE_CACHE_TIMEOUT_MS", "10000", 1);
      ::setenv("KILN_REMOTE_CACHE_LEASE_MS", "120000", 1);
    }
    ~Env() {
      for (const char* v :
           {"KILN_REMOTE_CACHE", "KILN_REMOTE_CACHE_TIMEOUT_MS", "KILN_REMOTE_CACHE_LEASE_MS"})
        ::unsetenv(v);
    }
  } env(server.url());
  std::vector<std::string> first, second;
  for (int m = 0; m < kMachines; ++m) {
    first.push_back(tmp.path() + "/first-" + std::to_string(m));
    second.push_back(tmp.path() + "/second-" + std::to_string(m));
  }
  const Report cold = round(plan, first);
  CHECK(cold.ok);
  CHECK(cold.kernels == kMachines * kKernels);
  CHECK(cold.compiles == kKernels);  // each kernel once across the fleet
  CHECK(cold.remote_hits == (kMachines - 1) * kKernels);
  CHECK(cold.remote_errors == 0);
  CHECK(cold.remote_refused == 0);
  MESSAGE("cold round: " << cold.compiles << " compiles, " << cold.remote_hits << " remote hits, "
                         << cold.remote_waits << " of them after a wait");
  // Every machine holds the same 40 verified kernels on its disk: the one compile of each.
  std::map<std::string, std::string> images;
  for (const std::string& dir : first) {
    const auto entries = kiln::cache::DiskCache(dir).list();
    CHECK(entries.size() == std::size_t(kKernels));
    for (const auto& e : entries) {
      REQUIRE(e.kernel);
      CHECK(images.emplace(e.key, e.kernel->image).first->second == e.kernel->image);
    }
  }
  CHECK(images.size() == std::size_t(kKernels));
  const Report warm = round(plan, second);  // fresh machines: everything from the remote
  CHECK(warm.ok);
  CHECK(warm.compiles == 0);
  CHECK(warm.remote_hits == kMachines * kKernels);
  CHECK(warm.remote_waits == 0);
}
