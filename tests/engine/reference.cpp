#include "tests/engine/reference.hpp"

#include "ops/op.hpp"

namespace kiln::test {
namespace {

// Offset into `src` (right-aligned broadcast) of element i of `shape`.
std::int64_t broadcast_offset(std::int64_t i, const Shape& shape, const Shape& src) {
  std::int64_t off = 0, stride = 1;
  const std::size_t lead = shape.size() - src.size();
  for (std::size_t d = shape.size(); d-- > 0;) {
    const std::int64_t c = i % shape[d];
    i /= shape[d];
    if (d < lead) continue;
    if (src[d - lead] != 1) off += c * stride;
    stride *= src[d - lead];
  }
  return off;
}

}  // namespace

std::vector<std::vector<double>> evaluate(const Graph& g, const std::map<std::string, std::vector<unsigned char>>& inputs) {
  std::vector<std::vector<double>> vals(g.nodes().size());
  for (std::size_t id = 0; id < g.nodes().size(); ++id) {
    const auto& n = g.nodes()[id];
    auto& out = vals[id];
    out.resize(std::size_t(numel_of(n.shape)));
    if (n.op == "input") {
      const auto& bytes = inputs.at(n.name);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = load_element(n.dtype, bytes.data() + i * size_of(n.dtype));
      continue;
    }
    const auto& op = ops::find_op(n.op);
    if (op.fusion == ops::FusionClass::row) {
      const int x = std::get<int>(n.args[0]);
      const auto& xv = vals[std::size_t(x)];
      const std::int64_t C = g.node(x).shape.back(), R = std::int64_t(xv.size()) / C;
      const double* w = n.args.size() > 1 ? vals[std::size_t(std::get<int>(n.args[1]))].data() : nullptr;
      const double* b = n.args.size() > 2 ? vals[std::size_t(std::get<int>(n.args[2]))].data() : nullptr;
      for (std::int64_t r = 0; r < R; ++r)
        op.row_reference(xv.data() + r * C, C, w, b, ops::eps_of(n.attrs), out.data() + (op.reduces ? r : r * C));
      continue;
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      double a[3] = {0, 0, 0};
      std::size_t k = 0;
      for (const auto& arg : n.args) {
        if (std::holds_alternative<double>(arg)) a[k++] = std::get<double>(arg);
        else a[k++] = vals[std::size_t(std::get<int>(arg))][std::size_t(broadcast_offset(std::int64_t(i), n.shape, g.node(std::get<int>(arg)).shape))];
      }
      for (double s : ops::attr_scalars(op, n.attrs)) a[k++] = s;
      out[i] = op.reference(a[0], a[1], a[2]);
    }
  }
  return vals;
}

}  // namespace kiln::test
