// Launching a user's template (include/kiln/template.hpp; a call whose signature was seen
// before reuses what that call prepared) and precompiling it through the engine (cache,
// records, loaded kernels). Declaring one is engine/ir/template.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <kiln/error.hpp>
#include <kiln/template.hpp>
#include <memory>
#include <mutex>

#include "engine/exec/engine_impl.hpp"
#include "engine/families/user/user_template.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/nvtx.hpp"

namespace kiln {

namespace detail {

/// What a launch() signature prepared: the specialized call and its loaded kernel.
struct PreparedTemplate {
  std::mutex mutex;  ///< one call at a time writes the parameters
  KernelLaunch launch;
  const LoadedKernel* kernel = nullptr;
  std::unique_ptr<LaunchParams> params;
};

}  // namespace detail

namespace {

// The signature of a launch: the template's serial; each tensor's view, each integer's value
// (both can pick the kernel or its launch shape; a float only fills its parameter) and the
// tunables by their index. False for a call to refuse (the slow path says why).
bool launch_signature(const Template& t, const std::vector<Operand>& args,
                      const std::map<std::string, int>& tunables, detail::Signature& s) {
  const auto& params = t.param_list();
  if (args.size() != params.size()) return false;
  s.add(std::int64_t(t.serial()));
  for (std::size_t i = 0; i < args.size(); ++i) {
    const TensorView* v = std::get_if<TensorView>(&args[i]);
    if (params[i].takes_tensor() != (v != nullptr) || (v && !view_ok(*v))) return false;
    if (v) {
      s.add_view(*v);
    } else if (params[i].is_integer()) {
      std::int64_t bits;
      std::memcpy(&bits, &std::get<double>(args[i]), 8);
      s.add(bits);
    }
  }
  for (const auto& [name, value] : tunables) {
    const auto& all = t.tunables();
    const auto it =
        std::find_if(all.begin(), all.end(), [&](const auto& u) { return u.first == name; });
    if (it == all.end()) return false;
    s.add(it - all.begin());
    s.add(value);
  }
  return true;
}

std::shared_ptr<detail::PreparedTemplate> prepare_launch(
    detail::EngineImpl& e, const Template& t, const std::vector<Operand>& args,
    const std::map<std::string, int>& tunables) {
  auto p = std::make_shared<detail::PreparedTemplate>();
  p->launch = specialize_template(t, args, tunables, true);
  p->kernel = &e.prepare(p->launch.spec);
  if (p->launch.config.shared > p->kernel->max_dynamic_shared)
    throw ArgumentError(fmt::format("template {}: {} bytes of shared memory; the device allows {}",
                                    t.name(), p->launch.config.shared,
                                    p->kernel->max_dynamic_shared));
  p->params = std::make_unique<LaunchParams>(p->launch);
  return p;
}

}  // namespace

void launch(Engine& engine, const Template& t, const std::vector<Operand>& args,
            const std::map<std::string, int>& tunables) {
  detail::EngineImpl& e = detail::impl_of(engine);
  e.require_device(fmt::format("launching template {}", t.name()).c_str());
  detail::Signature s;
  std::shared_ptr<detail::PreparedTemplate> p;
  if (!launch_signature(t, args, tunables, s)) {
    p = prepare_launch(e, t, args, tunables);  // throws what is wrong with the call
  } else if ((p = e.templates.find(s))) {
    e.cache->count_memory_hit(1);  // as a lookup of the kernel would
  } else {
    p = e.templates.insert(s, prepare_launch(e, t, args, tunables));
  }
  const KernelLaunch& L = p->launch;
  if (L.config.empty()) return;  // nothing to do
  std::lock_guard<std::mutex> lock(p->mutex);
  set_template_args(t, args, *p->params);
  const runtime::NvtxRange range(L.spec.name.c_str());
  runtime::ContextGuard guard(*e.context);  // the driver encodes tensor maps in a context
  p->kernel->module->launch(L.config, e.stream(), p->params->pointers());
}

KernelRecord precompile(Engine& engine, const Template& t, const std::vector<Operand>& args,
                        const std::map<std::string, int>& tunables) {
  const KernelLaunch L = specialize_template(t, args, tunables, false);
  detail::EngineImpl& e = detail::impl_of(engine);
  std::string source;
  KernelRecord r = e.records[e.prepare(L.spec, &source).record];
  r.source = source;
  return r;
}

}  // namespace kiln
