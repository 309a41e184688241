#pragma once
// A per-key advisory lock (flock on <dir>/.lock-<key>) that stops N processes compiling the
// same kernel N times. Best effort by design: a timeout, or a filesystem without working
// locks, means "compile anyway" — never a deadlock, never a failure.

#include <chrono>
#include <optional>
#include <string>
#include <utility>

namespace kiln::cache {

class KeyLock {
 public:
  /// The lock, or nothing if it could not be had within `timeout` (or locks do not work here).
  static std::optional<KeyLock> acquire(const std::string& dir, const std::string& key_hex,
                                        std::chrono::milliseconds timeout);
  KeyLock(KeyLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  KeyLock& operator=(KeyLock&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~KeyLock();

  /// The lock files' name prefix in a cache directory: `.lock-<key>`.
  static constexpr const char* kPrefix = ".lock-";
  /// Removes the lock file of `key_hex` unless a process holds it (true if it went). Safe
  /// against processes taking it at the same time: they take the new file instead.
  static bool remove_if_free(const std::string& dir, const std::string& key_hex);

 private:
  explicit KeyLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace kiln::cache
