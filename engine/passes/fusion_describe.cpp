// describe_group: what a fused kernel computes, as an expression over what it reads (NVTX
// names its launches so).
#include <fmt/format.h>

#include <map>
#include <set>

#include "engine/passes/fusion.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

constexpr std::size_t kLabelBytes = 200;

std::string cut(std::string s) {
  if (s.size() > kLabelBytes) s = s.substr(0, kLabelBytes - 3) + "...";
  return s;
}

bool infix(const Graph::Node& n) { return (n.op == "add" || n.op == "sub") && n.args.size() == 2; }

// Node `id` as computed by a kernel that computes `computed` (memoized: a value several nodes
// use is rendered once, whatever the graph's shape).
const std::string& render(const Graph& g, int id, const std::set<int>& computed,
                          std::map<int, std::string>& memo) {
  if (auto it = memo.find(id); it != memo.end()) return it->second;
  const Graph::Node& n = g.node(id);
  std::string out;
  if (!computed.count(id)) {
    out = n.name;  // read from memory
  } else {
    std::vector<std::string> args;
    for (const auto& a : n.args) {
      if (!std::holds_alternative<int>(a)) {
        args.push_back(fmt::format("{:g}", std::get<double>(a)));
        continue;
      }
      const int arg = std::get<int>(a);
      const std::string& text = render(g, arg, computed, memo);
      const bool wrap =
          infix(n) && !args.empty() && computed.count(arg) && infix(g.node(arg));  // a-(b+c)
      args.push_back(wrap ? "(" + text + ")" : text);
    }
    out = infix(n) ? args[0] + (n.op == "add" ? "+" : "-") + args[1]
                   : fmt::format("{}({})", n.op, fmt::join(args, ","));
  }
  return memo[id] = cut(std::move(out));
}

}  // namespace

std::string describe_group(const Graph& g, const FusedGroup& grp) {
  std::set<int> computed(grp.steps.begin(), grp.steps.end());
  computed.insert(grp.epilogue_steps.begin(), grp.epilogue_steps.end());
  computed.insert(grp.epilogue_views.begin(), grp.epilogue_views.end());
  if (grp.anchor) computed.insert(grp.anchor_node);
  // A product's kernel writing a slice of its columns; a result joining the anchor's kernel.
  for (int o : grp.outputs)
    if (grp.anchor && o != grp.anchor_node &&
        (is_window(g, o) || !fusion::roles(g, o).joins.empty()))
      computed.insert(o);
  std::map<int, std::string> memo;
  std::vector<std::string> outs;
  for (int o : grp.outputs) outs.push_back(render(g, o, computed, memo));
  return cut(fmt::format("{}", fmt::join(outs, "; ")));
}

}  // namespace kiln
