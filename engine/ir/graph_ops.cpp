// Custom ops of a graph: declared, looked up, read from and written to graph JSON.
#include "engine/ir/graph_ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <kiln/op_schema.hpp>
#include <map>
#include <set>

#include "engine/ir/template_check.hpp"
#include "engine/ir/custom_ops.hpp"

namespace kiln {

void Graph::define_op(const CustomOp& op) {
  std::shared_ptr<const ops::OpDef> def = ops::make_custom_op(op);
  for (const auto& d : custom_defs_)
    if (d->name == op.name)
      throw GraphError(fmt::format("custom op '{}': declared twice", op.name));
  custom_ops_.push_back(op);
  custom_defs_.push_back(std::move(def));
}

void Graph::define_template(const std::string& name, const Template& t) {
  for (const auto& def : custom_defs_)
    if (def->name == name)
      throw GraphError(fmt::format("template op '{}': the name is taken", name));
  try {
    check_template(t);
  } catch (const ArgumentError& e) {
    throw GraphError(fmt::format("template op '{}': {}", name, e.what()));
  }
  auto kept = std::make_shared<const Template>(t);
  custom_defs_.push_back(ops::make_template_op(name, kept));
  templates_.emplace_back(name, std::move(kept));
}

void detail::GraphAccess::copy_declarations(const Graph& from, Graph& to) {
  to.custom_ops_ = from.custom_ops_;
  to.templates_ = from.templates_;
  to.custom_defs_ = from.custom_defs_;
}

const ops::OpDef& detail::GraphAccess::op_def(const Graph& g, std::string_view name) {
  for (const auto& def : g.custom_defs_)
    if (def->name == name) return *def;
  return ops::find_op(name);
}

void parse_custom_ops(const nlohmann::json& ops, Graph& g, const std::string& origin) {
  if (!ops.is_array()) throw GraphError(fmt::format("{}: field ops must be an array", origin));
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const nlohmann::json& o = ops[i];
    const std::string where = fmt::format("{}: ops[{}]", origin, i);
    if (!o.is_object()) throw GraphError(fmt::format("{}: must be an object", where));
    for (auto it = o.begin(); it != o.end(); ++it)
      if (it.key() != "name" && it.key() != "operands" && it.key() != "expr")
        throw GraphError(
            fmt::format("{}: unknown field '{}' (a custom op has name, operands, expr)", where,
                        printable_name(it.key())));
    CustomOp op;
    const auto text = [&](const char* key) {
      if (!o.contains(key) || !o.at(key).is_string())
        throw GraphError(fmt::format("{}: field {} must be a string", where, key));
      return o.at(key).get<std::string>();
    };
    op.name = text("name");
    op.expr = text("expr");
    if (!o.contains("operands") || !o.at("operands").is_array())
      throw GraphError(fmt::format("{}: field operands must be an array of names", where));
    for (const auto& n : o.at("operands")) {
      if (!n.is_string())
        throw GraphError(fmt::format("{}: field operands must be an array of names", where));
      op.operands.push_back(n.get<std::string>());
    }
    try {
      g.define_op(op);
    } catch (const GraphError& e) {
      throw GraphError(fmt::format("{}: {}", origin, e.what()));
    }
  }
}

std::string custom_ops_json(const Graph& g) {
  std::vector<std::string> ops;
  for (const CustomOp& op : g.custom_ops())
    ops.push_back(fmt::format(R"(    {{"name": {}, "operands": {}, "expr": {}}})",
                              nlohmann::json(op.name).dump(), nlohmann::json(op.operands).dump(),
                              nlohmann::json(op.expr).dump()));
  return ops.empty() ? "" : fmt::format("  \"ops\": [\n{}\n  ],\n", fmt::join(ops, ",\n"));
}

namespace {

const std::map<std::string, TemplateParam::Kind> kKinds = {
    {"tensor", TemplateParam::Kind::tensor}, {"i32", TemplateParam::Kind::i32},
    {"i64", TemplateParam::Kind::i64},       {"f32", TemplateParam::Kind::f32},
    {"f64", TemplateParam::Kind::f64},       {"tensor_map", TemplateParam::Kind::tensor_map}};

// The text of `key` in template object `o` ("" if absent and not `required`).
std::string text_of(const nlohmann::json& o, const char* key, const std::string& where,
                    bool required = true) {
  if (!o.contains(key)) {
    if (required) throw GraphError(fmt::format("{}: missing field {}", where, key));
    return "";
  }
  if (!o.at(key).is_string())
    throw GraphError(fmt::format("{}: field {} must be a string", where, key));
  return o.at(key).get<std::string>();
}

std::vector<std::string> strings_of(const nlohmann::json& o, const char* key,
                                    const std::string& where) {
  if (!o.contains(key) || !o.at(key).is_array())
    throw GraphError(fmt::format("{}: field {} must be an array of strings", where, key));
  std::vector<std::string> out;
  for (const auto& v : o.at(key)) {
    if (!v.is_string())
      throw GraphError(fmt::format("{}: field {} must be an array of strings", where, key));
    out.push_back(v.get<std::string>());
  }
  return out;
}

// The bytes of `path` under `dir`: a relative path with no "..".
std::string file_under(const std::string& dir, const std::string& path, const std::string& where) {
  if (path.empty() || path[0] == '/' || path.find("..") != std::string::npos)
    throw GraphError(
        fmt::format("{}: '{}' is not a path relative to the graph file's folder without '..'",
                    where, printable_name(path)));
  try {
    return Template::from_file((dir.empty() ? "" : dir + "/") + path).source();
  } catch (const Error& e) {
    throw GraphError(fmt::format("{}: {}", where, e.what()));
  }
}

// One of a template's params: {"name", "kind"}, and for a tensor_map its "box" and "swizzle".
TemplateParam param_of(const nlohmann::json& p, const std::string& where) {
  const std::string kind = p.is_object() ? text_of(p, "kind", where) : "";
  if (!kKinds.count(kind))
    throw GraphError(fmt::format(
        "{}: each of params is {{\"name\", \"kind\"}}, kind tensor, tensor_map, i32, i64, f32 "
        "or f64",
        where));
  TemplateParam out{text_of(p, "name", where), kKinds.at(kind)};
  if (out.kind != TemplateParam::Kind::tensor_map) return out;
  out.box = strings_of(p, "box", where);
  if (p.contains("swizzle")) {
    if (!p.at("swizzle").is_number_integer())
      throw GraphError(fmt::format("{}: a tensor_map's swizzle is 0, 32, 64 or 128", where));
    out.swizzle = int(std::clamp<std::int64_t>(p.at("swizzle").get<std::int64_t>(), -1, 1 << 20));
  }
  return out;
}

}  // namespace

Template template_of(const nlohmann::json& o, const std::string& dir, const std::string& where) {
  static const std::set<std::string> fields = {"name",   "file",     "source",   "headers",
                                               "params", "instance", "tunables", "grid",
                                               "block",  "shared",   "output"};
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!fields.count(it.key()))
      throw GraphError(fmt::format("{}: unknown field '{}'", where, printable_name(it.key())));
  const std::string file = text_of(o, "file", where, false);
  const std::string source = text_of(o, "source", where, false);
  if (file.empty() == source.empty())
    throw GraphError(
        fmt::format("{}: give its code as file (a path) or source, one of them", where));
  const std::string name =
      file.empty() ? text_of(o, "name", where) + ".cuh" : file.substr(file.find_last_of('/') + 1);
  Template t(name, file.empty() ? source : file_under(dir, file, where));
  if (o.contains("headers")) {
    if (!o.at("headers").is_object())
      throw GraphError(fmt::format("{}: field headers must map include names to files", where));
    for (auto it = o.at("headers").begin(); it != o.at("headers").end(); ++it) {
      const auto& h = it.value();
      const bool inline_text = h.is_object() && h.contains("source") && h.at("source").is_string();
      if (!h.is_string() && !inline_text)
        throw GraphError(fmt::format("{}: header {}: a path, or {{\"source\": text}}", where,
                                     printable_name(it.key())));
      t.header(it.key(), inline_text ? h.at("source").get<std::string>()
                                     : file_under(dir, h.get<std::string>(), where));
    }
  }
  std::vector<TemplateParam> params;
  if (!o.contains("params") || !o.at("params").is_array())
    throw GraphError(fmt::format("{}: field params must be an array", where));
  for (const auto& p : o.at("params")) params.push_back(param_of(p, where));
  t.params(std::move(params)).instance(text_of(o, "instance", where));
  if (o.contains("tunables")) {
    if (!o.at("tunables").is_array())
      throw GraphError(fmt::format("{}: field tunables must be an array", where));
    for (const auto& u : o.at("tunables")) {
      if (!u.is_object() || !u.contains("candidates") || !u.at("candidates").is_array())
        throw GraphError(
            fmt::format("{}: each of tunables is {{\"name\", \"candidates\"}}", where));
      std::vector<int> candidates;
      for (const auto& c : u.at("candidates")) {
        if (!c.is_number_integer() || c.get<std::int64_t>() < -(1 << 30) ||
            c.get<std::int64_t>() > (1 << 30))
          throw GraphError(fmt::format("{}: a tunable's candidates are integers", where));
        candidates.push_back(c.get<int>());
      }
      t.tunable(text_of(u, "name", where), std::move(candidates));
    }
  }
  t.launch(strings_of(o, "grid", where), strings_of(o, "block", where));
  if (o.contains("shared")) t.shared_bytes(text_of(o, "shared", where));
  if (!o.contains("output") || !o.at("output").is_object())
    throw GraphError(
        fmt::format("{}: field output must be {{\"param\", \"like\"[, \"shape\"]}}", where));
  const nlohmann::json& out = o.at("output");
  t.output(text_of(out, "param", where), text_of(out, "like", where),
           out.contains("shape") ? strings_of(out, "shape", where) : std::vector<std::string>{});
  return t;
}

void parse_templates(const nlohmann::json& templates, Graph& g, const std::string& dir,
                     const std::string& origin) {
  if (!templates.is_array())
    throw GraphError(fmt::format("{}: field templates must be an array", origin));
  for (std::size_t i = 0; i < templates.size(); ++i) {
    const nlohmann::json& o = templates[i];
    const std::string where = fmt::format("{}: templates[{}]", origin, i);
    if (!o.is_object()) throw GraphError(fmt::format("{}: must be an object", where));
    const std::string name = text_of(o, "name", where);
    const Template t = template_of(o, dir, where);  // its errors name `where` already
    try {
      g.define_template(name, t);
    } catch (const GraphError& e) {
      throw GraphError(fmt::format("{}: {}", where, e.what()));
    } catch (const ArgumentError& e) {
      throw GraphError(fmt::format("{}: {}", where, e.what()));
    }
  }
}

std::string templates_json(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& [name, t] : g.templates()) {
    nlohmann::json j;
    j["name"] = name;
    j["source"] = t->source();
    nlohmann::json headers = nlohmann::json::object();
    for (const auto& [h, text] : t->headers()) headers[h] = {{"source", text}};
    j["headers"] = headers;
    nlohmann::json params = nlohmann::json::array();
    for (const TemplateParam& p : t->param_list())
      for (const auto& [kind, k] : kKinds) {
        if (k != p.kind) continue;
        nlohmann::json q = {{"name", p.name}, {"kind", kind}};
        if (k == TemplateParam::Kind::tensor_map) {
          q["box"] = p.box;
          q["swizzle"] = p.swizzle;
        }
        params.push_back(std::move(q));
      }
    j["params"] = params;
    j["instance"] = t->instance_text();
    nlohmann::json tunables = nlohmann::json::array();
    for (const auto& [tn, candidates] : t->tunables())
      tunables.push_back({{"name", tn}, {"candidates", candidates}});
    j["tunables"] = tunables;
    j["grid"] = t->grid();
    j["block"] = t->block();
    j["shared"] = t->shared();
    j["output"] = {{"param", t->output_param()}, {"like", t->output_like()}};
    if (!t->output_shape().empty()) j["output"]["shape"] = t->output_shape();
    out.push_back("    " + j.dump());
  }
  return out.empty() ? "" : fmt::format("  \"templates\": [\n{}\n  ],\n", fmt::join(out, ",\n"));
}

namespace {

// `j` as a value of `type`, or nothing when it is not one.
std::optional<AttrValue> attr_value(const nlohmann::json& j, AttrType type) {
  const bool integer = j.is_number_integer();
  switch (type) {
    case AttrType::number:
      if (integer) return AttrValue(j.get<std::int64_t>());
      if (j.is_number()) return AttrValue(j.get<double>());
      break;
    case AttrType::axis:
      if (j.is_string() && j.get<std::string>() == "all") return AttrValue(std::string("all"));
      if (j.is_array() && std::all_of(j.begin(), j.end(),
                                      [](const auto& d) { return d.is_number_integer(); }))
        return AttrValue(j.get<std::vector<std::int64_t>>());
      [[fallthrough]];
    case AttrType::integer:
      if (integer) return AttrValue(j.get<std::int64_t>());
      break;
    case AttrType::flag:
      if (j.is_boolean()) return AttrValue(j.get<bool>());
      break;
    case AttrType::dtype:
    case AttrType::choice:
      if (j.is_string()) return AttrValue(j.get<std::string>());
      break;
    case AttrType::extents:
      if (j.is_array() && std::all_of(j.begin(), j.end(),
                                      [](const auto& d) { return d.is_number_integer(); }))
        return AttrValue(j.get<std::vector<std::int64_t>>());
      break;
  }
  return std::nullopt;
}

}  // namespace

OpSchema op_schema(std::string_view op, const Graph* graph) {
  return ops::schema_of(graph ? op_def(*graph, op) : ops::find_op(op));
}

Attrs attrs_from_json(const nlohmann::json& at, const ops::OpDef& op, const std::string& where) {
  const OpSchema schema = ops::schema_of(op);
  Attrs attrs;
  for (auto it = at.begin(); it != at.end(); ++it) {
    const std::string field = fmt::format("{}: field attrs.{}", where, printable_name(it.key()));
    const AttrSpec* spec = find_attr(schema, it.key());
    if (!spec) throw GraphError(fmt::format("{}: {}", field, unknown_attr(schema, it.key())));
    const std::optional<AttrValue> v = attr_value(*it, spec->type);
    if (!v)
      throw GraphError(fmt::format("{}: {} is not {} (op '{}')", field,
                                   printable_name(it->dump()), type_text(spec->type),
                                   printable_name(op.name)));
    try {
      set_attr(attrs, *spec, *v);
    } catch (const Error& e) {
      throw GraphError(fmt::format("{}: {}", field, e.what()));
    }
  }
  return attrs;
}

nlohmann::json attrs_json(const Attrs& attrs) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : attr_values(attrs))
    std::visit([&, key = std::string(name)](const auto& x) { j[key] = x; }, v);
  return j;
}

}  // namespace kiln
