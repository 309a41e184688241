#include "engine/runtime/memory.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <kiln/error.hpp>

#include "engine/runtime/driver.hpp"

namespace kiln {
namespace detail {

Allocation::Allocation(std::shared_ptr<runtime::Context> ctx, std::size_t bytes)
    : ctx_(std::move(ctx)), bytes_(bytes) {
  runtime::ContextGuard guard(*ctx_);
  // cuMemAlloc rejects 0 bytes; an empty tensor still gets a valid, unique pointer.
  KILN_CU_CHECK(runtime::driver().cuMemAlloc(&ptr_, bytes ? bytes : 1),
                fmt::format("a buffer of {} bytes on device {}", bytes, ctx_->info().ordinal));
}

Allocation::~Allocation() {
  try {
    runtime::ContextGuard guard(*ctx_);
    if (CUresult r = runtime::driver().cuMemFree(ptr_); r != CUDA_SUCCESS)
      spdlog::warn("kiln: cuMemFree of {} bytes failed: {}", bytes_, runtime::result_name(r));
  } catch (const std::exception& e) {
    spdlog::warn("kiln: freeing device memory failed: {}", e.what());
  }
}

}  // namespace detail

Tensor::Tensor(std::shared_ptr<detail::Allocation> memory, TensorView view)
    : memory_(std::move(memory)), view_(std::move(view)) {}

Tensor Tensor::with_strides(const Shape& strides) const {
  TensorView v = view_;
  v.strides = strides;
  if (!memory_ || !view_ok(v))
    throw ArgumentError(fmt::format("with_strides: strides {} for {} reach outside its memory",
                                    to_string(strides), view_.describe()));
  return Tensor(memory_, std::move(v));
}

void Tensor::copy_from_host(const void* src) {
  if (!memory_) throw ArgumentError("copy_from_host on an empty Tensor");
  runtime::ContextGuard guard(memory_->context());
  // kiln's streams do not synchronize with the legacy stream this copy uses, and from pageable
  // memory it returns once the bytes are staged, before the DMA lands (the driver API's "API
  // synchronization behavior"): without the second synchronize, a kernel launched next on
  // kiln's stream could read the tensor half written.
  KILN_CU_CHECK(runtime::driver().cuCtxSynchronize(), view_.describe());
  KILN_CU_CHECK(runtime::driver().cuMemcpyHtoD(memory_->ptr(), src, bytes()), view_.describe());
  KILN_CU_CHECK(runtime::driver().cuCtxSynchronize(), view_.describe());
}

void Tensor::copy_to_host(void* dst) const {
  if (!memory_) throw ArgumentError("copy_to_host on an empty Tensor");
  runtime::ContextGuard guard(memory_->context());
  KILN_CU_CHECK(runtime::driver().cuCtxSynchronize(), view_.describe());
  KILN_CU_CHECK(runtime::driver().cuMemcpyDtoH(dst, memory_->ptr(), bytes()), view_.describe());
}

void Tensor::fill_bytes(unsigned char value) {
  if (!memory_) throw ArgumentError("fill_bytes on an empty Tensor");
  runtime::ContextGuard guard(memory_->context());
  KILN_CU_CHECK(runtime::driver().cuCtxSynchronize(), view_.describe());
  KILN_CU_CHECK(runtime::driver().cuMemsetD8(memory_->ptr(), value, bytes()), view_.describe());
  KILN_CU_CHECK(runtime::driver().cuCtxSynchronize(), view_.describe());
}

}  // namespace kiln
