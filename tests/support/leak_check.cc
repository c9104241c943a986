// Every test binary runs with the leak detector at paranoid: each ByteBuf block is tracked with the
// backtrace of its allocation. After the last test, any block still alive is reported (allocation
// site, last touch, the test that allocated it) and the run fails; so does any leak reported earlier
// (e.g. by an allocator destroyed with buffers alive). WEFT_TEST_LEAK_DETECTION=simple|disabled
// overrides the level (e.g. for profiling a test).

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>

#include "weft/buffer/leak_detector.h"

namespace {

weft::LeakDetectionLevel level_from_env() {
  const char* env = std::getenv("WEFT_TEST_LEAK_DETECTION");
  if (env != nullptr && std::strcmp(env, "disabled") == 0) return weft::LeakDetectionLevel::disabled;
  if (env != nullptr && std::strcmp(env, "simple") == 0) return weft::LeakDetectionLevel::simple;
  return weft::LeakDetectionLevel::paranoid;
}

// Labels the blocks each test allocates with the test's name.
class LeakContextListener final : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& info) override {
    names_.push_back(std::string(info.test_suite_name()) + "." + info.name());
    weft::LeakDetector::set_context(names_.back().c_str());
  }
  void OnTestEnd(const ::testing::TestInfo&) override { weft::LeakDetector::set_context("(between tests)"); }

 private:
  std::deque<std::string> names_;  // stable addresses: records keep the pointer
};

class LeakCheckEnvironment final : public ::testing::Environment {
 public:
  void SetUp() override {
    weft::LeakDetector::set_level(level_from_env());
    ::testing::UnitTest::GetInstance()->listeners().Append(new LeakContextListener);
  }
  void TearDown() override {
    const std::size_t live = weft::LeakDetector::report_live("the end of the test run");
    const std::uint64_t reported = weft::LeakDetector::reported_count();
    if (live > 0 || reported > 0) {
      ADD_FAILURE() << "leak detector: " << reported << " leaked ByteBuf block(s) reported (" << live
                    << " still alive at the end of the run); see the LEAK lines above";
    }
  }
};

[[maybe_unused]] ::testing::Environment* const leak_check_environment =
    ::testing::AddGlobalTestEnvironment(new LeakCheckEnvironment);

}  // namespace
