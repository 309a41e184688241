// Specialization of the attention templates (engine/families/attention/attention.hpp).
#include "engine/families/attention/attention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <kiln/error.hpp>

#include "engine/codegen/codegen.hpp"
#include "engine/codegen/layout.hpp"
#include "kernel_templates/kiln/attention_config.cuh"

namespace kiln {

namespace cfg = attention::config;

namespace {

constexpr int kAdditive = 1, kBoolMask = 2;  // attention_common.cuh's MaskKind
// Shared memory a block has where the target does not say: the least of sm_80 and later's.
constexpr int kSharedFallback = 99 * 1024;

int mask_kind(const std::optional<DType>& m) {
  return !m ? 0 : *m == DType::boolean ? kBoolMask : kAdditive;
}

}  // namespace

std::string AttentionTemplate::expression() const {
  const std::string t(device_type_of(dtype));
  const std::string m(mask ? device_type_of(*mask) : "float");
  const std::string l(lens && *lens == DType::i64 ? "long long" : "int");
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  std::vector<std::string> args;
  if (mma && wgmma) {
    args = {t, l};
    for (int v : {d, bn, stages}) args.push_back(std::to_string(v));
    for (bool b : {causal, bottom_right, lens.has_value()}) args.push_back(flag(b));
  } else {
    args = {t, m, l, std::to_string(d)};
    if (mma && decode) {
      for (int v : {bn, stages, warps, split, chunks}) args.push_back(std::to_string(v));
    } else if (mma) {
      for (int v : {bm, bn, stages, wm}) args.push_back(std::to_string(v));
    }
    for (const std::string& s : {flag(causal), flag(bottom_right), std::to_string(mask_kind(mask)),
                                 flag(lens.has_value())})
      args.push_back(s);
  }
  if (epilogue || prologue) args.push_back(epilogue ? kAttentionEpilogue : "void");
  if (prologue) args.push_back(kAttentionPrologue);
  return codegen::render_instance(!mma     ? "kiln::attention::attention_rows"
                                  : wgmma  ? "kiln::attention::attention_sm90"
                                  : decode ? "kiln::attention::attention_decode"
                                           : "kiln::attention::attention_mma",
                                  args);
}

std::string AttentionTemplate::name(std::string_view stem) const {
  std::string s = !mma     ? fmt::format("{}__rows_d{}", stem, d)
                  : wgmma  ? fmt::format("{}__wg{}x{}s{}_d{}", stem, cfg::kWgmmaRows, bn, stages, d)
                  : decode ? fmt::format("{}__dec{}s{}w{}k{}{}_d{}", stem, bn, stages, warps, split,
                                         chunks > 1 ? fmt::format("c{}", chunks) : "", d)
                           : fmt::format("{}__fa{}x{}s{}{}_d{}", stem, bm, bn, stages,
                                         wm == 16 ? "" : fmt::format("r{}", wm), d);
  if (causal) s += bottom_right ? "_causal_br" : "_causal";
  if (mask) s += mask == DType::boolean ? "_boolmask" : "_mask";
  if (lens) s += "_lens";
  return s;
}

int AttentionTemplate::shared_bytes() const {
  if (!mma) return 0;
  if (wgmma) return cfg::wgmma_shared_bytes(d, bn, stages);
  return decode ? cfg::decode_shared_bytes(d, bn, stages, warps)
                : cfg::shared_bytes(d, bm, bn, stages);
}

unsigned AttentionTemplate::threads() const {
  return !mma     ? unsigned(cfg::kRowWarps * 32)
         : wgmma  ? unsigned(cfg::kWgmmaThreads)
         : decode ? unsigned(warps * 32)
                  : unsigned(bm / wm * 32);
}

namespace {

// `v`'s strides seen as [batch (`batch` dims)..., heads, rows, cols] of `shape` (0 where it
// broadcasts).
Shape strides_over(const TensorView& v, const Shape& shape, const char* role) {
  return broadcast_strides(v, shape, role);
}

// The batch dims merged where every tensor steps through them as one, dims of extent 1
// dropped: ShapeError when more than kBatchDims remain.
void set_batches(cfg::Params& p, const std::vector<cfg::Strides*>& dst, const Shape& batch,
                 const std::vector<Shape>& strides, const std::string& stem) {
  std::vector<std::int64_t> ext;
  std::vector<std::vector<std::int64_t>> st(strides.size());
  for (std::size_t d = 0; d < batch.size(); ++d) {
    if (batch[d] == 1) continue;
    bool merge = !ext.empty();
    for (std::size_t t = 0; t < strides.size() && merge; ++t)
      merge = st[t].back() == strides[t][d] * batch[d];
    if (merge) {
      ext.back() *= batch[d];
      for (std::size_t t = 0; t < strides.size(); ++t) st[t].back() = strides[t][d];
    } else {
      ext.push_back(batch[d]);
      for (std::size_t t = 0; t < strides.size(); ++t) st[t].push_back(strides[t][d]);
    }
  }
  if (ext.size() > std::size_t(cfg::kBatchDims))
    throw ShapeError(fmt::format(
        "{}: the batch dims {} of q and its operands' strides do not merge into {} dims; make "
        "the operands contiguous over their batch dims",
        stem, to_string(batch), cfg::kBatchDims));
  const std::size_t lead = std::size_t(cfg::kBatchDims) - ext.size();
  for (int d = 0; d < cfg::kBatchDims; ++d) {
    const bool used = std::size_t(d) >= lead;
    p.batch[d] = used ? ext[std::size_t(d) - lead] : 1;
    for (std::size_t t = 0; t < strides.size(); ++t)
      dst[t]->batch[d] = used ? st[t][std::size_t(d) - lead] : 0;
  }
}

// The lse [..., Hq, Sq] seen as [..., Hq, Sq, 1]: its strides over q's shape (0 along D).
Shape lse_strides(const TensorView& lse, const Shape& qs) {
  TensorView v = lse;
  v.strides = lse.resolved_strides();
  v.shape.push_back(1);
  v.strides.push_back(1);
  return strides_over(v, qs, "lse");
}

// The mma path takes 2-byte operands whose D is contiguous and whose rows start on 16 bytes.
bool mma_fits(const TensorView& v, const Shape& strides) {
  if (strides.back() != 1 && v.shape.back() != 1) return false;
  if (v.data % 16 != 0) return false;
  for (std::size_t d = 0; d + 1 < strides.size(); ++d)
    if (strides[d] % 8 != 0 && v.shape[d] != 1) return false;
  return true;
}

}  // namespace

namespace {

// The call's parameter block (its pointers 0: each launch writes them), and in `mma` whether q,
// k and v fit the mma path's loads. ShapeError for views no kernel can launch on.
cfg::Params call_params(const AttentionKernel& k, const std::string& stem, bool& mma) {
  const Shape& qs = k.q.shape;
  const std::size_t rank = qs.size();
  if (rank < 3 || k.k.shape.size() != rank || k.v.shape.size() != rank)
    throw ShapeError(fmt::format("{}: q, k and v must be of one rank, 3 or more", stem));
  const std::int64_t hq = qs[rank - 3], sq = qs[rank - 2], d = qs[rank - 1];
  const std::int64_t hkv = k.k.shape[rank - 3], skv = k.k.shape[rank - 2];
  const Shape batch(qs.begin(), qs.end() - 3);
  Shape kv_shape = batch;
  kv_shape.insert(kv_shape.end(), {hkv, skv, d});
  Shape mask_shape = batch;
  mask_shape.insert(mask_shape.end(), {hq, sq, skv});
  std::vector<Shape> strides = {strides_over(k.out, qs, "output"),
                                strides_over(k.q, qs, "q"),
                                strides_over(k.k, kv_shape, "k"),
                                strides_over(k.v, kv_shape, "v"),
                                k.mask ? strides_over(*k.mask, mask_shape, "mask") : Shape(rank, 0),
                                k.lse ? lse_strides(*k.lse, qs) : Shape(rank, 0)};
  cfg::Params p{};
  std::vector<cfg::Strides*> dst;
  for (cfg::Strides& s : p.s) dst.push_back(&s);
  set_epilogue_slots(p, k, stem, strides, dst);
  set_batches(p, dst, batch, strides, stem);
  for (std::size_t i = 0; i < strides.size(); ++i) {
    dst[i]->head = strides[i][rank - 3];
    dst[i]->row = strides[i][rank - 2];
    dst[i]->col = strides[i][rank - 1];
  }
  if (k.lens) p.lens_stride = k.lens->resolved_strides().at(0);
  const std::int64_t pairs = numel_of(batch) * hq;
  // Lengths keep 2^16 below int's range: a kernel rounds its keys up to whole tiles.
  constexpr std::int64_t kLengthMax = 0x7fffffff - 0xffff;
  if (numel_of(batch) > 0x7fffffff || sq > kLengthMax || skv > kLengthMax || pairs > 0x7fffffff)
    throw ShapeError(fmt::format(
        "{}: batch and heads must each be below 2^31, the lengths below 2^31 - 65536", stem));
  p.batches = int(numel_of(batch));
  p.heads = int(hq);
  p.group = int(hkv > 0 && hq > 0 ? hq / hkv : 1);  // no heads: no blocks, no division by 0
  p.sq = int(sq);
  p.skv = int(skv);
  const double scale = (k.scale ? *k.scale : 1.0 / std::sqrt(double(d))) * k.scale_factor;
  p.scale_log2 = float(scale * 1.4426950408889634);
  mma = k.dtype() != DType::f32 && d % 8 == 0 && d <= 256;
  for (std::size_t i = k.has_prologue() ? 2 : 1; i < 4 && mma; ++i)  // a prologue computes q
    mma = mma_fits(i == 1 ? k.q : i == 2 ? k.k : k.v, strides[i]);
  return p;
}

}  // namespace

namespace {

// Few query rows (a step of decoding, or a short prompt over a long cache) take the decode path.
constexpr std::int64_t kDecodeRowsMax = 16;

// The decode path's tiles of packed rows, one a key/value head of a batch (or several where
// the group's rows pass 16): its blocks before the split.
std::uint64_t decode_tiles(const cfg::Params& p) {
  const std::uint64_t rows = std::uint64_t(p.sq) * std::uint64_t(p.group);
  return std::uint64_t(p.batches) * std::uint64_t(p.heads / p.group) *
         ((rows + cfg::kDecodeRows - 1) / cfg::kDecodeRows);
}

// The call's template: its path, the defaults of that path, `t` over them.
AttentionTemplate choose_template(const AttentionKernel& k, const cfg::Params& p, bool mma,
                                  const std::string& stem, const Tunables& t) {
  const int d = int(k.q.shape.back());
  const bool masked = k.mask.has_value();
  // kv_lens or a bottom-right diagonal bound each row's keys at run time: registers of their own.
  const bool ragged = k.lens.has_value() || (k.causal && k.bottom_right);
  const int max_shared = k.max_shared > 0 ? k.max_shared : kSharedFallback;
  // Above D 192 an additive mask's work spills on the tensor-core paths: the plain kernel.
  mma = mma && !(d > 192 && masked && k.mask->dtype != DType::boolean);
  AttentionTemplate tp;
  const auto wanted = t.find("wgmma");
  if (mma && p.sq <= kDecodeRowsMax) {
    tp = default_decode_tiles(d, masked, max_shared, std::int64_t(decode_tiles(p)), p.skv,
                              k.clusters, k.sms);
  } else if (mma && k.wgmma && (wanted == t.end() || wanted->second != 0)) {
    std::string why = wgmma_unfit(k, p);
    if (why.empty() && default_wgmma_tiles(d, max_shared).shared_bytes() > max_shared)
      why = "its tiles take more shared memory than a block has";
    if (why.empty())
      tp = default_wgmma_tiles(d, max_shared);
    else if (wanted != t.end())
      throw ArgumentError(fmt::format("{}: wgmma={}: the call cannot take the sm_90a path: {}",
                                      stem, wanted->second, why));
    else
      tp = default_attention_tiles(d, masked, max_shared, k.clusters, ragged);
  } else {
    tp = default_attention_tiles(d, masked, max_shared, k.clusters, ragged);
  }
  tp.hopper = k.wgmma && !tp.decode;
  tp.mma = mma;
  tp.dtype = k.dtype();
  tp.mask = k.mask ? std::optional<DType>(k.mask->dtype) : std::nullopt;
  tp.lens = k.lens ? std::optional<DType>(k.lens->dtype) : std::nullopt;
  tp.causal = k.causal;
  tp.bottom_right = k.causal && k.bottom_right;
  tp.epilogue = k.has_epilogue();
  tp.prologue = k.has_prologue();
  if (tp.mma) return resolve_attention_tiles(t, tp, stem, max_shared, k.clusters);
  if (!t.empty())
    throw ArgumentError(fmt::format("{}: the plain attention kernel takes no tunables", stem));
  return tp;
}

// The (batch, head) pairs of a prefill section (block_work in attention_common.cuh): as many as
// keep 16 MB of keys and values, the pairs of a group of heads sharing theirs; 1 or more.
int section_pairs(const cfg::Params& p, int d, int elem) {
  constexpr double kSectionBytes = 16.0 * 1024 * 1024;
  const double per_pair = 2.0 * double(p.skv) * d * elem / std::max(1, p.group);
  const double fit = per_pair > 0 ? kSectionBytes / per_pair : 1e9;
  const std::int64_t pairs = std::int64_t(p.batches) * p.heads;
  return int(std::max<std::int64_t>(1, std::min<std::int64_t>(pairs, std::int64_t(fit))));
}

// Blocks of the launch of `tp` (the decode path's clusters together).
std::uint64_t blocks_of(const AttentionTemplate& tp, cfg::Params& p) {
  const std::uint64_t pairs = std::uint64_t(p.batches) * std::uint64_t(p.heads);
  const std::uint64_t sq = std::uint64_t(p.sq);
  if (!tp.mma) return (pairs * sq + cfg::kRowWarps - 1) / cfg::kRowWarps;
  if (!tp.decode) {
    const std::uint64_t bm = std::uint64_t(tp.wgmma ? cfg::kWgmmaRows : tp.bm);
    p.m_blocks = int((sq + bm - 1) / bm);
    p.section = section_pairs(p, tp.d, int(size_of(tp.dtype)));
    return std::uint64_t(p.m_blocks) * pairs;
  }
  p.m_blocks = int((sq * std::uint64_t(p.group) + cfg::kDecodeRows - 1) / cfg::kDecodeRows);
  return decode_tiles(p) * std::uint64_t(tp.split) * std::uint64_t(tp.chunks);
}

}  // namespace

KernelLaunch specialize_attention(const AttentionKernel& k, const std::string& stem,
                                  const Tunables& t) {
  bool mma = false;
  cfg::Params p = call_params(k, stem, mma);
  const AttentionTemplate tp = choose_template(k, p, mma, stem, t);
  const std::int64_t pairs = std::int64_t(p.batches) * p.heads;

  KernelLaunch L;
  const std::uint64_t blocks = blocks_of(tp, p);
  L.groups = std::uint64_t(pairs) * std::uint64_t(p.sq) * std::uint64_t(k.q.shape.back());
  L.config.grid[0] = grid_x(blocks, [&] { return fmt::format("{}: {}", stem, k.q.describe()); });
  L.config.block[0] = tp.threads();
  if (tp.decode) L.config.cluster[0] = unsigned(tp.split);
  // attention_sm90's blocks take several items each, the next one's loads running under the
  // last one's store; causal items, which differ in length, drawn from a counter in the launch's
  // workspace (attention_sm90_items.cuh): a block striding over them in turn got the longer
  // share (H100, B4 H16 S4096 D128 causal: 663 us against 563 one a block: bench/NOTES.md).
  L.config.persistent = tp.wgmma == 1;
  L.config.shared = unsigned(tp.shared_bytes());
  L.config.shared_required = tp.mma;
  const char* header = !tp.mma     ? "attention_rows.cuh"
                       : tp.decode ? "attention_decode.cuh"
                       : tp.wgmma  ? "attention_sm90.cuh"
                                   : "attention.cuh";
  L.spec.source = attention_source(header, k);
  L.spec.expression = tp.expression();
  L.spec.options = codegen::builtin_options();
  L.spec.name = tp.name(stem);
  if (tp.mma)
    L.tunables = codegen::launch_tunables(attention_tunable_table(), tp, tp.where(k.clusters));
  // Which path and split serve a call depend on its lengths: a dynamic one's kernels are those
  // of the extents the family probes.
  L.bucketed = k.dynamic;

  const std::uint32_t first_input = set_attention_pointers(L, p, k);
  if (tp.decode && tp.chunks > 1) {  // a counter a tile of rows, then its chunks' partials
    const std::uint64_t tiles = decode_tiles(p);
    L.workspace = 8 * tiles + 4 * tiles * std::uint64_t(tp.chunks) *
                                  std::uint64_t(cfg::decode_part_floats(int(k.q.shape.back())));
  } else if (tp.wgmma && k.causal) {
    L.workspace = 8;  // items drawn, blocks done
  }
  if (L.workspace > 0) {
    L.pointers.push_back(0);  // each launch's own
    L.layout.pointers.push_back({0, cfg::pointer_offset(cfg::kWorkspace)});
  }
  L.layout.params = {ParamBytes(&p, sizeof p)};
  if (tp.wgmma) set_wgmma_maps(L, k, p, tp.bn, first_input, stem);
  return L;
}

}  // namespace kiln
