// A post from another thread whose task lets the loop's owner destroy the loop, on every transport.
// The poster is still inside post() -- waking the loop through its driver -- when the task has run:
// a future's listener posted to a caller's loop does exactly this when the caller waits for the
// listener and then destroys its group. ~EventLoop must wait for such a poster to leave; before it
// did, io_uring's wake descriptor was read by the poster while the owner closed it (CI, stop 40).

#include <gtest/gtest.h>

#include <memory>

#include "support/transports.h"
#include "weft/core/event_loop_group.h"
#include "weft/core/future.h"

namespace weft {
namespace {

class PostOutlivesLoopTest : public test::TransportTest {};
WEFT_ON_EVERY_TRANSPORT(PostOutlivesLoopTest);

TEST_P(PostOutlivesLoopTest, TheLoopIsDestroyedRightAfterItsTaskRanWhileThePosterStillWakesIt) {
  constexpr int kRounds = 200;
  EventLoopGroup posters(transport(), 1);
  for (int round = 0; round < kRounds; ++round) {
    auto target = std::make_unique<EventLoopGroup>(transport(), 1);
    // The target sleeps in its driver (nothing else to do), so the post wakes it.
    Promise<bool> ran;
    posters.at(0).execute([&] {
      EventLoop& loop = target->at(0);
      loop.execute([&] { ran.set_value(loop.in_loop()); });
    });
    ASSERT_TRUE(ran.future().get());
    target.reset();  // the poster may not have returned from execute() yet
  }
}

}  // namespace
}  // namespace weft
