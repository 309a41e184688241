#include "engine/logging.hpp"

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace kiln {

void configure_logging() {
  static const bool done = [] {
    const char* level = std::getenv("KILN_LOG_LEVEL");
    spdlog::set_level(level && *level ? spdlog::level::from_str(level) : spdlog::level::warn);
    return true;
  }();
  (void)done;
}

bool logs_debug() { return spdlog::should_log(spdlog::level::debug); }

}  // namespace kiln
