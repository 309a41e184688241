#include "cache/key_lock.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace kiln::cache {

namespace {

// Whether `fd` is still the file at `path`: `kiln cache gc` removes the lock files of entries
// that are gone (holding their lock while it does), so a lock taken on a removed file locks
// nothing and is taken again on the file now at the path.
bool still_at(int fd, const std::string& path) {
  struct stat held {
  }, now{};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
         held.st_dev == now.st_dev;
}

}  // namespace

std::optional<KeyLock> KeyLock::acquire(const std::string& dir, const std::string& key_hex,
                                        std::chrono::milliseconds timeout) {
  const std::string path = dir + "/" + kPrefix + key_hex;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return std::nullopt;
    for (;;) {
      if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
        if (still_at(fd, path)) return KeyLock(fd);
        break;  // removed meanwhile: open the new one
      }
      if (errno != EWOULDBLOCK && errno != EINTR) {
        spdlog::debug("kiln: no lock for {} ({}); compiling without one", key_hex,
                      std::strerror(errno));
        ::close(fd);
        return std::nullopt;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        spdlog::info("kiln: waited {} ms for another process compiling {}; compiling anyway",
                     timeout.count(), key_hex);
        ::close(fd);
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::close(fd);
  }
}

bool KeyLock::remove_if_free(const std::string& dir, const std::string& key_hex) {
  const std::string path = dir + "/" + kPrefix + key_hex;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  const bool removed =
      ::flock(fd, LOCK_EX | LOCK_NB) == 0 && still_at(fd, path) && ::unlink(path.c_str()) == 0;
  ::close(fd);
  return removed;
}

KeyLock::~KeyLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace kiln::cache
