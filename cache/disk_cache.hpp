#pragma once
// The disk layer: one file per key, published atomically (temp file in the same directory,
// fsync, rename), verified on every load. Directory 0700, files 0600; a directory or entry
// that is not the user's, or that others can write, is refused.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache/entry.hpp"
#include "cache/key.hpp"

namespace kiln::cache {

/// The system calls the write path makes, replaceable to inject faults in tests.
struct DiskIo {
  std::function<int(const char*, int, mode_t)> open;
  std::function<ssize_t(int, const void*, std::size_t)> write;
  std::function<int(int)> fsync;
  std::function<int(const char*, const char*)> rename;
  static DiskIo posix();
};

/// $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln.
std::string default_cache_dir();

/// Default size cap of a cache directory: $KILN_CACHE_MAX_BYTES (bytes, or with a K/M/G
/// suffix), else 2 GiB. Throws CacheError on a malformed value.
std::uint64_t default_max_bytes();

struct EntryInfo {
  std::string path;
  std::string key;  ///< hex, from the file name
  std::uint64_t bytes = 0;
  std::int64_t last_use = 0;     ///< unix seconds (mtime: set on publish, touched on every hit)
  std::int64_t last_use_ns = 0;  ///< the same in nanoseconds, for ordering
  // Filled by list() only:
  std::optional<CompiledKernel> kernel;  ///< metadata and image, when the entry verifies
  std::string problem;                   ///< why it does not verify
};

struct GcResult {
  std::size_t removed = 0;
  std::uint64_t removed_bytes = 0;
  std::uint64_t kept_bytes = 0;
};

class DiskCache {
 public:
  /// Creates the directory (0700) if needed; throws CacheError if it cannot be used:
  /// not a directory, not owned by this user, writable by group or others.
  explicit DiskCache(std::string dir, DiskIo io = DiskIo::posix());

  enum class Status { hit, miss, bad, refused };
  struct Loaded {
    Status status = Status::miss;
    std::optional<CompiledKernel> kernel;
    std::string problem;  ///< for bad and refused
  };
  /// Reads and verifies the entry of `key`. A bad entry is removed (unless a good one
  /// replaced it meanwhile); a refused one (foreign owner, loose mode) is left alone.
  Loaded load(const CacheKey& key) const;

  /// Publishes an entry. Returns an empty string, or why it could not be written
  /// (errno text); `disk_unusable` is set when the directory cannot take writes at all
  /// (read-only, no permission, disk full).
  std::string store(const CacheKey& key, const CompiledKernel& kernel, bool* disk_unusable) const;

  /// Every entry file, verified (reads every byte).
  std::vector<EntryInfo> list() const;
  /// Every entry file's key, size and last use (stat only).
  std::vector<EntryInfo> scan() const;
  /// Removes least recently used entries until at most `max_bytes` remain, and temp files
  /// that writers left more than ten minutes ago. Safe while other processes read, write and
  /// evict: an entry another process removed first is simply gone.
  GcResult gc(std::uint64_t max_bytes) const;
  /// Removes every entry and stray temp file; returns how many files went.
  std::size_t clear() const;

  const std::string& dir() const { return dir_; }
  std::string path_of(const CacheKey& key) const;

 private:
  std::string dir_;
  DiskIo io_;
};

}  // namespace kiln::cache
