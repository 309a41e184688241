// The C API's error model: each thread's last failure (class and message), the mapping of
// kiln's exceptions to status codes, the version, and the argument converters.
#include <fmt/format.h>

#include <new>

#include "capi/handles.hpp"

namespace kiln::capi {
namespace {

static_assert(int(DType::f32) == KILN_F32 && int(DType::f16) == KILN_F16 &&
                  int(DType::bf16) == KILN_BF16 && int(DType::boolean) == KILN_BOOL &&
                  int(DType::i32) == KILN_I32 && int(DType::i64) == KILN_I64,
              "a kiln_dtype code is its DType's value (kiln_plan_output returns it)");

struct LastError {
  kiln_status status = KILN_OK;
  std::string message;
  /// Set instead of `message` when copying the message itself ran out of memory.
  const char* fallback = nullptr;
};

LastError& last() {
  thread_local LastError e;
  return e;
}

kiln_status record(kiln_status status, const char* function, const char* what) noexcept {
  LastError& e = last();
  e.status = status;
  try {
    e.message = fmt::format("{}: {}", function, what);
    e.fallback = nullptr;
  } catch (...) {
    e.fallback = "out of host memory while recording an error message";
  }
  return status;
}

}  // namespace

kiln_status fail(const char* function) noexcept {
  try {
    throw;
  } catch (const CudaError& e) {
    return record(KILN_ERROR_CUDA, function, e.what());
  } catch (const CompileError& e) {
    return record(KILN_ERROR_COMPILE, function, e.what());
  } catch (const CacheError& e) {
    return record(KILN_ERROR_CACHE, function, e.what());
  } catch (const ShapeError& e) {
    return record(KILN_ERROR_SHAPE, function, e.what());
  } catch (const DtypeError& e) {
    return record(KILN_ERROR_DTYPE, function, e.what());
  } catch (const GraphError& e) {
    return record(KILN_ERROR_GRAPH, function, e.what());
  } catch (const ArgumentError& e) {
    return record(KILN_ERROR_ARGUMENT, function, e.what());
  } catch (const std::bad_alloc&) {
    return record(KILN_ERROR_OUT_OF_MEMORY, function,
                  "out of host memory: free some, or use smaller graphs");
  } catch (const std::exception& e) {
    const std::string what = std::string("internal error (please report it): ") + e.what();
    return record(KILN_ERROR_INTERNAL, function, what.c_str());
  } catch (...) {
    return record(KILN_ERROR_INTERNAL, function,
                  "internal error (please report it): an exception of an unknown type");
  }
}

void throw_null(const char* what, const char* hint) {
  throw ArgumentError(fmt::format("{} is NULL{}", what, hint));
}

std::string text(const char* s, const char* what) { return &need(s, what); }

Shape extents(const std::int64_t* p, std::int32_t rank, const std::string& what) {
  if (rank < 0)
    throw ShapeError(fmt::format("{}: rank {} is negative (0 is a scalar)", what, rank));
  if (rank > 0 && !p)
    throw ArgumentError(fmt::format("{}: rank {} but its extents are NULL", what, rank));
  return Shape(p, p + rank);
}

DType dtype_of(std::int32_t code, const std::string& what) {
  if (code < KILN_F32 || code > KILN_I64)
    throw DtypeError(fmt::format(
        "{}: dtype code {} is not a kiln_dtype (KILN_F32 0, KILN_F16 1, KILN_BF16 2, KILN_BOOL 3, "
        "KILN_I32 4, KILN_I64 5)",
        what, code));
  return kAllDTypes[code];
}

TensorView view_of(const kiln_tensor& t, const std::string& what) {
  TensorView v;
  v.data = t.data ? t.data + t.byte_offset : 0;
  v.dtype = dtype_of(t.dtype, what);
  v.shape = extents(t.shape, t.rank, what);
  if (t.strides) v.strides = extents(t.strides, t.rank, what + " strides");
  return v;
}

}  // namespace kiln::capi

extern "C" {

int32_t kiln_version(void) { return KILN_ABI_VERSION; }

const char* kiln_last_error(void) {
  const auto& e = kiln::capi::last();
  return e.fallback ? e.fallback : e.message.c_str();
}

kiln_status kiln_last_error_class(void) { return kiln::capi::last().status; }

const char* kiln_status_name(kiln_status status) {
  switch (status) {
    case KILN_OK: return "ok";
    case KILN_ERROR_ARGUMENT: return "argument";
    case KILN_ERROR_SHAPE: return "shape";
    case KILN_ERROR_DTYPE: return "dtype";
    case KILN_ERROR_GRAPH: return "graph";
    case KILN_ERROR_COMPILE: return "compile";
    case KILN_ERROR_CUDA: return "cuda";
    case KILN_ERROR_CACHE: return "cache";
    case KILN_ERROR_OUT_OF_MEMORY: return "out of memory";
    case KILN_ERROR_INTERNAL: return "internal";
  }
  return "unknown status";
}

int kiln_gpu_available(void) {
  try {
    return kiln::gpu_available() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
