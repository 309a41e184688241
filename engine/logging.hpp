#pragma once

namespace kiln {

/// Sets spdlog's level from $KILN_LOG_LEVEL (trace, debug, info, warn, error, off), else warn.
/// Idempotent; every entry point (Engine, CLI) calls it.
void configure_logging();

}  // namespace kiln
