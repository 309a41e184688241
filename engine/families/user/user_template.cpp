#include "engine/families/user/user_template.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <kiln/error.hpp>
#include <kiln/graph.hpp>
#include <set>

#include "engine/codegen/codegen.hpp"
#include "engine/compiler/headers.hpp"
#include "engine/ir/custom_ops.hpp"
#include "engine/ir/template_check.hpp"
#include "engine/runtime/tensor_map.hpp"
#include "ops/expr.hpp"

namespace kiln {
namespace {

using Kind = TemplateParam::Kind;

using Variables = ops::RuleVariables;

// The launch rule's variables: the parameters' (ops::RuleVariables), then the tunables.
Variables variables(const Template& t, const std::vector<Operand>& args, const Tunables& tun) {
  Variables vars;
  for (std::size_t i = 0; i < t.param_list().size(); ++i) vars.add(t.param_list()[i], args[i]);
  for (const auto& [name, value] : tun) vars.add(name, value);
  return vars;
}

// `text` of the rule, evaluated: a whole number from 0 to `most`.
unsigned rule_value(const Template& t, const std::string& what, const std::string& text,
                    const Variables& vars, double most) {
  const ops::Expr e = [&] {
    try {
      return ops::Expr::parse(t.name(), text, vars.names);
    } catch (const Error& err) {
      throw ArgumentError(fmt::format("template {}: {}: {}", t.name(), what, err.what()));
    }
  }();
  const double v = e.evaluate(vars.values.data());
  if (!(v >= 0) || v != std::floor(v) || v > most)
    throw ArgumentError(
        fmt::format("template {}: {} '{}' is {}: a launch takes a whole number from 0 to {:.0f}",
                    t.name(), what, text, v, most));
  return unsigned(v);
}

// Each tensor map's description from its view and box (the box's expressions over `vars`), a
// map of the pointer its parameter has among L's pointers.
void describe_maps(const Template& t, const std::vector<Operand>& args, const Variables& vars,
                   KernelLaunch& L) {
  for (std::uint32_t i = 0; i < args.size(); ++i) {
    const TemplateParam& p = t.param_list()[i];
    if (p.kind != Kind::tensor_map) continue;
    std::uint32_t k = 0;  // its pointer
    while (L.layout.pointers[k].param != i) ++k;
    const std::string who = fmt::format("template {}: parameter {}", t.name(), p.name);
    std::vector<std::uint32_t> box;
    for (std::size_t d = 0; d < p.box.size(); ++d)
      box.push_back(rule_value(t, fmt::format("{} box dim {}", p.name, d), p.box[d], vars, 256));
    L.layout.maps.push_back(
        {{i, k, runtime::describe_tensor_map(std::get<TensorView>(args[i]), box, p.swizzle, who)},
         fmt::format("template {}: tensor map {}", t.name(), p.name)});
  }
}

// Calls `f(i)` for each tensor parameter `i` in the order of a launch's pointers: the output
// parameter's (the plan's order: outputs first), then the others'.
template <class F>
void for_each_pointer(const Template& t, F f) {
  const auto& params = t.param_list();
  for (std::uint32_t i = 0; i < params.size(); ++i)
    if (params[i].takes_tensor() && params[i].name == t.output_param()) f(i);
  for (std::uint32_t i = 0; i < params.size(); ++i)
    if (params[i].takes_tensor() && params[i].name != t.output_param()) f(i);
}

bool is_float(const TemplateParam& p) { return p.kind == Kind::f32 || p.kind == Kind::f64; }

// One parameter per template parameter (a tensor map's 128 bytes zero: launches encode it), and
// where the pointers and floats sit.
void lay_out_params(const Template& t, const std::vector<Operand>& args, KernelLaunch& L) {
  ParamLayout& l = L.layout;
  for (std::uint32_t i = 0; i < args.size(); ++i) {
    const TemplateParam& p = t.param_list()[i];
    if (p.kind == Kind::tensor_map) {
      l.params.emplace_back(runtime::kTensorMapBytes);
    } else if (p.kind == Kind::tensor) {
      const std::uint64_t data = std::get<TensorView>(args[i]).data;
      l.params.emplace_back(&data, 8);
    } else if (p.kind == Kind::i32) {
      const std::int32_t x = std::int32_t(std::get<double>(args[i]));
      l.params.emplace_back(&x, 4);
    } else if (p.kind == Kind::i64) {
      const std::int64_t x = std::int64_t(std::get<double>(args[i]));
      l.params.emplace_back(&x, 8);
    } else if (p.kind == Kind::f32) {
      const float x = float(std::get<double>(args[i]));
      l.params.emplace_back(&x, 4);
    } else {
      l.params.emplace_back(&std::get<double>(args[i]), 8);
    }
    if (is_float(p)) l.scalars.push_back({i, 0, p.kind == Kind::f64});
  }
  for_each_pointer(t, [&](std::uint32_t i) {
    l.pointers.push_back({i, 0});
    L.pointers.push_back(std::get<TensorView>(args[i]).data);
  });
}

void check_args(const Template& t, const std::vector<Operand>& args, bool need_data) {
  const auto& params = t.param_list();
  if (args.size() != params.size())
    throw ArgumentError(fmt::format("template {}: {} arguments for its {} parameters", t.name(),
                                    args.size(), params.size()));
  for (std::size_t i = 0; i < args.size(); ++i) {
    const TemplateParam& p = params[i];
    const std::string who = fmt::format("template {}: parameter {}", t.name(), p.name);
    const TensorView* v = std::get_if<TensorView>(&args[i]);
    if (p.takes_tensor() != (v != nullptr))
      throw ArgumentError(
          fmt::format("{}: takes {}", who, p.takes_tensor() ? "a tensor" : "a number"));
    if (v) {
      check_view(*v, who, need_data);
      if (p.kind == Kind::tensor && !v->is_contiguous())
        throw ArgumentError(fmt::format("{}: {} is not contiguous", who, v->describe()));
      continue;
    }
    const double x = std::get<double>(args[i]);
    const double most = p.kind == Kind::i32 ? 2147483647.0 : 9007199254740992.0;
    if (p.is_integer() && (x != std::floor(x) || std::fabs(x) > most))
      throw ArgumentError(fmt::format("{}: {} is not an integer of its type", who, x));
  }
}

Tunables chosen(const Template& t, const Tunables& given) {
  Tunables out;
  for (const auto& [name, candidates] : t.tunables()) out[name] = candidates.front();
  for (const auto& [name, value] : given) {
    if (!out.count(name))
      throw ArgumentError(fmt::format("template {}: '{}' is not one of its tunables", t.name(),
                                      printable_name(name)));
    out[name] = value;
  }
  return out;
}

}  // namespace

void set_template_args(const Template& t, const std::vector<Operand>& args, LaunchParams& p) {
  std::size_t pointer = 0, scalar = 0;
  for_each_pointer(
      t, [&](std::uint32_t i) { p.set_pointer(pointer++, std::get<TensorView>(args[i]).data); });
  for (std::size_t i = 0; i < args.size(); ++i)
    if (is_float(t.param_list()[i])) p.set_scalar(scalar++, std::get<double>(args[i]));
}

KernelLaunch specialize_template(const Template& t, const std::vector<Operand>& args,
                                 const Tunables& tunables, bool need_data) {
  check_template(t);
  check_args(t, args, need_data);
  KernelLaunch L;
  L.tunables = chosen(t, tunables);
  std::vector<std::pair<std::string, std::string>> subs;
  std::vector<std::string> dtypes;
  std::string tuned;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const TemplateParam& p = t.param_list()[i];
    if (const TensorView* v = std::get_if<TensorView>(&args[i])) {
      subs.emplace_back(p.name, std::string(codegen::render_user_type(v->dtype)));
      dtypes.emplace_back(name_of(v->dtype));
    } else if (in_instance(t, p)) {  // an integer the kernel is specialized for
      const std::string value = fmt::format("{}", std::int64_t(std::get<double>(args[i])));
      subs.emplace_back(p.name, value);
      tuned += fmt::format("_{}{}", p.name, value);
    }
  }
  for (const auto& [name, value] : L.tunables) {
    subs.emplace_back(name, std::to_string(value));
    tuned += fmt::format("_{}{}", name, value);
  }
  L.spec.expression = codegen::render_user_instance(t.instance_text(), subs);
  L.spec.source = codegen::render_include(t.name());
  L.spec.options = codegen::user_options();
  L.spec.headers = t.headers();
  L.spec.headers[t.name()] = t.source();
  const std::string stem = L.spec.expression.substr(0, L.spec.expression.find('<'));
  L.spec.name = fmt::format("{}_{}{}", stem, fmt::join(dtypes, "_"), tuned);

  const Variables vars = variables(t, args, L.tunables);
  for (std::size_t d = 0; d < t.grid().size(); ++d)
    L.config.grid[d] = rule_value(t, fmt::format("grid dim {}", d), t.grid()[d], vars,
                                  d == 0 ? 2147483647.0 : 65535.0);
  for (std::size_t d = 0; d < t.block().size(); ++d)
    L.config.block[d] =
        rule_value(t, fmt::format("block dim {}", d), t.block()[d], vars, d == 2 ? 64.0 : 1024.0);
  const std::array<unsigned, 3>& b = L.config.block;
  if (std::uint64_t(b[0]) * b[1] * b[2] > 1024 || !(b[0] && b[1] && b[2]))
    throw ArgumentError(fmt::format("template {}: a block of {} x {} x {} threads: 1 to 1024",
                                    t.name(), b[0], b[1], b[2]));
  L.config.shared = rule_value(t, "shared bytes", t.shared(), vars, 227.0 * 1024);
  L.groups = L.config.empty() ? 0 : 1;
  lay_out_params(t, args, L);
  describe_maps(t, args, vars, L);
  return L;
}

}  // namespace kiln
