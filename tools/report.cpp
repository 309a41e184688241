#include "tools/report.hpp"

namespace kiln::tools {

std::string error_report(const std::string& what, bool details) {
  const auto nl = what.find('\n');
  std::string out = "kiln: " + what.substr(0, nl) + "\n";
  if (nl == std::string::npos || nl + 1 == what.size()) return out;
  if (details) return out + what.substr(nl + 1) + (what.back() == '\n' ? "" : "\n");
  return out + "kiln: (the details: KILN_LOG_LEVEL=debug)\n";
}

}  // namespace kiln::tools
