#include "engine/runtime/tensor_map.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <cstring>
#include <kiln/error.hpp>

#include "engine/runtime/driver.hpp"

namespace kiln::runtime {

static_assert(sizeof(CUtensorMap) == kTensorMapBytes);

namespace {

CUtensorMapDataType data_type(DType t) {
  switch (t) {
    case DType::f32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case DType::f16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case DType::bf16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case DType::i32:
      return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case DType::i64:
      return CU_TENSOR_MAP_DATA_TYPE_INT64;
    case DType::boolean:
      break;
  }
  return CU_TENSOR_MAP_DATA_TYPE_UINT8;
}

CUtensorMapSwizzle swizzle_of(int bytes, const std::string& who) {
  switch (bytes) {
    case 0:
      return CU_TENSOR_MAP_SWIZZLE_NONE;
    case 32:
      return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64:
      return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128:
      return CU_TENSOR_MAP_SWIZZLE_128B;
  }
  throw ArgumentError(
      fmt::format("{}: a swizzle of {} bytes; TMA swizzles 0, 32, 64 or 128", who, bytes));
}

}  // namespace

TensorMapDesc describe_tensor_map(const TensorView& view, const std::vector<std::uint32_t>& box,
                                  int swizzle, const std::string& who) {
  const std::size_t rank = view.shape.size();
  const std::size_t elem = size_of(view.dtype);
  const auto fail = [&](const std::string& why) {
    throw ArgumentError(fmt::format("{}: TMA cannot map {}: {}", who, view.describe(), why));
  };
  if (rank == 0 || rank > 5) fail("a tensor map has 1 to 5 dims");
  if (view.numel() == 0) fail("it is empty");
  if (box.size() != rank) fail(fmt::format("a box of {} dims for {}", box.size(), rank));
  const Shape strides = view.resolved_strides();
  if (strides[rank - 1] != 1) fail("its innermost stride is not 1");
  if (view.data % 16) fail("its address is not a multiple of 16 bytes");
  TensorMapDesc d;
  d.data_type = data_type(view.dtype);
  d.rank = unsigned(rank);
  d.swizzle = swizzle_of(swizzle, who);
  for (std::size_t i = 0; i < rank; ++i) {  // i counts from the innermost dim
    const std::size_t dim = rank - 1 - i;
    d.dims[i] = std::uint64_t(view.shape[dim]);
    if (box[dim] < 1 || box[dim] > 256)
      fail(fmt::format("box extent {} of dim {}: 1 to 256", box[dim], dim));
    d.box[i] = box[dim];
    if (i == 0) continue;
    const std::uint64_t bytes = std::uint64_t(strides[dim]) * elem;
    if (bytes % 16 || bytes >= (std::uint64_t(1) << 40))
      fail(fmt::format("the stride of dim {} is {} bytes, not a multiple of 16 below 2^40", dim,
                       bytes));
    d.strides[i - 1] = bytes;
  }
  const std::uint64_t row = std::uint64_t(d.box[0]) * elem;
  if (row % 16) fail(fmt::format("a box row of {} bytes, not a multiple of 16", row));
  if (swizzle && row > std::uint64_t(swizzle))
    fail(fmt::format("a box row of {} bytes is longer than the {}-byte swizzle", row, swizzle));
  return d;
}

TensorMapDesc describe_im2col_map(const TensorView& x, const Im2col& walk, const std::string& who) {
  const auto fail = [&](const std::string& why) {
    throw ArgumentError(fmt::format("{}: TMA cannot map {} as im2col: {}", who, x.describe(), why));
  };
  if (x.shape.size() != 4 || x.numel() == 0) fail("an im2col map takes a non-empty [N, C, H, W]");
  const Shape st = x.resolved_strides();
  const std::size_t elem = size_of(x.dtype);
  if (st[1] != 1 && x.shape[1] != 1) fail("its channels are not contiguous");
  if (x.data % 16) fail("its address is not a multiple of 16 bytes");
  TensorMapDesc d;
  d.data_type = data_type(x.dtype);
  d.rank = 4;
  d.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  d.im2col = true;
  const std::size_t order[4] = {1, 3, 2, 0};  // C, W, H, N: innermost first
  for (std::size_t i = 0; i < 4; ++i) {
    d.dims[i] = std::uint64_t(x.shape[order[i]]);
    if (i == 0) continue;
    const std::uint64_t bytes = std::uint64_t(x.shape[order[i]] == 1 ? 16 : st[order[i]] * elem);
    if (bytes % 16 || bytes >= (std::uint64_t(1) << 40))
      fail(fmt::format("a stride of {} bytes, not a multiple of 16 below 2^40", bytes));
    d.strides[i - 1] = bytes;
  }
  for (int i = 0; i < 2; ++i) {  // {H, W} given; the map's arrays run W, H (innermost first)
    if (walk.lower[i] < -128 || walk.lower[i] > 127 || walk.upper[i] < -128 || walk.upper[i] > 127)
      fail(fmt::format("window corners {} and {}: each -128 to 127", walk.lower[i], walk.upper[i]));
    if (walk.steps[i] < 1 || walk.steps[i] > 8)
      fail(fmt::format("a step of {}: 1 to 8", walk.steps[i]));
    d.lower[1 - i] = walk.lower[i], d.upper[1 - i] = walk.upper[i];
    d.steps[2 - i] = walk.steps[i];
  }
  if (walk.channels < 1 || walk.channels > 256 || walk.channels * elem > 128 ||
      walk.channels * elem % 16)
    fail(fmt::format("{} channels a copy: 16 to 128 bytes, a multiple of 16", walk.channels));
  if (walk.pixels < 1 || walk.pixels > 1024) fail(fmt::format("{} pixels a copy: 1 to 1024", walk.pixels));
  d.channels = walk.channels, d.pixels = walk.pixels;
  return d;
}

void encode_tensor_map(const TensorMapDesc& d, std::uint64_t address, void* out,
                       const std::string& what) {
  CUtensorMap map;  // 64-byte aligned, as the driver requires; `out` need not be
  const std::array<cuuint32_t, 5> ones = {1, 1, 1, 1, 1};
  if (d.im2col) {
    KILN_CU_CHECK(driver().cuTensorMapEncodeIm2col(
                      &map, CUtensorMapDataType(d.data_type), d.rank,
                      reinterpret_cast<void*>(address), d.dims.data(), d.strides.data(),
                      d.lower.data(), d.upper.data(), d.channels, d.pixels, d.steps.data(),
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CUtensorMapSwizzle(d.swizzle),
                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                  what);
    std::memcpy(out, &map, kTensorMapBytes);
    return;
  }
  KILN_CU_CHECK(driver().cuTensorMapEncodeTiled(
                    &map, CUtensorMapDataType(d.data_type), d.rank,
                    reinterpret_cast<void*>(address), d.dims.data(), d.strides.data(), d.box.data(),
                    ones.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, CUtensorMapSwizzle(d.swizzle),
                    CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                what);
  std::memcpy(out, &map, kTensorMapBytes);
}

}  // namespace kiln::runtime
