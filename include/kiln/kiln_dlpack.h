/* kiln's C API over DLPack: a DLTensor (dlpack/dlpack.h: PyTorch's, CuPy's, JAX's, a Rust
 * binding's) as the kiln_tensor descriptor a plan runs on. Optional: kiln.h needs no DLPack;
 * include this header where dlpack/dlpack.h is (Debian: libdlpack-dev). C99 and C++. */
#ifndef KILN_KILN_DLPACK_H
#define KILN_KILN_DLPACK_H

#include <dlpack/dlpack.h>
#include <kiln/kiln.h>

#ifdef __cplusplus
extern "C" {
#endif

/** `*out` describing `t`'s memory, no copy: its data and byte_offset, its dtype, and its shape
 * and strides (pointing into `t`, which must outlive `*out`; NULL strides stay NULL: row-major).
 * `t` must be on a CUDA device (kDLCUDA or kDLCUDAManaged: KILN_ERROR_ARGUMENT otherwise) and of
 * one lane of float32, float16, bfloat16, bool, int32 or int64 (KILN_ERROR_DTYPE otherwise). */
KILN_API kiln_status kiln_tensor_from_dlpack(const DLTensor* t, kiln_tensor* out);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_DLPACK_H */
