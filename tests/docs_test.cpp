// The docs in docs/ against the code they describe: the op catalog, the graph format's examples,
// the environment variables, the cache's format version, and the links between them.
#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "cache/key.hpp"
#include "ops/expr.hpp"
#include "ops/op.hpp"
#include "tests/support.hpp"

namespace {

std::string source(const std::string& path) {
  return kiln::test::read_file(std::string(KILN_SOURCE_DIR) + "/" + path);
}

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" []"));
  s.erase(s.find_last_not_of(" []") + 1);
  return s;
}

// The cells of a markdown table row (`\|` inside a cell is not a separator).
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string cell;
  for (std::size_t i = 1; i < row.size(); ++i) {
    if (row[i] == '|' && row[i - 1] != '\\') {
      out.push_back(trim(cell));
      cell.clear();
    } else {
      cell += row[i];
    }
  }
  return out;
}

const char* rule_name(const kiln::ops::OpDef& op) {
  if (op.fusion.kind == kiln::ops::FusionKind::view) return "view";
  if (op.fusion.family == "rows") return "row";
  if (op.fusion.family == "gemm") return "matmul";
  if (op.fusion.family == "scan") return "row";  // x a float tensor, the result of its dtype
  // Any other family's ops: a rule of their own, named as the family is (arg, update, ...).
  if (op.fusion.kind == kiln::ops::FusionKind::anchor) return op.fusion.family.data();
  switch (op.rule) {
    case kiln::ops::Rule::arithmetic:
      return "arithmetic";
    case kiln::ops::Rule::compare:
      return "compare";
    case kiln::ops::Rule::select:
      return "select";
    case kiln::ops::Rule::cast:
      return "cast";
  }
  return "?";
}

// Every `KILN_...` string literal in the library's and the CLI's sources.
std::set<std::string> env_vars_in_code() {
  std::set<std::string> vars = {"KILN_TEST_SEED"};  // the test suite's own
  const std::regex literal("\"(KILN_[A-Z_]+)\"");
  for (const char* dir : {"engine", "cache", "tools", "ops", "include"})
    for (const auto& f :
         std::filesystem::recursive_directory_iterator(std::string(KILN_SOURCE_DIR) + "/" + dir)) {
      if (!f.is_regular_file()) continue;
      const std::string text = kiln::test::read_file(f.path().string());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), literal);
           it != std::sregex_iterator(); ++it)
        vars.insert((*it)[1]);
    }
  return vars;
}

}  // namespace

TEST_CASE(
    "docs/ops.md lists every catalog op with its operands, dtype rule and fusion role, and "
    "nothing else") {
  std::set<std::string> documented;
  std::istringstream in(source("docs/ops.md"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const auto c = cells(line);
    REQUIRE(c.size() == 6);
    const std::string name = c[0].substr(1, c[0].size() - 2);
    CAPTURE(name);
    documented.insert(name);
    const kiln::ops::OpDef* op = nullptr;
    for (const auto& o : kiln::ops::all_ops())
      if (o.name == name) op = &o;
    REQUIRE_MESSAGE(op, "docs/ops.md lists an op the catalog does not have");
    std::string operands;
    for (const auto& o : op->operands) operands += (operands.empty() ? "" : ", ") + std::string(o);
    if (op->variadic) operands += " (one or more)";
    std::string shown = c[1];
    shown.erase(
        std::remove_if(shown.begin(), shown.end(), [](char ch) { return ch == '[' || ch == ']'; }),
        shown.end());
    CHECK(shown == operands);
    CHECK(c[3] == std::string(rule_name(*op)) + (op->integers ? ", int" : ""));
    CHECK(c[4] == (op->fusion.kind == kiln::ops::FusionKind::anchor ? std::string(op->fusion.family)
                   : op->fusion.kind == kiln::ops::FusionKind::view ? "view"
                                                                     : "elementwise"));
  }
  for (const auto& op : kiln::ops::all_ops()) {
    CAPTURE(op.name);
    CHECK(documented.count(std::string(op.name)) == 1);
  }
}

TEST_CASE("docs/ops.md: a custom op's functions are the parser's, every one") {
  const std::string text = source("docs/ops.md");
  const std::size_t from = text.find("## Custom ops");
  REQUIRE(from != std::string::npos);
  const std::string section = text.substr(from, text.find("\n## ", from + 1) - from);
  std::set<std::string> documented;
  for (std::size_t at = 0; (at = section.find('`', at)) != std::string::npos;) {
    const std::size_t end = section.find('`', at + 1);
    const std::string word = section.substr(at + 1, end - at - 1);
    if (!word.empty() && word.back() == 'f' && word.find_first_of(" ({") == std::string::npos)
      documented.insert(word);
    at = end + 1;
  }
  std::set<std::string> parsed;
  for (const auto& f : kiln::ops::expr_functions()) parsed.insert(std::string(f.name));
  CHECK(documented == parsed);
}

TEST_CASE("docs/graph-format.md: its examples are graphs kiln loads") {
  const std::string text = source("docs/graph-format.md");
  int examples = 0;
  for (std::size_t at = 0; (at = text.find("```json\n", at)) != std::string::npos;) {
    const std::size_t end = text.find("```", at + 8);
    const std::string json = text.substr(at + 8, end - at - 8);
    CAPTURE(json);
    CHECK_NOTHROW(kiln::Plan(kiln::Graph::parse(json, "docs/graph-format.md")).kernels());
    ++examples;
    at = end + 3;
  }
  CHECK(examples >= 2);
}

TEST_CASE(
    "every KILN_ variable the code reads is documented in docs/environment.md and the README, and "
    "no other") {
  const auto vars = env_vars_in_code();
  const std::string env = source("docs/environment.md"), readme = source("README.md");
  for (const std::string& v : vars) {
    CAPTURE(v);
    CHECK(env.find("`" + v + "`") != std::string::npos);
    CHECK(readme.find("`" + v) != std::string::npos);
  }
  const std::regex row("\\| `(KILN_[A-Z_]+)`");
  for (auto it = std::sregex_iterator(env.begin(), env.end(), row); it != std::sregex_iterator();
       ++it) {
    CAPTURE((*it)[1].str());
    CHECK(vars.count((*it)[1]) == 1);
  }
}

TEST_CASE("docs/graph-format.md's attribute table names every attribute of every op's schema") {
  const std::string text = source("docs/graph-format.md");
  const std::size_t from = text.find("## Attributes");
  REQUIRE(from != std::string::npos);
  const std::string doc = text.substr(from, text.find("\n## ", from + 1) - from);
  int keys = 0;
  for (const auto& op : kiln::ops::all_ops())
    for (const kiln::AttrSpec& a : op.attrs) {
      CAPTURE(op.name);
      CAPTURE(a.name);
      ++keys;
      // The table's row of the key: it names the op among those that take it.
      const std::size_t at = doc.find("\n| `" + std::string(a.name) + "`");
      const std::size_t also = doc.find(", `" + std::string(a.name) + "` |");
      REQUIRE_MESSAGE((at != std::string::npos || also != std::string::npos),
                      "the attribute has no row in the table");
      const std::size_t row = at != std::string::npos ? at : doc.rfind('\n', also);
      REQUIRE(row != std::string::npos);
      const std::string line = doc.substr(row + 1, doc.find('\n', row + 1) - row - 1);
      const std::string ops = line.substr(line.rfind("| ", line.size() - 3));
      CHECK(std::regex_search(ops, std::regex("[` ]" + std::string(op.name) + "[` ]")));
    }
  CHECK(keys >= 20);
}

TEST_CASE(
    "docs/cache.md states the entry format version the code writes; links between the docs "
    "resolve") {
  CHECK(source("docs/cache.md")
            .find("format version (now " + std::to_string(kiln::cache::kFormatVersion) + ")") !=
        std::string::npos);
  const std::regex link("\\]\\(((docs/)?[a-z-]+\\.md)\\)");
  std::vector<std::string> docs = {"README.md"};
  for (const auto& f : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/docs"))
    if (f.path().extension() == ".md") docs.push_back("docs/" + f.path().filename().string());
  CHECK(docs.size() >= 12);
  for (const std::string& doc : docs) {
    const std::string text = source(doc),
                      dir = std::string(doc).rfind("docs/", 0) == 0 ? "docs/" : "";
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link);
         it != std::sregex_iterator(); ++it) {
      CAPTURE(doc);
      CAPTURE((*it)[1].str());
      CHECK(std::filesystem::exists(std::string(KILN_SOURCE_DIR) + "/" + dir + (*it)[1].str()));
    }
    CHECK(text.find("DESIGN.md") == std::string::npos);  // not in this repository
    CHECK(text.find("BENCH.md") == std::string::npos);
  }
  // A newcomer reads the README in five minutes; the rest is in docs/.
  const std::string readme = source("README.md");
  CHECK(std::count(readme.begin(), readme.end(), '\n') <= 120);
}
