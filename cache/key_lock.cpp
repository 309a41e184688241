#include "cache/key_lock.hpp"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace kiln::cache {

std::optional<KeyLock> KeyLock::acquire(const std::string& dir, const std::string& key_hex,
                                        std::chrono::milliseconds timeout) {
  const std::string path = dir + "/.lock-" + key_hex;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return KeyLock(fd);
    if (errno != EWOULDBLOCK && errno != EINTR) {
      spdlog::debug("kiln: no lock for {} ({}); compiling without one", key_hex, std::strerror(errno));
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      spdlog::info("kiln: waited {} ms for another process compiling {}; compiling anyway", timeout.count(), key_hex);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::close(fd);
  return std::nullopt;
}

KeyLock::~KeyLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace kiln::cache
