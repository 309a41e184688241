#pragma once
// What kiln reads from NVRTC's and ptxas's logs: where the errors are, and ptxas's numbers.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::compiler {

/// Each "file(line): error" and "file(line): catastrophic error" of an NVRTC log, in order.
std::vector<std::pair<std::string, int>> error_sites(const std::string& log);

/// The number written right before `after` in a ptxas log, itself right after `lead` ("Used 63
/// registers": lead "Used ", after " registers"), at the first place that fits; -1 if none
/// (or beyond 9 digits).
int ptxas_number(const std::string& log, std::string_view lead, std::string_view after);

}  // namespace kiln::compiler
