#pragma once
// How the kiln CLI reports a failure.

#include <string>

namespace kiln::tools {

/// The text the CLI prints for an error whose message is `what`: its first line, after "kiln: ".
/// The rest (a compiler's log and the source around its errors, say) follows when `details`
/// (KILN_LOG_LEVEL=debug), else one more line says how to see it.
std::string error_report(const std::string& what, bool details);

}  // namespace kiln::tools
