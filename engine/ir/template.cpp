// Users' templates as a graph holds them (include/kiln/template.hpp): declaring one, and the
// checks of its declarations that every graph and launch relies on.
#include "engine/ir/template_check.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cctype>
#include <kiln/error.hpp>
#include <kiln/template.hpp>
#include <set>

#include "cache/atomic_file.hpp"
#include "engine/codegen/codegen.hpp"
#include "engine/compiler/headers.hpp"

namespace kiln {
namespace {

using Kind = TemplateParam::Kind;

bool identifier(std::string_view s) {
  if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// A header name a kernel includes as "name": letters, digits, '_', '-', '.', '/', no "..".
bool header_name(std::string_view s) {
  if (s.empty() || s.size() > 200 || s.find("..") != std::string_view::npos || s[0] == '/')
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("_-./").find(c) == std::string_view::npos)
      return false;
  return true;
}

std::uint64_t next_serial() {
  static std::atomic<std::uint64_t> next{1};
  return next++;
}

constexpr std::size_t kMaxTemplateBytes = std::size_t(16) << 20;

std::string file_bytes(const std::string& path, const char* what) {
  std::string text, why;
  if (!cache::read_file(path, text, why, kMaxTemplateBytes))
    throw ArgumentError(fmt::format("cannot read {} {}: {}", what, path, why));
  return text;
}

}  // namespace

Template::Template(std::string name, std::string source)
    : name_(std::move(name)), source_(std::move(source)), serial_(next_serial()) {}

Template& Template::changed() {
  serial_ = next_serial();
  return *this;
}

Template Template::from_file(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return Template(slash == std::string::npos ? path : path.substr(slash + 1),
                  file_bytes(path, "template"));
}

Template& Template::header(std::string name, std::string text) {
  check_header(name_, name);
  headers_[std::move(name)] = std::move(text);
  return changed();
}

Template& Template::header_file(std::string name, const std::string& path) {
  return header(std::move(name), file_bytes(path, "header"));
}

Template& Template::params(std::vector<TemplateParam> params) {
  params_ = std::move(params);
  return changed();
}

Template& Template::instance(std::string instance) {
  instance_ = std::move(instance);
  return changed();
}

Template& Template::tunable(std::string name, std::vector<int> candidates) {
  tunables_.emplace_back(std::move(name), std::move(candidates));
  return changed();
}

Template& Template::launch(std::vector<std::string> grid, std::vector<std::string> block) {
  grid_ = std::move(grid);
  block_ = std::move(block);
  return changed();
}

Template& Template::shared_bytes(std::string bytes) {
  shared_ = std::move(bytes);
  return changed();
}

Template& Template::output(std::string param, std::string like, std::vector<std::string> shape) {
  output_ = std::move(param);
  like_ = std::move(like);
  shape_ = std::move(shape);
  return changed();
}

bool in_instance(const Template& t, const TemplateParam& p) {
  return p.is_integer() && t.instance_text().find("{" + p.name + "}") != std::string::npos;
}

void check_header(const std::string& tmpl, const std::string& name) {
  if (!header_name(name) || compiler::HeaderTable::embedded().contains(name) || name == tmpl)
    throw ArgumentError(fmt::format(
        "template {}: header '{}': a file name (letters, digits, _ - . /) that is not the "
        "template's or one of kiln's",
        printable_name(tmpl), printable_name(name)));
}

void check_template(const Template& t) {
  if (!header_name(t.name()))
    throw ArgumentError(
        fmt::format("template '{}': its name is a file name (letters, digits, "
                    "_ - . /)",
                    printable_name(t.name())));
  for (const auto& [name, text] : t.headers()) check_header(t.name(), name);
  std::set<std::string> names;
  for (const TemplateParam& p : t.param_list()) {
    if (!identifier(p.name) || !names.insert(p.name).second)
      throw ArgumentError(fmt::format("template {}: parameter '{}' is not a distinct identifier",
                                      t.name(), printable_name(p.name)));
    if ((p.kind == Kind::tensor_map) == p.box.empty())
      throw ArgumentError(
          fmt::format("template {}: parameter {}: a tensor_map parameter has a box, and only it",
                      t.name(), p.name));
  }
  for (const auto& [name, candidates] : t.tunables())
    if (!identifier(name) || !names.insert(name).second || candidates.empty())
      throw ArgumentError(
          fmt::format("template {}: tunable '{}' is not a distinct identifier with candidates",
                      t.name(), printable_name(name)));
  if (t.instance_text().empty())
    throw ArgumentError(fmt::format("template {}: no instance (Template::instance)", t.name()));
  std::vector<std::pair<std::string, std::string>> sample;  // any dtype, any tunable value
  for (const TemplateParam& p : t.param_list())
    if (p.takes_tensor()) sample.emplace_back(p.name, "float");
  for (const TemplateParam& p : t.param_list())
    if (in_instance(t, p)) sample.emplace_back(p.name, "1");
  for (const auto& [name, candidates] : t.tunables())
    sample.emplace_back(name, std::to_string(candidates.front()));
  try {
    codegen::render_user_instance(t.instance_text(), sample);
  } catch (const ArgumentError& e) {
    throw ArgumentError(fmt::format("template {}: {}", t.name(), e.what()));
  }
  if (t.grid().empty() || t.grid().size() > 3 || t.block().empty() || t.block().size() > 3)
    throw ArgumentError(
        fmt::format("template {}: a launch rule has 1 to 3 grid and block dims", t.name()));
}

}  // namespace kiln
