// The family of users' templates in plans: a graph node of a template (Graph::define_template)
// is a kernel of its own, specialized by user_template.* with the node's
// arguments, its tunables those the template declares.
#include "engine/families/family.hpp"
#include "engine/families/user/user_template.hpp"

namespace kiln {
namespace {

// The template's arguments at `w`'s node: its output's view for the output parameter, each
// argument's view or number for the others.
std::vector<Operand> node_args(const GroupWork& w, const Template& t) {
  const Graph::Node& n = w.shapes.node(w.group.anchor_node);
  std::vector<Operand> args;
  std::size_t a = 0;
  for (const TemplateParam& p : t.param_list()) {
    if (p.name == t.output_param()) {
      args.emplace_back(w.values.at(std::size_t(w.group.anchor_node)));
      continue;
    }
    const auto& arg = n.args.at(a++);
    if (std::holds_alternative<int>(arg))
      args.emplace_back(w.values.at(std::size_t(std::get<int>(arg))));
    else
      args.emplace_back(std::get<double>(arg));
  }
  return args;
}

class UserFamily final : public Family {
 public:
  std::string_view name() const override { return "template"; }
  bool claims(const FusedGroup& grp, const Graph&) const override {
    return grp.anchor && grp.anchor->fusion.family == name();
  }
  KernelLaunch specialize(const GroupWork& w, const Tunables& tunables) const override {
    const Template& t = *w.group.anchor->tmpl;
    return specialize_template(t, node_args(w, t), tunables, false);
  }
  autotune::Space space(const FusedGroup& grp, const KernelLaunch& base,
                        const Target&) const override {
    autotune::Space s;
    for (const auto& [name, candidates] : grp.anchor->tmpl->tunables())
      s.tunables.push_back({name, candidates});
    s.fallback = base.tunables;
    s.reject = [](const autotune::Candidate& c, const autotune::DeviceLimits&) {
      (void)c;
      return std::string();
    };
    return s;
  }
  std::vector<std::string_view> headers() const override { return {}; }
};

}  // namespace

const Family& user_family() {
  static const UserFamily family;
  return family;
}

}  // namespace kiln
