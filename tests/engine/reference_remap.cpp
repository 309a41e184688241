// fp64 references of the remap views, from torch's definitions: pad (F.pad, constant mode) and
// upsample_nearest (F.interpolate, nearest, an integer scale) (tests/engine/reference.hpp).
#include <cmath>

#include "tests/engine/reference.hpp"

namespace kiln::test {
namespace {

// The value x's element at result coordinates `c` comes from, or none (`fill`) for pad.
std::vector<double> read_back(const Graph& g, const Graph::Node& n, const ValueLookup& arg,
                              const std::vector<std::int64_t>& lo, std::int64_t scale, double fill) {
  const int x = std::get<int>(n.args[0]);
  const Shape& xs = g.node(x).shape;
  std::vector<double> out(std::size_t(numel_of(n.shape)));
  std::vector<std::int64_t> c(n.shape.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::int64_t r = std::int64_t(i), k = 0;
    for (std::size_t d = c.size(); d-- > 0;) c[d] = r % n.shape[d], r /= n.shape[d];
    bool inside = true;
    for (std::size_t d = 0; d < c.size() && inside; ++d) {
      const std::int64_t shifted = c[d] - lo[d];
      const std::int64_t at = shifted < 0 ? -1 : (d >= 2 ? shifted / scale : shifted);
      inside = at >= 0 && at < xs[d];
      k = k * xs[d] + at;
    }
    out[i] = inside ? arg(x)[std::size_t(k)] : fill;
  }
  return out;
}

}  // namespace

std::vector<double> remap_reference(const Graph& g, const Graph::Node& n, const ValueLookup& arg) {
  const std::size_t rank = n.shape.size();
  if (n.op == "upsample_nearest")
    return read_back(g, n, arg, std::vector<std::int64_t>(rank, 0),
                     n.attrs.integer("scale").value_or(2), 0);
  // pad: pairs (before, after) from the last axis backwards; the value as the dtype holds it.
  const std::vector<std::int64_t> pads = n.attrs.extents("pads").value_or(std::vector<std::int64_t>{});
  std::vector<std::int64_t> lo(rank, 0);
  for (std::size_t k = 0; 2 * k < pads.size(); ++k) lo[rank - 1 - k] = pads[2 * k];
  double value = n.attrs.number("value").value_or(0.0);
  if (n.dtype == DType::boolean) value = value != 0;
  else if (is_integer(n.dtype)) value = std::trunc(value);
  return read_back(g, n, arg, lo, 1, value);
}

KILN_NODE_REFERENCE("pad", exact_reference<remap_reference>);
KILN_NODE_REFERENCE("upsample_nearest", exact_reference<remap_reference>);

}  // namespace kiln::test
