// The epilogues of the fusion pass (fusion_layers.hpp): which row op's kernel computes each
// elementwise consumer of its result where it stores it, directly or through views of the
// result (ops::FusionRoles::epilogue_through_views), and which of those views need no memory.
#include <algorithm>

#include "engine/passes/fusion_layers.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln::fusion {
namespace {

// The row op whose epilogue computes elementwise `id` (its collected steps `probe`), and the
// views between its result and id's read of it; host -1 where none can.
struct EpilogueHost {
  int host = -1;
  std::vector<int> views;
};

// A row result read through views (epilogue_view_chain) by `probe`, and nothing else of probe's
// inputs computed after that row's kernel: views add depth, so the row is of a lower depth
// than `id`, and its kernel runs before any anchor of a higher one and after those of its own
// that are not rows or are rows of a lower id.
EpilogueHost host_behind_views(const Graph& g, const Layers& l, int id, const FusedGroup& probe) {
  EpilogueHost found;
  for (int in : probe.inputs) {
    int root = -1;
    if (!is_view(g, in) || g.node(in).shape != g.node(id).shape) continue;
    std::vector<int> views = epilogue_view_chain(g, in, root);
    if (views.empty() || !hosts_epilogue(g, root) || !roles(g, root).epilogue_through_views)
      continue;
    if (found.host >= 0) return {};  // two index maps: one a kernel
    found = {root, std::move(views)};
  }
  if (found.host < 0) return {};
  const int h = l.depth_of(found.host);
  for (int in : probe.inputs) {
    if (in == found.views.back()) continue;
    const int d = l.depth_of(in);
    if (in == found.host || d > h || (d == h && hosts_epilogue(g, in) && in > found.host))
      return {};
    // A gather view (a pad, an embedding) read in place needs a kernel that gathers: where the
    // host's does not, the consumer stays an elementwise kernel (gathered_in_place looks only
    // at direct readers of a host).
    if (is_gather(g, in) && !roles(g, found.host).gathers) return {};
  }
  return found;
}

EpilogueHost epilogue_host(const Graph& g, const Layers& l, int id, const FusedGroup& probe) {
  int host = -1, last_row = -1;
  for (int in : probe.inputs) {
    if (!hosts_epilogue(g, in) || l.depth_of(in) != l.depth_of(id)) continue;
    last_row = std::max(last_row, in);
    if (g.node(in).shape == g.node(id).shape) host = std::max(host, in);
  }
  // The host must run after every row result the epilogue reads: reductions of its depth run
  // first, then softmax and norms in id order.
  if (last_row >= 0) return host == last_row ? EpilogueHost{host, {}} : EpilogueHost{};
  return host_behind_views(g, l, id, probe);
}

// Whether nothing but an epilogue reads view `v` directly: it is no output, and no kernel or
// view takes it. Elementwise kernels computing from it are found once the groups are made
// (keep_read_views), as they see it only through what they collect.
bool only_epilogue_reads(const Graph& g, const Layers& l, int v) {
  if (is_output(g, v)) return false;
  for (int c : l.needed)
    for (int a : tensor_args(g, c))
      if (a == v && is_anchor(g, c)) return false;
  return true;
}

// Views only an epilogue reads are its kernel's index math: no memory, no copy, and they do not
// make the row result be written.
void drop_epilogue_views(const Graph& g, Layers& l) {
  for (const auto& chain : l.epilogue_views) {
    const std::vector<int>& views = chain.second;
    for (std::size_t i = views.size();
         i-- > 0 && !l.kept_views.count(views[i]) && only_epilogue_reads(g, l, views[i]);) {
      l.needed.erase(views[i]);
      l.materialized.erase(views[i]);
    }
  }
}

}  // namespace

void find_epilogues(const Graph& g, Layers& l) {
  for (int id : l.materialized) {
    if (g.node(id).op == "input" || is_anchor(g, id)) continue;
    if (involves_integer(g, id)) continue;
    FusedGroup probe;
    collect(g, {id}, {}, probe);
    const EpilogueHost h = epilogue_host(g, l, id, probe);
    if (h.host < 0) continue;
    const auto had = l.epilogue_of.find(h.host);
    if (had != l.epilogue_of.end() && l.epilogue_views.at(h.host) != h.views)
      continue;  // one index map a kernel
    std::vector<int> taken = had == l.epilogue_of.end() ? std::vector<int>() : had->second;
    taken.push_back(id);
    if (!epilogue_fits(g, h.host, taken, h.views.empty() ? -1 : h.views.back())) continue;
    l.epilogue_of[h.host].push_back(id);
    l.epilogue_views[h.host] = h.views;
    l.absorbed.insert(id);
  }
  drop_epilogue_views(g, l);
}

bool keep_read_views(const Layers& l, const std::vector<FusedGroup>& groups, std::set<int>& kept) {
  bool more = false;
  for (const auto& [host, views] : l.epilogue_views) {
    bool read = false;
    for (int v : views) {
      if (l.needed.count(v)) continue;  // kept in memory already
      for (const FusedGroup& grp : groups)
        for (const auto* list : grp.reads())
          read = read || std::count(list->begin(), list->end(), v);
    }
    if (!read) continue;
    kept.insert(views.begin(), views.end());
    more = true;
  }
  return more;
}

}  // namespace kiln::fusion
