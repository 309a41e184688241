#include "cache/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <kiln/error.hpp>

namespace kiln::cache {

void write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode,
                           const char* what) {
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

bool read_file(const std::string& path, std::string& out, std::string& why, std::size_t max_bytes) {
  out.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    why = std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    why = std::strerror(errno);
  else if (S_ISDIR(st.st_mode))
    why = "it is a directory";
  else if (!S_ISREG(st.st_mode))
    why = "it is not a regular file";
  else if (std::uint64_t(st.st_size) > max_bytes)
    why = fmt::format("it is larger than {} bytes", max_bytes);
  for (char buf[1 << 16]; why.empty();) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) why = std::strerror(errno);
    if (n <= 0) break;
    out.append(buf, std::size_t(n));
    if (out.size() > max_bytes) why = fmt::format("it is larger than {} bytes", max_bytes);
  }
  ::close(fd);
  return why.empty();
}

void make_dirs(const std::string& dir) {
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      throw CacheError(fmt::format(
          "cannot create cache directory {}: {}; set KILN_CACHE_DIR to a writable place", partial,
          std::strerror(errno)));
  }
}

}  // namespace kiln::cache
