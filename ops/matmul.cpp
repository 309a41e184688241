// Matrix products: matmul (a[..., M, K] @ b[..., K, N], batch dims broadcast, 1-D operands as
// in NumPy) and linear (x[..., K] @ w[N, K]ᵀ + bias[N], as torch.nn.functional.linear). They
// anchor the GEMM family's kernels (engine/families/gemm*); their fp64 reference is the tests'.
#include <fmt/format.h>

#include <kiln/error.hpp>

#include "ops/op.hpp"

namespace kiln::ops {
namespace {

// Every tensor operand has one float dtype: the result's.
DType common_dtype(const OpDef& op, const std::vector<Operand>& args) {
  const DType d = std::get<TensorView>(args[0]).dtype;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const DType t = std::get<TensorView>(args[i]).dtype;
    if (!is_float(t))
      throw DtypeError(fmt::format("{}: {} is bool; cast it to a float dtype first",
                                   describe_args(op, args), op.operands[i]));
    if (t != d)
      throw DtypeError(fmt::format("{}: {} is {} and {} is {}; cast one so that they match",
                                   describe_args(op, args), op.operands[0], name_of(d),
                                   op.operands[i], name_of(t)));
  }
  return d;
}

// NumPy broadcasting of two batch shapes.
Shape broadcast_batch(const OpDef& op, const std::vector<Operand>& args, const Shape& a,
                      const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t x = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const std::int64_t y = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1)
      throw ShapeError(
          fmt::format("{}: batch dims do not broadcast ({} vs {} at dim {} from the "
                      "end of the batch)",
                      describe_args(op, args), x, y, out.size() - i));
    out[i] = x == 1 ? y : x;
  }
  return out;
}

TensorView infer_matmul(const OpDef& op, const std::vector<Operand>& args) {
  const TensorView& a = tensor_operand(op, args, 0);
  const TensorView& b = tensor_operand(op, args, 1);
  for (std::size_t i = 0; i < 2; ++i)
    if (std::get<TensorView>(args[i]).shape.empty())
      throw ShapeError(
          fmt::format("{}: {} is a scalar tensor; a matrix product needs rank 1 or more",
                      describe_args(op, args), op.operands[i]));
  const std::int64_t ka = a.shape.back();
  const std::int64_t kb = b.shape.size() == 1 ? b.shape[0] : b.shape[b.shape.size() - 2];
  if (ka != kb)
    throw ShapeError(fmt::format("{}: inner dims {} != {}", describe_args(op, args), ka, kb));
  const Shape abatch(a.shape.begin(), a.shape.end() - std::min<std::ptrdiff_t>(2, a.shape.size()));
  const Shape bbatch(b.shape.begin(), b.shape.end() - std::min<std::ptrdiff_t>(2, b.shape.size()));
  TensorView r;
  r.dtype = common_dtype(op, args);
  r.shape = broadcast_batch(op, args, abatch, bbatch);
  if (a.shape.size() >= 2) r.shape.push_back(a.shape[a.shape.size() - 2]);
  if (b.shape.size() >= 2) r.shape.push_back(b.shape.back());
  return r;
}

TensorView infer_linear(const OpDef& op, const std::vector<Operand>& args) {
  const TensorView& x = tensor_operand(op, args, 0);
  const TensorView& w = tensor_operand(op, args, 1);
  if (x.shape.empty())
    throw ShapeError(
        fmt::format("{}: x is a scalar tensor; linear needs x[..., K]", describe_args(op, args)));
  if (w.shape.size() != 2)
    throw ShapeError(fmt::format("{}: w must be a matrix [N, K], got rank {}",
                                 describe_args(op, args), w.shape.size()));
  if (w.shape[1] != x.shape.back())
    throw ShapeError(fmt::format("{}: inner dims {} != {} (x[..., K] and w[N, K])",
                                 describe_args(op, args), x.shape.back(), w.shape[1]));
  if (args.size() > 2) {
    const TensorView& bias = tensor_operand(op, args, 2);
    if (bias.shape != Shape{w.shape[0]})
      throw ShapeError(fmt::format("{}: bias must be a vector [{}] (w's N), got {}",
                                   describe_args(op, args), w.shape[0], to_string(bias.shape)));
  }
  TensorView r;
  r.dtype = common_dtype(op, args);
  r.shape = x.shape;
  r.shape.back() = w.shape[0];
  return r;
}

OpDef gemm_op(std::string_view name, std::vector<std::string_view> operands,
              std::size_t min_operands, std::string_view doc) {
  OpDef d;
  d.attrs = {{"tf32", AttrType::flag, AttrValue(false), false, {},
              "f32 operands on TF32 tensor cores (about 1e-3 relative), faster than the default "
              "three TF32 products per term (about 1e-5)"}};
  d.doc = doc;
  d.dtypes = "every operand of one float dtype, the result's (a mix is a DtypeError: cast one); "
             "accumulated in f32.";
  d.name = name;
  d.operands = std::move(operands);
  // Its operands a and b (x and weight) are read from memory as they are, its bias as a side
  // operand; its elementwise consumers fuse as its epilogue; it writes windows of its columns.
  d.fusion = {FusionKind::anchor, "gemm", false, true, 2, true};
  d.infer = infer_gemm;
  d.min_operands = min_operands;
  d.domain = {-1, 1};
  return d;
}

}  // namespace

std::vector<OpDef> gemm_ops() {
  return {
      gemm_op("matmul", {"a", "b"}, 0,
              "a[..., M, K] @ b[..., K, N]: batch dims broadcast; a 1-D a is [1, K] and a 1-D b "
              "[K, 1], that dim left out of the result (NumPy's matmul)."),
      gemm_op("linear", {"x", "w", "bias"}, 2,
              "x[..., K] @ w[N, K]^T + bias[N] (torch.nn.functional.linear); bias is optional."),
  };
}

TensorView infer_gemm(const OpDef& op, const std::vector<Operand>& args, const Attrs&) {
  return op.name == "matmul" ? infer_matmul(op, args) : infer_linear(op, args);
}

}  // namespace kiln::ops
