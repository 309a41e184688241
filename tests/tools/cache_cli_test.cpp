// kiln cache commands report what they did: they count only files they removed, exit non-zero
// when they could not do what was asked, never create a directory to read it, and `explain`
// exits 1 on any miss. A cap smaller than an entry keeps what the process needs, with one warning.
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "cache/disk_cache.hpp"
#include "tests/cache/fixtures.hpp"
#include "tests/support.hpp"

namespace {

using kiln::test::kiln_cli;
using kiln::test::TempDir;

// Sets or clears a directory's immutable attribute (`chattr +i`): the one way to make a directory
// that root cannot write. False where the file system or the process cannot.
bool set_immutable(const std::string& dir, bool on) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  int flags = 0;
  bool ok = ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
  flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
  ok = ok && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
  ::close(fd);
  return ok;
}

// Makes `dir` immutable for its lifetime (undone even when a REQUIRE throws).
class Immutable {
 public:
  explicit Immutable(std::string dir) : dir_(std::move(dir)) { REQUIRE(set_immutable(dir_, true)); }
  ~Immutable() { set_immutable(dir_, false); }
  Immutable(const Immutable&) = delete;
  Immutable& operator=(const Immutable&) = delete;

 private:
  std::string dir_;
};

bool can_make_unwritable() {
  static const bool can = [] {
    TempDir tmp;
    if (!set_immutable(tmp.path(), true)) return false;
    const bool blocked = ::mkdir((tmp / "probe").c_str(), 0700) != 0;
    set_immutable(tmp.path(), false);
    return blocked;
  }();
  return can;
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

int count_of(const std::string& text, const std::string& piece) {
  int n = 0;
  for (auto at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
  return n;
}

// Six fake entries of about 1-2 KiB each in `dir`; the first one truncated.
std::string fill(const std::string& dir) {
  const kiln::cache::DiskCache c(dir);
  for (int i = 0; i < 6; ++i) {
    bool unusable = false;
    REQUIRE(c.store(kiln::test::key_of(i), kiln::test::kernel_of(i), &unusable).empty());
  }
  const std::string bad = c.path_of(kiln::test::key_of(0));
  ::truncate(bad.c_str(), 20);  // "truncated: 20 bytes, ..."
  return bad;
}

constexpr const char* kChain = R"({"inputs": [{"name": "x", "shape": [64], "dtype": "f32"}],
  "nodes": [{"name": "a", "op": "exp", "args": ["x"]}, {"name": "b", "op": "neg", "args": ["a"]}],
  "outputs": ["b"]})";

}  // namespace

TEST_CASE("kiln cache verify, clear and gc on a directory they cannot write say so and exit 1" *
          doctest::skip(!can_make_unwritable())) {
  TempDir tmp;
  const std::string dir = tmp / "c", cache = " --cache-dir " + dir;
  const std::string bad = fill(dir);
  std::uint64_t total = 0;
  for (const auto& e : kiln::cache::DiskCache(dir).scan()) total += e.bytes;
  {
    Immutable frozen(dir);
    const auto verify = kiln_cli("cache verify" + cache);
    CAPTURE(verify.output);
    CHECK(verify.status == 1);
    CHECK(verify.out.find("truncated") != std::string::npos);
    CHECK(verify.out.find("(removed)") == std::string::npos);
    CHECK(verify.out.find("not removed: Operation not permitted") != std::string::npos);
    CHECK(verify.err.rfind("kiln: could not remove 1 bad entry", 0) == 0);
    CHECK(exists(bad));

    const auto clear = kiln_cli("cache clear" + cache);
    CAPTURE(clear.output);
    CHECK(clear.status == 1);
    CHECK(clear.out.find("removed 0 files") != std::string::npos);
    CHECK(clear.err.rfind("kiln: could not remove 6 files", 0) == 0);

    const auto gc = kiln_cli("cache gc --max-bytes 1" + cache);
    CAPTURE(gc.output);
    CHECK(gc.status == 1);
    CHECK(gc.out.find("removed 0 files (0 bytes); " + kiln::cache::human_bytes(total) +
                      " remain") != std::string::npos);
    CHECK(gc.err.rfind("kiln: could not remove 6 entries", 0) == 0);
    CHECK(kiln::cache::DiskCache(dir).scan().size() == 6);
  }
  // Writable again: the same commands do it, and count what they did.
  const auto verify = kiln_cli("cache verify" + cache);
  CHECK(verify.status == 1);  // it found a bad entry
  CHECK(verify.out.find("(removed)") != std::string::npos);
  CHECK(verify.err.empty());
  CHECK_FALSE(exists(bad));
  const auto clear = kiln_cli("cache clear" + cache);
  CHECK(clear.status == 0);
  CHECK(clear.out.find("removed 5 files") != std::string::npos);
}

TEST_CASE("kiln cache ls, stats, verify, explain, gc and clear never create the directory") {
  TempDir tmp;
  kiln::test::write_file(tmp / "g.json", kChain);
  const std::string cache = " --cache-dir " + (tmp / "nonexistent/deeper/cache");
  for (const char* cmd : {"ls", "stats", "verify", "gc", "clear"}) {
    const auto r = kiln_cli(std::string("cache ") + cmd + cache);
    CAPTURE(cmd);
    CAPTURE(r.output);
    CHECK(r.status == 0);
    CHECK(r.output.find("does not exist") != std::string::npos);
  }
  const auto explain = kiln_cli("cache explain " + (tmp / "g.json") + " --arch sm_80" + cache);
  CHECK(explain.status == 1);  // every kernel misses
  CHECK(explain.output.find("miss: no entry") != std::string::npos);
  CHECK_FALSE(exists(tmp / "nonexistent"));
}

TEST_CASE("kiln cache explain exits 1 when an entry is corrupt, as for any miss") {
  TempDir tmp;
  kiln::test::write_file(tmp / "g.json", kChain);
  const std::string cache = " --cache-dir " + (tmp / "c");
  REQUIRE(kiln_cli("precompile " + (tmp / "g.json") + " --arch sm_80" + cache).status == 0);
  const std::string explain = "cache explain " + (tmp / "g.json") + " --arch sm_80" + cache;
  const auto hit = kiln_cli(explain);
  CHECK(hit.status == 0);
  CHECK(hit.output.find("hit (disk)") != std::string::npos);
  const auto entries = kiln::cache::DiskCache(tmp / "c").scan();
  REQUIRE(entries.size() == 1);
  ::truncate(entries[0].path.c_str(), 64);
  const auto corrupt = kiln_cli(explain);
  CAPTURE(corrupt.output);
  CHECK(corrupt.status == 1);
  CHECK(corrupt.output.find("miss: the entry is corrupt") != std::string::npos);
}

TEST_CASE("a cache cap smaller than an entry keeps the kernels a process compiled, warning once") {
  TempDir tmp;
  kiln::test::write_file(tmp / "g.json", kChain);
  const std::string dir = tmp / "c";
  const std::string bad = fill(dir);  // six older entries the plan does not need
  const auto plan =
      kiln_cli("plan --compile --no-fuse --arch sm_80 " + (tmp / "g.json") + " --cache-dir " + dir,
               "KILN_CACHE_MAX_BYTES=1K KILN_LOG_LEVEL=warn");
  CAPTURE(plan.output);
  CHECK(plan.status == 0);
  CHECK(count_of(plan.out, ": compiled (") == 2);
  CHECK(count_of(plan.err, "is smaller than") == 1);
  CHECK(plan.err.find("KILN_CACHE_MAX_BYTES") != std::string::npos);
  const auto left = kiln::cache::DiskCache(dir).list();
  CHECK(left.size() == 2);  // the plan's two kernels; every older entry went
  for (const auto& e : left) CHECK((e.kernel && e.kernel->arch == "sm_80"));
}

TEST_CASE("a cache directory of another user is refused with advice that can work" *
          doctest::skip(::geteuid() != 0)) {
  TempDir tmp;
  const std::string dir = tmp / "theirs";
  std::filesystem::create_directory(dir);
  ::chmod(dir.c_str(), 0700);
  REQUIRE(::chown(dir.c_str(), 4242, 4242) == 0);
  for (const char* cmd : {"cache ls", "cache stats"}) {
    const auto r = kiln_cli(std::string(cmd) + " --cache-dir " + dir);
    CAPTURE(r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find("owned by UID 4242") != std::string::npos);
    CHECK(r.output.find("use a directory of your own") != std::string::npos);
    CHECK(r.output.find("chmod") == std::string::npos);  // cannot fix another's ownership
  }
}
