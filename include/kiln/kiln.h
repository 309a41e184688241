#ifndef KILN_KILN_H
#define KILN_KILN_H
/* \file
 * kiln's C API (C99; also valid C++): engines, graphs and plans behind opaque handles, tensors
 * as descriptors, streams as CUstreams passed as void*. docs/c-api.md has an example.
 *
 * Errors: every function but the few that cannot fail returns a kiln_status. On failure
 * kiln_last_error() gives the message of the calling thread's last failure and
 * kiln_last_error_class() its class; they keep them until the next failure on that thread. No
 * C++ exception ever leaves a function of this header.
 *
 * Threads: the last error is per thread; handles are not thread-safe: use each from one thread at
 * a time (an engine per thread), or lock around it. */

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI number kiln_version() returns: it changes when a declaration here changes. */
#define KILN_ABI_VERSION 1

typedef struct kiln_engine kiln_engine; /**< one device (or an offline arch), one kernel cache */
typedef struct kiln_graph kiln_graph;   /**< an op graph, from JSON or built node by node */
typedef struct kiln_plan kiln_plan;     /**< a graph fused into kernels */
typedef struct kiln_template kiln_template; /**< a user's kernel template (docs/templates.md) */
typedef struct kiln_buffer kiln_buffer;     /**< device memory kiln allocated */

/** What a call returned: ok, or the class of its failure (kiln::Error's subclasses). */
typedef enum kiln_status {
  KILN_OK = 0,
  KILN_ERROR_ARGUMENT = 1,      /**< a bad argument: NULL, a bad code, a name not found */
  KILN_ERROR_SHAPE = 2,         /**< shapes do not fit the op, the graph or the view */
  KILN_ERROR_DTYPE = 3,         /**< dtypes do not fit */
  KILN_ERROR_GRAPH = 4,         /**< a malformed graph: JSON, names, references */
  KILN_ERROR_COMPILE = 5,       /**< NVRTC rejected a kernel (the message quotes the source) */
  KILN_ERROR_CUDA = 6,          /**< a CUDA driver call failed, or there is no GPU */
  KILN_ERROR_CACHE = 7,         /**< the kernel cache refused a directory or an entry */
  KILN_ERROR_OUT_OF_MEMORY = 8, /**< host memory ran out */
  KILN_ERROR_INTERNAL = 9       /**< a bug in kiln: please report the message */
} kiln_status;

/** Element types (kiln::DType). */
typedef enum kiln_dtype {
  KILN_F32 = 0,
  KILN_F16 = 1,
  KILN_BF16 = 2,
  KILN_BOOL = 3, /**< one byte, true where nonzero */
  KILN_I32 = 4,
  KILN_I64 = 5
} kiln_dtype;

/** A tensor in device memory, with DLPack's fields (no device: an engine's). */
typedef struct kiln_tensor {
  uint64_t data;          /**< CUdeviceptr; 0 for a tensor without memory (planning only) */
  uint64_t byte_offset;   /**< added to data */
  int32_t dtype;          /**< a kiln_dtype */
  int32_t rank;           /**< number of dims, 0 for a scalar */
  const int64_t* shape;   /**< rank extents */
  const int64_t* strides; /**< rank strides in elements, or NULL for row-major contiguous */
} kiln_tensor;

/** An argument of a graph node: an earlier node, or a scalar (kiln_node(), kiln_scalar()). */
typedef struct kiln_arg {
  int32_t is_scalar;
  int32_t node; /**< a node id from kiln_graph_input or kiln_graph_add */
  double scalar;
} kiln_arg;

static inline kiln_arg kiln_node(int32_t node) {
  kiln_arg a;
  a.is_scalar = 0;
  a.node = node;
  a.scalar = 0;
  return a;
}
static inline kiln_arg kiln_scalar(double value) {
  kiln_arg a;
  a.is_scalar = 1;
  a.node = -1;
  a.scalar = value;
  return a;
}

/** An argument of a template's kernel: a tensor, or a scalar for a scalar parameter. */
typedef struct kiln_operand {
  int32_t is_scalar;
  kiln_tensor tensor;
  double scalar;
} kiln_operand;

/** What an engine's kernel cache counted (kiln::CacheCounters). */
typedef struct kiln_cache_stats {
  uint64_t compiles;       /**< NVRTC compilations */
  uint64_t memory_hits;    /**< kernels found in this process's memory */
  uint64_t bundle_hits;    /**< found in a bundle */
  uint64_t disk_hits;      /**< found in the disk cache */
  uint64_t bad_entries;    /**< corrupt entries removed and recompiled */
  double compile_ms;       /**< total NVRTC time */
  uint64_t remote_hits;    /**< served by the remote cache (KILN_REMOTE_CACHE) */
  uint64_t remote_misses;  /**< asked of the remote cache, which had no entry */
  uint64_t remote_refused; /**< remote entries that did not verify: never loaded */
  uint64_t remote_errors;  /**< remote calls that failed (the layer then backs off) */
  uint64_t remote_waits;   /**< misses that waited on another machine's compile (a lease) */
} kiln_cache_stats;

/* Version and errors: these never fail. */
KILN_API int32_t kiln_version(void);              /**< KILN_ABI_VERSION of the library */
KILN_API const char* kiln_last_error(void);       /**< "" when this thread has not failed */
KILN_API kiln_status kiln_last_error_class(void); /**< KILN_OK when this thread has not failed */
KILN_API const char* kiln_status_name(kiln_status status); /**< "ok", "shape", "cuda", ... */
KILN_API int kiln_gpu_available(void); /**< 1 when a CUDA driver loads and reports a device */

/* Engines. cache_dir: NULL for the default ($KILN_CACHE_DIR, else ~/.cache/kiln), "" for no
 * disk cache (kernels kept in memory only). */
KILN_API kiln_status kiln_engine_create(int32_t device, const char* cache_dir, kiln_engine** out);
/** An engine that compiles for `arch` ("sm_90a") with no GPU; its plans compile, never run. */
KILN_API kiln_status kiln_engine_create_offline(const char* arch, const char* cache_dir,
                                                kiln_engine** out);
KILN_API kiln_status kiln_engine_destroy(kiln_engine* engine); /**< NULL: nothing */
/** The engine's arch; the string lives as long as the engine. */
KILN_API kiln_status kiln_engine_arch(const kiln_engine* engine, const char** out);
/** Launches go to `stream` (a CUstream; NULL is the legacy default stream) from now on. */
KILN_API kiln_status kiln_engine_set_stream(kiln_engine* engine, void* stream);
/** Launches go to the engine's own stream again. */
KILN_API kiln_status kiln_engine_use_own_stream(kiln_engine* engine);
KILN_API kiln_status kiln_engine_synchronize(kiln_engine* engine);
KILN_API kiln_status kiln_engine_cache_stats(const kiln_engine* engine, kiln_cache_stats* out);

/* Device memory, for callers without a CUDA runtime of their own (bindings): a buffer keeps its
 * device's context alive and may outlive its engine. */
/** `bytes` of uninitialized memory on the engine's device; KILN_ERROR_CUDA on an offline engine. */
KILN_API kiln_status kiln_buffer_create(kiln_engine* engine, size_t bytes, kiln_buffer** out);
KILN_API kiln_status kiln_buffer_destroy(kiln_buffer* buffer); /**< NULL: nothing */
/** The buffer's CUdeviceptr (a kiln_tensor's data) in *data, its size in *bytes (either NULL). */
KILN_API kiln_status kiln_buffer_data(const kiln_buffer* buffer, uint64_t* data, size_t* bytes);
/** Copies `bytes` (the buffer's size) from host memory at `src`, after the device's pending work
 * and finished on return. */
KILN_API kiln_status kiln_buffer_write(kiln_buffer* buffer, const void* src, size_t bytes);
/** Copies `bytes` (the buffer's size) into host memory at `dst`, after the device's pending
 * work. */
KILN_API kiln_status kiln_buffer_read(const kiln_buffer* buffer, void* dst, size_t bytes);

/* Graphs (docs/graph-format.md). Node ids are small integers, in order of creation. */
KILN_API kiln_status kiln_graph_create(kiln_graph** out);
/** Parses graph JSON text (NUL-terminated); KILN_ERROR_GRAPH names the node and field. */
KILN_API kiln_status kiln_graph_from_json(const char* json, kiln_graph** out);
KILN_API kiln_status kiln_graph_destroy(kiln_graph* graph); /**< NULL: nothing */
/** An input of `rank` dims (-1 for a dynamic dim); its node id in *node. */
KILN_API kiln_status kiln_graph_input(kiln_graph* graph, const char* name, const int64_t* shape,
                                      int32_t rank, int32_t dtype, int32_t* node);
/** Op `op` (docs/ops.md) on `args`; `attrs_json` a JSON object of its attributes
 * ("{\"axis\": 0}") or NULL; `name` NULL or "" for "t<N>". Its node id in *node. */
KILN_API kiln_status kiln_graph_add(kiln_graph* graph, const char* op, const kiln_arg* args,
                                    size_t n_args, const char* attrs_json, const char* name,
                                    int32_t* node);
/** Marks `node` as an output, renamed to `name` unless it is NULL or "". */
KILN_API kiln_status kiln_graph_output(kiln_graph* graph, int32_t node, const char* name);
/** The graph as JSON: *len gets its length; with buf, up to cap bytes are written, NUL
 * included (KILN_ERROR_ARGUMENT when cap is not more than the length). buf NULL: length only. */
KILN_API kiln_status kiln_graph_to_json(const kiln_graph* graph, char* buf, size_t cap,
                                        size_t* len);

/* Plans. */
/** Fuses `graph` (fuse 0: one kernel per op); the plan keeps its own copy of the graph. */
KILN_API kiln_status kiln_plan_create(const kiln_graph* graph, int fuse, kiln_plan** out);
KILN_API kiln_status kiln_plan_destroy(kiln_plan* plan); /**< NULL: nothing */
/** Compiles every kernel of the plan (or finds it cached), on an offline engine too; the number
 * of kernels in *kernels unless it is NULL. */
KILN_API kiln_status kiln_plan_compile(const kiln_plan* plan, kiln_engine* engine, size_t* kernels);
/** Runs the plan on `engine`: inputs and outputs by name (every output of the graph given,
 * memory the caller owns), on `stream` (a CUstream), or the engine's when stream is NULL. */
KILN_API kiln_status kiln_plan_run(const kiln_plan* plan, kiln_engine* engine,
                                   const char* const* input_names, const kiln_tensor* inputs,
                                   size_t n_inputs, const char* const* output_names,
                                   const kiln_tensor* outputs, size_t n_outputs, void* stream);
/** The dtype, rank and extents (into shape, room for max_rank; NULL: none) of output `name` of a
 * run on `inputs`, whose data may be 0: what to allocate before kiln_plan_run. Needs no GPU. */
KILN_API kiln_status kiln_plan_output(const kiln_plan* plan, const char* const* input_names,
                                      const kiln_tensor* inputs, size_t n_inputs, const char* name,
                                      int32_t* dtype, int32_t* rank, int64_t* shape,
                                      int32_t max_rank);
/** kiln_plan_run through a CUDA graph built at the first call and replayed after. */
KILN_API kiln_status kiln_plan_replay(const kiln_plan* plan, kiln_engine* engine,
                                      const char* const* input_names, const kiln_tensor* inputs,
                                      size_t n_inputs, const char* const* output_names,
                                      const kiln_tensor* outputs, size_t n_outputs, void* stream);

/** Compiles every kernel of `graph`'s fused plan for `arch` without a GPU into `cache_dir`
 * (NULL: the default): what `kiln precompile` does. What the cache counted in *stats unless it
 * is NULL. */
KILN_API kiln_status kiln_precompile(const kiln_graph* graph, const char* arch,
                                     const char* cache_dir, kiln_cache_stats* stats);

/** Times every candidate of each kernel of `graph`'s plan on the engine's GPU (`kiln tune`) and
 * saves the winners as tuning records in its cache directory, applied by engines made after.
 * budget_s > 0: no kernel starts after that many seconds. The number of kernels tuned in *tuned
 * unless it is NULL. KILN_ERROR_CUDA on an offline engine. */
KILN_API kiln_status kiln_tune(kiln_engine* engine, const kiln_graph* graph, double budget_s,
                               size_t* tuned);

/* Users' kernel templates. tunables_json: a JSON object of tunable values ({"B": 128}), or NULL
 * for their defaults. */
/** One object of graph JSON's "templates" array (docs/graph-format.md): name, source (or file,
 * relative to the current directory), params, instance, tunables, grid, block, output. */
KILN_API kiln_status kiln_template_from_json(const char* json, kiln_template** out);
KILN_API kiln_status kiln_template_destroy(kiln_template* t); /**< NULL: nothing */
/** Launches `t` on `args` (its parameters in order, contiguous tensors) on the engine's stream. */
KILN_API kiln_status kiln_template_launch(kiln_engine* engine, const kiln_template* t,
                                          const kiln_operand* args, size_t n_args,
                                          const char* tunables_json);
/** Compiles the kernel kiln_template_launch would run (tensors' data may be 0), offline too. */
KILN_API kiln_status kiln_template_precompile(kiln_engine* engine, const kiln_template* t,
                                              const kiln_operand* args, size_t n_args,
                                              const char* tunables_json);
/** Declares `t` as op `name` (NULL or "": its JSON's name) of `graph`, for kiln_graph_add. */
KILN_API kiln_status kiln_graph_define_template(kiln_graph* graph, const char* name,
                                                const kiln_template* t);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H */
