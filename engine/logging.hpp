#pragma once

namespace kiln {

/// Sets spdlog's level from $KILN_LOG_LEVEL (trace, debug, info, warn, error, off; any case),
/// else warn; an unknown value logs at warn and says so once.
/// Idempotent; every entry point (Engine, CLI) calls it.
void configure_logging();

/// As configure_logging, for a command-line tool: each line reads "kiln: warning: ..." (the
/// level's name, no timestamp). Call it before anything logs.
void configure_cli_logging();

/// Whether debug messages are logged (KILN_LOG_LEVEL=debug or trace).
bool logs_debug();

}  // namespace kiln
