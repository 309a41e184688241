// fp64 references of the ops that read or write at indices: gather, index_select, embedding and
// slice_update (tests/engine/reference.hpp).
#include <cmath>

#include "tests/engine/reference.hpp"

namespace kiln::test {

// slice_update: dst with src over the window at start (its attribute, or its start tensor's
// value) along axis; NaN everywhere for a start that leaves no room (the run reports it).
std::vector<double> update_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg) {
  const int dst = std::get<int>(n.args[0]), src = std::get<int>(n.args[1]);
  const Shape& ds = g.node(dst).shape;
  const Shape& ss = g.node(src).shape;
  const std::int64_t a = n.attrs.integer("axis").value_or(-1), rank = std::int64_t(ds.size());
  const std::size_t axis = std::size_t(a < 0 ? a + rank : a);
  std::int64_t start = n.attrs.integer("start").value_or(0);
  if (n.args.size() > 2) start = std::int64_t(arg(std::get<int>(n.args[2]))[0]);
  if (start < 0 && n.args.size() == 2) start += ds[axis];
  std::vector<double> out = arg(dst);
  if (start < 0 || start + ss[axis] > ds[axis])
    return std::vector<double>(out.size(), std::nan(""));
  std::vector<std::int64_t> c(ss.size());
  for (std::size_t i = 0; i < arg(src).size(); ++i) {
    std::int64_t r = std::int64_t(i), k = 0;
    for (std::size_t d = c.size(); d-- > 0;) c[d] = r % ss[d], r /= ss[d];
    c[axis] += start;
    for (std::size_t d = 0; d < c.size(); ++d) k = k * ds[d] + c[d];
    out[std::size_t(k)] = arg(src)[i];
  }
  return out;
}

void place_concat_part(const Graph& g, const Graph::Node& n, std::size_t part,
                       const std::vector<double>& values, std::vector<double>& out) {
  const Shape& rs = n.shape;
  const std::int64_t a = n.attrs.integer("axis").value_or(0), rank = std::int64_t(rs.size());
  const std::size_t axis = std::size_t(a < 0 ? a + rank : a);
  out.resize(std::size_t(numel_of(rs)), std::nan(""));
  std::int64_t start = 0;  // the operands before this part, along the axis
  for (std::size_t i = 0; i < part; ++i) start += g.node(std::get<int>(n.args[i])).shape[axis];
  const Shape& xs = g.node(std::get<int>(n.args[part])).shape;
  std::vector<std::int64_t> c(xs.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::int64_t r = std::int64_t(i), k = 0;
    for (std::size_t d = c.size(); d-- > 0;) c[d] = r % xs[d], r /= xs[d];
    c[axis] += start;
    for (std::size_t d = 0; d < c.size(); ++d) k = k * rs[d] + c[d];
    out[std::size_t(k)] = values[i];
  }
}

// concat: each operand's elements at its coordinates, moved along the axis past the operands
// before it (torch.cat).
std::vector<double> concat_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg) {
  std::vector<double> out;
  for (std::size_t i = 0; i < n.args.size(); ++i)
    place_concat_part(g, n, i, arg(std::get<int>(n.args[i])), out);
  return out;
}

// gather, index_select and embedding, from their torch definitions: an index outside the axis
// gives NaN (the run reports it instead).
std::vector<double> gather_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg) {
  const int x = std::get<int>(n.args[0]), ix = std::get<int>(n.args[1]);
  const Shape& xs = g.node(x).shape;
  const Shape& is = g.node(ix).shape;
  const std::int64_t rank = std::int64_t(xs.size());
  const std::int64_t a = n.op == "embedding" ? 0 : n.attrs.integer("axis").value_or(0);
  const std::size_t axis = std::size_t(a < 0 ? a + rank : a);
  std::vector<double> out(std::size_t(numel_of(n.shape)));
  std::vector<std::int64_t> c(n.shape.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::int64_t r = std::int64_t(i);  // c: element i's coordinates in the result
    for (std::size_t d = c.size(); d-- > 0;) c[d] = r % n.shape[d], r /= n.shape[d];
    std::vector<std::int64_t> at(c.begin(), c.end());  // where x is read
    double index = 0;
    if (n.op == "embedding") {
      std::int64_t k = 0;
      for (std::size_t d = 0; d + 1 < c.size(); ++d) k = k * is[d] + c[d];
      index = arg(ix)[std::size_t(k)];
      at = {0, c.back()};
    } else if (n.op == "index_select") {
      index = arg(ix)[std::size_t(c[axis])];
    } else {  // gather: index has the result's shape
      index = arg(ix)[i];
    }
    if (index < 0 || index >= double(xs[axis])) {
      out[i] = std::nan("");
      continue;
    }
    at[axis] = std::int64_t(index);
    std::int64_t k = 0;
    for (std::size_t d = 0; d < xs.size(); ++d) k = k * xs[d] + at[d];
    out[i] = arg(x)[std::size_t(k)];
  }
  return out;
}

KILN_NODE_REFERENCE("slice_update", exact_reference<update_reference>);
KILN_NODE_REFERENCE("concat", exact_reference<concat_reference>);
KILN_NODE_REFERENCE("gather", exact_reference<gather_reference>);
KILN_NODE_REFERENCE("index_select", exact_reference<gather_reference>);
KILN_NODE_REFERENCE("embedding", exact_reference<gather_reference>);

}  // namespace kiln::test
