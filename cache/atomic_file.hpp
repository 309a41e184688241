#pragma once
// Whole files: writes that readers never see half done (a temp file beside the target, fsync,
// rename over it), reads that refuse what is not a regular file; and the cache's directories.

#include <sys/types.h>

#include <string>
#include <string_view>

namespace kiln::cache {

/// Writes `bytes` to `path` atomically with permissions `mode`. CacheError naming `what` (e.g.
/// "bundle") and the system's reason if any step fails; the temp file is removed then.
void write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode,
                           const char* what);

/// Reads the regular file `path` (at most `max_bytes`) into `out`. False, with the reason in
/// `why` ("it is a directory", "No such file or directory"), for anything else; callers throw
/// their own error type with it.
bool read_file(const std::string& path, std::string& out, std::string& why,
               std::size_t max_bytes = std::size_t(1) << 32);

/// Creates `dir` and its missing parents, mode 0700 (the cache is private to its user).
/// CacheError naming the first one that cannot be made.
void make_dirs(const std::string& dir);

}  // namespace kiln::cache
