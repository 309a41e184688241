#pragma once
// The disk layer: one file per key, published atomically (temp file in the same directory,
// fsync, rename), verified on every load. Directory 0700, files 0600; a directory or entry
// that is not the user's, or that others can write, is refused.

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
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

/// The size cap that means "no cap" (what a cap of 0 asks for, as in ccache).
constexpr std::uint64_t kNoCap = ~std::uint64_t(0);

/// A size cap written as whole bytes or a number with a K, M, G or T suffix (binary units:
/// "512M", "1.5G"); "0" is kNoCap. Throws CacheError naming `what` (the variable or option it
/// came from) for anything else: negative, fractional bytes, inf, nan, more than 64 bits.
std::uint64_t parse_size(const std::string& text, const std::string& what);

/// Default size cap of a cache directory: $KILN_CACHE_MAX_BYTES (parse_size), else 2 GiB.
std::uint64_t default_max_bytes();

/// "1.5 GiB", "no cap".
std::string describe_cap(std::uint64_t cap);
/// "512 bytes", "3.2 MiB".
std::string human_bytes(std::uint64_t n);

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

/// What gc() or clear() did. Only files removed count; one another process removed first is
/// simply gone; one that could not be removed (a directory that cannot be written) is `failed`.
struct GcResult {
  std::size_t removed = 0;
  std::uint64_t removed_bytes = 0;
  std::uint64_t kept_bytes = 0;    ///< of the entries still there
  std::uint64_t needed_bytes = 0;  ///< of the entries gc() was told to keep
  std::size_t failed = 0;          ///< files that could not be removed
  std::string failure;             ///< why the first of them could not (errno text)
};

class DiskCache {
 public:
  /// Creates the directory (0700) if needed; throws CacheError if it cannot be used:
  /// not a directory, not owned by this user, writable by group or others.
  explicit DiskCache(std::string dir, DiskIo io = DiskIo::posix());
  /// The same refusals, but never creates `dir` (the cache commands only read or remove): a
  /// directory that does not exist is an empty cache, and exists() says so.
  static DiskCache open_existing(std::string dir);

  enum class Status { hit, miss, bad, refused };
  struct Loaded {
    Status status = Status::miss;
    std::optional<CompiledKernel> kernel;
    std::string problem;  ///< for bad and refused
    std::string stays;    ///< for bad: why the bad file is still there (empty: it is gone)
  };
  /// Reads and verifies the entry of `key`. A bad entry is removed (unless a good one
  /// replaced it meanwhile, or the directory cannot be written: `problem` then says why it
  /// stays); a refused one (foreign owner, loose mode) is left alone.
  Loaded load(const CacheKey& key) const;

  /// Publishes an entry. Returns an empty string, or why it could not be written
  /// (errno text); `disk_unusable` is set when the directory cannot take writes at all
  /// (read-only, no permission, disk full).
  std::string store(const CacheKey& key, const CompiledKernel& kernel, bool* disk_unusable) const;

  /// Every entry file, verified (reads every byte).
  std::vector<EntryInfo> list() const;
  /// Every entry file's key, size and last use (stat only).
  std::vector<EntryInfo> scan() const;
  /// Removes least recently used entries, except those whose key (hex) is in `keep`, until at
  /// most `max_bytes` remain, then sweep()s. Safe while other processes read, write and evict:
  /// an entry another process removed first is simply gone.
  GcResult gc(std::uint64_t max_bytes, const std::unordered_set<std::string>& keep = {}) const;
  /// Removes temp files that writers left more than ten minutes ago, and the key locks of
  /// entries that are gone (unless held); returns how many files went. gc() calls it.
  std::size_t sweep() const;
  /// Removes every entry, stray temp file and key lock.
  GcResult clear() const;

  const std::string& dir() const { return dir_; }
  /// False for a directory open_existing() did not find.
  bool exists() const { return exists_; }
  std::string path_of(const CacheKey& key) const;

 private:
  DiskCache(std::string dir, DiskIo io, bool create);

  std::string dir_;
  DiskIo io_;
  bool exists_ = true;
};

}  // namespace kiln::cache
