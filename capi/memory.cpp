// The C API's device memory: kiln::Tensor bytes behind a handle, for bindings that have no CUDA
// runtime of their own to allocate the memory a plan runs on.
#include <fmt/format.h>

#include "capi/handles.hpp"

struct kiln_buffer {
  kiln::Tensor tensor;  ///< one byte per element: its bytes() is the buffer's size
};

using kiln::capi::guard;
using kiln::capi::need;

namespace {

constexpr const char* kBufferHint = " (create one with kiln_buffer_create)";

// A copy moves the whole buffer: a size other than the buffer's is a caller's mistake.
void require_size(const kiln_buffer& b, std::size_t bytes) {
  if (bytes != b.tensor.bytes())
    throw kiln::ArgumentError(
        fmt::format("{} bytes but the buffer holds {}: pass its size (kiln_buffer_data gives it)",
                    bytes, b.tensor.bytes()));
}

}  // namespace

extern "C" {

kiln_status kiln_buffer_create(kiln_engine* engine, size_t bytes, kiln_buffer** out) {
  return guard("kiln_buffer_create", [&] {
    need(out, "out", " (pass the address of a kiln_buffer*)") = nullptr;
    kiln::Engine& e = need(engine, "engine", " (create one with kiln_engine_create)").engine;
    if (bytes > std::size_t(INT64_MAX))
      throw kiln::ArgumentError(fmt::format("{} bytes is more than any device holds", bytes));
    *out = new kiln_buffer{e.empty({std::int64_t(bytes)}, kiln::DType::boolean)};
  });
}

kiln_status kiln_buffer_destroy(kiln_buffer* buffer) {
  return guard("kiln_buffer_destroy", [&] { delete buffer; });
}

kiln_status kiln_buffer_data(const kiln_buffer* buffer, uint64_t* data, size_t* bytes) {
  return guard("kiln_buffer_data", [&] {
    const kiln_buffer& b = need(buffer, "buffer", kBufferHint);
    if (data) *data = b.tensor.view().data;
    if (bytes) *bytes = b.tensor.bytes();
  });
}

kiln_status kiln_buffer_write(kiln_buffer* buffer, const void* src, size_t bytes) {
  return guard("kiln_buffer_write", [&] {
    kiln_buffer& b = need(buffer, "buffer", kBufferHint);
    require_size(b, bytes);
    if (bytes) b.tensor.copy_from_host(&need(static_cast<const char*>(src), "src"));
  });
}

kiln_status kiln_buffer_read(const kiln_buffer* buffer, void* dst, size_t bytes) {
  return guard("kiln_buffer_read", [&] {
    const kiln_buffer& b = need(buffer, "buffer", kBufferHint);
    require_size(b, bytes);
    if (bytes) b.tensor.copy_to_host(&need(static_cast<char*>(dst), "dst"));
  });
}

}  // extern "C"
