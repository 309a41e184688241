#pragma once
// What the C API's opaque handles hold, and the helpers every entry point uses: guard() turns
// any exception into a kiln_status and the thread's last error; need() and the converters
// refuse NULLs and bad codes with a message naming the argument.

#include <kiln/kiln.h>

#include <cstdint>
#include <kiln/cache_counters.hpp>
#include <kiln/engine.hpp>
#include <kiln/error.hpp>
#include <kiln/graph.hpp>
#include <kiln/template.hpp>
#include <optional>
#include <string>

struct kiln_engine {
  kiln::Engine engine;
  /// The stream kiln_engine_set_stream gave, or none for the engine's own (restored after a
  /// call on a stream of its own).
  std::optional<void*> stream;
};

struct kiln_graph {
  kiln::Graph graph;
};

struct kiln_plan {
  kiln::Plan plan;
};

struct kiln_template {
  kiln::Template tmpl;
  std::string name;  ///< the JSON's "name": the op name kiln_graph_define_template gives it
};

namespace kiln::capi {

/// Records the exception being handled as the thread's last error (its class from its type,
/// its message prefixed by `function`) and returns its status. Call only inside a catch block.
kiln_status fail(const char* function) noexcept;

/// Runs `body`; KILN_OK, or fail(function) for anything it throws.
template <class F>
kiln_status guard(const char* function, F&& body) noexcept {
  try {
    body();
    return KILN_OK;
  } catch (...) {
    return fail(function);
  }
}

[[noreturn]] void throw_null(const char* what, const char* hint);
/// *p, or ArgumentError "`what` is NULL" (`hint` appended: what to pass instead).
template <class T>
T& need(T* p, const char* what, const char* hint = "") {
  if (!p) throw_null(what, hint);
  return *p;
}

/// A NUL-terminated string argument; ArgumentError naming `what` for NULL.
std::string text(const char* s, const char* what);
/// `rank` extents at `p` (NULL allowed for rank 0); ShapeError for a negative rank.
Shape extents(const std::int64_t* p, std::int32_t rank, const std::string& what);
/// The DType of a kiln_dtype code; DtypeError naming `what` and the codes for another.
DType dtype_of(std::int32_t code, const std::string& what);
/// Sets `o`'s cache directory: NULL leaves the default, "" turns the disk cache off.
void set_cache(EngineOptions& o, const char* cache_dir);
/// The C struct of a cache's counters.
inline kiln_cache_stats stats_of(const CacheCounters& c) {
  return {c.compiles,       c.memory_hits,   c.bundle_hits, c.disk_hits,
          c.bad_entries,    c.compile_ms,    c.remote_hits, c.remote_misses,
          c.remote_refused, c.remote_errors, c.remote_waits};
}
/// A view of `t`, checked as far as the descriptor goes (rank, pointers, dtype).
TensorView view_of(const kiln_tensor& t, const std::string& what);

}  // namespace kiln::capi
