#include "engine/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <kiln/graph.hpp>
#include <memory>
#include <string>
#include <string_view>

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

// A command-line tool's log lines: "kiln: warning: ...", as compilers and git write theirs,
// without spdlog's timestamp and logger name. Messages carry a "kiln: " prefix of their own (for
// a host app's log); it is written once.
class CliFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    std::string_view text(msg.payload.data(), msg.payload.size());
    if (text.rfind("kiln: ", 0) == 0) text.remove_prefix(6);
    const std::string_view level = msg.level == spdlog::level::warn       ? "warning"
                                   : msg.level == spdlog::level::err      ? "error"
                                   : msg.level == spdlog::level::critical ? "critical"
                                   : msg.level == spdlog::level::info     ? "info"
                                   : msg.level == spdlog::level::debug    ? "debug"
                                                                          : "trace";
    for (const std::string_view part :
         {std::string_view("kiln: "), level, std::string_view(": "), text, std::string_view("\n")})
      dest.append(part.data(), part.data() + part.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<CliFormatter>();
  }
};

}  // namespace

void configure_cli_logging() {
  if (spdlog::default_logger()->name().empty()) {
    auto logger = spdlog::stderr_color_mt("kiln");
    logger->set_formatter(std::make_unique<CliFormatter>());
    spdlog::set_default_logger(logger);
  }
  configure_logging();  // the level; it leaves the logger above in place
}

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
