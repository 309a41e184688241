#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <sstream>

#include "cache/kernel_cache.hpp"
#include "tests/cache/fixtures.hpp"
#include "tests/cache/log_capture.hpp"
#include "tests/support.hpp"

using namespace kiln::cache;
using kiln::test::Counting;
using kiln::test::kernel_of;
using kiln::test::key_of;
using kiln::test::TempDir;

namespace {

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  while (const dirent* e = d ? ::readdir(d) : nullptr)
    if (e->d_name[0] != '.' || std::string(e->d_name).rfind(".tmp-", 0) == 0)
      out.push_back(e->d_name);
  if (d) ::closedir(d);
  return out;
}

int mode_of(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return int(st.st_mode & 0777);
}

}  // namespace

TEST_CASE("disk cache: round trip, 0700 directory, 0600 entries") {
  TempDir tmp;
  const std::string dir = tmp / "a/b/kiln";
  DiskCache c(dir);
  CHECK(mode_of(dir) == 0700);
  bool unusable = true;
  CHECK(c.store(key_of(1), kernel_of(1), &unusable).empty());
  CHECK_FALSE(unusable);
  CHECK(mode_of(c.path_of(key_of(1))) == 0600);
  auto got = c.load(key_of(1));
  REQUIRE(got.status == DiskCache::Status::hit);
  CHECK(got.kernel->image == kernel_of(1).image);
  CHECK(c.load(key_of(2)).status == DiskCache::Status::miss);
  CHECK(files_in(dir).size() == 1);  // no temp file left behind
}

TEST_CASE("kernel cache: memory, then disk in a new process, compile only once") {
  TempDir tmp;
  Counting n;
  {
    KernelCache c(tmp.path());
    CHECK(c.get(key_of(3), n.for_key(3)).source == KernelCache::Source::compiled);
    CHECK(c.get(key_of(3), n.for_key(3)).source == KernelCache::Source::memory);
  }
  KernelCache fresh(tmp.path());  // as a second process would see it
  auto r = fresh.get(key_of(3), n.for_key(3));
  CHECK(r.source == KernelCache::Source::disk);
  CHECK(r.kernel->image == kernel_of(3).image);
  CHECK(n.calls == 1);
  CHECK(fresh.counters().disk_hits == 1);
  CHECK(fresh.counters().compiles == 0);
}

TEST_CASE("kernel cache: truncated and bit-flipped entries are counted, removed and recompiled") {
  TempDir tmp;
  Counting n;
  KernelCache(tmp.path()).get(key_of(4), n.for_key(4));
  const std::string path = DiskCache(tmp.path()).path_of(key_of(4));
  const std::string good = kiln::test::read_file(path);
  SUBCASE("truncated") { kiln::test::write_file(path, good.substr(0, good.size() / 2)); }
  SUBCASE("bit flip in the payload") {
    std::string bad = good;
    bad[bad.size() - 10] ^= 0x20;
    kiln::test::write_file(path, bad);
  }
  SUBCASE("zero length") { kiln::test::write_file(path, ""); }
  ::chmod(path.c_str(), 0600);
  KernelCache c(tmp.path());
  auto r = c.get(key_of(4), n.for_key(4));
  CHECK(r.source == KernelCache::Source::compiled);
  CHECK(r.kernel->image == kernel_of(4).image);
  CHECK(c.counters().bad_entries == 1);
  CHECK(n.calls == 2);
  // The recompiled entry replaced the bad one and verifies.
  CHECK(DiskCache(tmp.path()).load(key_of(4)).status == DiskCache::Status::hit);
}

TEST_CASE("disk cache: a temp file left by a killed writer is ignored and cleared") {
  TempDir tmp;
  DiskCache c(tmp.path());
  kiln::test::write_file(tmp / (".tmp-" + key_of(5).hex() + "-123-dead"), "partial");
  CHECK(c.load(key_of(5)).status == DiskCache::Status::miss);
  CHECK(c.list().empty());
  CHECK(c.clear().removed == 1);
}

TEST_CASE("disk cache: a directory others can write is refused; the cache falls back to memory") {
  TempDir tmp;
  const std::string dir = tmp / "shared";
  ::mkdir(dir.c_str(), 0700);
  ::chmod(dir.c_str(), 0777);
  try {
    DiskCache c(dir);
    FAIL("a world-writable cache directory was accepted");
  } catch (const kiln::CacheError& e) {
    CHECK(std::string(e.what()).find("writable by group or others") != std::string::npos);
    CHECK(std::string(e.what()).find("chmod 700") != std::string::npos);
  }
  KernelCache fallback(dir);
  CHECK_FALSE(fallback.disk_enabled());
  Counting n;
  CHECK(fallback.get(key_of(6), n.for_key(6)).kernel->image == kernel_of(6).image);
  CHECK(files_in(dir).empty());
}

TEST_CASE("disk cache: a path that is a file is refused") {
  TempDir tmp;
  kiln::test::write_file(tmp / "file", "x");
  CHECK_THROWS_AS(DiskCache(tmp / "file"), kiln::CacheError);
}

TEST_CASE("disk cache: directory and entries of another owner are refused" *
          doctest::skip(::geteuid() != 0)) {
  TempDir tmp;
  const std::string dir = tmp / "foreign";
  ::mkdir(dir.c_str(), 0700);
  {
    DiskCache c(dir);
    bool unusable = false;
    c.store(key_of(7), kernel_of(7), &unusable);
    REQUIRE(::chown(c.path_of(key_of(7)).c_str(), 4242, 4242) == 0);
    auto r = c.load(key_of(7));
    CHECK(r.status == DiskCache::Status::refused);
    CHECK(r.problem.find("owned by UID 4242") != std::string::npos);
    CHECK(::access(c.path_of(key_of(7)).c_str(), F_OK) == 0);  // refused, not deleted
  }
  REQUIRE(::chown(dir.c_str(), 4242, 4242) == 0);
  CHECK_THROWS_WITH_AS(DiskCache{dir}, doctest::Contains("owned by UID 4242"), kiln::CacheError);
  // chmod cannot give a directory back to its user: the advice is another directory.
  CHECK_THROWS_WITH_AS(DiskCache{dir}, doctest::Contains("use a directory of your own"),
                       kiln::CacheError);
  try {
    DiskCache{dir};
  } catch (const kiln::CacheError& e) {
    CHECK(std::string(e.what()).find("chmod") == std::string::npos);
  }
}

TEST_CASE("disk cache: read-only or full disk degrades to memory with one warning") {
  TempDir tmp;
  int opens = 0;
  int fail_errno = 0;
  DiskIo io = DiskIo::posix();
  SUBCASE("read-only file system") { fail_errno = EROFS; }
  SUBCASE("permission denied") { fail_errno = EACCES; }
  SUBCASE("disk full on write") { fail_errno = ENOSPC; }
  if (fail_errno == ENOSPC) {
    io.write = [&](int, const void*, std::size_t) -> ssize_t {
      errno = ENOSPC;
      return -1;
    };
    io.open = [&](const char* p, int f, mode_t m) {
      ++opens;
      return ::open(p, f, m);
    };
  } else {
    io.open = [&](const char*, int, mode_t) {
      ++opens;
      errno = fail_errno;
      return -1;
    };
  }
  KernelCache c(tmp.path(), io);
  Counting n;
  CHECK(c.get(key_of(8), n.for_key(8)).kernel->image == kernel_of(8).image);
  CHECK_FALSE(c.disk_writable());
  CHECK(c.get(key_of(9), n.for_key(9)).kernel->image == kernel_of(9).image);
  CHECK(opens == 1);                    // after the first failure it stops trying
  CHECK(files_in(tmp.path()).empty());  // no temp file left either
  CHECK(c.get(key_of(8), n.for_key(8)).source == KernelCache::Source::memory);
}

TEST_CASE("disk cache: a real read-only directory falls back" * doctest::skip(::geteuid() == 0)) {
  // Root ignores directory permissions, so this runs only as an ordinary user; the injected
  // test above covers the same path everywhere.
  TempDir tmp;
  ::chmod(tmp.path().c_str(), 0500);
  KernelCache c(tmp.path());
  Counting n;
  CHECK(c.get(key_of(10), n.for_key(10)).kernel->image == kernel_of(10).image);
  CHECK_FALSE(c.disk_writable());
}

TEST_CASE("disk cache: 8 processes publishing the same keys at once leave only valid entries") {
  TempDir tmp;
  constexpr int kProcs = 8, kKeys = 40;
  std::vector<pid_t> kids;
  for (int p = 0; p < kProcs; ++p) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      int failures = 0;
      DiskCache c(tmp.path());
      for (int round = 0; round < 3; ++round)
        for (int i = 0; i < kKeys; ++i) {
          const int k = (i + p * 5) % kKeys;
          bool unusable = false;
          if (!c.store(key_of(k), kernel_of(k), &unusable).empty()) ++failures;
          auto r = c.load(key_of(k));  // a reader racing the other writers
          if (r.status != DiskCache::Status::hit || r.kernel->image != kernel_of(k).image)
            ++failures;
        }
      ::_exit(failures == 0 ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  DiskCache c(tmp.path());
  const auto entries = c.list();
  CHECK(entries.size() == kKeys);
  for (auto& e : entries) CHECK(e.problem.empty());
  CHECK(files_in(tmp.path()).size() == std::size_t(kKeys));  // no temp files
}

namespace {

std::vector<int> keys_on_disk(const std::string& dir, int n) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i)
    if (::access(DiskCache(dir).path_of(key_of(i)).c_str(), F_OK) == 0) out.push_back(i);
  return out;
}

}  // namespace

TEST_CASE("kernel cache: a cap smaller than an entry keeps this process's entries, warning once") {
  TempDir tmp;
  bool unusable = false;
  REQUIRE(DiskCache(tmp.path()).store(key_of(9), kernel_of(9), &unusable).empty());  // another's
  KernelCacheOptions o;
  o.dir = tmp.path();
  o.max_bytes = 1;
  kiln::test::Warnings log;
  {
    KernelCache c(o);
    for (int i = 0; i < 3; ++i) c.get(key_of(i), [i] { return kernel_of(i); });
  }
  CHECK(keys_on_disk(tmp.path(), 10) == std::vector<int>{0, 1, 2});
  const std::string text = log.text();
  CAPTURE(text);
  const auto first = text.find("is smaller than");
  REQUIRE(first != std::string::npos);
  CHECK(text.find("is smaller than", first + 1) == std::string::npos);
  // The next process needs key 3 and the disk hit of key 1; the rest is evicted.
  {
    KernelCache c(o);
    c.get(key_of(1), [] { return kernel_of(1); });
    c.get(key_of(3), [] { return kernel_of(3); });
  }
  CHECK(keys_on_disk(tmp.path(), 10) == std::vector<int>{1, 3});
}
