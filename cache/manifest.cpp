#include "cache/manifest.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <kiln/error.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cache/atomic_file.hpp"

namespace kiln::cache {

std::string manifest_line(const KernelSpec& spec) {
  nlohmann::json j{{"name", spec.name},
                   {"source", spec.source},
                   {"expression", spec.expression},
                   {"options", spec.options}};
  if (!spec.headers.empty()) j["headers"] = spec.headers;  // a user template's own
  return j.dump();
}

std::vector<KernelSpec> read_manifest(const std::string& path) {
  std::string text, why;
  if (!read_file(path, text, why))
    throw ArgumentError(fmt::format("cannot read manifest {}: {}", path, why));
  std::istringstream in(text);
  std::vector<KernelSpec> specs;
  std::set<std::string> seen;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    KernelSpec s;
    try {
      const auto j = nlohmann::json::parse(line);
      s.name = j.at("name").get<std::string>();
      s.source = j.at("source").get<std::string>();
      s.expression = j.at("expression").get<std::string>();
      s.options = j.at("options").get<std::vector<std::string>>();
      if (j.contains("headers"))
        s.headers = j.at("headers").get<std::map<std::string, std::string>>();
    } catch (const std::exception& e) {
      throw ArgumentError(
          fmt::format("{}:{}: not a manifest line ({}); expected a JSON object with name, source, "
                      "expression, options (and headers)",
                      path, n, e.what()));
    }
    if (s.name.empty() || s.expression.empty())
      throw ArgumentError(fmt::format("{}:{}: empty name or expression", path, n));
    if (seen.insert(manifest_line(s)).second) specs.push_back(std::move(s));
  }
  return specs;
}

ManifestRecorder::ManifestRecorder(std::string path) : path_(std::move(path)) {
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    throw ArgumentError(fmt::format("cannot record into manifest {} (KILN_RECORD): {}", path_,
                                    std::strerror(errno)));
  ::close(fd);
}

void ManifestRecorder::record(const KernelSpec& spec) {
  std::string line = manifest_line(spec);
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_ || !seen_.insert(line).second) return;
  line += '\n';
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != ssize_t(line.size())) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    failed_ = true;
    spdlog::warn("kiln: recording into manifest {} failed ({}); recording stops, the ops go on",
                 path_, std::strerror(e));
    return;
  }
  ::close(fd);
}

}  // namespace kiln::cache
