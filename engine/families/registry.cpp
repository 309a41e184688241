// The family registry: every family kiln knows, asked in order.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <kiln/error.hpp>
#include <mutex>
#include <set>

#include "engine/compiler/compiler.hpp"
#include "engine/families/family.hpp"

namespace kiln {

// The families, in the order they are asked: each one's files define the function named here.
// A family is registered by its line here.
#define KILN_FAMILIES(X) \
  X(elementwise_family)  \
  X(rows_family)         \
  X(columns_family)      \
  X(gemm_family)         \
  X(view_family)         \
  X(user_family)         \
  X(scan_family)         \
  X(arg_family)          \
  X(update_family)       \
  X(attention_family)    \
  X(concat_family)       \
  X(conv_family)         \
  /* a new family's line goes above */

#define KILN_DECLARE_FAMILY(f) const Family& f();
KILN_FAMILIES(KILN_DECLARE_FAMILY)
#undef KILN_DECLARE_FAMILY

const std::vector<const Family*>& families() {
#define KILN_FAMILY_ADDRESS(f) &f(),
  static const std::vector<const Family*> all = {KILN_FAMILIES(KILN_FAMILY_ADDRESS)};
#undef KILN_FAMILY_ADDRESS
  return all;
}

std::vector<TensorView> GroupWork::views(const std::vector<int>& ids) const {
  std::vector<TensorView> out;
  for (int id : ids) out.push_back(values.at(std::size_t(id)));
  return out;
}

const Family& family_of(const FusedGroup& grp, const Graph& shapes) {
  for (const Family* f : families())
    if (f->claims(grp, shapes)) return *f;
  throw Error(fmt::format("internal error: no kernel family computes {} (please report the graph)",
                          grp.stem));
}

void analyze_groups(const Graph& planned, std::vector<FusedGroup>& groups) {
  for (FusedGroup& grp : groups) {
    if (!grp.anchor) continue;
    for (const Family* f : families())
      if (f->name() == grp.anchor->fusion.family) grp.payload = f->analyze(grp, planned);
  }
}

KernelLaunch specialize_group(const GroupWork& work, const Tunables& tunables) {
  const Family& f = family_of(work.group, work.shapes);
  KernelLaunch L = f.specialize(work, tunables);
  L.family = &f;
  return L;
}

KernelLaunch specialize_tuned(const GroupWork& work, const cache::TuningDb& records) {
  KernelLaunch L = specialize_group(work);
  if (records.records().empty() || L.groups == 0) return L;
  const cache::TuningRecord* r = records.find(compiler::spec_id(L.spec));
  if (!r) return L;
  try {
    return specialize_group(work, r->winner);
  } catch (const Error& e) {
    static std::mutex mutex;
    static std::set<std::string> warned;  // once per record, not once per run
    std::lock_guard<std::mutex> lock(mutex);
    if (warned.insert(r->signature).second)
      spdlog::warn(
          "kiln: the tuning record of {} does not fit it ({}); the default runs. Re-tune: kiln "
          "tune",
          L.spec.name, e.what());
    return L;
  }
}

}  // namespace kiln
