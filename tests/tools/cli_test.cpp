// The kiln CLI, run as a user would: exit codes and one-line errors.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cache/disk_cache.hpp"
#include "tests/support.hpp"

namespace {

using kiln::test::kiln_cli;

void fill_cache(const std::string& dir) {
  kiln::Engine e(kiln::test::offline("sm_80", dir));
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
  auto ls = kiln_cli("cache --cache-dir " + tmp.path() + " ls");
  CHECK(ls.status == 0);
  CHECK(ls.output.find("exp_f16__r1v8") != std::string::npos);
  CHECK(ls.output.find("2 entries") != std::string::npos);
  CHECK(kiln_cli("cache --cache-dir " + tmp.path() + " verify").status == 0);

  const auto entries = kiln::cache::DiskCache(tmp.path()).list();
  REQUIRE(entries.size() == 2);
  std::string bytes = kiln::test::read_file(entries[0].path);
  bytes[bytes.size() / 2] ^= 0x01;
  kiln::test::write_file(entries[0].path, bytes);
  auto verify = kiln_cli("cache --cache-dir " + tmp.path() + " verify");
  CHECK(verify.status == 1);
  CHECK(verify.output.find("checksum mismatch") != std::string::npos);
  CHECK(verify.output.find("1 bad") != std::string::npos);
  CHECK(kiln::cache::DiskCache(tmp.path()).list().size() == 1);
  CHECK(kiln_cli("cache --cache-dir " + tmp.path() + " clear").status == 0);
  CHECK(kiln::cache::DiskCache(tmp.path()).list().empty());
}

TEST_CASE("bad CLI input exits non-zero with a one-line reason") {
  kiln::test::TempDir tmp;
  kiln::test::write_file(tmp / "file", "x");
  auto not_dir = kiln_cli("cache --cache-dir " + (tmp / "file") + " ls");
  CHECK(not_dir.status == 1);
  CHECK(not_dir.output.rfind("kiln: cache path", 0) == 0);
  CHECK(std::count(not_dir.output.begin(), not_dir.output.end(), '\n') == 1);
  CHECK(kiln_cli("frobnicate").status != 0);
  CHECK(kiln_cli("cache").status != 0);
}

TEST_CASE("record, precompile for two archs, pack, explain: the build-farm path without a GPU") {
  kiln::test::TempDir tmp;
  {
    kiln::Engine e(kiln::test::offline("sm_90a", "", tmp / "app.manifest"));
    kiln::TensorView x;
    x.shape = {4096};
    x.dtype = kiln::DType::bf16;
    kiln::precompile(e, "silu", {x});
    kiln::precompile(e, "add", {x, x});
  }
  const std::string cache = " --cache-dir " + (tmp / "cache");
  auto pre =
      kiln_cli("precompile " + (tmp / "app.manifest") + " --arch sm_80,sm_90a -j 2 --json" + cache);
  CHECK(pre.status == 0);
  CHECK(pre.output.find("precompile: [4/4]") !=
        std::string::npos);                             // plain progress lines off a terminal
  const auto summary = nlohmann::json::parse(pre.out);  // stdout holds the JSON alone
  CHECK(summary.at("compiled") == 4);
  CHECK(summary.at("cached") == 0);
  CHECK(summary.at("failed") == 0);
  auto again =
      kiln_cli("precompile " + (tmp / "app.manifest") + " --arch sm_80,sm_90a --json" + cache);
  CHECK(nlohmann::json::parse(again.out).at("cached") == 4);
  CHECK(nlohmann::json::parse(again.out).at("compiled") == 0);

  const std::string dir = " --cache-dir " + (tmp / "cache");
  const auto stats = kiln_cli("cache" + dir + " stats");
  CHECK(stats.output.find("sm_90a        2 entries") != std::string::npos);
  // Kept across the two precompile processes: 4 compiled by the first, 4 found by the second.
  CHECK(stats.output.find("4 hits (4 disk, 0 bundle), 4 misses (50.0 % hits), 4 compiles") !=
        std::string::npos);
  auto pack = kiln_cli("cache" + dir + " pack " + (tmp / "app.kbundle") + " --arch sm_90a");
  CHECK(pack.status == 0);
  CHECK(pack.output.find("with 2 kernels") != std::string::npos);

  auto hit = kiln_cli("cache" + dir + " explain " + (tmp / "app.manifest") + " --arch sm_90a");
  CHECK(hit.status == 0);
  CHECK(hit.output.find("silu_bf16__r1v8") != std::string::npos);
  CHECK(hit.output.find("hit (disk)") != std::string::npos);

  // With the bundle, precompile finds every sm_90a kernel there: nothing compiled, nothing written.
  auto from_bundle = kiln_cli("precompile " + (tmp / "app.manifest") +
                                  " --arch sm_90a --json --cache-dir " + (tmp / "fresh"),
                              "KILN_BUNDLE=" + (tmp / "app.kbundle"));
  CHECK(from_bundle.status == 0);
  CHECK(nlohmann::json::parse(from_bundle.out).at("cached") == 2);
  CHECK(nlohmann::json::parse(from_bundle.out).at("compiled") == 0);
  CHECK(kiln::cache::DiskCache(tmp / "fresh").scan().empty());

  // Only sm_80 left on disk: explaining for sm_90a names the arch.
  kiln_cli("cache" + dir + " clear");
  kiln_cli("precompile " + (tmp / "app.manifest") + " --arch sm_80" + cache);
  auto miss = kiln_cli("cache" + dir + " explain " + (tmp / "app.manifest") + " --arch sm_90a");
  CHECK(miss.status == 1);
  CHECK(miss.output.find("miss: compiled only for other archs (sm_80)") != std::string::npos);

  // The bundle alone serves sm_90a.
  auto bundled = kiln_cli("cache" + dir + " explain " + (tmp / "app.manifest") + " --arch sm_90a",
                          "KILN_BUNDLE=" + (tmp / "app.kbundle"));
  CHECK(bundled.status == 0);
  CHECK(bundled.output.find("hit (bundle") != std::string::npos);

  auto merged = kiln_cli("cache pack --merge " + (tmp / "app.kbundle") + " " +
                         (tmp / "app.kbundle") + " -o " + (tmp / "all.kbundle"));
  CHECK(merged.status == 0);
  CHECK(merged.output.find("with 2 kernels") != std::string::npos);
}

TEST_CASE("kiln precompile: bad input is a one-line error") {
  kiln::test::TempDir tmp;
  kiln::test::write_file(tmp / "bad.manifest", "garbage\n");
  auto bad = kiln_cli("precompile " + (tmp / "bad.manifest") + " --cache-dir " + (tmp / "c"));
  CHECK(bad.status == 1);
  CHECK(bad.output.find("bad.manifest:1: not a manifest line") != std::string::npos);
  CHECK(kiln_cli("precompile " + (tmp / "none") + " --cache-dir " + (tmp / "c")).status == 1);
  kiln::test::write_file(tmp / "empty.manifest", "");
  CHECK(
      kiln_cli("precompile " + (tmp / "empty.manifest") + " --shard 5/2 --cache-dir " + (tmp / "c"))
          .output.find("bad shard") != std::string::npos);
  CHECK(
      kiln_cli("precompile " + (tmp / "empty.manifest") + " --arch sm_1 --cache-dir " + (tmp / "c"))
          .status == 1);
  // A graph with a kernel per extent of a dynamic dim (a sum over a dynamic batch) cannot be
  // compiled ahead: one line naming the file, the kernel, the arch and the dynamic dim.
  kiln::Graph g;
  g.output(kiln::reduce("sum", g.input("x", {-1, 64}, kiln::DType::f32), false, 0));
  g.save(tmp / "rows.json");
  auto dyn = kiln_cli("precompile " + (tmp / "rows.json") + " --cache-dir " + (tmp / "c"));
  CHECK(dyn.status == 1);
  CHECK(dyn.output.find("kernel sum_f32__dynamic (fusing ") !=
        std::string::npos);  // as `kiln plan` names it
  CHECK(dyn.output.find("rows.json: ") != std::string::npos);
  CHECK(dyn.output.find("for sm_80 changes with the extent of a dynamic dim (x[?, 64] dim 0)") !=
        std::string::npos);
  CHECK(dyn.output.find("KILN_RECORD") != std::string::npos);  // what to do instead
}

TEST_CASE("kiln precompile takes several files; --cache-dir goes before or after the subcommand") {
  kiln::test::TempDir tmp;
  for (const char* name : {"a", "b"}) {
    kiln::Graph g;
    auto x = g.input("x", {64}, name[0] == 'a' ? kiln::DType::f32 : kiln::DType::f16);
    g.output(kiln::exp(x), "y");
    g.save(tmp / (std::string(name) + ".json"));
  }
  auto both = kiln_cli("--cache-dir " + (tmp / "c") + " precompile " + (tmp / "a.json") + " " +
                       (tmp / "b.json") + " --arch sm_80 --json");
  CHECK(both.status == 0);
  CHECK(nlohmann::json::parse(both.out).at("compiled") == 2);
  auto again = kiln_cli("precompile " + (tmp / "b.json") + " --json --arch sm_80 --cache-dir " +
                        (tmp / "c"));
  CHECK(nlohmann::json::parse(again.out).at("cached") == 1);
  CHECK(kiln_cli("cache ls --cache-dir " + (tmp / "c")).output.find("2 entries") !=
        std::string::npos);
}

TEST_CASE(
    "kiln precompile: a graph with a dynamic batch compiles the kernels every batch runs, 1 "
    "included") {
  kiln::test::TempDir tmp;
  kiln::Graph g;
  auto x = g.input("x", {-1, 4096}, kiln::DType::bf16);
  g.output(kiln::softmax(x * 0.125 + g.input("mask", {4096}, kiln::DType::bf16)));
  g.save(tmp / "g.json");
  const std::string cache = " --cache-dir " + (tmp / "c");
  auto pre = kiln_cli("precompile " + (tmp / "g.json") + " --arch sm_90a --json" + cache);
  CHECK(pre.status == 0);
  // The kernel of every batch of 2 or more, and that of a batch of 1, where the batch dim drops
  // out of the layout (the mask no longer broadcasts along it).
  CHECK(nlohmann::json::parse(pre.out).at("compiled") == 2);
  // The static graphs of batches 1 and 300 need nothing more.
  for (std::int64_t batch : {1, 300}) {
    CAPTURE(batch);
    kiln::Graph s;
    auto sx = s.input("x", {batch, 4096}, kiln::DType::bf16);
    s.output(kiln::softmax(sx * 0.125 + s.input("mask", {4096}, kiln::DType::bf16)));
    s.save(tmp / "s.json");
    auto again = kiln_cli("precompile " + (tmp / "s.json") + " --arch sm_90a --json" + cache);
    CHECK(again.status == 0);
    CHECK(nlohmann::json::parse(again.out).at("compiled") == 0);
    CHECK(nlohmann::json::parse(again.out).at("cached") == 1);
  }
}
