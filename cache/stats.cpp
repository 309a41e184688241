#include "cache/stats.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace kiln::cache {
namespace {

constexpr const char* kFile = "/stats.json";

const std::pair<const char*, std::uint64_t DirStats::*> kFields[] = {
    {"disk_hits", &DirStats::disk_hits},
    {"bundle_hits", &DirStats::bundle_hits},
    {"misses", &DirStats::misses},
    {"compiles", &DirStats::compiles},
    {"bad_entries", &DirStats::bad_entries},
    {"remote_hits", &DirStats::remote_hits},
    {"remote_misses", &DirStats::remote_misses},
    {"remote_refused", &DirStats::remote_refused},
    {"remote_errors", &DirStats::remote_errors},
    {"remote_waits", &DirStats::remote_waits}};

std::string read_fd(int fd) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, off_t(text.size()))) > 0;)
    text.append(buf, std::size_t(n));
  return text;
}

// The sums in `text`; a damaged file counts from zero again rather than failing a run.
DirStats parse(const std::string& text) {
  DirStats s;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return s;
  for (const auto& [name, field] : kFields)
    if (auto it = j.find(name); it != j.end() && it->is_number_unsigned())
      s.*field = it->get<std::uint64_t>();
  return s;
}

}  // namespace

DirStats& DirStats::operator+=(const DirStats& o) {
  for (const auto& f : kFields) this->*(f.second) += o.*(f.second);
  return *this;
}

DirStats read_stats(const std::string& dir) {
  const int fd = ::open((dir + kFile).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return {};
  ::flock(fd, LOCK_SH);
  const DirStats s = parse(read_fd(fd));
  ::close(fd);
  return s;
}

bool add_stats(const std::string& dir, const DirStats& delta) {
  const int fd = ::open((dir + kFile).c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = ::flock(fd, LOCK_EX) == 0;
  if (ok) {
    DirStats s = parse(read_fd(fd));
    s += delta;
    nlohmann::json j;
    for (const auto& [name, field] : kFields) j[name] = s.*field;
    const std::string text = j.dump() + "\n";
    ok = ::ftruncate(fd, 0) == 0 &&
         ::pwrite(fd, text.data(), text.size(), 0) == ssize_t(text.size());
  }
  ::close(fd);
  return ok;
}

}  // namespace kiln::cache
