// Fault tests of the disk cache: each asserts recovery, nothing loaded wrong, nothing lost.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <random>

#include "cache/kernel_cache.hpp"
#include "cache/key_lock.hpp"
#include "tests/cache/fixtures.hpp"
#include "tests/support.hpp"

using namespace kiln::cache;
using kiln::test::Counting;
using kiln::test::kernel_of;
using kiln::test::key_of;
using kiln::test::TempDir;

namespace {

// Writes `bytes` as the entry of key_of(i), as a damaged disk or a bad writer would.
void plant(const std::string& dir, int i, const std::string& bytes) {
  const std::string path = DiskCache(dir).path_of(key_of(i));
  kiln::test::write_file(path, bytes);
  ::chmod(path.c_str(), 0600);
}

// A new cache (as a new process would make) must recompile key i, count one bad entry and
// leave a verifying entry behind.
void expect_recovery(const std::string& dir, int i) {
  KernelCache c(dir);
  Counting n;
  auto r = c.get(key_of(i), n.for_key(i));
  CHECK(r.source == KernelCache::Source::compiled);
  CHECK(r.kernel->image == kernel_of(i).image);
  CHECK(c.counters().bad_entries == 1);
  CHECK(DiskCache(dir).load(key_of(i)).status == DiskCache::Status::hit);
}

template <class Child>
pid_t spawn(Child child) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 1;
    try {
      rc = child();
    } catch (...) {
    }
    ::_exit(rc);
  }
  return pid;
}

bool exited_ok(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("faults: an entry truncated at every byte offset is detected and recompiled") {
  TempDir tmp;
  const std::string good = encode_entry(key_of(1), kernel_of(1));
  for (std::size_t n = 0; n < good.size(); ++n) {
    CAPTURE(n);
    plant(tmp.path(), 1, good.substr(0, n));
    expect_recovery(tmp.path(), 1);
  }
}

TEST_CASE("faults: 1000 random bit flips are detected and recompiled") {
  TempDir tmp;
  const std::string good = encode_entry(key_of(2), kernel_of(2));
  auto rng = kiln::test::make_rng(3);
  for (int i = 0; i < 1000; ++i) {
    std::string bad = good;
    const std::size_t bit = rng() % (bad.size() * 8);
    bad[bit / 8] = char(bad[bit / 8] ^ (1 << (bit % 8)));
    CAPTURE(bit);
    plant(tmp.path(), 2, bad);
    expect_recovery(tmp.path(), 2);
  }
}

TEST_CASE("faults: an entry of another format version is replaced") {
  TempDir tmp;
  std::string other = encode_entry(key_of(3), kernel_of(3));
  other[8] = char(kFormatVersion + 7);
  plant(tmp.path(), 3, other);
  expect_recovery(tmp.path(), 3);
}

TEST_CASE("faults: temp files of dead writers are swept by gc once stale") {
  TempDir tmp;
  DiskCache c(tmp.path());
  const std::string fresh = tmp / ".tmp-fresh", stale = tmp / ".tmp-stale";
  kiln::test::write_file(fresh, "x");
  kiln::test::write_file(stale, "x");
  const struct timespec old[2] = {{std::time(nullptr) - 3600, 0}, {std::time(nullptr) - 3600, 0}};
  ::utimensat(AT_FDCWD, stale.c_str(), old, 0);
  c.gc(1ull << 30);
  CHECK(::access(fresh.c_str(), F_OK) == 0);  // may belong to a live writer
  CHECK(::access(stale.c_str(), F_OK) != 0);
}

// Where a writer is killed: at a step of DiskCache::store, or after it returned.
enum class KillAt { created, mid_write, written, synced, published };

// A writer process that publishes key_of(9) once, stops at `at` (mid_write: after `offset`
// bytes), tells the parent through `ready`, and waits there to be killed.
pid_t stopped_writer(const std::string& dir, KillAt at, std::size_t offset, int ready) {
  return spawn([=] {
    auto stop = [ready] {
      const char c = 'r';
      if (::write(ready, &c, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    };
    DiskIo io = DiskIo::posix();
    auto written = std::make_shared<std::size_t>(0);
    io.open = [=](const char* p, int flags, mode_t mode) {
      const int fd = ::open(p, flags, mode);
      if (at == KillAt::created) stop();
      return fd;
    };
    io.write = [=](int fd, const void* b, std::size_t n) {
      if (at == KillAt::mid_write) n = std::min(n, offset - *written);
      const ssize_t r = ::write(fd, b, n);
      *written += r > 0 ? std::size_t(r) : 0;
      if (at == KillAt::mid_write && *written == offset) stop();
      return r;
    };
    io.fsync = [=](int fd) {
      if (at == KillAt::written) stop();
      const int r = ::fsync(fd);
      if (at == KillAt::synced) stop();
      return r;
    };
    bool unusable = false;
    const std::string why =
        DiskCache(dir, io).store(key_of(9), kernel_of(9, std::size_t(256) << 10), &unusable);
    if (!why.empty()) return 2;
    stop();
    return 0;
  });
}

TEST_CASE(
    "faults: a writer killed with SIGKILL at every step of a publish, 100 times, never leaves a "
    "torn entry") {
  TempDir tmp;
  auto rng = kiln::test::make_rng(4);
  const std::size_t size = encode_entry(key_of(9), kernel_of(9, std::size_t(256) << 10)).size();
  int mid_publish = 0, after_publish = 0;
  bool published = false;
  for (int round = 0; round < 100; ++round) {
    // Kills placed by the writer's own report, not by timing: the first rounds kill before any
    // publish completes, the later ones around complete entries.
    const KillAt at = round < 10 ? KillAt(round % 4) : KillAt(rng() % 5);
    CAPTURE(round);
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t pid = stopped_writer(tmp.path(), at, 1 + rng() % (size - 1), ready[1]);
    ::close(ready[1]);  // a writer that dies without reporting gives EOF, not a hang
    char c = 0;
    const bool reported = ::read(ready[0], &c, 1) == 1;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ::close(ready[0]);
    REQUIRE(reported);
    (at == KillAt::published ? after_publish : mid_publish)++;
    published = published || at == KillAt::published;
    const auto r = DiskCache(tmp.path()).load(key_of(9));
    CHECK(r.status == (published ? DiskCache::Status::hit
                                 : DiskCache::Status::miss));  // the last complete entry, or none
    if (r.status == DiskCache::Status::hit)
      CHECK(r.kernel->image == kernel_of(9, std::size_t(256) << 10).image);
  }
  CHECK(mid_publish > 0);
  CHECK(after_publish > 0);
  for (const auto& e : DiskCache(tmp.path()).list()) CHECK(e.problem.empty());
}

TEST_CASE(
    "faults: 16 processes x 200 keys publish into one directory; the key lock compiles each once") {
  TempDir tmp;
  constexpr int kProcs = 16, kKeys = 200;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p)
    kids.push_back(spawn([&, p] {
      KernelCache c(tmp.path());
      int wrong = 0;
      for (int i = 0; i < kKeys; ++i) {
        const int k = (i * 7 + p * 13) % kKeys;
        wrong += c.get(key_of(k), [k] { return kernel_of(k); }).kernel->image != kernel_of(k).image;
      }
      // Report this process's compiles through a file of its own.
      kiln::test::write_file(tmp / ("count-" + std::to_string(p)),
                             std::to_string(c.counters().compiles));
      return wrong == 0 ? 0 : 1;
    }));
  for (pid_t pid : kids) CHECK(exited_ok(pid));
  int compiles = 0;
  for (int p = 0; p < kProcs; ++p)
    compiles += std::stoi(kiln::test::read_file(tmp / ("count-" + std::to_string(p))));
  CHECK(compiles == kKeys);
  const auto entries = DiskCache(tmp.path()).list();
  CHECK(entries.size() == std::size_t(kKeys));
  for (const auto& e : entries) CHECK(e.problem.empty());
}

TEST_CASE("faults: eviction racing with readers never serves a bad entry") {
  TempDir tmp;
  const std::uint64_t cap = 40 * 2000;  // about 40 entries
  std::vector<pid_t> kids;
  for (int w = 0; w < 4; ++w)
    kids.push_back(spawn([&, w] {
      KernelCacheOptions o;
      o.dir = tmp.path();
      o.max_bytes = cap;
      KernelCache c(o);
      for (int i = 0; i < 150; ++i)
        c.get(key_of(w * 1000 + i), [=] { return kernel_of(w * 1000 + i); });
      return 0;
    }));
  for (int r = 0; r < 4; ++r)
    kids.push_back(spawn([&, r] {
      std::mt19937 rng(r);
      int bad = 0;
      for (int i = 0; i < 3000; ++i) {
        const int k = int(rng() % 4) * 1000 + int(rng() % 150);
        const auto got = DiskCache(tmp.path()).load(key_of(k));
        bad += got.status == DiskCache::Status::bad ||
               (got.kernel && got.kernel->image != kernel_of(k).image);
      }
      return bad == 0 ? 0 : 1;
    }));
  for (pid_t pid : kids) CHECK(exited_ok(pid));
  DiskCache c(tmp.path());
  c.gc(cap);
  std::uint64_t total = 0;
  for (const auto& e : c.list()) {
    CHECK(e.problem.empty());
    total += e.bytes;
  }
  CHECK(total <= cap);
  CHECK(total > 0);
}

TEST_CASE("eviction is least recently used; a hit counts as a use") {
  TempDir tmp;
  DiskCache c(tmp.path());
  std::uint64_t one = 0;
  for (int i = 0; i < 5; ++i) {
    bool unusable = false;
    c.store(key_of(i), kernel_of(0), &unusable);
    const struct timespec t[2] = {{1000000 + i, 0}, {1000000 + i, 0}};  // i = 0 is the oldest
    ::utimensat(AT_FDCWD, c.path_of(key_of(i)).c_str(), t, 0);
    one = c.scan().front().bytes;
  }
  REQUIRE(c.load(key_of(0)).status == DiskCache::Status::hit);  // touched: now the newest
  const auto r = c.gc(3 * one);
  CHECK(r.removed == 2);
  CHECK(c.load(key_of(0)).status == DiskCache::Status::hit);
  CHECK(c.load(key_of(1)).status == DiskCache::Status::miss);
  CHECK(c.load(key_of(2)).status == DiskCache::Status::miss);
  CHECK(c.load(key_of(4)).status == DiskCache::Status::hit);
}

TEST_CASE("the key lock times out into compiling anyway") {
  TempDir tmp;
  auto held = KeyLock::acquire(tmp.path(), "k", std::chrono::milliseconds(100));
  REQUIRE(held);
  const pid_t pid = spawn([&] {
    const auto start = std::chrono::steady_clock::now();
    auto second = KeyLock::acquire(tmp.path(), "k", std::chrono::milliseconds(150));
    const auto waited = std::chrono::steady_clock::now() - start;
    return !second && waited >= std::chrono::milliseconds(150) ? 0 : 1;
  });
  CHECK(exited_ok(pid));
}

TEST_CASE("KILN_CACHE_MAX_BYTES parses sizes and refuses junk") {
  ::setenv("KILN_CACHE_MAX_BYTES", "64M", 1);
  CHECK(default_max_bytes() == 64ull << 20);
  ::setenv("KILN_CACHE_MAX_BYTES", "1.5g", 1);
  CHECK(default_max_bytes() == 3ull << 29);
  ::setenv("KILN_CACHE_MAX_BYTES", "18446744073709551614", 1);
  CHECK(default_max_bytes() == 18446744073709551614ull);
  ::setenv("KILN_CACHE_MAX_BYTES", "0", 1);
  CHECK(default_max_bytes() == kNoCap);  // as in ccache: no cap, never "evict everything"
  for (const char* junk :
       {"lots", "0.5", "-1", "-0", "inf", "nan", "NaN", "1e9", "99999999999999999999999",
        "20000000000G", "16777216T", "12Q", "5 M", ".", "", "1.0000000000001"}) {
    CAPTURE(junk);
    ::setenv("KILN_CACHE_MAX_BYTES", junk, 1);
    if (!*junk) {
      CHECK(default_max_bytes() == 2ull << 30);  // empty: unset
      continue;
    }
    try {
      default_max_bytes();
      FAIL("accepted");
    } catch (const kiln::CacheError& e) {
      const std::string what = e.what();
      CHECK(what.find("KILN_CACHE_MAX_BYTES") != std::string::npos);
      CHECK(what.find('\n') == std::string::npos);
    }
  }
  ::unsetenv("KILN_CACHE_MAX_BYTES");
  CHECK(default_max_bytes() == 2ull << 30);
}

TEST_CASE("a cap of 0 (no cap) keeps every entry through publishes and gc") {
  TempDir tmp;
  ::setenv("KILN_CACHE_MAX_BYTES", "0", 1);
  KernelCacheOptions o;
  o.dir = tmp.path();
  o.max_bytes = default_max_bytes();
  ::unsetenv("KILN_CACHE_MAX_BYTES");
  KernelCache c(o);
  for (int i = 0; i < 5; ++i) c.get(key_of(i), [i] { return kernel_of(i); });
  const auto r = DiskCache(tmp.path()).gc(o.max_bytes);
  CHECK(r.removed == 0);
  CHECK(DiskCache(tmp.path()).scan().size() == 5);
}

TEST_CASE("gc removes the key locks of evicted entries, not one a process holds") {
  TempDir tmp;
  {
    KernelCache c(tmp.path());
    for (int i = 0; i < 3; ++i)
      c.get(key_of(i), [i] { return kernel_of(i); });  // each compile takes its key's lock
  }
  auto held = KeyLock::acquire(tmp.path(), key_of(7).hex(),
                               std::chrono::milliseconds(100));  // compiling key 7 now
  REQUIRE(held);
  auto locks = [&] {
    int n = 0;
    for (int i : {0, 1, 2, 7})
      n += ::access((tmp / (".lock-" + key_of(i).hex())).c_str(), F_OK) == 0;
    return n;
  };
  REQUIRE(locks() == 4);
  DiskCache d(tmp.path());
  d.gc(1ull << 30);  // nothing evicted: the locks of live entries stay
  CHECK(locks() == 4);
  d.gc(1);  // every entry evicted: their locks go, the held one stays
  CHECK(d.scan().empty());
  CHECK(locks() == 1);
  CHECK(::access((tmp / (".lock-" + key_of(7).hex())).c_str(), F_OK) == 0);
}
