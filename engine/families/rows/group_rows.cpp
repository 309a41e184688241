// group_norm over a channels_last x in one cooperative launch (kernel_templates/kiln/
// group_rows.cuh): every view seen as [N, *spatial, C] (C innermost, as x lies in memory), each
// image a row of the layout split between blocks along its pixels. The weight and bias become
// the epilogue's first inputs, as grouped_rows makes them for the row template.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "engine/codegen/codegen.hpp"
#include "engine/families/rows/rows.hpp"

namespace kiln {
namespace {

// The most C a block's shared memory holds (group_rows.cuh's Shared: Block * V + 3 G floats,
// within the 48 KiB a block has without asking).
constexpr std::int64_t kMostChannels = 2048;
constexpr std::int64_t kSharedFloats = 12288;

// Dims of every view in x's memory order: N, the spatial dims by `lead`'s strides (largest
// first), C last. Nothing where C is not x's contiguous dim.
std::optional<std::vector<std::size_t>> pixel_order(const TensorView& lead) {
  const std::size_t rank = lead.shape.size();
  if (lead.strides[1] != 1) return std::nullopt;
  std::vector<std::size_t> order(rank);
  std::iota(order.begin(), order.end(), std::size_t(0));
  std::stable_sort(order.begin() + 2, order.end(), [&](std::size_t a, std::size_t b) {
    return lead.strides[a] > lead.strides[b];
  });
  for (std::size_t d = 2; d < rank; ++d)
    if (lead.shape[d] != 1 && lead.strides[d] < lead.shape[1]) return std::nullopt;
  std::rotate(order.begin() + 1, order.begin() + 2, order.end());  // C after the pixels
  return order;
}

TensorView permuted(const TensorView& v, const std::vector<std::size_t>& order) {
  TensorView p = v;
  for (std::size_t i = 0; i < order.size(); ++i) {
    p.shape[i] = v.shape[order[i]];
    p.strides[i] = v.strides[order[i]];
  }
  return p;
}

// The launch's shape: blocks of whole warps whose groups of `vec` cover whole pixels (Block *
// vec a multiple of C), `per_sm` of them a multiprocessor (launch bounds that cap registers to
// match), and the fewest groups a thread (Items) that let them hold every image at once. The
// most threads a multiprocessor first: the kernel is a long chain of dependent steps per
// thread (loads, sums, the epilogue), which 10 warps an SM could not hide (22 us for the 10 MB
// of GN(32) at N2 C320 64x64 on an H100, bench/NOTES.md); then the fewest blocks, whose
// parts each block reads back from L2 to merge. {0} where nothing fits.
struct GroupShape {
  int block = 0, items = 0, per_sm = 0;
  std::int64_t parts = 0;
};

GroupShape group_shape(std::int64_t images, std::int64_t pixels, std::int64_t c, int vec,
                       int sms) {
  const std::int64_t per_pixel = c / vec, unit = std::lcm(per_pixel, std::int64_t(32));
  GroupShape best;
  for (int per_sm : {1, 2, 3, 4}) {
    const int block = int(1024 / per_sm / unit * unit);
    if (block < 32 || block * per_sm <= best.block * best.per_sm) continue;
    // Registers: 65536 a multiprocessor; ~40 a thread besides the values it holds.
    const int values = std::min(64, 65536 / (block * per_sm) - 40);
    for (int items = 1; items <= std::min(16, values / vec); ++items) {
      const std::int64_t span = std::int64_t(block) * items / per_pixel;
      const std::int64_t parts = (pixels + span - 1) / span;
      if (images * parts <= std::int64_t(sms) * per_sm) {
        best = {block, items, per_sm, parts};
        break;
      }
    }
  }
  return best;
}

}  // namespace

std::optional<KernelLaunch> specialize_group_rows(const RowKernel& k, const std::string& stem,
                                                  const Shape& shape, int sms) {
  const std::size_t rank = shape.size();
  if (k.groups < 1 || rank < 3 || k.inputs.empty() || !k.gathers.empty() || k.dynamic_row ||
      sms <= 0 || shape[1] % k.groups != 0 || shape[1] > kMostChannels || k.extras.size() > 2 ||
      numel_of(shape) == 0)
    return std::nullopt;
  for (const TensorView& e : k.extras)
    if (e.shape != Shape{shape[1]}) return std::nullopt;  // grouped_rows names the error
  std::vector<TensorView> all;
  for (const TensorView& o : k.outputs) {
    if (o.shape != shape) return std::nullopt;
    all.push_back(full_rank(o, shape));
  }
  for (const TensorView& v : k.inputs) all.push_back(full_rank(v, shape));
  // The input that runs along most dims (x, not a per-channel term added to it) sets the order.
  std::size_t lead = k.outputs.size();
  const auto runs = [&](const TensorView& v) {
    return std::count_if(v.strides.begin(), v.strides.end(), [](std::int64_t s) { return s; });
  };
  for (std::size_t s = lead; s < all.size(); ++s)
    if (runs(all[s]) > runs(all[lead])) lead = s;
  std::vector<TensorView> affine;
  for (const TensorView& e : k.extras) affine.push_back(along_channels(e, rank));
  all.insert(all.end(), affine.begin(), affine.end());
  for (const TensorView& v : k.epilogue_inputs) all.push_back(full_rank(v, shape));
  const auto order = pixel_order(all[lead]);
  if (!order) return std::nullopt;
  Shape pixel_shape(rank);
  for (std::size_t i = 0; i < rank; ++i) pixel_shape[i] = shape[(*order)[i]];
  std::vector<const TensorView*> views;
  for (TensorView& v : all) {
    v = permuted(v, *order);
    views.push_back(&v);
  }
  std::vector<bool> reduced(rank, true);
  reduced[0] = false;
  const LayoutPlan lp = plan_layout(views, k.outputs.size(), pixel_shape, false, 0, reduced);
  const std::int64_t c = shape[1], per_row = lp.groups / shape[0];
  if (c % lp.vec != 0) return std::nullopt;
  const GroupShape gs = group_shape(shape[0], per_row / (c / lp.vec), c, lp.vec, sms);
  if (gs.block == 0 || std::int64_t(gs.block) * lp.vec + 3 * k.groups > kSharedFloats)
    return std::nullopt;
  const std::int64_t groups = k.groups;

  KernelLaunch L;
  L.vec = lp.vec;
  L.groups = std::uint64_t(lp.groups);
  L.config.block[0] = unsigned(gs.block);
  L.config.grid[0] = unsigned(shape[0] * gs.parts);
  L.config.cooperative = true;
  L.workspace = std::uint64_t(8 * shape[0] * (1 + gs.parts * groups));
  const codegen::Body epilogue = codegen::narrow_fast_math(affine_epilogue(k.epilogue, affine));
  L.spec.source = codegen::render_source(
      "group_rows.cuh", {{"kiln_body", &k.prologue}, {"kiln_epilogue", &epilogue}});
  L.spec.expression = codegen::render_instance(
      "kiln::group_rows",
      {"kiln_body", "kiln_epilogue", lp.type(), std::to_string(lp.vec),
       codegen::render_index(lp.index64), std::to_string(gs.block), std::to_string(gs.per_sm),
       std::to_string(gs.items), std::to_string(c), std::to_string(c / groups),
       std::to_string(gs.parts)});
  L.spec.options = codegen::builtin_options();
  L.spec.name = fmt::format("{}__grouped{}v{}b{}m{}i{}p{}{}", stem, lp.dims.size(), lp.vec,
                            gs.block, gs.per_sm, gs.items, gs.parts, lp.index64 ? "_i64" : "");
  for (const TensorView* v : views) L.pointers.push_back(v->data);
  L.pointers.push_back(0);  // the workspace, each launch's own
  L.scalars = k.scalars;
  L.scalars.push_back(float(k.eps));
  L.scalars.insert(L.scalars.end(), k.epilogue_scalars.begin(), k.epilogue_scalars.end());
  L.layout = kiln_layout(L.pointers, L.scalars, std::uint64_t(per_row), lp.index64);
  return L;
}

}  // namespace kiln
