#include "engine/passes/planner.hpp"

#include <algorithm>
#include <utility>

namespace kiln {

ArenaPlan plan_arena(const Graph& g, const std::vector<FusedGroup>& groups) {
  const std::size_t n = g.nodes().size();
  ArenaPlan p;
  p.offset.assign(n, -1);
  p.size.assign(n, 0);
  p.first.assign(n, -1);
  p.last.assign(n, -1);
  std::vector<bool> output(n, false);
  for (int o : g.outputs()) output[std::size_t(o)] = true;
  std::vector<int> memory_of(n);  // a view that shares its operand's memory reads the operand's
  for (std::size_t id = 0; id < n; ++id) memory_of[id] = int(id);
  for (const auto& [view, src] : view_aliases(g, groups))
    memory_of[std::size_t(view)] = memory_of[std::size_t(src)];
  for (std::size_t k = 0; k < groups.size(); ++k) {
    for (int id : groups[k].outputs) {
      const int memory = memory_of[std::size_t(id)];  // an in-place result writes its operand's
      if (memory != id && p.first[std::size_t(memory)] >= 0)
        p.last[std::size_t(memory)] = std::max(p.last[std::size_t(memory)], int(k));
      // It lives from the first kernel writing it to the last (a concat's result has one per
      // operand) and on to its last reader.
      if (!output[std::size_t(id)] && memory == id) {
        if (p.first[std::size_t(id)] < 0) p.first[std::size_t(id)] = int(k);
        p.last[std::size_t(id)] = std::max(p.last[std::size_t(id)], int(k));
      }
    }
    for (const auto* list : groups[k].reads())
      for (int read : *list)
        if (const int id = memory_of[std::size_t(read)]; p.first[std::size_t(id)] >= 0)
          p.last[std::size_t(id)] = std::max(p.last[std::size_t(id)], int(k));
  }
  std::vector<int> values;  // written and read later, largest first (best packing of a greedy fit)
  for (std::size_t id = 0; id < n; ++id) {
    if (p.first[id] < 0) continue;
    p.last[id] = std::max(p.last[id], p.first[id]);  // written and never read: still needs room
    const Graph::Node& node = g.nodes()[id];
    const std::int64_t bytes = numel_of(node.shape) * std::int64_t(size_of(node.dtype));
    p.size[id] = (bytes + ArenaPlan::kAlign - 1) / ArenaPlan::kAlign * ArenaPlan::kAlign;
    p.unshared += p.size[id];
    values.push_back(int(id));
  }
  std::stable_sort(values.begin(), values.end(),
                   [&](int a, int b) { return p.size[std::size_t(a)] > p.size[std::size_t(b)]; });
  std::vector<int> placed;
  for (int v : values) {
    // The lowest offset clear of every placed value whose life overlaps v's.
    std::vector<std::pair<std::int64_t, std::int64_t>> busy;
    for (int u : placed)
      if (p.first[std::size_t(u)] <= p.last[std::size_t(v)] &&
          p.first[std::size_t(v)] <= p.last[std::size_t(u)])
        busy.emplace_back(p.offset[std::size_t(u)],
                          p.offset[std::size_t(u)] + p.size[std::size_t(u)]);
    std::sort(busy.begin(), busy.end());
    std::int64_t at = 0;
    for (const auto& [lo, hi] : busy) {
      if (at + p.size[std::size_t(v)] <= lo) break;
      at = std::max(at, hi);
    }
    p.offset[std::size_t(v)] = at;
    p.bytes = std::max(p.bytes, at + p.size[std::size_t(v)]);
    placed.push_back(v);
  }
  p.values = int(values.size());
  return p;
}

}  // namespace kiln
