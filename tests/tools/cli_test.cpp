// The kiln CLI, run as a user would: exit codes and one-line errors.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>

#include "cache/disk_cache.hpp"
#include "tests/support.hpp"

namespace {

struct Run {
  int status;
  std::string output;
};

Run kiln_cli(const std::string& args) {
  const std::string cmd = std::string(KILN_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int raw = ::pclose(p);
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, out};
}

void fill_cache(const std::string& dir) {
  kiln::EngineOptions o;
  o.offline = true;
  o.arch = "sm_80";
  o.cache_dir = dir;
  kiln::Engine e(o);
  kiln::TensorView x;
  x.shape = {1000};
  x.dtype = kiln::DType::f16;
  kiln::precompile(e, "exp", {x});
  kiln::precompile(e, "add", {x, x});
}

}  // namespace

TEST_CASE("kiln --help and info work without a GPU") {
  auto help = kiln_cli("--help");
  CHECK(help.status == 0);
  CHECK(help.output.find("cache") != std::string::npos);
  auto info = kiln_cli("info");
  CHECK(info.status == 0);
  CHECK(info.output.find("NVRTC") != std::string::npos);
}

TEST_CASE("kiln cache ls lists kernels; verify removes a corrupted entry and exits 1") {
  kiln::test::TempDir tmp;
  fill_cache(tmp.path());
  auto ls = kiln_cli("cache --dir " + tmp.path() + " ls");
  CHECK(ls.status == 0);
  CHECK(ls.output.find("exp_f16__r1v8") != std::string::npos);
  CHECK(ls.output.find("2 entries") != std::string::npos);
  CHECK(kiln_cli("cache --dir " + tmp.path() + " verify").status == 0);

  const auto entries = kiln::cache::DiskCache(tmp.path()).list();
  REQUIRE(entries.size() == 2);
  std::string bytes = kiln::test::read_file(entries[0].path);
  bytes[bytes.size() / 2] ^= 0x01;
  kiln::test::write_file(entries[0].path, bytes);
  auto verify = kiln_cli("cache --dir " + tmp.path() + " verify");
  CHECK(verify.status == 1);
  CHECK(verify.output.find("checksum mismatch") != std::string::npos);
  CHECK(verify.output.find("1 bad") != std::string::npos);
  CHECK(kiln::cache::DiskCache(tmp.path()).list().size() == 1);
  CHECK(kiln_cli("cache --dir " + tmp.path() + " clear").status == 0);
  CHECK(kiln::cache::DiskCache(tmp.path()).list().empty());
}

TEST_CASE("bad CLI input exits non-zero with a one-line reason") {
  kiln::test::TempDir tmp;
  kiln::test::write_file(tmp / "file", "x");
  auto not_dir = kiln_cli("cache --dir " + (tmp / "file") + " ls");
  CHECK(not_dir.status == 1);
  CHECK(not_dir.output.rfind("kiln: cache path", 0) == 0);
  CHECK(std::count(not_dir.output.begin(), not_dir.output.end(), '\n') == 1);
  CHECK(kiln_cli("frobnicate").status != 0);
  CHECK(kiln_cli("cache").status != 0);
}
