#pragma once
// How the kiln CLI reports a failure, and counts in words.

#include <cstddef>
#include <kiln/error.hpp>

#include "engine/error_context.hpp"
#include <string>

namespace kiln::tools {

/// The text the CLI prints for an error whose message is `what`: its first line, after "kiln: ".
/// The rest (a compiler's log and the source around its errors, say) follows when `details`
/// (KILN_LOG_LEVEL=debug), else one more line says how to see it.
std::string error_report(const std::string& what, bool details);

/// Lines of NVRTC's log that a report of a failed compile shows.
constexpr int kLogLines = 8;

/// What follows a failed compile's first line: the first kLogLines lines of NVRTC's log `log`,
/// indented, then the file that the whole message `what` (the log, the numbered source around
/// each error) was written to, in the temporary directory.
std::string log_head(const std::string& what, const std::string& log, const std::string& kernel);

/// The text the CLI prints for a kernel that NVRTC rejected: the message's first line after
/// "kiln: ", then its log_head; with `details` (KILN_LOG_LEVEL=debug), the whole message.
std::string compile_report(const CompileError& e, bool details);

/// fn()'s result, an error planning the graph file `path` naming it as an error loading it
/// does (with_origin).
template <class F>
auto naming_file(const std::string& path, const F& fn) -> decltype(fn()) {
  return with_origin(path, fn);
}

/// "1 kernel", "3 kernels": `n` and `noun`, plural unless n is 1.
std::string counted(std::size_t n, const std::string& noun);

}  // namespace kiln::tools
