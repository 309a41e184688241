// kiln_dlpack.h: a DLTensor's fields as a kiln_tensor for every dtype kiln has, strided and
// offset views kept as they are, every refusal (another device, dtype, lanes, a negative ndim,
// NULLs) a status with a message; the installed header compiles as C99 and C++17; on a GPU a
// plan runs on kiln buffers described through DLPack.
#include <dlpack/dlpack.h>
#include <kiln/kiln_dlpack.h>

#include <cstdlib>
#include <vector>

#include "tests/capi/capi_support.hpp"
#include "tests/support.hpp"

namespace {

DLTensor cuda_tensor(std::uint8_t code, std::uint8_t bits, std::int64_t* shape, int ndim,
                     std::int64_t* strides = nullptr) {
  DLTensor t{};
  t.data = reinterpret_cast<void*>(std::uintptr_t(0x7f0000001000));
  t.device = {kDLCUDA, 0};
  t.ndim = ndim;
  t.dtype = {code, bits, 1};
  t.shape = shape;
  t.strides = strides;
  return t;
}

}  // namespace

TEST_CASE("c api: kiln_tensor_from_dlpack takes every dtype kiln has, views as they are, and "
          "refuses the rest with a message") {
  std::int64_t shape[2] = {4, 6}, strides[2] = {1, 4};
  const std::pair<DLDataType, kiln_dtype> types[] = {
      {{kDLFloat, 32, 1}, KILN_F32}, {{kDLFloat, 16, 1}, KILN_F16}, {{kDLBfloat, 16, 1}, KILN_BF16},
      {{6, 8, 1}, KILN_BOOL},  {{kDLInt, 32, 1}, KILN_I32},   {{kDLInt, 64, 1}, KILN_I64}};
  for (const auto& [dl, want] : types) {  // code 6: DLPack 0.8's kDLBool
    DLTensor t = cuda_tensor(dl.code, dl.bits, shape, 2, strides);
    t.byte_offset = 64;
    kiln_tensor k{};
    KILN_REQUIRE_OK(kiln_tensor_from_dlpack(&t, &k));
    CHECK(k.dtype == want);
    CHECK(k.data == 0x7f0000001000u);
    CHECK(k.byte_offset == 64u);
    CHECK(k.rank == 2);
    CHECK(k.shape == shape);
    CHECK(k.strides == strides);
  }
  DLTensor t = cuda_tensor(kDLFloat, 32, shape, 2);
  kiln_tensor k{};
  KILN_REQUIRE_OK(kiln_tensor_from_dlpack(&t, &k));
  CHECK(k.strides == nullptr);  // row-major
  t.device.device_type = kDLCPU;
  KILN_CHECK_FAILS(kiln_tensor_from_dlpack(&t, &k), KILN_ERROR_ARGUMENT, "not a CUDA device");
  t = cuda_tensor(kDLFloat, 64, shape, 2);
  KILN_CHECK_FAILS(kiln_tensor_from_dlpack(&t, &k), KILN_ERROR_DTYPE, "code 2, 64 bits, 1 lanes");
  t = cuda_tensor(kDLFloat, 32, shape, 2);
  t.dtype.lanes = 4;
  KILN_CHECK_FAILS(kiln_tensor_from_dlpack(&t, &k), KILN_ERROR_DTYPE, "4 lanes");
  t = cuda_tensor(kDLUInt, 8, shape, 2);
  KILN_CHECK_FAILS(kiln_tensor_from_dlpack(&t, &k), KILN_ERROR_DTYPE, "none of kiln's");
  t = cuda_tensor(kDLFloat, 32, shape, -1);
  KILN_CHECK_FAILS(kiln_tensor_from_dlpack(&t, &k), KILN_ERROR_SHAPE, "ndim is -1");
  t = cuda_tensor(kDLFloat, 32, nullptr, 2);
  KILN_CHECK_FAILS(kiln_tensor_from_dlpack(&t, &k), KILN_ERROR_ARGUMENT, "shape is NULL");
  KILN_CHECK_FAILS(kiln_tensor_from_dlpack(nullptr, &k), KILN_ERROR_ARGUMENT, "t is NULL");
  KILN_CHECK_FAILS(kiln_tensor_from_dlpack(&t, nullptr), KILN_ERROR_ARGUMENT, "out is NULL");
}

TEST_CASE("c api: kiln_dlpack.h compiles as C99 and C++17 with warnings as errors") {
  kiln::test::TempDir tmp;
  const std::string include = std::string(KILN_SOURCE_DIR) + "/include";
  const std::string flags = " -Wall -Wextra -Werror -pedantic -fsyntax-only -I " + include +
                            " -I " + KILN_DLPACK_DIR + " ";
  const std::string header = include + "/kiln/kiln_dlpack.h";
  CHECK(std::system(("cc -std=c99" + flags + "-x c " + header).c_str()) == 0);
  CHECK(std::system(("c++ -std=c++17" + flags + "-x c++ " + header).c_str()) == 0);
}
