#include "cache/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <kiln/error.hpp>

namespace kiln::cache {

void write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode, const char* what) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  bool ok = fd >= 0;
  for (std::size_t done = 0; ok && done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    ok = n > 0;
    done += ok ? std::size_t(n) : 0;
  }
  ok = ok && ::fsync(fd) == 0;
  const int e = errno;
  if (fd >= 0) ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int why = ok ? errno : e;
    ::unlink(tmp.c_str());
    throw CacheError(fmt::format("cannot write {} {}: {}", what, path, std::strerror(why)));
  }
}

void make_dirs(const std::string& dir) {
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      throw CacheError(fmt::format("cannot create cache directory {}: {}; set KILN_CACHE_DIR to a writable place", partial, std::strerror(errno)));
  }
}

}  // namespace kiln::cache
