#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// Names the cases their skip decorator skipped (the GPU cases on a machine without one), once
// at the end of the run: a summary's "skipped" count alone does not say what did not run.
struct SkippedLister : doctest::IReporter {
  explicit SkippedLister(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {
    if (names_.empty()) return;
    std::cout << "[doctest] skipped by their decorator (" << names_.size() << "):\n";
    for (const std::string& n : names_) std::cout << "[doctest]   " << n << "\n";
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData& tc) override {
    if (tc.m_skip) names_.emplace_back(tc.m_name);
  }

 private:
  std::vector<std::string> names_;
};

// A line on stderr every 20 s of the run (the cases done, the one running), so that a log or a
// CI console shows progress through a suite whose own output comes only at failures and at the
// end. A thread, so a long case is reported while it runs.
struct ProgressLister : doctest::IReporter {
  explicit ProgressLister(const doctest::ContextOptions&) {}
  ~ProgressLister() override { stop(); }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {
    start_ = std::chrono::steady_clock::now();
    ticker_ = std::thread([this] { tick(); });
  }
  void test_run_end(const doctest::TestRunStats&) override { stop(); }
  void test_case_start(const doctest::TestCaseData& tc) override {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = tc.m_name;
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++done_;
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  void tick() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      if (wake_.wait_for(lock, std::chrono::seconds(20), [this] { return stopping_; })) break;
      const auto s = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::steady_clock::now() - start_)
                         .count();
      std::fprintf(stderr, "[progress] %llds: %d test cases done, running '%s'\n",
                   static_cast<long long>(s), done_, running_.c_str());
      std::fflush(stderr);
    }
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread ticker_;
  std::chrono::steady_clock::time_point start_;
  std::string running_;
  int done_ = 0;
  bool stopping_ = false;
};

}  // namespace

REGISTER_LISTENER("skipped", 1, SkippedLister);
REGISTER_LISTENER("progress", 2, ProgressLister);

int main(int argc, char** argv) {
  // The fault tests provoke warnings on purpose; show them only when asked (KILN_LOG_LEVEL).
  ::setenv("KILN_LOG_LEVEL", "error", 0);
  spdlog::set_level(spdlog::level::from_str(std::getenv("KILN_LOG_LEVEL")));
  // Lines as they are written, also into a pipe (scripts/test.sh tees the run): a failure shows
  // when it happens, and the progress lines on stderr fall between whole lines.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
