#include "cache/disk_cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <kiln/error.hpp>
#include <limits>
#include <random>

#include "cache/atomic_file.hpp"
#include "cache/key_lock.hpp"

namespace kiln::cache {
namespace {

constexpr const char* kSuffix = ".kiln";
constexpr const char* kTempPrefix = ".tmp-";
constexpr std::uint64_t kMaxEntryBytes = 1ull << 30;

std::string errno_text(int e) { return std::strerror(e); }

// A file or directory must be ours and writable by nobody else.
std::string ownership_problem(const struct stat& st) {
  if (st.st_uid != ::geteuid())
    return fmt::format("owned by UID {}, not by this user (UID {})", st.st_uid, ::geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return fmt::format("writable by group or others (mode {:04o})", st.st_mode & 07777);
  return "";
}

bool read_all(int fd, std::string& out) {
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(buf, std::size_t(n));
  }
}

bool disk_is_unusable(int e) {
  return e == EROFS || e == EACCES || e == EPERM || e == ENOSPC || e == EDQUOT;
}

// Removes `path` of `bytes` into `r`'s counts: removed, or failed and why. False if it is still
// there; a file another process removed first is simply gone (true, not counted).
bool remove_counted(const std::string& path, std::uint64_t bytes, GcResult& r) {
  if (::unlink(path.c_str()) == 0) {
    ++r.removed;
    r.removed_bytes += bytes;
    return true;
  }
  if (errno == ENOENT) return true;
  if (r.failure.empty()) r.failure = errno_text(errno);
  ++r.failed;
  return false;
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ std::uint64_t(::getpid()));
  return fmt::format("{}-{:016x}", ::getpid(), rng());
}

}  // namespace

DiskIo DiskIo::posix() {
  return {[](const char* p, int flags, mode_t mode) { return ::open(p, flags, mode); },
          [](int fd, const void* b, std::size_t n) { return ::write(fd, b, n); },
          [](int fd) { return ::fsync(fd); },
          [](const char* a, const char* b) { return ::rename(a, b); }};
}

std::uint64_t parse_size(const std::string& text, const std::string& what) {
  auto refuse = [&](const char* why) {
    return CacheError(
        fmt::format("{}='{}': {}; give whole bytes or a number with K, M, G or T (0: no cap)", what,
                    text, why));
  };
  std::size_t i = 0;
  unsigned __int128 whole = 0, frac = 0, frac_scale = 1;
  const unsigned __int128 limit = std::numeric_limits<std::uint64_t>::max();
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    whole = whole * 10 + unsigned(text[i++] - '0');
    if (whole > limit) throw refuse("it does not fit in 64 bits");
  }
  const bool digits = i > 0;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) &&
              frac_scale < 1000000000000ull;
         ++i) {
      frac = frac * 10 + unsigned(text[i] - '0');
      frac_scale *= 10;
    }
  }
  if (!digits && frac_scale == 1)
    throw refuse(text.empty() || text[0] == '-' ? "not a size (negative or empty)" : "not a size");
  std::uint64_t scale = 1;
  if (i < text.size()) {
    const char u = char(std::toupper(static_cast<unsigned char>(text[i++])));
    const std::string units = "KMGT";
    const auto at = units.find(u);
    if (at == std::string::npos || i != text.size()) throw refuse("not a size");
    scale = 1ull << (10 * (at + 1));
  }
  const unsigned __int128 bytes = whole * scale + frac * scale / frac_scale;
  if (bytes > limit || whole * scale > limit) throw refuse("it does not fit in 64 bits");
  if (frac * scale % frac_scale != 0) throw refuse("not a whole number of bytes");
  return bytes == 0 ? kNoCap : std::uint64_t(bytes);
}

std::uint64_t default_max_bytes() {
  const char* v = std::getenv("KILN_CACHE_MAX_BYTES");
  if (!v || !*v) return 2ull << 30;
  return parse_size(v, "KILN_CACHE_MAX_BYTES");
}

std::string describe_cap(std::uint64_t cap) { return cap == kNoCap ? "no cap" : human_bytes(cap); }

std::string human_bytes(std::uint64_t n) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) return fmt::format("{} bytes", n);
  double v = double(n);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln";
  throw CacheError("no cache directory: set KILN_CACHE_DIR (or XDG_CACHE_HOME or HOME)");
}

DiskCache::DiskCache(std::string dir, DiskIo io) : DiskCache(std::move(dir), std::move(io), true) {}

DiskCache DiskCache::open_existing(std::string dir) {
  return DiskCache(std::move(dir), DiskIo::posix(), false);
}

DiskCache::DiskCache(std::string dir, DiskIo io, bool create)
    : dir_(std::move(dir)), io_(std::move(io)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  if (dir_.empty()) throw CacheError("the cache directory path is empty");
  struct stat st {};
  if (::stat(dir_.c_str(), &st) != 0) {
    if (!create && errno == ENOENT) {
      exists_ = false;
      return;
    }
    if (create) make_dirs(dir_);
    if (::stat(dir_.c_str(), &st) != 0)
      throw CacheError(
          fmt::format("cache directory {} is not usable: {}", dir_, errno_text(errno)));
  }
  if (!S_ISDIR(st.st_mode))
    throw CacheError(fmt::format(
        "cache path {} is not a directory; remove it or set KILN_CACHE_DIR elsewhere", dir_));
  // chmod can fix a loose mode, not another user's ownership.
  if (st.st_uid != ::geteuid())
    throw CacheError(fmt::format(
        "refusing cache directory {}: it is owned by UID {} (this user is UID {}), who could plant "
        "kernels there; use a directory of your own (KILN_CACHE_DIR, or the CLI's --cache-dir)",
        dir_, st.st_uid, ::geteuid()));
  if (std::string why = ownership_problem(st); !why.empty())
    throw CacheError(fmt::format(
        "refusing cache directory {}: it is {}. Another user could plant kernels there; "
        "run `chmod 700 {}` if it is yours, or set KILN_CACHE_DIR to a private directory",
        dir_, why, dir_));
}

std::string DiskCache::path_of(const CacheKey& key) const {
  return dir_ + "/" + key.hex() + kSuffix;
}

DiskCache::Loaded DiskCache::load(const CacheKey& key) const {
  const std::string path = path_of(key);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return {Status::miss, std::nullopt, "", ""};
    return {Status::refused, std::nullopt,
            fmt::format("cannot open {}: {}", path, errno_text(errno)), ""};
  }
  struct stat st {};
  std::string bytes;
  std::string problem;
  if (::fstat(fd, &st) != 0)
    problem = errno_text(errno);
  else if (!S_ISREG(st.st_mode))
    problem = "not a regular file";
  else if (std::string why = ownership_problem(st); !why.empty())
    problem = why;
  if (!problem.empty()) {
    ::close(fd);
    return {Status::refused, std::nullopt,
            fmt::format("refusing cache entry {}: {}", path, problem), ""};
  }
  const bool ok = std::uint64_t(st.st_size) <= kMaxEntryBytes && read_all(fd, bytes);
  ::close(fd);
  Decoded d = ok ? decode_entry(bytes, key) : Decoded{std::nullopt, "unreadable or oversized"};
  if (d.kernel) {
    ::utimensat(AT_FDCWD, path.c_str(), nullptr,
                AT_SYMLINK_NOFOLLOW);  // last use, for LRU eviction
    return {Status::hit, std::move(d.kernel), "", ""};
  }
  // Remove the bad file, unless a writer has meanwhile renamed a good entry into its place.
  struct stat now {};
  std::string stays;
  if (::stat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev &&
      ::unlink(path.c_str()) != 0 && errno != ENOENT)
    stays = errno_text(errno);
  return {Status::bad, std::nullopt,
          fmt::format("cache entry {} is bad ({}); {}", path, d.problem,
                      stays.empty() ? "removed" : "could not remove it: " + stays),
          stays};
}

std::string DiskCache::store(const CacheKey& key, const CompiledKernel& kernel,
                             bool* disk_unusable) const {
  *disk_unusable = false;
  const std::string bytes = encode_entry(key, kernel);
  const std::string tmp = dir_ + "/" + kTempPrefix + key.hex() + "-" + random_suffix();
  auto fail = [&](const char* step, int fd) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    *disk_unusable = disk_is_unusable(e);
    return fmt::format("{} of {} failed: {}", step,
                       std::strcmp(step, "rename") == 0 ? path_of(key) : tmp, errno_text(e));
  };
  const int fd = io_.open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return fail("create", -1);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = io_.write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return fail("write", fd);
    }
    done += std::size_t(n);
  }
  if (io_.fsync(fd) != 0) return fail("fsync", fd);
  if (::close(fd) != 0) return fail("close", -1);
  if (io_.rename(tmp.c_str(), path_of(key).c_str()) != 0) return fail("rename", -1);
  return "";
}

std::vector<EntryInfo> DiskCache::scan() const {
  std::vector<EntryInfo> out;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return out;
  const std::size_t suffix = std::strlen(kSuffix);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= suffix || name.compare(name.size() - suffix, suffix, kSuffix) != 0) continue;
    EntryInfo info;
    info.path = dir_ + "/" + name;
    info.key = name.substr(0, name.size() - suffix);
    struct stat st {};
    if (::lstat(info.path.c_str(), &st) != 0) continue;  // evicted meanwhile
    info.bytes = std::uint64_t(st.st_size);
    info.last_use = st.st_mtime;
    info.last_use_ns = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    out.push_back(std::move(info));
  }
  ::closedir(d);
  return out;
}

std::vector<EntryInfo> DiskCache::list() const {
  std::vector<EntryInfo> out = scan();
  for (EntryInfo& info : out) {
    const auto key = CacheKey::parse(info.key);
    if (!key) {
      info.problem = "file name is not a cache key";
      continue;
    }
    // Verify without removing or touching: listing never changes the cache.
    const int fd = ::open(info.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    std::string bytes;
    const bool ok = fd >= 0 && read_all(fd, bytes);
    if (fd >= 0) ::close(fd);
    if (!ok) {
      info.problem = "unreadable";
      continue;
    }
    Decoded dec = decode_entry(bytes, *key);
    info.kernel = std::move(dec.kernel);
    info.problem = dec.problem;
  }
  return out;
}

GcResult DiskCache::gc(std::uint64_t max_bytes, const std::unordered_set<std::string>& keep) const {
  GcResult r;
  std::vector<EntryInfo> entries = scan();
  std::sort(entries.begin(), entries.end(),
            [](const EntryInfo& a, const EntryInfo& b) { return a.last_use_ns < b.last_use_ns; });
  std::uint64_t total = 0;
  for (const EntryInfo& e : entries) {
    total += e.bytes;
    if (keep.count(e.key)) r.needed_bytes += e.bytes;
  }
  for (const EntryInfo& e : entries) {
    if (total <= max_bytes) break;
    if (!keep.count(e.key) && remove_counted(e.path, e.bytes, r)) total -= e.bytes;
  }
  r.kept_bytes = total;
  r.removed += sweep();
  return r;
}

std::size_t DiskCache::sweep() const {
  std::size_t removed = 0;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return 0;
  const std::int64_t now = std::int64_t(std::time(nullptr));
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name, path = dir_ + "/" + name;
    struct stat st {};
    // Temp files of writers that died mid-write.
    if (name.rfind(kTempPrefix, 0) == 0 && ::lstat(path.c_str(), &st) == 0 &&
        now - st.st_mtime > 600 && ::unlink(path.c_str()) == 0)
      ++removed;
    // Key locks of entries that are gone, unless a process holds one (it is compiling that key).
    if (name.rfind(KeyLock::kPrefix, 0) == 0) {
      const std::string key = name.substr(std::strlen(KeyLock::kPrefix));
      if (::access((dir_ + "/" + key + kSuffix).c_str(), F_OK) != 0 &&
          KeyLock::remove_if_free(dir_, key))
        ++removed;
    }
  }
  ::closedir(d);
  return removed;
}

GcResult DiskCache::clear() const {
  GcResult r;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return r;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name, path = dir_ + "/" + name;
    const bool entry = name.size() > 5 && name.compare(name.size() - 5, 5, kSuffix) == 0;
    const bool temp = name.rfind(kTempPrefix, 0) == 0 || name.rfind(KeyLock::kPrefix, 0) == 0;
    struct stat st {};
    if (!(entry || temp) || ::lstat(path.c_str(), &st) != 0) continue;
    if (!remove_counted(path, std::uint64_t(st.st_size), r) && entry)
      r.kept_bytes += std::uint64_t(st.st_size);
  }
  ::closedir(d);
  return r;
}

}  // namespace kiln::cache
