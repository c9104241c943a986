// weft-load's core without event loops (tools/load/run.h): a Run of plain tallies, as echo's
// blocking threads use it. The wait's progress and its end, and the merge.

#include "run.h"

#include <gtest/gtest.h>

#include <chrono>
#include <utility>
#include <vector>

namespace weft::load {
namespace {

using Counts = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

// Two tallies with counts of their own, published.
void count_some(Run& run) {
  run.add_tallies(2);
  Tally& a = run.tally(0);
  a.stats.requests = 5;
  a.stats.responses = 3;
  a.stats.errors.read = 1;
  a.publish();
  Tally& b = run.tally(1);
  b.stats.requests = 7;
  b.stats.responses = 4;
  b.stats.errors.timeout = 2;
  b.publish();
}

// Waits from a start long past, so that the first progress report is due at once; the report
// finishes every tally, which ends the wait.
Counts progress_of(Run& run, ProgressCounts counts) {
  Counts seen;
  run.wait(
      Clock::now() - std::chrono::seconds(10), TimePoint::max(),
      [&](double seconds, std::uint64_t first, std::uint64_t second) {
        EXPECT_GE(seconds, 10.0);
        seen.emplace_back(first, second);
        for (std::size_t i = 0; i < run.size(); ++i) run.tally(i).finish();
      },
      counts);
  return seen;
}

TEST(RunTest, ProgressShowsResponsesAndErrorsByDefault) {
  load::Run run;  // qualified: a test body sees testing::Test::Run
  count_some(run);
  EXPECT_EQ(progress_of(run, ProgressCounts::responses_errors), (Counts{{7, 3}}));
}

TEST(RunTest, ProgressShowsRequestsAndResponsesWhenAsked) {
  load::Run run;
  count_some(run);
  EXPECT_EQ(progress_of(run, ProgressCounts::requests_responses), (Counts{{12, 7}}));
}

TEST(RunTest, ProgressShowsOnlyPublishedCounts) {
  load::Run run;
  count_some(run);
  run.tally(0).stats.responses = 100;  // not published
  EXPECT_EQ(progress_of(run, ProgressCounts::responses_errors), (Counts{{7, 3}}));
}

TEST(RunTest, TheWaitEndsWhenEveryTallyHasFinished) {
  load::Run run;
  count_some(run);
  run.tally(0).finish();
  run.tally(1).finish();
  run.tally(1).finish();  // once: a second finish counts no other tally as finished
  int reports = 0;
  run.wait(Clock::now() - std::chrono::seconds(10), TimePoint::max(),
           [&](double, std::uint64_t, std::uint64_t) { ++reports; });
  EXPECT_EQ(reports, 0);
}

TEST(RunTest, MergeAddsEveryTally) {
  load::Run run;
  count_some(run);
  run.tally(0).stats.latency.record(1000);
  run.tally(1).stats.latency.record(3000);
  const Stats all = run.merge();
  EXPECT_EQ(all.requests, 12u);
  EXPECT_EQ(all.responses, 7u);
  EXPECT_EQ(all.errors.read, 1u);
  EXPECT_EQ(all.errors.timeout, 2u);
  EXPECT_EQ(all.latency.count(), 2u);
  EXPECT_EQ(all.latency.max(), 3000u);
}

}  // namespace
}  // namespace weft::load
