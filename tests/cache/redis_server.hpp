#pragma once
// A real redis-server for the remote cache's tests: started on a free local port in a temp
// dir (no persistence), stopped (or killed) by the test. And a port that accepts connections
// and never answers. The tests' own commands speak RESP on a socket: no hiredis, so they build
// (and skip) in a kiln built without it.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "cache/remote.hpp"
#include "tests/support.hpp"

namespace kiln::test {

/// A bound, listening socket on 127.0.0.1 that never accepts: connects succeed (the kernel's
/// backlog takes them), and nothing is ever answered. Port 0 asks for a free one.
class SilentPort {
 public:
  SilentPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), n) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n) != 0)
      throw std::runtime_error("cannot listen on a local port");
    port_ = ntohs(a.sin_port);
  }
  ~SilentPort() { ::close(fd_); }
  SilentPort(const SilentPort&) = delete;
  SilentPort& operator=(const SilentPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// A port nothing listens on (free a moment ago).
inline int free_port() { return SilentPort().port(); }

/// `commands` on one connection to 127.0.0.1:`port`; the last reply as text (a status, an
/// error, a number, a string; an array's elements a line each), or none: no connection.
inline std::optional<std::string> resp(int port,
                                       const std::vector<std::vector<std::string>>& commands) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  const timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(std::uint16_t(port));
  std::string out;
  for (const auto& c : commands) {
    out += "*" + std::to_string(c.size()) + "\r\n";
    for (const std::string& arg : c) out += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  }
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  for (std::size_t sent = 0; ok && sent < out.size();) {
    const ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    ok = n > 0;
    sent += ok ? std::size_t(n) : 0;
  }
  std::string in;
  auto want = [&](std::size_t n) {  // at least n bytes read
    char buf[65536];
    while (ok && in.size() < n) {
      const ssize_t got = ::recv(fd, buf, sizeof buf, 0);
      ok = got > 0;
      if (ok) in.append(buf, std::size_t(got));
    }
    return ok;
  };
  std::size_t at = 0;
  auto line = [&]() -> std::string {
    std::size_t end;
    while ((end = in.find("\r\n", at)) == std::string::npos && want(in.size() + 1)) {
    }
    if (end == std::string::npos) return "";
    std::string l = in.substr(at, end - at);
    at = end + 2;
    return l;
  };
  std::function<std::string()> reply = [&]() -> std::string {
    const std::string l = line();
    if (l.empty()) return "";
    if (l[0] == '$' || l[0] == '*') {
      const long n = std::stol(l.substr(1));
      std::string r;
      if (l[0] == '*')
        for (long i = 0; i < n; ++i) r += reply() + "\n";
      else if (n >= 0 && want(at + std::size_t(n) + 2))
        r = in.substr(at, std::size_t(n)), at += std::size_t(n) + 2;
      return r;
    }
    return l.substr(1);
  };
  std::string last;
  for (std::size_t i = 0; ok && i < commands.size(); ++i) last = reply();
  ::close(fd);
  if (!ok) return std::nullopt;
  return last;
}

/// For a test that needs the remote layer's client: true, with a visible skip, in a kiln built
/// without it (KILN_REDIS): the caller returns.
inline bool skip_without_client() {
  if (kiln::cache::remote_cache_built()) return false;
  MESSAGE("skipped: kiln was built without Redis support (KILN_REDIS, libhiredis-dev)");
  return true;
}

class RedisServer {
 public:
  static bool installed() {
    return ::access("/usr/bin/redis-server", X_OK) == 0 ||
           ::system("command -v redis-server >/dev/null 2>&1") == 0;
  }

  /// `password`: the server's requirepass (empty: none).
  explicit RedisServer(const std::string& password = "") : port_(free_port()), password_(password) {
    const std::string port = std::to_string(port_);
    const std::string log = dir_ / "redis.log";
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
               "--save", "", "--appendonly", "no", "--dir", dir_.path().c_str(), "--requirepass",
               password.c_str(), nullptr);
      ::_exit(127);
    }
    // Generous: a busy CI machine may take seconds to start it.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < until) {
      if (command({"PING"}) == "PONG") return;
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {  // it exited (the port taken meanwhile?)
        pid_ = -1;
        throw std::runtime_error("redis-server exited at start: " + read_file(log));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill();
    throw std::runtime_error("redis-server did not answer within 30 s: " + read_file(log));
  }
  ~RedisServer() { stop(SIGTERM); }
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  /// A command's reply as text (resp()), after AUTH where the server has a password.
  std::optional<std::string> command(const std::vector<std::string>& args) const {
    if (password_.empty()) return resp(port_, {args});
    return resp(port_, {{"AUTH", password_}, args});
  }
  /// SIGKILL, as a crash or an OOM killer would.
  void kill() { stop(SIGKILL); }

 private:
  void stop(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  TempDir dir_;
  int port_;
  std::string password_;
  pid_t pid_ = -1;
};

}  // namespace kiln::test
