#pragma once
// Whole-file writes that readers never see half done: a temp file beside the target, fsync,
// rename over it.

#include <string>
#include <string_view>

#include <sys/types.h>

namespace kiln::cache {

/// Writes `bytes` to `path` atomically with permissions `mode`. CacheError naming `what` (e.g.
/// "bundle") and the system's reason if any step fails; the temp file is removed then.
void write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode, const char* what);

}  // namespace kiln::cache
