#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <kiln/error.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "cache/remote_tuning.hpp"
#include "engine/compiler/compiler.hpp"
#include "engine/exec/engine_impl.hpp"
#include "engine/logging.hpp"
#include "engine/parallel.hpp"
#include "engine/runtime/driver.hpp"
#include "engine/runtime/memory.hpp"
#include "engine/runtime/nvtx.hpp"

namespace kiln {
namespace detail {
namespace {

std::uint64_t next_serial() {
  static std::atomic<std::uint64_t> next{1};
  return next++;
}

// Compiles at once: KILN_COMPILE_THREADS, else the cores (NVRTC compiles one program per thread
// at full speed), at most 8.
unsigned compile_threads() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (const char* v = std::getenv("KILN_COMPILE_THREADS"); v && *v) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end || n < 1 || n > 256)
      throw ArgumentError(
          fmt::format("KILN_COMPILE_THREADS='{}': expected a whole number from 1 to 256", v));
    return unsigned(n);
  }
  return std::min(cores, 8u);
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

EngineImpl::EngineImpl(EngineOptions opts) : serial(next_serial()), options(std::move(opts)) {
  configure_logging();
  compile_threads_ = compile_threads();
  if (options.offline) {
    if (options.arch.empty())
      throw ArgumentError("an offline engine needs EngineOptions::arch (for example sm_90a)");
  } else {
    context = std::make_shared<runtime::Context>(options.device);
  }
  arch = options.arch.empty() ? context->info().arch() : options.arch;
  compiler::target_options(arch);  // validates the arch now, not at the first op
  target = target_of(arch);
  if (context) {  // the device's own limits, not its arch's largest part's
    target.max_shared = context->info().max_shared_per_block_optin;
    target.sms = context->info().sm_count;
  }
  cache = std::make_unique<cache::KernelCache>(cache::cache_options(
      options.cache_dir, options.disk_cache, options.cache_max_bytes, options.bundles));
  const char* record_env = std::getenv("KILN_RECORD");
  const std::string record = !options.record.empty() ? options.record
                             : record_env            ? record_env
                                                     : "";
  if (!record.empty()) recorder = std::make_unique<cache::ManifestRecorder>(record);
  cache_dir = cache->describe();
  if (context && options.tuning && !env_flag("KILN_DISABLE_TUNING")) {
    tuning = cache::tuning_records(tuning_dir(), context->info().name, *cache);
  }
}

EngineImpl::~EngineImpl() {
  if (!context) return;
  try {
    if (loaded_.empty() && !stream_) return;  // nothing of the context's to free
    runtime::ContextGuard guard(*context);
    loaded_.clear();  // modules unload inside their context
    stream_.reset();
  } catch (const std::exception& e) {
    spdlog::warn("kiln: tearing down the engine: {}", e.what());
  }
}

CUstream EngineImpl::stream() {
  require_device("a stream");
  if (external_stream_) return *external_stream_;
  std::call_once(stream_once_, [&] {
    runtime::ContextGuard guard(*context);
    stream_ = runtime::make_stream();
  });
  return stream_.get();
}

void EngineImpl::set_stream(std::optional<CUstream> s) {
  const CUstream before = stream();
  if (s == external_stream_) return;
  external_stream_ = s;
  runtime::ContextGuard guard(*context);
  runtime::join_streams(before, stream());
}

std::string EngineImpl::tuning_dir() const {
  return options.cache_dir ? *options.cache_dir : cache::default_cache_dir();
}

void EngineImpl::require_device(const char* what) const {
  if (!context)
    throw CudaError(-1, what, "offline engine",
                    fmt::format("{} needs a GPU, but this engine is offline (arch {}); it can only "
                                "precompile kernels",
                                what, arch));
}

namespace {

// What tells loaded kernels apart: their source, instantiation and own headers.
std::string memo_of(const KernelSpec& spec) {
  std::string memo = spec.source + '\n' + spec.expression;
  for (const auto& [name, text] : spec.headers)
    memo += '\n' + std::to_string(name.size()) + name + std::to_string(text.size()) + text;
  return memo;
}

}  // namespace

EngineImpl::Fetched EngineImpl::fetch(const KernelSpec& spec) const {
  const compiler::SourceUnit unit(spec);
  Fetched f{compiler::key_of(spec, arch, unit), {}};
  // A cubin of an older arch of the same major runs here (an sm_80 bundle on an sm_86 GPU):
  // the same spec, so the same resources, which this engine's target chose to fit.
  const std::vector<std::string> older = older_compatible_archs(arch);
  if (!older.empty()) {
    if (auto own = cache->find(f.key)) {
      f.got = *own;
      return f;
    }
    for (const std::string& a : older) {
      const cache::CacheKey key = compiler::key_of(spec, a, unit);
      if (auto got = cache->find(key)) {
        f.key = key;
        f.got = *got;
        return f;
      }
    }
  }
  f.got = cache->get(f.key, [&] {
    const runtime::NvtxRange range(("kiln compile " + spec.name).c_str());
    return compiler::compile(spec, arch, unit);
  });
  return f;
}

const LoadedKernel& EngineImpl::load(const KernelSpec& spec, std::string memo, const Fetched& f,
                                     std::string* source) {
  const cache::KernelCache::Result& got = f.got;
  LoadedKernel k;
  k.compiled = got.kernel;
  KernelRecord rec{
      spec.name,
      f.key.hex(),
      cache::to_string(got.source),
      got.source == cache::KernelCache::Source::compiled ? got.kernel->compile_ms : 0.0,
      got.kernel->registers,
      got.kernel->spill_bytes};
  if (context) {
    runtime::ContextGuard guard(*context);
    k.module =
        std::make_unique<runtime::Module>(got.kernel->image, got.kernel->lowered_name, spec.name);
    k.max_dynamic_shared =
        k.module->allow_dynamic_shared(context->info().max_shared_per_block_optin);
    k.sm_count = unsigned(std::max(context->info().sm_count, 0));
  }
  k.record = records.size();
  if (source) *source = rec.source;
  records.push_back(rec);
  return loaded_.emplace(std::move(memo), std::move(k)).first->second;
}

const LoadedKernel& EngineImpl::prepare(const KernelSpec& spec, std::string* source) {
  // Every spec asked for is recorded, a loaded one too: two specs that differ only by name
  // share a loaded kernel, and a manifest names both.
  if (recorder) recorder->record(spec);
  std::string memo = memo_of(spec);
  if (auto it = loaded_.find(memo); it != loaded_.end()) {
    cache->count_memory_hit();
    if (source) *source = "memory";
    return it->second;
  }
  return load(spec, std::move(memo), fetch(spec), source);
}

std::vector<const LoadedKernel*> EngineImpl::prepare_all(
    const std::vector<const KernelSpec*>& specs) {
  // The specs not loaded yet, each once, fetched side by side, then loaded in plan order.
  std::vector<std::pair<const KernelSpec*, std::string>> todo;  // with their memos
  std::set<std::string> fresh;
  for (const KernelSpec* s : specs) {
    if (recorder) recorder->record(*s);  // as prepare() does
    if (std::string memo = memo_of(*s); !loaded_.count(memo) && fresh.insert(memo).second)
      todo.emplace_back(s, std::move(memo));
  }
  if (cache->has_remote()) {  // one round trip for all that fetch() may ask of the remote
    std::vector<cache::CacheKey> keys;
    const std::vector<std::string> older = older_compatible_archs(arch);
    for (const auto& t : todo) {
      const compiler::SourceUnit unit(*t.first);
      keys.push_back(compiler::key_of(*t.first, arch, unit));
      for (const std::string& a : older) keys.push_back(compiler::key_of(*t.first, a, unit));
    }
    cache->prefetch(keys);
  }
  std::vector<std::optional<Fetched>> fetched(todo.size());
  std::vector<std::exception_ptr> errors(todo.size());
  // With a fleet behind the remote, each machine starts at its own place in the list: the
  // machines then compile different kernels side by side, instead of all leasing the first
  // ones and waiting on one another (cache/remote.hpp, claim()).
  const std::size_t shift =
      cache->has_remote() && !todo.empty() ? std::random_device{}() % todo.size() : 0;
  parallel_each(todo.size(), compile_threads_, [&](std::size_t j) {
    const std::size_t i = (j + shift) % todo.size();
    try {
      fetched[i] = fetch(*todo[i].first);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  });
  for (std::size_t i = 0; i < todo.size(); ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);  // the first failing spec in plan order
    load(*todo[i].first, todo[i].second, *fetched[i], nullptr);
  }
  std::vector<const LoadedKernel*> out;
  for (const KernelSpec* s : specs) {  // a spec loaded just now is no memory hit the first time
    std::string memo = memo_of(*s);
    out.push_back(fresh.erase(memo) ? &loaded_.at(memo) : &prepare(*s));
  }
  return out;
}

void EngineImpl::launch(const LoadedKernel& k, const KernelLaunch& L, LaunchParams& params) {
  require_device("launching a kernel");
  runtime::ContextGuard guard(*context);
  k.module->launch(k.config_for(L), stream(), params.pointers());
}

void EngineImpl::launch_kernel(const KernelLaunch& L) {
  if (L.groups == 0 || L.config.empty()) return;
  const LoadedKernel& k = prepare(L.spec);
  LaunchParams params(L);
  launch(k, L, params);
}

}  // namespace detail

bool gpu_available(std::string* why) { return runtime::device_available(why); }

Engine::Engine(EngineOptions options)
    : impl_(std::make_unique<detail::EngineImpl>(std::move(options))) {}
Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

bool Engine::has_device() const { return impl_->context != nullptr; }
int Engine::device() const { return impl_->options.device; }
const std::string& Engine::arch() const { return impl_->arch; }
std::string Engine::device_name() const {
  return impl_->context ? impl_->context->info().name : "(offline)";
}
const std::string& Engine::cache_dir() const { return impl_->cache_dir; }
CacheCounters Engine::counters() const { return impl_->cache->counters(); }
const std::vector<KernelRecord>& Engine::kernels() const { return impl_->records; }
void* Engine::stream() const { return impl_->stream(); }
void Engine::set_stream(void* stream) { impl_->set_stream(static_cast<CUstream>(stream)); }
void Engine::use_own_stream() { impl_->set_stream(std::nullopt); }
void Engine::join(void* stream) {
  const CUstream own = impl_->stream();  // CudaError offline
  runtime::ContextGuard guard(*impl_->context);
  runtime::join_streams(own, static_cast<CUstream>(stream));
}

Tensor Engine::empty(const Shape& shape, DType dtype) {
  impl_->require_device("allocating a tensor");
  const std::int64_t n = numel_of(shape);
  auto mem = std::make_shared<detail::Allocation>(impl_->context, std::size_t(n) * size_of(dtype));
  TensorView v;
  v.data = mem->ptr();
  v.capacity = mem->bytes();
  v.shape = shape;
  v.dtype = dtype;
  return Tensor(std::move(mem), std::move(v));
}

Tensor Engine::from_host(const Shape& shape, DType dtype, const void* data) {
  Tensor t = empty(shape, dtype);
  t.copy_from_host(data);
  return t;
}

double Engine::time_median_ms(const std::function<void()>& fn, int warmup, int reps) {
  impl_->require_device("timing");
  if (reps < 1) throw ArgumentError("time_median_ms needs reps >= 1");
  for (int i = 0; i < warmup; ++i) fn();
  runtime::ContextGuard guard(*impl_->context);
  auto start = runtime::make_event(), stop = runtime::make_event();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    KILN_CU_CHECK(runtime::driver().cuEventRecord(start.get(), impl_->stream()), "timing event");
    fn();
    KILN_CU_CHECK(runtime::driver().cuEventRecord(stop.get(), impl_->stream()), "timing event");
    ms.push_back(runtime::elapsed_ms(start.get(), stop.get()));
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

void Engine::synchronize() {
  impl_->require_device("synchronize");
  runtime::ContextGuard guard(*impl_->context);
  KILN_CU_CHECK(runtime::driver().cuStreamSynchronize(impl_->stream()), "the engine's stream");
}

}  // namespace kiln
