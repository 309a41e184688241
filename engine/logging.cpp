#include "engine/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <kiln/graph.hpp>
#include <string>

namespace kiln {
namespace {

// KILN_LOG_LEVEL in any case; false for a name that is no level.
bool parse_level(std::string text, spdlog::level::level_enum& level) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  const std::pair<const char*, spdlog::level::level_enum> names[] = {
      {"trace", spdlog::level::trace},  {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},    {"warn", spdlog::level::warn},
      {"warning", spdlog::level::warn}, {"error", spdlog::level::err},
      {"err", spdlog::level::err},      {"critical", spdlog::level::critical},
      {"off", spdlog::level::off}};
  for (const auto& [name, value] : names)
    if (text == name) {
      level = value;
      return true;
    }
  return false;
}

}  // namespace

void configure_logging() {
  static const bool done = [] {
    const char* text = std::getenv("KILN_LOG_LEVEL");
    // Logs go to stderr, never into a program's output (`kiln precompile --json`), unless the
    // host app installed a default logger of its own (then it is left alone).
    if (spdlog::default_logger()->name().empty()) {
      auto logger = spdlog::stderr_color_mt("kiln");
      spdlog::set_default_logger(logger);
    }
    spdlog::level::level_enum level = spdlog::level::warn;
    const bool known = !text || !*text || parse_level(text, level);
    spdlog::set_level(level);
    if (!known)
      spdlog::warn(
          "kiln: KILN_LOG_LEVEL='{}' is not a level (trace, debug, info, warn, error, off); "
          "logging at warn",
          printable_name(text));
    return true;
  }();
  (void)done;
}

bool logs_debug() { return spdlog::should_log(spdlog::level::debug); }

}  // namespace kiln
