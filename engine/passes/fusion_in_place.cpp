// In-place results (engine/passes/fusion.hpp, check_in_place): a slice_update writes into its
// operand's memory, so its kernel must come after every kernel that reads the old value and
// before every kernel that reads the new one.
#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>
#include <map>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

using namespace fusion;

// Whether reading `id` reads `target`'s value: `id` is it, or a view or in-place result whose
// operand chain passes through it.
bool reads_value(const std::map<int, int>& source, int id, int target) {
  for (;;) {
    if (id == target) return true;
    const auto it = source.find(id);
    if (it == source.end()) return false;
    id = it->second;
  }
}

bool group_reads(const std::map<int, int>& source, const FusedGroup& grp, int target, int except) {
  for (const auto* list : grp.reads())
    for (int id : *list)
      if (reads_value(source, id, target) && !(except >= 0 && reads_value(source, id, except)))
        return true;
  return false;
}

}  // namespace

void check_in_place(const Graph& g, std::vector<FusedGroup>& groups) {
  std::map<int, int> source;
  for (const auto& [view, src] : view_aliases(g, groups)) source[view] = src;
  for (std::size_t id = 0; id < g.nodes().size(); ++id) {
    if (!roles(g, int(id)).in_place) continue;
    const Graph::Node& n = g.node(int(id));
    const int dst = std::get<int>(n.args[0]);
    const std::string what = fmt::format("{} '{}' writes into '{}'", n.op, printable_name(n.name),
                                         printable_name(g.node(dst).name));
    if (is_output(g, int(id)))
      throw GraphError(
          fmt::format("{}: its result is that memory, updated in place, and cannot "
                      "be an output; read '{}' after the run instead",
                      what, printable_name(g.node(dst).name)));
    if (is_view(g, dst))
      throw GraphError(
          fmt::format("{}, a view ({}): write into the tensor it views", what, g.node(dst).op));
    // Its kernel as late as it may run: just before the first kernel reading its result.
    auto writer = std::find_if(groups.begin(), groups.end(),
                               [&](const FusedGroup& grp) { return grp.anchor_node == int(id); });
    if (writer == groups.end()) continue;
    FusedGroup moved = std::move(*writer);
    groups.erase(writer);
    auto at = std::find_if(groups.begin(), groups.end(), [&](const FusedGroup& grp) {
      return group_reads(source, grp, int(id), -1);
    });
    at = groups.insert(at, std::move(moved));
    for (auto later = at + 1; later != groups.end(); ++later)
      if (group_reads(source, *later, dst, int(id)))
        throw GraphError(fmt::format(
            "{}, whose old value kernel {} reads after the write (it also reads the result, or "
            "something that does): compute what reads the old value from another tensor",
            what, later->stem));
  }
}

}  // namespace kiln
