// kiln cache explain MANIFEST|G.json [--arch A]: for each kernel, a hit or why it missed, and for
// a graph the tuning records that apply to it here, or those of another GPU that do not.
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <set>

#include "cache/bundle.hpp"
#include "cache/disk_cache.hpp"
#include "cache/tuning.hpp"
#include "engine/codegen/autotune.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/plan_specs.hpp"
#include "engine/passes/fusion.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/driver.hpp"
#include "engine/target.hpp"
#include "tools/commands.hpp"
#include "tools/report.hpp"

namespace kiln::tools {
namespace {

// Why `spec` is not in the cache for `arch`: the nearest entries' differences.
std::string why_missed(const KernelSpec& spec, const std::string& arch,
                       const std::vector<cache::EntryInfo>& entries,
                       const std::vector<cache::Bundle>& bundles) {
  const std::string id = compiler::spec_id(spec), headers = compiler::headers_id(spec);
  std::set<std::string> archs, nvrtcs;
  bool other_headers = false;
  auto near = [&](const CompiledKernel& k) {
    if (k.spec_id != id) return;
    if (k.arch != arch)
      archs.insert(k.arch);
    else if (k.nvrtc_version != compiler::nvrtc_version())
      nvrtcs.insert(k.nvrtc_version);
    else if (k.headers_id != headers)
      other_headers = true;
  };
  for (const auto& e : entries)
    if (e.kernel) near(*e.kernel);
  for (const auto& b : bundles)
    for (const auto& item : b.items()) near(item.kernel);
  std::vector<std::string> reasons;
  if (!archs.empty())
    reasons.push_back(fmt::format("compiled only for other archs ({})", fmt::join(archs, ", ")));
  if (!nvrtcs.empty())
    reasons.push_back(
        fmt::format("compiled by another NVRTC version ({})", fmt::join(nvrtcs, ", ")));
  if (other_headers)
    reasons.push_back(
        "compiled from other template or CUDA header bytes (another kiln or toolkit build)");
  int other_format = 0;
  for (const auto& e : entries)
    other_format += e.problem.find("format version") != std::string::npos;
  if (other_format)
    reasons.push_back(
        fmt::format("{} entries of another format version cannot be read", other_format));
  return "miss: " +
         (reasons.empty() ? std::string("no entry") : fmt::format("{}", fmt::join(reasons, "; ")));
}

// Where the engine finds `spec` for `arch` without compiling, as EngineImpl::fetch looks: its
// own entry, else one of an older arch whose cubins run on `arch` ("" if none serves it; a
// miss naming the corrupt entry it would have read).
std::string served_from(const KernelSpec& spec, const std::string& arch,
                        const std::vector<cache::EntryInfo>& entries,
                        const std::vector<cache::Bundle>& bundles) {
  std::vector<std::string> archs = {arch};
  for (std::string& a : older_compatible_archs(arch)) archs.push_back(std::move(a));
  std::string corrupt;
  for (const std::string& a : archs) {
    const cache::CacheKey key = compiler::key_of(spec, a);
    const std::string of = a == arch ? "" : ", the " + a + " cubin, which runs on " + arch;
    for (const auto& b : bundles)
      if (b.find(key)) return "hit (bundle " + b.path() + of + ")";
    for (const auto& e : entries)
      if (e.key == key.hex() && e.kernel) return "hit (disk" + of + ")";
      else if (e.key == key.hex() && corrupt.empty())
        corrupt = "miss: the entry is corrupt (" + e.problem + ")";
  }
  return corrupt;
}

// What the tuning records say of the kernel whose default spec id is `signature`.
std::vector<std::string> tuning_notes(const std::string& signature, const std::string& gpu,
                                      const std::vector<cache::TuningDb>& dbs) {
  std::vector<std::string> notes;
  for (const cache::TuningDb& db : dbs) {
    const cache::TuningRecord* r = db.find(signature);
    if (!r) continue;
    if (db.gpu() == gpu)
      notes.push_back(fmt::format("tuned on this GPU: {} ({:.1f} us, default {:.1f} us)",
                                  autotune::describe(r->winner), r->winner_us, r->default_us));
    else
      notes.push_back(fmt::format("a tuning record of '{}' is not applied: {}", db.gpu(),
                                  gpu.empty() ? "no GPU here" : "this GPU is '" + gpu + "'"));
  }
  return notes;
}

}  // namespace

int cache_explain(const cache::DiskCache& c, const std::string& path, std::string arch) {
  std::string why, gpu;
  std::optional<runtime::DeviceInfo> device;
  if (runtime::device_available(&why)) {
    device = runtime::Context(0).info();
    gpu = device->name;
    if (arch.empty()) arch = device->arch();
  }
  if (arch.empty())
    throw ArgumentError("no GPU here to take the arch from; pass --arch (e.g. sm_90a)");
  Target target = target_of(arch);
  if (device && device->arch() == arch) {  // specialized as this GPU's engine specializes
    target.max_shared = device->max_shared_per_block_optin;
    target.sms = device->sm_count;
  }
  std::vector<cache::Bundle> bundles;
  for (const std::string& b : cache::bundles_from_env()) bundles.push_back(cache::Bundle::open(b));
  const auto entries = c.list();
  const bool graph = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  std::vector<cache::TuningDb> dbs;
  if (graph) dbs = cache::TuningDb::load_all(c.dir());
  const cache::TuningDb* mine = nullptr;
  for (const auto& db : dbs)
    if (db.gpu() == gpu) mine = &db;
  const std::vector<KernelSpec> defaults =
      naming_file(path, [&] { return load_specs(path, nullptr, target); });
  const std::vector<KernelSpec> specs =
      mine ? naming_file(path, [&] { return load_specs(path, mine, target); }) : defaults;
  int misses = 0;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const KernelSpec& spec = specs[i];
    std::string verdict = served_from(spec, arch, entries, bundles);
    if (verdict.empty()) verdict = why_missed(spec, arch, entries, bundles);
    misses += verdict.rfind("miss", 0) == 0;  // a corrupt entry too: the kernel compiles again
    fmt::print("{:<30} {:<7} {}\n", spec.name, arch, verdict);
    if (graph)
      for (const std::string& note : tuning_notes(compiler::spec_id(defaults[i]), gpu, dbs))
        fmt::print("  {}\n", note);
  }
  return misses ? 1 : 0;
}

}  // namespace kiln::tools
