// The public users' template API (include/kiln/template.hpp): declaring a template, launching
// it and precompiling it through the engine (cache, records, loaded kernels).
#include <fmt/format.h>

#include <kiln/error.hpp>
#include <kiln/template.hpp>

#include "cache/atomic_file.hpp"
#include "engine/engine_impl.hpp"
#include "engine/families/user_template.hpp"
#include "engine/runtime/context.hpp"
#include "engine/runtime/nvtx.hpp"
#include "engine/runtime/tensor_map.hpp"

namespace kiln {
namespace {

constexpr std::size_t kMaxTemplateBytes = std::size_t(16) << 20;

std::string file_bytes(const std::string& path, const char* what) {
  std::string text, why;
  if (!cache::read_file(path, text, why, kMaxTemplateBytes))
    throw ArgumentError(fmt::format("cannot read {} {}: {}", what, path, why));
  return text;
}

}  // namespace

Template::Template(std::string name, std::string source)
    : name_(std::move(name)), source_(std::move(source)) {}

Template Template::from_file(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return Template(slash == std::string::npos ? path : path.substr(slash + 1),
                  file_bytes(path, "template"));
}

Template& Template::header(std::string name, std::string text) {
  check_header(name_, name);
  headers_[std::move(name)] = std::move(text);
  return *this;
}

Template& Template::header_file(std::string name, const std::string& path) {
  return header(std::move(name), file_bytes(path, "header"));
}

Template& Template::params(std::vector<TemplateParam> params) {
  params_ = std::move(params);
  return *this;
}

Template& Template::instance(std::string instance) {
  instance_ = std::move(instance);
  return *this;
}

Template& Template::tunable(std::string name, std::vector<int> candidates) {
  tunables_.emplace_back(std::move(name), std::move(candidates));
  return *this;
}

Template& Template::launch(std::vector<std::string> grid, std::vector<std::string> block) {
  grid_ = std::move(grid);
  block_ = std::move(block);
  return *this;
}

Template& Template::shared_bytes(std::string bytes) {
  shared_ = std::move(bytes);
  return *this;
}

Template& Template::output(std::string param, std::string like, std::vector<std::string> shape) {
  output_ = std::move(param);
  like_ = std::move(like);
  shape_ = std::move(shape);
  return *this;
}

void launch(Engine& engine, const Template& t, const std::vector<Operand>& args,
            const std::map<std::string, int>& tunables) {
  detail::EngineImpl& e = detail::impl_of(engine);
  e.require_device(fmt::format("launching template {}", t.name()).c_str());
  UserLaunch L = specialize_template(t, args, tunables, true);
  const detail::LoadedKernel& k = e.prepare(L.spec);
  if (L.config.empty()) return;  // nothing to do
  if (L.config.shared > k.max_dynamic_shared)
    throw ArgumentError(fmt::format("template {}: {} bytes of shared memory; the device allows {}",
                                    t.name(), L.config.shared, k.max_dynamic_shared));
  std::vector<void*> params;
  for (auto& p : L.params) params.push_back(p.data());
  const runtime::NvtxRange range(L.spec.name.c_str());
  runtime::ContextGuard guard(*e.context);  // the driver encodes tensor maps in a context
  for (const TensorMapArg& m : L.maps)
    runtime::encode_tensor_map(
        m.desc, std::get<TensorView>(args[m.param]).data, L.params[m.param].data(),
        fmt::format("template {}: tensor map {}", t.name(), t.param_list()[m.param].name));
  k.module->launch(L.config, e.stream(), params.data());
}

KernelRecord precompile(Engine& engine, const Template& t, const std::vector<Operand>& args,
                        const std::map<std::string, int>& tunables) {
  const UserLaunch L = specialize_template(t, args, tunables, false);
  detail::EngineImpl& e = detail::impl_of(engine);
  std::string source;
  KernelRecord r = e.records[e.prepare(L.spec, &source).record];
  r.source = source;
  return r;
}

}  // namespace kiln
