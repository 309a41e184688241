#pragma once
// The in-memory header table NVRTC resolves #include against: kiln's kernel templates and the
// toolkit's fp16/bf16 headers (embedded at build time), plus headers registered at run time.

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::compiler {

class HeaderTable {
 public:
  HeaderTable() = default;
  /// `base` (which must outlive this table) with `extra` added over it: a spec's own headers.
  HeaderTable(const HeaderTable& base, const std::map<std::string, std::string>& extra);

  /// The table of embedded headers, built once.
  static const HeaderTable& embedded();

  /// Adds or replaces a header (user templates).
  void add(std::string name, std::string source);
  bool contains(std::string_view name) const;
  const std::string& source(std::string_view name) const;
  /// The bytes of header `name`, or null.
  const std::string* find(std::string_view name) const;
  /// The table's own headers (not its base's).
  const std::map<std::string, std::string, std::less<>>& all() const { return headers_; }

  /// Names of the headers `source` includes, directly or not, that this table holds; sorted.
  std::vector<std::string> closure(std::string_view source) const;

 private:
  std::map<std::string, std::string, std::less<>> headers_;
  const HeaderTable* base_ = nullptr;  ///< looked in after headers_
};

}  // namespace kiln::compiler
