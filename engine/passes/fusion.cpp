#include "engine/passes/fusion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/ir/graph_ops.hpp"
#include "engine/passes/fusion_layers.hpp"
#include "engine/passes/fusion_roles.hpp"

namespace kiln {
namespace {

using namespace fusion;

// Whether a kernel that reads only contiguous memory (a user's template) reads `id`.
bool read_contiguous(const Graph& g, int id) {
  for (std::size_t c = 0; c < g.nodes().size(); ++c) {
    const auto& args = g.nodes()[c].args;
    if (is_kernel_anchor(g, int(c)) && !roles(g, int(c)).strided &&
        std::find(args.begin(), args.end(), std::variant<int, double>(id)) != args.end())
      return true;
  }
  return false;
}

// Whether view `id` needs a kernel copying its operand: an output itself; a view that is never
// read in place (a slice, unless a product's kernel writes it: window_slices); one read in
// place in the arena whose operand is not a value there (a graph input or output: memory the
// caller owns and the view cannot share, or another view read in place elsewhere, unless that
// view is made row-major by its operand's layout: reader_order); one read in place anywhere that
// a kernel reading only contiguous memory reads.
bool view_copies(const Graph& g, int id) {
  if (is_output(g, id)) return true;
  if (is_gather(g, id)) return !gathered_in_place(g, id);
  const int src = std::get<int>(g.node(id).args[0]);
  switch (view_in_place(g, id)) {
    case ops::ViewRule::InPlace::never:
      return true;
    case ops::ViewRule::InPlace::arena:
      return g.node(src).op == "input" || is_output(g, src) ||
             (is_view(g, src) && !view_copies(g, src) &&
              view_in_place(g, src) != ops::ViewRule::InPlace::arena &&
              reader_order(g, src).empty());
    case ops::ViewRule::InPlace::anywhere:
      return read_contiguous(g, id);
  }
  return true;
}

}  // namespace

void fusion::collect(const Graph& g, const std::vector<int>& roots, const std::set<int>& stop,
                     FusedGroup& grp) {
  std::set<int> steps, inputs;
  std::vector<int> todo = roots;
  while (!todo.empty()) {
    const int id = todo.back();
    todo.pop_back();
    if (steps.count(id) || inputs.count(id)) continue;
    if (g.node(id).op == "input" || is_anchor(g, id) || stop.count(id)) {
      inputs.insert(id);
      continue;
    }
    steps.insert(id);
    for (int a : tensor_args(g, id)) todo.push_back(a);
  }
  grp.steps.assign(steps.begin(), steps.end());
  grp.inputs.assign(inputs.begin(), inputs.end());
}

namespace {

// A node as a kernel of its own (an anchor, a view's copy) writing its result; its tensor
// operands are named by their roles (the op's operand names).
FusedGroup anchored(const Graph& g, int id) {
  FusedGroup grp;
  const Graph::Node& n = g.node(id);
  grp.anchor = &op_def(g, n.op);
  grp.anchor_node = id;
  grp.outputs = {id};
  for (std::size_t i = 0; i < n.args.size(); ++i)
    if (const int* a = std::get_if<int>(&n.args[i]))
      grp.roles.emplace_back(i < grp.anchor->operands.size() ? grp.anchor->operands[i] : "", *a);
  return grp;
}

// An anchor's kernel: x computed by its prologue (collected up to memory or `stop`) where it
// takes one, else its operands read from memory in order; its side operands (from the op's
// side_from on) read from memory as extras.
FusedGroup anchor_group(const Graph& g, int id, const std::set<int>& stop) {
  FusedGroup grp = anchored(g, id);
  const std::vector<int> args = tensor_args(g, id);
  const ops::FusionRoles& r = grp.anchor->fusion;
  const auto side = std::ptrdiff_t(std::min(r.side_from, args.size()));
  grp.extras.assign(args.begin() + side, args.end());
  if (r.in_place) {  // its output is args[0]'s memory; a start tensor an index
    grp.inputs = {args[1]};
    if (args.size() > 2) grp.index_inputs = {args[2]};
    grp.extras.clear();
  } else if (r.prologue) {
    grp.x = args[0];
    std::set<int> until = stop;
    if (involves_integer(g, grp.x)) until.insert(grp.x);  // x from memory (find_depths)
    collect(g, {grp.x}, until, grp);
  } else {
    grp.inputs.assign(args.begin(), args.begin() + side);
  }
  return grp;
}

// A view's copy: a kernel reading its operand and writing its result (a gather view's reads
// its x at the indices of its index tensor).
FusedGroup copy_group(const Graph& g, int id) {
  FusedGroup grp = anchored(g, id);
  grp.inputs = tensor_args(g, id);
  if (is_gather(g, id)) {
    grp.gather_views = {id};
    grp.index_inputs = {index_node(g, id)};
    grp.inputs.resize(1);
  }
  return grp;
}

// Every value a kernel reads is a graph input or written by an earlier kernel (a fusion bug
// otherwise: the kernel would read memory nothing wrote yet); a view no kernel copies is its
// operand's memory.
void check_order(const Graph& g, const std::vector<FusedGroup>& groups) {
  std::set<int> written;
  std::map<int, int> source;
  for (const auto& [view, src] : view_aliases(g, groups)) source[view] = src;
  auto resolved = [&source](int id) {
    for (auto it = source.find(id); it != source.end(); it = source.find(id)) id = it->second;
    return id;
  };
  for (const FusedGroup& grp : groups) {
    for (const auto* list : grp.reads())
      for (int read : *list)
        if (const int id = resolved(read);
            g.node(id).op != "input" && !written.count(id) && id != grp.anchor_node)
          throw Error(fmt::format(
              "internal error in the fusion pass: kernel {} reads '{}' before any kernel writes it "
              "(set KILN_DISABLE_FUSION=1 to work around it, and please report the graph)",
              grp.stem, g.node(id).name));
    written.insert(grp.outputs.begin(), grp.outputs.end());
  }
}

}  // namespace

bool read_outside(const Graph& g, const std::set<int>& needed,
                  const std::vector<FusedGroup>& groups, const FusedGroup& self, int id) {
  if (is_output(g, id)) return true;
  for (int v : needed)  // a view that may share its memory
    if (is_view(g, v) && view_in_place(g, v) != ops::ViewRule::InPlace::never &&
        std::get<int>(g.node(v).args[0]) == id)
      return true;
  for (const FusedGroup& other : groups)
    for (const auto* list : other.reads())
      if (&other != &self && std::find(list->begin(), list->end(), id) != list->end()) return true;
  return false;
}

std::vector<std::pair<int, int>> view_aliases(const Graph& g,
                                              const std::vector<FusedGroup>& groups) {
  std::set<int> written, read;
  for (const FusedGroup& grp : groups) {
    written.insert(grp.outputs.begin(), grp.outputs.end());
    for (const std::vector<int>* ids : grp.reads()) read.insert(ids->begin(), ids->end());
  }
  // Only views a kernel reads, or that such a view is of (a view nothing needs may not be
  // makeable of its operand's memory: a reshape of a transposed input).
  std::vector<std::pair<int, int>> out;
  for (std::size_t i = g.nodes().size(); i-- > 0;) {
    const int id = int(i);
    const bool alias = (is_view(g, id) && !written.count(id)) || roles(g, id).in_place;
    if (!alias || (!read.count(id) && !roles(g, id).in_place)) continue;
    const int src = std::get<int>(g.nodes()[i].args[0]);
    out.emplace_back(id, src);
    read.insert(src);
  }
  std::reverse(out.begin(), out.end());  // node order: a view's view follows
  return out;
}

namespace {

// The nodes the outputs need, and the in-place writes (a slice_update into a caller's tensor
// is the plan's work even where nothing in it reads the result).
std::set<int> needed_nodes(const Graph& g) {
  std::set<int> needed;
  std::vector<int> todo = g.outputs();
  for (std::size_t id = 0; id < g.nodes().size(); ++id)
    if (g.nodes()[id].op != "input" && roles(g, int(id)).in_place) todo.push_back(int(id));
  while (!todo.empty()) {
    const int id = todo.back();
    todo.pop_back();
    if (!needed.insert(id).second) continue;
    for (int a : tensor_args(g, id)) todo.push_back(a);
  }
  return needed;
}

// With fusion off: one kernel per op, every value materialized.
std::vector<FusedGroup> unfused_groups(const Graph& g, const std::set<int>& needed) {
  std::vector<FusedGroup> groups;
  std::set<int> all(needed.begin(), needed.end());
  for (int id : needed) {
    if (g.node(id).op == "input") continue;
    if (roles(g, id).parts) {
      for (FusedGroup& p : part_groups(g, id, all)) groups.push_back(std::move(p));
    } else if (is_kernel_anchor(g, id)) {
      groups.push_back(anchor_group(g, id, all));
    } else if (is_view(g, id)) {
      if (view_copies(g, id)) groups.push_back(copy_group(g, id));
    } else {
      FusedGroup grp;
      grp.outputs = {id};
      grp.steps = {id};
      for (int a : tensor_args(g, id))
        if (std::find(grp.inputs.begin(), grp.inputs.end(), a) == grp.inputs.end())
          grp.inputs.push_back(a);
      groups.push_back(std::move(grp));
    }
  }
  add_gather_indices(g, groups);
  for (FusedGroup& grp : groups) build_body(g, grp);
  check_in_place(g, groups);
  overlap_parts(groups);
  return groups;
}

// Each needed node's depth, and the values that must be materialized: the outputs and what an
// anchor reads from memory.
void find_depths(const Graph& g, Layers& l) {
  l.materialized.insert(g.outputs().begin(), g.outputs().end());
  for (int id : l.needed) {  // ids ascend: arguments come first
    int d = 0;
    for (int a : tensor_args(g, id)) d = std::max(d, l.depth[a]);
    l.depth[id] = d + (is_anchor(g, id) ? 1 : 0);
    const std::vector<int> args = tensor_args(g, id);
    if (is_anchor(g, id) && !roles(g, id).parts)  // what an anchor reads past a prologue's x,
                                                  // all a view reads (a concat computes its own)
      for (std::size_t i = takes_prologue(g, id) && !involves_integer(g, args[0]) ? 1 : 0;
           i < args.size(); ++i)
        l.materialized.insert(args[i]);
  }
  l.max_depth =
      l.depth.empty() ? 0 : std::max_element(l.depth.begin(), l.depth.end(), [](auto& a, auto& b) {
                              return a.second < b.second;
                            })->second;
}

// The anchors of depth `level` (they read only values of lower depths): those that take neither
// a prologue nor an epilogue (users' templates) and views' copies, those with a prologue only
// (reductions), then those hosting epilogues.
void add_anchor_groups(const Graph& g, Layers& l, int level, std::vector<FusedGroup>& groups) {
  std::vector<int> rows;
  for (int id : l.needed)
    if (takes_prologue(g, id) && !hosts_epilogue(g, id) && l.depth[id] == level) rows.push_back(id);
  for (int id : l.needed)
    if (hosts_epilogue(g, id) && l.depth[id] == level) rows.push_back(id);
  for (int id : l.needed)
    if (is_kernel_anchor(g, id) && !takes_prologue(g, id) && !hosts_epilogue(g, id) &&
        l.depth[id] == level) {
      if (!roles(g, id).parts) {
        groups.push_back(anchor_group(g, id, {}));
        continue;
      }
      // A part that is a value written anyway (an output, an anchor's operand) is read there.
      for (FusedGroup& p : part_groups(g, id, l.materialized)) groups.push_back(std::move(p));
    }
  for (int id : l.needed)
    if (is_view(g, id) && l.depth[id] == level && view_copies(g, id))
      groups.push_back(copy_group(g, id));
  for (int id : rows) {
    FusedGroup grp = anchor_group(g, id, {});
    if (auto it = l.epilogue_of.find(id); it != l.epilogue_of.end()) {
      FusedGroup epi;
      collect(g, it->second, {}, epi);
      grp.epilogue_steps = epi.steps;
      grp.epilogue_views = l.epilogue_views.at(id);
      const int read = grp.epilogue_views.empty() ? id : grp.epilogue_views.back();
      for (int in : epi.inputs)
        if (in != read) grp.epilogue_inputs.push_back(in);
      grp.outputs = it->second;  // the row result itself is added later if anything else reads it
    }
    groups.push_back(std::move(grp));
  }
}

// The materialized elementwise values of depth `level` that no epilogue took, one kernel per
// shape.
void add_elementwise_groups(const Graph& g, Layers& l, int level, std::vector<FusedGroup>& groups) {
  std::vector<Shape> shapes;
  std::vector<FusedGroup> level_groups;
  for (int id : l.materialized) {
    if (g.node(id).op == "input" || is_anchor(g, id) || l.depth[id] != level ||
        l.absorbed.count(id))
      continue;
    const Shape& s = g.node(id).shape;
    auto it = std::find(shapes.begin(), shapes.end(), s);
    if (it == shapes.end()) {
      shapes.push_back(s);
      level_groups.emplace_back();
      it = shapes.end() - 1;
    }
    level_groups[std::size_t(it - shapes.begin())].outputs.push_back(id);
  }
  for (FusedGroup& grp : level_groups) {
    collect(g, grp.outputs, {}, grp);
    groups.push_back(std::move(grp));
  }
}

// A row result with an epilogue is written only if a graph output or another kernel reads it.
void write_read_anchors(const Graph& g, const std::set<int>& needed,
                        std::vector<FusedGroup>& groups) {
  for (FusedGroup& grp : groups) {
    if (!grp.anchor || (grp.outputs.size() == 1 && grp.outputs[0] == grp.anchor_node)) continue;
    if (read_outside(g, needed, groups, grp, grp.anchor_node))
      grp.outputs.insert(grp.outputs.begin(), grp.anchor_node);
  }
}

}  // namespace

std::vector<FusedGroup> fuse(const Graph& g, bool enabled) {
  if (!enabled) return unfused_groups(g, needed_nodes(g));
  Layers l;
  std::vector<FusedGroup> groups;
  std::set<int> kept_views;
  do {
    l = Layers();
    l.needed = needed_nodes(g);
    l.kept_views = kept_views;
    find_depths(g, l);
    find_epilogues(g, l);
    groups.clear();
    for (int level = 0; level <= l.max_depth; ++level) {
      add_anchor_groups(g, l, level, groups);
      add_elementwise_groups(g, l, level, groups);
    }
  } while (keep_read_views(l, groups, kept_views));
  window_slices(g, l.needed, groups);
  write_read_anchors(g, l.needed, groups);
  join_results(g, groups);
  fold_scales(g, l.needed, groups);
  load_prologues(g, l.needed, groups);
  hand_on_prologues(g, groups);
  add_gather_indices(g, groups);
  for (FusedGroup& grp : groups) build_body(g, grp);
  check_order(g, groups);
  check_in_place(g, groups);
  overlap_parts(groups);
  return groups;
}

}  // namespace kiln
