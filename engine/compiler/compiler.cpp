#include "engine/compiler/compiler.hpp"

#include <fmt/format.h>
#include <nvrtc.h>
#include <spdlog/spdlog.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <kiln/error.hpp>
#include <memory>
#include <sstream>

#include "engine/compiler/cubin.hpp"
#include "engine/compiler/dump.hpp"
#include "engine/compiler/log.hpp"

namespace kiln::compiler {
namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using Program = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

void check(nvrtcResult r, const char* call, const std::string& kernel) {
  if (r != NVRTC_SUCCESS)
    throw CompileError(
        fmt::format("{} failed for kernel {}: {}", call, kernel, nvrtcGetErrorString(r)), kernel,
        "", "");
}

struct Arch {
  int number = 0;  // 90 for sm_90a
  bool specific = false;
};

Arch parse_arch(const std::string& arch) {
  // sm_ + 2 or 3 digits + an optional 'a' or 'f', read without a regex: every specialization
  // asks (has_clusters), so every Plan::run.
  std::size_t digits = 0;
  while (3 + digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[3 + digits])))
    ++digits;
  const std::size_t end = 3 + digits;
  const bool suffix = end + 1 == arch.size() && (arch[end] == 'a' || arch[end] == 'f');
  if (arch.compare(0, 3, "sm_") != 0 || digits < 2 || digits > 3 || (end != arch.size() && !suffix))
    throw ArgumentError(
        fmt::format("bad arch '{}': expected sm_XY or sm_XYa, e.g. sm_80, sm_90a", arch));
  return {std::atoi(arch.c_str() + 3), suffix};
}

// Source lines around each error site of the log, numbered.
std::string excerpts(const std::string& log, const KernelSpec& spec, const HeaderTable& headers) {
  std::string out;
  for (const auto& [file, line] : error_sites(log)) {
    const std::string* text = file == spec.name + ".cu" ? &spec.source
                              : headers.contains(file)  ? &headers.source(file)
                                                        : nullptr;
    if (!text) continue;
    std::istringstream in(*text);
    std::string l;
    out += fmt::format("--- {} around line {}:\n", file, line);
    for (int n = 1; std::getline(in, l); ++n)
      if (n >= line - 3 && n <= line + 3)
        out += fmt::format("{}{:5} | {}\n", n == line ? ">" : " ", n, l);
  }
  return out;
}

// (name, bytes) of the headers `names`, as the key hashes them.
std::vector<std::pair<std::string_view, std::string_view>> included(
    const std::vector<std::string>& names, const HeaderTable& headers) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  for (const std::string& name : names) out.emplace_back(name, headers.source(name));
  return out;
}

// NVRTC's log of `raw`, without its trailing NULs and newlines.
std::string program_log(nvrtcProgram raw) {
  std::size_t size = 0;
  nvrtcGetProgramLogSize(raw, &size);
  std::string log(size, '\0');
  if (size) nvrtcGetProgramLog(raw, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::string headers_id_of(const std::vector<std::string>& closure, const HeaderTable& headers) {
  return cache::compute_key({"", "", included(closure, headers), {}, "", ""}).hex();
}

}  // namespace

SourceUnit::SourceUnit(const KernelSpec& spec, const HeaderTable& base)
    : headers_(base, spec.headers), closure_(headers_.closure(spec.source)) {}

cache::CacheKey key_of(const KernelSpec& spec, const std::string& arch, const SourceUnit& unit) {
  return cache::compute_key({spec.source, spec.expression, included(unit.closure(), unit.headers()),
                             spec.options, arch, nvrtc_version()});
}

cache::CacheKey key_of(const KernelSpec& spec, const std::string& arch, const HeaderTable& base) {
  return key_of(spec, arch, SourceUnit(spec, base));
}

std::string spec_id(const KernelSpec& spec) {
  std::vector<std::pair<std::string_view, std::string_view>> own(spec.headers.begin(),
                                                                 spec.headers.end());
  return cache::compute_key({spec.source, spec.expression, own, spec.options, "", ""}).hex();
}

std::string headers_id(const KernelSpec& spec, const HeaderTable& base) {
  const HeaderTable headers(base, spec.headers);
  return headers_id_of(headers.closure(spec.source), headers);
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

int arch_number(const std::string& arch) { return parse_arch(arch).number; }

std::vector<std::string> target_options(const std::string& arch) {
  const Arch a = parse_arch(arch);
  int n = 0;
  nvrtcGetNumSupportedArchs(&n);
  std::vector<int> supported(n);
  nvrtcGetSupportedArchs(supported.data());
  if (supported.empty() || a.number < supported.front())
    throw ArgumentError(fmt::format("NVRTC {} cannot target {} (oldest it supports: sm_{})",
                                    nvrtc_version(), arch,
                                    supported.empty() ? 0 : supported.front()));
  for (int s : supported)
    if (s == a.number) return {"--gpu-architecture=" + arch};
  int best = supported.front();
  for (int s : supported)
    if (s <= a.number) best = s;
  // Newer than this NVRTC knows: PTX the driver compiles at load time.
  return {fmt::format("--gpu-architecture=compute_{}", best)};
}

CompiledKernel compile(const KernelSpec& spec, const std::string& arch, const HeaderTable& base) {
  return compile(spec, arch, SourceUnit(spec, base));
}

CompiledKernel compile(const KernelSpec& spec, const std::string& arch, const SourceUnit& unit) {
  const HeaderTable& headers = unit.headers();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> options = spec.options;
  const std::vector<std::string> target = target_options(arch);
  const bool ptx = target.front().find("compute_") != std::string::npos;
  options.insert(options.end(), target.begin(), target.end());
  options.push_back("-Xptxas=-v");  // register and spill counts, into the log

  const std::vector<std::string>& closure = unit.closure();
  std::vector<const char*> names, sources;
  for (auto& name : closure) {
    names.push_back(name.c_str());
    sources.push_back(headers.source(name).c_str());
  }

  nvrtcProgram raw = nullptr;
  const std::string file = spec.name + ".cu";
  check(nvrtcCreateProgram(&raw, spec.source.c_str(), file.c_str(), int(names.size()),
                           sources.data(), names.data()),
        "nvrtcCreateProgram", spec.name);
  Program prog(raw);
  check(nvrtcAddNameExpression(raw, spec.expression.c_str()), "nvrtcAddNameExpression", spec.name);
  std::vector<const char*> opts;
  for (auto& o : options) opts.push_back(o.c_str());
  const nvrtcResult result = nvrtcCompileProgram(raw, int(opts.size()), opts.data());

  const std::string log = program_log(raw), joined = fmt::format("{}", fmt::join(options, " "));
  dump_compile(spec, arch, raw, joined, log);  // KILN_DUMP_DIR
  if (result != NVRTC_SUCCESS) {
    throw CompileError(
        fmt::format("NVRTC could not compile kernel {} for {}: {}\n  instantiation: {}\n  "
                    "options: {}\n{}\n{}",
                    spec.name, arch, nvrtcGetErrorString(result), spec.expression, joined, log,
                    excerpts(log, spec, headers)),
        spec.name, log, joined);
  }

  CompiledKernel out;
  out.name = spec.name;
  out.arch = arch;
  out.is_ptx = ptx;
  const char* lowered = nullptr;
  check(nvrtcGetLoweredName(raw, spec.expression.c_str(), &lowered), "nvrtcGetLoweredName",
        spec.name);
  out.lowered_name = lowered;
  std::size_t size = 0;
  if (ptx) {
    check(nvrtcGetPTXSize(raw, &size), "nvrtcGetPTXSize", spec.name);
    out.image.resize(size);
    check(nvrtcGetPTX(raw, out.image.data()), "nvrtcGetPTX", spec.name);
  } else {
    check(nvrtcGetCUBINSize(raw, &size), "nvrtcGetCUBINSize", spec.name);
    out.image.resize(size);
    check(nvrtcGetCUBIN(raw, out.image.data()), "nvrtcGetCUBIN", spec.name);
  }
  // Registers from the cubin itself; spill stores only ptxas's log tells, but a kernel with no
  // stack frame has none.
  const CubinFacts facts = ptx ? CubinFacts{} : read_cubin(out.image, out.lowered_name);
  out.registers = facts.registers >= 0 ? facts.registers : ptxas_number(log, "Used ", " registers");
  out.spill_bytes = ptxas_number(log, "", " bytes spill stores");
  if (out.spill_bytes < 0 && facts.stack_bytes == 0) out.spill_bytes = 0;
  out.log = log;
  out.spec_id = spec_id(spec);
  out.headers_id = headers_id_of(closure, headers);
  out.nvrtc_version = nvrtc_version();
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // Spills reported here are mostly the ABI saves around the slow-path calls of IEEE div,
  // sqrt and sin; they are kept in the entry's metadata.
  spdlog::info("kiln: compiled {} for {} in {:.1f} ms ({} registers, {} bytes spilled)", spec.name,
               arch, out.compile_ms, out.registers, out.spill_bytes);
  spdlog::debug("kiln: source of {}:\n{}\n// instantiation: {}", spec.name, spec.source,
                spec.expression);
  return out;
}

}  // namespace kiln::compiler
