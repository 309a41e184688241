// fp64 references of the views that move elements (slice, permute, transpose, expand,
// broadcast_to): their values from their operand's, row-major (tests/engine/reference.hpp).
#include "ops/op.hpp"
#include "tests/engine/reference.hpp"

namespace kiln::test {
namespace {

// x[..., start:stop, ...] along the slice's axis, from x's values in row-major order.
std::vector<double> slice_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg) {
  const int id = std::get<int>(n.args[0]);
  const Shape& x = g.node(id).shape;
  const std::vector<double>& xv = arg(id);
  const ops::SliceRange r = ops::slice_range(x, n.attrs, "slice");
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < r.axis; ++d) outer *= x[d];
  for (std::size_t d = r.axis + 1; d < x.size(); ++d) inner *= x[d];
  const std::int64_t ext = x[r.axis];
  std::vector<double> out;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = r.start; j < r.stop; ++j)
      for (std::int64_t i = 0; i < inner; ++i)
        out.push_back(xv[std::size_t((o * ext + j) * inner + i)]);
  return out;
}

// x's values (row-major over `x`) with its dims reordered: permute's dims, or transpose's dim0
// and dim1 swapped; written apart from ops/permute.cpp so that the two check each other.
std::vector<double> permute_reference(const Graph& g, const Graph::Node& n,
                                      const ValueLookup& arg) {
  const int id = std::get<int>(n.args[0]);
  const Shape& x = g.node(id).shape;
  const std::vector<double>& xv = arg(id);
  const std::int64_t rank = std::int64_t(x.size());
  auto pos = [rank](std::int64_t d) { return std::size_t(d < 0 ? d + rank : d); };
  std::vector<std::size_t> order(x.size());
  for (std::size_t d = 0; d < order.size(); ++d) order[d] = d;
  if (n.op == "transpose")
    std::swap(order[pos(n.attrs.integer("dim0").value_or(0))],
              order[pos(n.attrs.integer("dim1").value_or(1))]);
  else
    for (std::size_t d = 0; d < order.size(); ++d) order[d] = pos((*n.attrs.extents("dims"))[d]);
  std::vector<std::int64_t> stride(x.size(), 1);  // x's, row-major
  for (std::size_t d = x.size(); d-- > 1;) stride[d - 1] = stride[d] * x[d];
  std::vector<double> out(xv.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::int64_t rest = std::int64_t(i), at = 0;
    for (std::size_t d = n.shape.size(); d-- > 0;) {
      at += rest % n.shape[d] * stride[order[d]];
      rest /= n.shape[d];
    }
    out[i] = xv[std::size_t(at)];
  }
  return out;
}

// x repeated along its dims of extent 1 and new leading dims: NumPy broadcasting.
std::vector<double> expand_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg) {
  const int x = std::get<int>(n.args[0]);
  std::vector<double> out(std::size_t(numel_of(n.shape)));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = arg(x)[std::size_t(broadcast_offset(std::int64_t(i), n.shape, g.node(x).shape))];
  return out;
}

}  // namespace

KILN_NODE_REFERENCE("slice", exact_reference<slice_reference>);
KILN_NODE_REFERENCE("permute", exact_reference<permute_reference>);
KILN_NODE_REFERENCE("transpose", exact_reference<permute_reference>);
KILN_NODE_REFERENCE("expand", exact_reference<expand_reference>);
KILN_NODE_REFERENCE("broadcast_to", exact_reference<expand_reference>);

}  // namespace kiln::test
