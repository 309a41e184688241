// The family registry: every family kiln knows, asked in order.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "engine/families/family.hpp"

namespace kiln {

// Each family's files define its function.
const Family& elementwise_family();
const Family& rows_family();
const Family& columns_family();
const Family& gemm_family();
const Family& view_family();
const Family& user_family();

const std::vector<const Family*>& families() {
  static const std::vector<const Family*> all = {
      &elementwise_family(),
      &rows_family(),
      &columns_family(),
      &gemm_family(),
      &view_family(),
      &user_family(),
  };
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

KernelLaunch specialize_group(const GroupWork& work, const Tunables& tunables) {
  const Family& f = family_of(work.group, work.shapes);
  KernelLaunch L = f.specialize(work, tunables);
  L.family = &f;
  return L;
}

}  // namespace kiln
