#pragma once
// A real redis-server for the remote cache's tests: started on a free local port in a temp
// dir (no persistence), stopped (or killed) by the test. And a port that accepts connections
// and never answers.

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

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
      if (redisContext* c = client()) {
        redisFree(c);
        return;
      }
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
  /// A connection that answers PING, or null. The caller frees it (redisFree).
  redisContext* client() const {
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, timeval{2, 0});
    if (c && !c->err && !password_.empty())
      freeReplyObject(redisCommand(c, "AUTH %s", password_.c_str()));
    if (c && !c->err)
      if (auto* r = static_cast<redisReply*>(redisCommand(c, "PING"))) {
        const bool ok = r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (ok) return c;
      }
    if (c) redisFree(c);
    return nullptr;
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
