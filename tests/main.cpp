#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
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

}  // namespace

REGISTER_LISTENER("skipped", 1, SkippedLister);

int main(int argc, char** argv) {
  // The fault tests provoke warnings on purpose; show them only when asked (KILN_LOG_LEVEL).
  ::setenv("KILN_LOG_LEVEL", "error", 0);
  spdlog::set_level(spdlog::level::from_str(std::getenv("KILN_LOG_LEVEL")));
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
