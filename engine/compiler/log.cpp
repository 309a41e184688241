#include "engine/compiler/log.hpp"

#include <cctype>
#include <cstdlib>

namespace kiln::compiler {
namespace {

// Digits of a compiler's log as an int (-1 beyond 9 digits: no log line means that).
int small_number(const std::string& digits) {
  return digits.size() > 9 ? -1 : std::atoi(digits.c_str());
}

}  // namespace

// Each "file(line): error" and "file(line): catastrophic error" of an NVRTC log, in order.
// Parsed by hand, not with std::regex: its locale code crashed in processes that had imported
// NumPy first.
std::vector<std::pair<std::string, int>> error_sites(const std::string& log) {
  std::vector<std::pair<std::string, int>> out;
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t p = log.find("): "); p != std::string::npos; p = log.find("): ", p + 1)) {
    const std::string_view rest = std::string_view(log).substr(p + 3);
    if (rest.rfind("error", 0) != 0 && rest.rfind("catastrophic error", 0) != 0) continue;
    std::size_t d = p;
    while (d > 0 && std::isdigit(static_cast<unsigned char>(log[d - 1]))) --d;
    if (d == p || d < 2 || log[d - 1] != '(') continue;
    std::size_t f = d - 1;
    while (f > 0 && !is_space(log[f - 1]) && log[f - 1] != '(') --f;
    if (f == d - 1) continue;
    out.emplace_back(log.substr(f, d - 1 - f), small_number(log.substr(d, p - d)));
  }
  return out;
}

// The number written right before `after` in a ptxas log, itself right after `lead` ("Used 63
// registers": lead "Used ", after " registers"), at the first place that fits; -1 if none.
int ptxas_number(const std::string& log, std::string_view lead, std::string_view after) {
  for (std::size_t p = log.find(after); p != std::string::npos; p = log.find(after, p + 1)) {
    std::size_t d = p;
    while (d > 0 && std::isdigit(static_cast<unsigned char>(log[d - 1]))) --d;
    if (d == p || d < lead.size() || log.compare(d - lead.size(), lead.size(), lead) != 0) continue;
    return small_number(log.substr(d, p - d));
  }
  return -1;
}

}  // namespace kiln::compiler
