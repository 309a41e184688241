#include "engine/compiler/compiler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "engine/compiler/cubin.hpp"
#include "engine/compiler/log.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "tests/engine/cases.hpp"
#include "tests/support.hpp"
#include "tools/report.hpp"

namespace {

std::vector<kiln::Operand> descs(const kiln::test::Case& c) {
  std::vector<kiln::Operand> args;
  for (auto& o : c.operands) {
    if (o.scalar)
      args.emplace_back(o.value);
    else
      args.emplace_back(o.view);  // data 0: specialized as if 256-byte aligned
  }
  return args;
}

// Compiles every case of the sweep for one arch; returns failures as text.
std::vector<std::string> compile_sweep(const std::string& arch, int* kernels) {
  kiln::Engine engine(kiln::test::offline(arch));
  std::vector<std::string> failures;
  for (auto& c : kiln::test::sweep(48, 40, false)) {
    try {
      const kiln::KernelRecord r = kiln::precompile(engine, c.op, descs(c), c.attrs);
      if (r.source != "compiled" && r.source != "memory")
        failures.push_back(c.label + ": unexpected source " + r.source);
    } catch (const std::exception& e) {
      failures.push_back(c.label + ": " + e.what());
    }
  }
  *kernels = int(engine.counters().compiles);
  return failures;
}

}  // namespace

TEST_CASE("every op x dtype x layout NVRTC-compiles for sm_80 and sm_90a") {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> failures[2];
  int kernels[2] = {0, 0};
  const char* archs[2] = {"sm_80", "sm_90a"};
  std::thread other([&] { failures[1] = compile_sweep(archs[1], &kernels[1]); });
  failures[0] = compile_sweep(archs[0], &kernels[0]);
  other.join();
  for (int a = 0; a < 2; ++a) {
    CAPTURE(archs[a]);
    for (auto& f : failures[a]) FAIL_CHECK(f);
    CHECK(kernels[a] >= 300);
  }
  MESSAGE(
      fmt::format("compiled {} + {} kernels in {:.1f} s", kernels[0], kernels[1],
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
}

TEST_CASE("a cubin for the exact arch, PTX for an arch newer than NVRTC knows") {
  CHECK(kiln::compiler::target_options("sm_90a") ==
        std::vector<std::string>{"--gpu-architecture=sm_90a"});
  CHECK(kiln::compiler::target_options("sm_80") ==
        std::vector<std::string>{"--gpu-architecture=sm_80"});
  const auto future = kiln::compiler::target_options("sm_990");
  CHECK(future[0].find("compute_") != std::string::npos);
  CHECK_THROWS_WITH_AS(kiln::compiler::target_options("sm_20"),
                       doctest::Contains("cannot target sm_20"), kiln::ArgumentError);
  CHECK_THROWS_WITH_AS(kiln::compiler::target_options("hopper"), doctest::Contains("bad arch"),
                       kiln::ArgumentError);

  kiln::KernelSpec spec{
      "future", "extern \"C\" __global__ void k(float* p) { p[0] = 1; }\n", "k", {"-std=c++17"}};
  const kiln::CompiledKernel ptx = kiln::compiler::compile(spec, "sm_990");
  CHECK(ptx.is_ptx);
  CHECK(ptx.image.find(".entry k") != std::string::npos);
  const kiln::CompiledKernel cubin = kiln::compiler::compile(spec, "sm_90a");
  CHECK_FALSE(cubin.is_ptx);
  CHECK(cubin.image.substr(0, 4) ==
        "\x7f"
        "ELF");
  CHECK(cubin.registers > 0);
  CHECK(cubin.compile_ms > 0);
}

TEST_CASE("KILN_DUMP_DIR: each compile's source, PTX and log as files; a bad directory names it") {
  kiln::test::TempDir dir;
  kiln::KernelSpec spec{"dump/me", "extern \"C\" __global__ void k(float* p) { p[0] = 2; }\n",
                        "k", {"-std=c++17"}};
  ::setenv("KILN_DUMP_DIR", dir.path().c_str(), 1);
  const kiln::CompiledKernel k = kiln::compiler::compile(spec, "sm_90a");
  const std::string cu = kiln::test::read_file(dir / "dump_me.sm_90a.cu");
  const std::string ptx = kiln::test::read_file(dir / "dump_me.sm_90a.ptx");
  const std::string log = kiln::test::read_file(dir / "dump_me.sm_90a.log");
  CHECK(cu == spec.source);
  CHECK(ptx.find(".entry k") != std::string::npos);
  CHECK(log.find("// instantiation: k") != std::string::npos);
  CHECK(log.find("--gpu-architecture=sm_90a") != std::string::npos);
  CHECK(log.find(k.log) != std::string::npos);
  kiln::KernelSpec broken{"broken", "__global__ void k(float* p) { p[0] = nope; }\n", "k", {}};
  CHECK_THROWS_AS(kiln::compiler::compile(broken, "sm_80"), kiln::CompileError);
  CHECK(kiln::test::read_file(dir / "broken.sm_80.log").find("nope") != std::string::npos);
  ::setenv("KILN_DUMP_DIR", (dir / "missing").c_str(), 1);
  try {
    kiln::compiler::compile(spec, "sm_80");
    FAIL("a missing dump directory was accepted");
  } catch (const kiln::ArgumentError& e) {
    CHECK(std::string(e.what()).find("KILN_DUMP_DIR=" + dir / "missing") != std::string::npos);
  }
  ::setenv("KILN_DUMP_DIR", "", 1);  // empty: nothing dumped, nothing refused
  CHECK(kiln::compiler::compile(spec, "sm_80").registers > 0);
  ::unsetenv("KILN_DUMP_DIR");
}

TEST_CASE("CompileError carries the NVRTC log and the numbered source around the error") {
  kiln::KernelSpec spec{"broken",
                        "// line 1\n__global__ void k(float* p) {\n  p[0] = undefined_name;\n}\n",
                        "k",
                        {"-std=c++17"}};
  try {
    kiln::compiler::compile(spec, "sm_90a");
    FAIL("a broken kernel compiled");
  } catch (const kiln::CompileError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("broken") != std::string::npos);
    CHECK(msg.find("undefined_name") != std::string::npos);
    CHECK(msg.find(">    3 |   p[0] = undefined_name;") != std::string::npos);
    CHECK(e.log().find("error") != std::string::npos);
    CHECK(e.options().find("sm_90a") != std::string::npos);
  }
}

TEST_CASE(
    "the CLI prints a CompileError's first line, the head of its log and the file with all of it") {
  kiln::KernelSpec spec{"broken",
                        "__global__ void k(float* p) {\n  p[0] = undefined_name;\n}\n",
                        "k",
                        {"-std=c++17"}};
  try {
    kiln::compiler::compile(spec, "sm_80");
    FAIL("a broken kernel compiled");
  } catch (const kiln::CompileError& e) {
    const std::string quiet = kiln::tools::compile_report(e, false);
    CAPTURE(quiet);
    CHECK(quiet.rfind("kiln: NVRTC could not compile kernel broken for sm_80", 0) == 0);
    CHECK(quiet.find("\n  broken.cu(2): error: identifier \"undefined_name\" is undefined\n") !=
          std::string::npos);
    CHECK(quiet.find("options:") == std::string::npos);  // the rest is in the file
    const std::string lead = "\n  the full log, with the source around each error: ";
    const auto at = quiet.find(lead);
    REQUIRE(at != std::string::npos);
    const std::string path = quiet.substr(at + lead.size(), quiet.size() - at - lead.size() - 1);
    CHECK(path.find("kiln-broken-") != std::string::npos);
    CHECK(kiln::test::read_file(path) == std::string(e.what()) + "\n");
    std::remove(path.c_str());
    const std::string loud = kiln::tools::compile_report(e, true);  // KILN_LOG_LEVEL=debug
    CHECK(loud.rfind(quiet.substr(0, quiet.find('\n') + 1), 0) == 0);
    CHECK(loud.find(">    2 |   p[0] = undefined_name;") != std::string::npos);
    CHECK(loud.back() == '\n');
  }
  // A long log shows its first lines and counts the rest.
  std::string log;
  for (int i = 1; i <= kiln::tools::kLogLines + 4; ++i) log += fmt::format("line {}\n\n", i);
  const std::string head = kiln::tools::log_head("failed\nall of it", log, "k/../k");
  CHECK(head.find(fmt::format("  line {}\n  ... 4 more lines\n", kiln::tools::kLogLines)) !=
        std::string::npos);
  const std::string path = head.substr(head.rfind(": ") + 2, head.size() - head.rfind(": ") - 3);
  CHECK(path.find("/kiln-k____k-") != std::string::npos);  // no '/' of a kernel's name
  std::remove(path.c_str());
  // Any other message stays one line, with or without details.
  CHECK(kiln::tools::error_report("no GPU here", false) == "kiln: no GPU here\n");
  CHECK(kiln::tools::error_report("no GPU here", true) == "kiln: no GPU here\n");
  CHECK(kiln::tools::error_report("a\nb", false) ==
        "kiln: a\nkiln: (the details: KILN_LOG_LEVEL=debug)\n");
}

TEST_CASE("an error inside a template names the header and shows its lines") {
  // A body that lacks what the template needs fails inside the instantiation.
  kiln::KernelSpec spec{
      "bad_body",
      "#include <kiln/elementwise.cuh>\nstruct kiln_body {};\n",
      "kiln::elementwise<kiln_body, kiln::Layout<kiln::Dim<8, 1, 1>>, 1, unsigned int, 256, 2>",
      {"-std=c++17"}};
  try {
    kiln::compiler::compile(spec, "sm_80");
    FAIL("a bad body compiled");
  } catch (const kiln::CompileError& e) {
    const std::string msg = e.what();
    CHECK(msg.find("kiln/elementwise.cuh") != std::string::npos);
    CHECK(msg.find("--- kiln/elementwise.cuh around line") != std::string::npos);
  }
}

TEST_CASE(
    "registers come from the cubin's own attributes and agree with ptxas's log; junk images say "
    "-1") {
  kiln::Graph g;
  auto x = g.input("x", {64, 4096}, kiln::DType::bf16);
  g.output(kiln::softmax(x * 0.5) + 1.0);
  g.output(kiln::silu(g.input("y", {1000}, kiln::DType::f32)));
  for (const std::string arch : {"sm_80", "sm_90a"})
    for (const kiln::KernelSpec& spec : kiln::plan_specs(g, true, {}, nullptr, arch)) {
      const kiln::CompiledKernel k = kiln::compiler::compile(spec, arch);
      CAPTURE(spec.name);
      CAPTURE(arch);
      const auto facts = kiln::compiler::read_cubin(k.image, k.lowered_name);
      CHECK(facts.registers > 0);
      CHECK(facts.registers == k.registers);
      // ptxas agrees where its log says (on the GPU host NVRTC's log of silu_f32__r1v4 has no
      // register line: the cubin is then the only source).
      if (k.log.find("Used ") != std::string::npos)
        CHECK(k.log.find(fmt::format("Used {} registers", facts.registers)) != std::string::npos);
      CHECK(facts.stack_bytes ==
            0);  // these kernels keep everything in registers and shared memory
      CHECK(k.spill_bytes == 0);
      CHECK(kiln::compiler::read_cubin(k.image, "no_such_kernel").registers == -1);
      for (std::size_t cut : {std::size_t(0), std::size_t(3), std::size_t(64), k.image.size() / 2})
        CHECK(kiln::compiler::read_cubin(std::string_view(k.image).substr(0, cut), k.lowered_name)
                  .registers <= facts.registers);
    }
  CHECK(kiln::compiler::read_cubin(".version 8.0\n.target sm_90", "k").registers == -1);
  std::string junk(4096, '\xff');
  junk.replace(0, 5,
               "\x7f"
               "ELF\x02");
  CHECK(kiln::compiler::read_cubin(junk, "k").registers == -1);
}

TEST_CASE("compiler logs: error sites and ptxas numbers are read as NVRTC and ptxas write them") {
  using kiln::compiler::error_sites;
  using kiln::compiler::ptxas_number;
  const std::string nvrtc =
      "kiln/elementwise.cuh(41): error: identifier \"q\" is undefined\n"
      "  detected during instantiation (7): note\n"
      "k.cu(12): catastrophic error: cannot open source file \"x.h\"\n"
      "(3): error: no file\n"
      "other(x): error: no line\n"
      "broken.cuh(1234567890123): error: a line beyond 9 digits\n"
      "a.cu(5): warning: not an error\n";
  const auto sites = error_sites(nvrtc);
  REQUIRE(sites.size() == 3);
  CHECK(sites[0] == std::pair<std::string, int>{"kiln/elementwise.cuh", 41});
  CHECK(sites[1] == std::pair<std::string, int>{"k.cu", 12});
  CHECK(sites[2] == std::pair<std::string, int>{"broken.cuh", -1});
  CHECK(error_sites("").empty());
  const std::string ptxas =
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Function properties for k\n"
      "    24 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 24 bytes cumulative stack size\n";
  CHECK(ptxas_number(ptxas, "Used ", " registers") == 255);
  CHECK(ptxas_number(ptxas, "", " bytes spill stores") == 16);
  CHECK(ptxas_number(ptxas, "", " bytes spill loads") == 16);
  CHECK(ptxas_number("Used  registers", "Used ", " registers") == -1);
  CHECK(ptxas_number("no numbers here", "", " bytes spill stores") == -1);
}
