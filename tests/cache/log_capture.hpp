#pragma once
// The cache tests' capture of kiln's warnings (the suite otherwise logs only errors).

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::test {

/// The warnings of the default logger, in place of its sinks, while it lives.
class Warnings {
 public:
  Warnings()
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)),
        sinks_(spdlog::default_logger()->sinks()),
        level_(spdlog::get_level()) {
    spdlog::default_logger()->sinks() = {sink_};
    spdlog::set_level(spdlog::level::warn);
  }
  ~Warnings() {
    spdlog::set_level(level_);
    spdlog::default_logger()->sinks() = sinks_;
  }
  Warnings(const Warnings&) = delete;
  Warnings& operator=(const Warnings&) = delete;
  int count(const std::string& what) const {
    const std::string text = text_.str();
    int n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  std::vector<spdlog::sink_ptr> sinks_;
  spdlog::level::level_enum level_;
};

}  // namespace kiln::test
