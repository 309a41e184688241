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
#include "engine/exec/prepared_call.hpp"
#include "engine/families/user/user_template.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/nvtx.hpp"

namespace kiln {

namespace {

// The signature of a launch: the template's serial; each tensor's view, each integer's value
// (both can pick the kernel or its launch shape; a float only fills its parameter) and the
// tunables by their index. False for a call to refuse (the slow path says why).
bool launch_signature(const Template& t, const std::vector<Operand>& args,
                      const std::map<std::string, int>& tunables, detail::Signature& s) {
  const auto& params = t.param_list();
  if (args.size() != params.size()) return false;
  s.add(std::int64_t(detail::CallKind::template_launch));
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

// The call's kernel (loaded even when the launch has nothing to do), checked against the
// device's shared memory, and its parameters; it runs with the template's own launch dims.
std::shared_ptr<detail::PreparedCall> prepare_launch(detail::EngineImpl& e, const Template& t,
                                                     const std::vector<Operand>& args,
                                                     const std::map<std::string, int>& tunables) {
  KernelLaunch L = specialize_template(t, args, tunables, true);
  const detail::LoadedKernel& k = e.prepare(L.spec);
  if (L.config.shared > k.max_dynamic_shared)
    throw ArgumentError(fmt::format("template {}: {} bytes of shared memory; the device allows {}",
                                    t.name(), L.config.shared, k.max_dynamic_shared));
  auto p = std::make_shared<detail::PreparedCall>();
  const LaunchConfig config = L.config;
  p->launches.push_back(detail::prepared_launch(std::move(L), k, config));
  return p;
}

}  // namespace

void launch(Engine& engine, const Template& t, const std::vector<Operand>& args,
            const std::map<std::string, int>& tunables) {
  detail::EngineImpl& e = detail::impl_of(engine);
  e.require_device(fmt::format("launching template {}", t.name()).c_str());
  detail::Signature s;
  std::shared_ptr<detail::PreparedCall> p;
  if (!launch_signature(t, args, tunables, s)) {
    p = prepare_launch(e, t, args, tunables);  // throws what is wrong with the call
  } else if ((p = e.calls.find(s))) {
    e.cache->count_memory_hit(1);  // as a lookup of the kernel would
  } else {
    p = e.calls.insert(s, prepare_launch(e, t, args, tunables));
  }
  detail::PreparedCall::Launch& l = p->launches.front();
  if (l.config.empty()) return;  // nothing to do
  std::lock_guard<std::mutex> lock(p->mutex);
  set_template_args(t, args, *l.params);
  const runtime::NvtxRange range(l.launch.spec.name.c_str());
  runtime::ContextGuard guard(*e.context);  // the driver encodes tensor maps in a context
  l.kernel->module->launch(l.config, e.stream(), l.params->pointers());
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
