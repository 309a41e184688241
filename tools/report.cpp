#include "tools/report.hpp"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <kiln/error.hpp>
#include <sstream>

namespace kiln::tools {
namespace {

// `text` written to a new file kiln-<kernel>-XXXXXX.log in the temporary directory (made with
// mkstemps: never one that exists, nor a link planted there); its path, or "" with `why`.
std::string write_log(const std::string& kernel, const std::string& text, std::string& why) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::temp_directory_path(ec);
  if (ec) {
    why = ec.message();
    return "";
  }
  std::string stem;  // a kernel's name is the user's (a template's): only safe characters
  for (char c : kernel.substr(0, 96))
    stem += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  std::string path = (dir / ("kiln-" + stem + "-XXXXXX.log")).string();
  const int fd = ::mkstemps(path.data(), 4);
  if (fd < 0) {
    why = fmt::format("{}: {}", dir.string(), std::strerror(errno));
    return "";
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = fmt::format("{}: {}", path, std::strerror(errno));
      ::close(fd);
      return "";
    }
    done += std::size_t(n);
  }
  ::close(fd);
  return path;
}

}  // namespace

std::string error_report(const std::string& what, bool details) {
  const auto nl = what.find('\n');
  std::string out = "kiln: " + what.substr(0, nl) + "\n";
  if (nl == std::string::npos || nl + 1 == what.size()) return out;
  if (details) return out + what.substr(nl + 1) + (what.back() == '\n' ? "" : "\n");
  return out + "kiln: (the details: KILN_LOG_LEVEL=debug)\n";
}

std::string log_head(const std::string& what, const std::string& log, const std::string& kernel) {
  std::string out;
  std::istringstream in(log);
  int shown = 0, left = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // NVRTC's blank lines
    if (shown < kLogLines) {
      out += "  " + line + "\n";
      ++shown;
    } else {
      ++left;
    }
  }
  if (left) out += fmt::format("  ... {} more line{}\n", left, left == 1 ? "" : "s");
  std::string why;
  const std::string path = write_log(kernel, what + "\n", why);
  if (path.empty())
    return out + fmt::format(
                     "  the full log was not written ({}); KILN_LOG_LEVEL=debug prints it\n", why);
  return out + fmt::format("  the full log, with the source around each error: {}\n", path);
}

std::string compile_report(const CompileError& e, bool details) {
  const std::string what = e.what();
  if (details || e.log().empty()) return error_report(what, details);  // no log: no compile ran
  return "kiln: " + what.substr(0, what.find('\n')) + "\n" + log_head(what, e.log(), e.kernel());
}

std::string counted(std::size_t n, const std::string& noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

}  // namespace kiln::tools
