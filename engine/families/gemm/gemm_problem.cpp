#include "engine/families/gemm/gemm_problem.hpp"

#include <fmt/format.h>

#include <cstring>
#include <kiln/error.hpp>
#include <limits>

namespace kiln {
namespace {

// A slot's strides along the product's logical dims: batch dims (outermost first), M, N, K.
struct Strides {
  std::vector<std::int64_t> batch;
  std::int64_t m = 0, n = 0, k = 0;
};

// The logical dims: the broadcast batch, M, N, K, and whether the result has an M and an N
// dim (a 1-D operand of matmul, or linear's 1-D x, has none).
struct Dims {
  Shape batch;
  std::int64_t m = 1, n = 1, k = 0;
  bool has_m = true, has_n = true;
};

// The strides of `v` (shape `shape`, strides `st`) right-aligned to `to`, 0 where it broadcasts.
std::vector<std::int64_t> aligned_strides(const Shape& shape, const Shape& st, const Shape& to) {
  std::vector<std::int64_t> out(to.size(), 0);
  for (std::size_t i = 0; i < shape.size() && i < to.size(); ++i) {
    const std::size_t d = shape.size() - 1 - i, o = to.size() - 1 - i;
    out[o] = shape[d] == 1 ? 0 : st[d];
  }
  return out;
}

Shape broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

// An operand's matrix part: the last two dims (rows, cols) of `v`, or of [1, n] / [n, 1] for a
// vector (`row_vector`), and its batch dims.
struct Matrix {
  Shape batch, batch_strides;
  std::int64_t rows = 1, cols = 1, row_stride = 0, col_stride = 0;
  bool vector = false;
};

Matrix matrix_of(const TensorView& v, bool row_vector) {
  const Shape st = v.resolved_strides();
  Matrix m;
  const std::size_t r = v.shape.size();
  if (r == 1) {
    m.vector = true;
    (row_vector ? m.cols : m.rows) = v.shape[0];
    (row_vector ? m.col_stride : m.row_stride) = st[0];
    return m;
  }
  m.batch.assign(v.shape.begin(), v.shape.end() - 2);
  m.batch_strides.assign(st.begin(), st.end() - 2);
  m.rows = v.shape[r - 2], m.cols = v.shape[r - 1];
  m.row_stride = st[r - 2], m.col_stride = st[r - 1];
  return m;
}

// A slot of the result's shape (an output or an epilogue input, broadcast to it).
Strides result_strides(const TensorView& v, const Dims& d) {
  Shape result = d.batch;
  if (d.has_m) result.push_back(d.m);
  if (d.has_n) result.push_back(d.n);
  const std::vector<std::int64_t> st = aligned_strides(v.shape, v.resolved_strides(), result);
  Strides s;
  s.batch.assign(st.begin(), st.begin() + std::ptrdiff_t(d.batch.size()));
  std::size_t at = d.batch.size();
  if (d.has_m) s.m = st[at++];
  if (d.has_n) s.n = st[at];
  return s;
}

// Whether `v`'s address and the strides `others` (elements) are multiples of 16 bytes.
bool aligned16(const TensorView& v, const std::vector<std::int64_t>& others) {
  const std::int64_t e = std::int64_t(size_of(v.dtype));
  bool ok = v.data % 16 == 0;
  for (std::int64_t x : others) ok = ok && (x * e) % 16 == 0;
  return ok;
}

// The layout class of an operand with strides `s` along K (extent ek) and along M or N (extent
// emn; its stride is s.m + s.n, the other being 0).
GemmLayout layout_of(const TensorView& v, const Strides& s, std::int64_t ek, std::int64_t emn) {
  const std::int64_t mn = s.m + s.n;
  auto batch_and = [&s](std::int64_t x) {
    std::vector<std::int64_t> o = s.batch;
    o.push_back(x);
    return o;
  };
  if ((s.k == 1 || ek == 1) && aligned16(v, batch_and(mn))) return GemmLayout::k_contiguous;
  if ((mn == 1 || emn == 1) && aligned16(v, batch_and(s.k))) return GemmLayout::mn_contiguous;
  return GemmLayout::strided;
}

// Folds the innermost batch dims into M while every slot allows it: a slot that varies with M
// (`with_m`) steps M rows at a time along that dim, one that does not (b, the bias) is broadcast
// along it. Then merges adjacent batch dims every slot steps through as one.
void merge_batch(Dims& d, std::vector<Strides>& slots, const std::vector<bool>& with_m) {
  while (!d.batch.empty()) {
    const std::size_t j = d.batch.size() - 1;
    bool ok = true;
    for (std::size_t i = 0; i < slots.size(); ++i)
      ok = ok &&
           (with_m[i] ? d.m == 1 || slots[i].batch[j] == d.m * slots[i].m : slots[i].batch[j] == 0);
    if (!ok) break;
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (with_m[i] && d.m == 1) slots[i].m = slots[i].batch[j];
      slots[i].batch.pop_back();
    }
    d.m *= d.batch[j];
    d.batch.pop_back();
  }
  for (std::size_t j = d.batch.size(); j-- > 1;) {  // dim j - 1 into dim j
    bool ok = true;
    for (const Strides& s : slots) ok = ok && s.batch[j - 1] == d.batch[j] * s.batch[j];
    if (!ok) continue;
    d.batch[j] *= d.batch[j - 1];
    d.batch.erase(d.batch.begin() + std::ptrdiff_t(j - 1));
    for (Strides& s : slots) s.batch.erase(s.batch.begin() + std::ptrdiff_t(j - 1));
  }
}

// Drops batch dims of extent 1 and zeroes strides along extents of 1.
void normalize(Dims& d, std::vector<Strides>& slots) {
  for (std::size_t j = d.batch.size(); j-- > 0;) {
    if (d.batch[j] != 1) continue;
    d.batch.erase(d.batch.begin() + std::ptrdiff_t(j));
    for (Strides& s : slots) s.batch.erase(s.batch.begin() + std::ptrdiff_t(j));
  }
  for (Strides& s : slots) {
    if (d.m == 1) s.m = 0;
    if (d.n == 1) s.n = 0;
    if (d.k == 1) s.k = 0;
  }
}

// The logical dims of `k` and the strides of its a and b.
Dims dims_of(const GemmKernel& k, Strides& sa, Strides& sb) {
  const Matrix a = matrix_of(k.a, true);
  Matrix b;
  if (k.op->name == "linear") {  // w[N, K] read as b[K, N]
    const Shape st = k.b.resolved_strides();
    b.rows = k.b.shape[1], b.cols = k.b.shape[0], b.row_stride = st[1], b.col_stride = st[0];
  } else {
    b = matrix_of(k.b, false);
  }
  Dims d;
  d.batch = broadcast(a.batch, b.batch);
  d.m = a.rows, d.k = a.cols, d.n = b.cols;
  d.has_m = !a.vector, d.has_n = !b.vector;
  sa = {aligned_strides(a.batch, a.batch_strides, d.batch), a.row_stride, 0, a.col_stride};
  sb = {aligned_strides(b.batch, b.batch_strides, d.batch), 0, b.col_stride, b.row_stride};
  return d;
}

// Output `i` of `k` as a view of all N columns of the product (its strides; the address where
// its column 0 would be), with the columns [lo, hi) it holds. ShapeError naming `stem` when its
// window leaves the product.
TensorView output_columns(const GemmKernel& k, std::size_t i, const Dims& d,
                          const std::string& stem, GemmSlot& slot) {
  TensorView o = k.outputs[i];
  slot.lo = i < k.column0.size() ? k.column0[i] : 0;
  if (!d.has_n || o.shape.empty()) {
    slot.hi = d.n;
    return o;
  }
  slot.hi = slot.lo + o.shape.back();
  if (slot.lo < 0 || slot.hi > d.n)
    throw ShapeError(fmt::format("{}: output {} holds columns [{}, {}) of a product of {}", stem, i,
                                 slot.lo, slot.hi, d.n));
  o.strides = o.resolved_strides();
  o.shape.back() = d.n;
  slot.offset = -slot.lo * o.strides.back() * std::int64_t(size_of(o.dtype));
  o.data += std::uint64_t(slot.offset);
  return o;
}

}  // namespace

GemmProblem gemm_problem(const GemmKernel& k, const std::string& stem) {
  Strides sa, sb;
  Dims d = dims_of(k, sa, sb);
  std::vector<TensorView> outputs;
  std::vector<GemmSlot> windows(k.outputs.size());
  for (std::size_t i = 0; i < k.outputs.size(); ++i)
    outputs.push_back(output_columns(k, i, d, stem, windows[i]));
  std::vector<const TensorView*> views;
  std::vector<Strides> slots;
  std::vector<bool> with_m;
  for (const TensorView& o : outputs) {
    views.push_back(&o), slots.push_back(result_strides(o, d)), with_m.push_back(true);
  }
  views.push_back(&k.a), slots.push_back(sa), with_m.push_back(true);
  views.push_back(&k.b), slots.push_back(sb), with_m.push_back(false);
  if (k.bias) {
    Strides s;
    s.batch.assign(d.batch.size(), 0);
    s.n = k.bias->resolved_strides()[0];
    views.push_back(&*k.bias), slots.push_back(s), with_m.push_back(false);
  }
  for (const TensorView& v : k.epilogue_inputs)
    views.push_back(&v), slots.push_back(result_strides(v, d)), with_m.push_back(true);
  normalize(d, slots);
  merge_batch(d, slots, with_m);
  if (d.batch.size() > kGemmBatchDims)
    throw ShapeError(
        fmt::format("{}: {} batch dims that no view lets merge; at most {} (make the "
                    "operands contiguous)",
                    stem, d.batch.size(), kGemmBatchDims));
  constexpr std::int64_t kMax = std::numeric_limits<int>::max();
  if (d.m > kMax || d.n > kMax || d.k > kMax)
    throw ShapeError(
        fmt::format("{}: M {} N {} K {}: each must stay below 2^31", stem, d.m, d.n, d.k));
  GemmProblem p;
  p.m = d.m, p.n = d.n, p.k = d.k;
  p.outputs = k.outputs.size();
  const std::size_t off = kGemmBatchDims - d.batch.size();
  for (std::size_t j = 0; j < d.batch.size(); ++j) {
    p.batch_ext[off + j] = d.batch[j];
    p.batches *= d.batch[j];
  }
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const Strides& s = slots[i];
    GemmSlot g = i < windows.size() ? windows[i] : GemmSlot{};
    g.data = views[i]->data;
    g.element = size_of(views[i]->dtype);
    g.row = i == p.outputs + 1 ? s.k : s.m;  // b's rows run along K
    g.col = i == p.outputs ? s.k : s.n;      // a's columns run along K
    for (std::size_t j = 0; j < d.batch.size(); ++j) g.batch[off + j] = s.batch[j];
    p.slots.push_back(g);
  }
  p.a_layout = layout_of(k.a, slots[p.outputs], d.k, d.m);
  p.b_layout = layout_of(k.b, slots[p.outputs + 1], d.k, d.n);
  return p;
}

int epilogue_columns(const GemmProblem& p) {
  constexpr int kVec = 8;
  if (p.n % kVec) return 1;
  auto aligned = [](const GemmSlot& g, std::int64_t x) {
    return (x * std::int64_t(g.element)) % 16 == 0;
  };
  for (std::size_t i = 0; i < p.slots.size(); ++i) {
    const GemmSlot& g = p.slots[i];
    const bool output = i < p.outputs, operand = i == p.outputs || i == p.outputs + 1;
    if (operand || (!output && g.col == 0)) continue;  // a or b, or constant along N
    bool ok =
        g.col == 1 && g.data % 16 == 0 && aligned(g, g.row) && g.lo % kVec == 0 && g.hi % kVec == 0;
    for (std::int64_t b : g.batch) ok = ok && aligned(g, b);
    if (!ok) return 1;
  }
  return kVec;
}

std::vector<unsigned char> gemm_args(const GemmProblem& p, const std::vector<float>& scalars) {
  const std::size_t S = std::max<std::size_t>(scalars.size(), 1);
  std::vector<unsigned char> out;
  auto put = [&out](const void* v, std::size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(v);
    out.insert(out.end(), b, b + bytes);
  };
  auto pad8 = [&out] { out.resize((out.size() + 7) / 8 * 8, 0); };
  for (const GemmSlot& s : p.slots) put(&s.data, 8);
  std::vector<float> s(S, 0.0f);
  std::copy(scalars.begin(), scalars.end(), s.begin());
  put(s.data(), 4 * S);
  pad8();
  for (const GemmSlot& g : p.slots) put(&g.row, 8);
  for (const GemmSlot& g : p.slots) put(&g.col, 8);
  for (const GemmSlot& g : p.slots) put(g.batch.data(), 8 * kGemmBatchDims);
  put(p.batch_ext.data(), 8 * kGemmBatchDims);
  put(&p.batches, 8);
  for (std::int64_t x : {p.m, p.n, p.k}) {
    const int v = int(x);
    put(&v, 4);
  }
  for (const GemmSlot& g : p.slots) {
    const int v = int(g.lo);
    put(&v, 4);
  }
  for (const GemmSlot& g : p.slots) {
    const int v = int(g.hi);
    put(&v, 4);
  }
  pad8();
  return out;
}

void set_gemm_params(KernelLaunch& L, const GemmProblem& p, const std::vector<float>& scalars,
                     std::size_t extra) {
  L.layout.params = {ParamBytes(gemm_args(p, scalars))};
  for (std::size_t i = 0; i < extra; ++i) L.layout.params.emplace_back(128);
  for (std::uint32_t i = 0; i < p.slots.size(); ++i) {
    L.layout.pointers.push_back({0, 8 * i});
    L.pointers.push_back(p.slots[i].data);
    L.offsets.push_back(p.slots[i].offset);
  }
  // The Args block's floats follow its pointers (gemm_args).
  for (std::uint32_t i = 0; i < scalars.size(); ++i)
    L.layout.scalars.push_back({0, std::uint32_t(8 * p.slots.size()) + 4 * i});
  L.scalars = scalars;
}

}  // namespace kiln
