#pragma once

namespace kiln {

/// Sets spdlog's level from $KILN_LOG_LEVEL (trace, debug, info, warn, error, off), else warn.
/// Idempotent; every entry point (Engine, CLI) calls it.
void configure_logging();

/// Whether debug messages are logged (KILN_LOG_LEVEL=debug or trace).
bool logs_debug();

}  // namespace kiln
