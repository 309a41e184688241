// attention: scaled dot-product attention with torch's scaled_dot_product_attention semantics
// (grouped and multi-query heads, causal in two alignments, an additive or bool mask, per-batch
// KV lengths), computed by the attention family (engine/families/attention) with its operands
// read from memory as the views they are. Its fp64 reference is the tests'
// (tests/engine/reference_attention.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <kiln/error.hpp>

#include "kernel_templates/kiln/attention_config.cuh"
#include "ops/op.hpp"

namespace kiln::ops {
namespace {

constexpr std::int64_t kMaxHeadSize = 256;

const TensorView& tensor(const OpDef& op, const std::vector<Operand>& args, std::size_t i,
                         const char* what) {
  const auto* v = std::get_if<TensorView>(&args[i]);
  if (!v)
    throw ArgumentError(fmt::format("{}: {} must be a tensor", describe_args(op, args), what));
  numel_of(v->shape);
  return *v;
}

// q, k and v: one float dtype, one rank of 3 or more, the same batch dims and head size, k and
// v of one shape, Hq a multiple of Hkv.
void check_qkv(const OpDef& op, const std::vector<Operand>& args) {
  const TensorView &q = tensor(op, args, 0, "q"), &k = tensor(op, args, 1, "k"),
                   &v = tensor(op, args, 2, "v");
  const std::string call = describe_args(op, args);
  for (const TensorView* t : {&q, &k, &v}) {
    if (!is_float(t->dtype))
      throw DtypeError(
          fmt::format("{}: q, k and v must be float tensors (f32, f16, bf16); cast "
                      "them first",
                      call));
    if (t->dtype != q.dtype)
      throw DtypeError(fmt::format("{}: q, k and v must be of one dtype; cast them to {}", call,
                                   name_of(q.dtype)));
  }
  const std::size_t rank = q.shape.size();
  if (rank < 3 || k.shape.size() != rank || v.shape.size() != rank)
    throw ShapeError(fmt::format(
        "{}: q, k and v must be of one rank, 3 or more: q [..., Hq, Sq, D], k and v [..., Hkv, "
        "Skv, D]",
        call));
  if (k.shape != v.shape) throw ShapeError(fmt::format("{}: k and v must be of one shape", call));
  if (!std::equal(q.shape.begin(), q.shape.end() - 3, k.shape.begin()))
    throw ShapeError(
        fmt::format("{}: q, k and v must have the same batch dims (those before "
                    "the heads)",
                    call));
  const std::int64_t d = q.shape[rank - 1];
  if (k.shape[rank - 1] != d)
    throw ShapeError(fmt::format("{}: k and v have head size {}, q {}; they must match", call,
                                 k.shape[rank - 1], d));
  if (d < 1 || d > kMaxHeadSize)
    throw ShapeError(fmt::format("{}: head size {} is outside 1 to {}", call, d, kMaxHeadSize));
  const std::int64_t hq = q.shape[rank - 3], hkv = k.shape[rank - 3];
  if (hkv < 1 || hq % hkv != 0)
    throw ShapeError(
        fmt::format("{}: q's {} heads are not a multiple of k and v's {}", call, hq, hkv));
}

// A mask broadcastable to [..., Hq, Sq, Skv], float or bool.
void check_mask(const OpDef& op, const std::vector<Operand>& args, const TensorView& m) {
  const Shape& q = std::get<TensorView>(args[0]).shape;
  Shape full = q;
  full.back() = std::get<TensorView>(args[1]).shape[q.size() - 2];
  const std::string call = describe_args(op, args);
  if (!is_float(m.dtype) && m.dtype != DType::boolean)
    throw DtypeError(
        fmt::format("{}: mask must be float (added to the scores) or bool (true: "
                    "attends); kv_lens, an integer tensor, comes after it",
                    call));
  bool fits = m.shape.size() <= full.size();
  for (std::size_t i = 0; fits && i < m.shape.size(); ++i) {
    const std::int64_t e = m.shape[m.shape.size() - 1 - i];
    fits = e == 1 || e == full[full.size() - 1 - i];
  }
  if (!fits)
    throw ShapeError(fmt::format("{}: mask does not broadcast to {} ([..., Hq, Sq, Skv])", call,
                                 to_string(full)));
}

// kv_lens: i32 or i64 of shape [B], q being [B, Hq, Sq, D].
void check_lens(const OpDef& op, const std::vector<Operand>& args, const TensorView& n) {
  const Shape& q = std::get<TensorView>(args[0]).shape;
  const std::string call = describe_args(op, args);
  if (n.dtype != DType::i32 && n.dtype != DType::i64)
    throw DtypeError(fmt::format("{}: kv_lens must be i32 or i64", call));
  if (q.size() != 4 || n.shape != Shape{q[0]})
    throw ShapeError(fmt::format("{}: kv_lens must be of shape [B] for q [B, Hq, Sq, D]", call));
}

// q, k, v and the optional mask and kv_lens, checked.
void check_operands(const OpDef& op, const std::vector<Operand>& args) {
  check_qkv(op, args);
  for (std::size_t i = 3; i < args.size(); ++i) {
    const TensorView& t = tensor(op, args, i, i == 3 ? "mask" : "kv_lens");
    if (is_integer(t.dtype)) {
      check_lens(op, args, t);
      if (i + 1 < args.size())
        throw ArgumentError(
            fmt::format("{}: kv_lens comes last, after the mask", describe_args(op, args)));
    } else {
      if (i == 4)
        throw DtypeError(fmt::format("{}: kv_lens must be i32 or i64", describe_args(op, args)));
      check_mask(op, args, t);
    }
  }
}

TensorView infer_attention(const OpDef& op, const std::vector<Operand>& args, const Attrs&) {
  check_operands(op, args);
  const TensorView& q = std::get<TensorView>(args[0]);
  TensorView r;
  r.shape = q.shape;
  r.dtype = q.dtype;
  return r;
}

// The rows' log-sum-exp: q's shape less D, f32.
TensorView infer_lse(const OpDef& op, const std::vector<Operand>& args, const Attrs&) {
  check_operands(op, args);
  const TensorView& q = std::get<TensorView>(args[0]);
  TensorView r;
  r.shape = Shape(q.shape.begin(), q.shape.end() - 1);
  r.dtype = DType::f32;
  return r;
}

}  // namespace

std::vector<OpDef> attention_ops() {
  OpDef d;
  d.name = "attention";
  d.operands = {"q", "k", "v", "mask", "kv_lens"};
  d.min_operands = 3;
  // A kernel of its own reading every operand from memory, strided views in place.
  d.fusion = {FusionKind::anchor, "attention"};
  d.fusion.laid_out = true;
  d.fusion.folds_scale = true;  // q * c reads q, its scale times c
  // q's elementwise producers (a cast, a sum) computed as its tile is loaded.
  d.fusion.loads_prologue = true;
  // Its elementwise consumers of its shape (a cast, a scale, a gate, a residual) are computed
  // where each output element is stored, their tensors in the parameter block's epilogue slots;
  // so are those of the result seen as [B, S, H·D] (a permute and a reshape), their tensors
  // indexed through those views.
  d.fusion.epilogue = true;
  d.fusion.epilogue_tensors = std::size_t(attention::config::kEpilogueSlots);
  d.fusion.epilogue_scalars = std::size_t(attention::config::kEpilogueScalars);
  d.fusion.epilogue_rank = std::size_t(attention::config::kBatchDims) + 3;
  d.fusion.epilogue_through_views = true;
  d.infer = infer_attention;
  d.domain = {-1, 1};
  d.attrs = {
      {"causal",
       AttrType::flag,
       AttrValue(false),
       false,
       {},
       "query row i attends to keys j <= i (top_left) or j <= i + Skv - Sq (bottom_right)"},
      {"causal_align",
       AttrType::choice,
       AttrValue(std::string("top_left")),
       false,
       {},
       "where the causal diagonal starts: top_left (torch's is_causal) or bottom_right (the "
       "last query row sees every key: a KV cache)",
       {"top_left", "bottom_right"}},
      {"scale",
       AttrType::number,
       std::nullopt,
       false,
       {},
       "multiplies q.k before the softmax; 1/sqrt(D) when absent"},
  };
  d.doc =
      "softmax(q @ k^T * scale + mask) @ v over q [..., Hq, Sq, D], k and v [..., Hkv, Skv, D] "
      "(torch's scaled_dot_product_attention): Hq a multiple of Hkv (grouped and multi-query "
      "heads: query head h reads key/value head h / (Hq / Hkv)); D from 1 to 256. mask "
      "(optional) broadcasts to [..., Hq, Sq, Skv]: a float mask is added to the scaled scores, a "
      "bool mask keeps the keys where it is true. kv_lens (optional, i32 or i64 of shape [B] for "
      "q [B, Hq, Sq, D]; it may stand in the mask's place) gives each batch's number of keys: "
      "keys from kv_lens[b] on take no part, and a bottom_right diagonal ends at the batch's "
      "last key; lengths are clamped to [0, Skv]. causal and a mask combine (torch refuses both). "
      "A query row whose every key is masked gives zeros, where torch gives NaN.";
  d.dtypes =
      "q, k and v of one float dtype, the result's; f16 and bf16 on tensor cores with f32 softmax "
      "statistics (the probabilities rounded to the dtype for the second product, as "
      "FlashAttention), f32 on a plain f32 kernel (slower); the mask float of any dtype or bool.";
  OpDef lse = d;
  lse.name = "attention_lse";
  // Written by the kernel of an attention node of the same operands and attributes, beside its
  // result; alone, by an attention kernel that writes no result.
  lse.fusion = {FusionKind::anchor, "attention"};
  lse.fusion.joins = "attention";
  lse.fusion.folds_scale = true;
  lse.fusion.loads_prologue = true;  // its prologue's tensors in the epilogue's slots
  lse.fusion.epilogue_tensors = std::size_t(attention::config::kEpilogueSlots);
  lse.fusion.epilogue_scalars = std::size_t(attention::config::kEpilogueScalars);
  lse.fusion.epilogue_rank = std::size_t(attention::config::kBatchDims) + 3;
  lse.infer = infer_lse;
  lse.doc =
      "the log-sum-exp of each query row's scores in attention(q, k, v, mask?, kv_lens?) with "
      "the same attributes: log(sum_j exp(q.k_j * scale + mask_j)) over the keys the row sees, "
      "natural log, f32, of shape [..., Hq, Sq] (what a backward needs: the softmax is "
      "exp(s - lse)). A row that sees no key gives -inf (the log of an empty sum). In a graph "
      "that also has the attention node of the same operands and attributes, one kernel writes "
      "both.";
  lse.dtypes = "f32, whatever q's float dtype; the operands' rules are attention's.";
  return {d, lse};
}

}  // namespace kiln::ops
