#include "engine/compiler/headers.hpp"

#include <kiln/error.hpp>
#include <set>

namespace kiln::detail {
struct EmbeddedHeader {
  const char* name;
  const char* data;
  std::size_t size;
};
extern const EmbeddedHeader kEmbeddedHeaders[];
}  // namespace kiln::detail

namespace kiln::compiler {
namespace {

// Names in `#include <x>` / `#include "x"` lines.
std::vector<std::string> includes_of(std::string_view src) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = src.find("#include", pos)) != std::string_view::npos) {
    pos += 8;
    const std::size_t open = src.find_first_of("<\"\n", pos);
    if (open == std::string_view::npos || src[open] == '\n') continue;
    const char close_char = src[open] == '<' ? '>' : '"';
    const std::size_t close = src.find_first_of(std::string{close_char, '\n'}, open + 1);
    if (close == std::string_view::npos || src[close] == '\n') continue;
    out.emplace_back(src.substr(open + 1, close - open - 1));
    pos = close;
  }
  return out;
}

}  // namespace

const HeaderTable& HeaderTable::embedded() {
  static const HeaderTable table = [] {
    HeaderTable t;
    for (const detail::EmbeddedHeader* h = detail::kEmbeddedHeaders; h->name; ++h)
      t.add(h->name, std::string(h->data, h->size));
    return t;
  }();
  return table;
}

HeaderTable::HeaderTable(const HeaderTable& base, const std::map<std::string, std::string>& extra)
    : headers_(extra.begin(), extra.end()), base_(&base) {}

void HeaderTable::add(std::string name, std::string source) {
  headers_[std::move(name)] = std::move(source);
}

bool HeaderTable::contains(std::string_view name) const {
  return headers_.count(name) != 0 || (base_ && base_->contains(name));
}

const std::string* HeaderTable::find(std::string_view name) const {
  auto it = headers_.find(name);
  if (it != headers_.end()) return &it->second;
  return base_ ? base_->find(name) : nullptr;
}

const std::string& HeaderTable::source(std::string_view name) const {
  if (const std::string* s = find(name)) return *s;
  throw ArgumentError("no header '" + std::string(name) + "' in kiln's header table");
}

std::vector<std::string> HeaderTable::closure(std::string_view source) const {
  std::set<std::string> seen;
  std::vector<std::string> todo = includes_of(source);
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    const std::string* text = find(name);
    if (!text || !seen.insert(name).second) continue;
    for (auto& inc : includes_of(*text)) todo.push_back(std::move(inc));
  }
  return {seen.begin(), seen.end()};
}

}  // namespace kiln::compiler
