// The C API's DLPack face (include/kiln/kiln_dlpack.h): a DLTensor's fields as a kiln_tensor.
#include <kiln/kiln_dlpack.h>

#include <fmt/format.h>

#include "capi/handles.hpp"

using kiln::capi::guard;
using kiln::capi::need;

namespace {

constexpr std::uint8_t kDLBoolCode = 6;  // DLPack 0.8's kDLBool; Debian ships 0.6's header

// The kiln_dtype of one lane of DLPack type (code, bits); DtypeError naming it otherwise.
kiln_dtype dtype_of(const DLDataType& t) {
  if (t.lanes == 1) {
    if (t.code == kDLFloat && t.bits == 32) return KILN_F32;
    if (t.code == kDLFloat && t.bits == 16) return KILN_F16;
    if (t.code == kDLBfloat && t.bits == 16) return KILN_BF16;
    if (t.code == kDLBoolCode && t.bits == 8) return KILN_BOOL;
    if (t.code == kDLInt && t.bits == 32) return KILN_I32;
    if (t.code == kDLInt && t.bits == 64) return KILN_I64;
  }
  throw kiln::DtypeError(fmt::format(
      "the DLTensor's dtype (code {}, {} bits, {} lanes) is none of kiln's: float32, float16, "
      "bfloat16, bool, int32, int64, one lane",
      int(t.code), int(t.bits), int(t.lanes)));
}

}  // namespace

extern "C" kiln_status kiln_tensor_from_dlpack(const DLTensor* t, kiln_tensor* out) {
  return guard("kiln_tensor_from_dlpack", [&] {
    kiln_tensor& o = need(out, "out", " (pass the address of a kiln_tensor)");
    const DLTensor& d = need(t, "t", " (pass a DLTensor, e.g. a DLManagedTensor's dl_tensor)");
    if (d.device.device_type != kDLCUDA && d.device.device_type != kDLCUDAManaged)
      throw kiln::ArgumentError(fmt::format(
          "the DLTensor is on device type {}, not a CUDA device (kDLCUDA {}, kDLCUDAManaged {}): "
          "copy it to the GPU first",
          int(d.device.device_type), int(kDLCUDA), int(kDLCUDAManaged)));
    if (d.ndim < 0) throw kiln::ShapeError(fmt::format("the DLTensor's ndim is {}", d.ndim));
    if (d.ndim > 0 && !d.shape) throw kiln::ArgumentError("the DLTensor's shape is NULL");
    o.dtype = dtype_of(d.dtype);
    o.data = reinterpret_cast<std::uintptr_t>(d.data);
    o.byte_offset = d.byte_offset;
    o.rank = d.ndim;
    o.shape = d.shape;
    o.strides = d.strides;
  });
}
