// The NCCL communicator's in-flight bookkeeping (collectives/record_queue.h) without NCCL: records
// retire from the front while a group is open, and closing the group still charges exactly the
// group's records, found by sequence number.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "collectives/record_queue.h"

namespace zt {
namespace {

struct Rec {
  int tag = 0;        // what the test recognizes a record by
  bool done = false;  // stands in for "the launch's done event has completed"
  uint64_t seq = 0;
  double share = 1.0;
};

using Queue = RecordQueue<Rec>;

size_t retire_done(Queue& q, std::vector<int>* retired = nullptr) {
  return q.retire([&](const Rec& r) {
    if (!r.done) return false;
    if (retired) retired->push_back(r.tag);
    return true;
  });
}

TEST(RecordQueue, SequenceNumbersAreIssueOrder) {
  Queue q;
  EXPECT_EQ(q.push({.tag = 1}), 1u);
  EXPECT_EQ(q.push({.tag = 2}), 2u);
  EXPECT_EQ(q.find(2)->tag, 2);
  EXPECT_EQ(q.find(3), nullptr);
  EXPECT_EQ(q.next_seq(), 3u);
}

TEST(RecordQueue, RetiresFromTheFrontOnlyWhileDone) {
  Queue q;
  q.push({.tag = 1, .done = true});
  q.push({.tag = 2, .done = false});
  q.push({.tag = 3, .done = true});
  std::vector<int> retired;
  EXPECT_EQ(retire_done(q, &retired), 1u);  // 3 is done but waits behind 2 (issue order)
  EXPECT_EQ(retired, std::vector<int>{1});
  EXPECT_EQ(q.front().tag, 2);
  EXPECT_EQ(q.find(1), nullptr);
}

// The case that broke positions: records issued before the group retire while it is open (issue()
// and the watchdog both retire), so the group's records move to the front of the queue.
TEST(RecordQueue, RetirementDuringAnOpenGroupKeepsTheGroupsRecords) {
  Queue q;
  q.push({.tag = 10, .done = false});
  q.push({.tag = 11, .done = false});
  q.push({.tag = 12, .done = false});
  q.open_group();
  q.push({.tag = 20});
  q.find(1)->done = true;  // two of the earlier ops finish while the group is open
  q.find(2)->done = true;
  EXPECT_EQ(retire_done(q), 2u);
  q.push({.tag = 21});
  q.push({.tag = 22});
  q.find(3)->done = true;
  EXPECT_EQ(retire_done(q), 1u);  // now only the group's records are queued
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q.close_group(), 3u);
  EXPECT_FALSE(q.group_open());
  for (uint64_t s = 4; s <= 6; ++s) {
    ASSERT_NE(q.find(s), nullptr) << s;
    EXPECT_DOUBLE_EQ(q.find(s)->share, 1.0 / 3.0) << "seq " << s;
  }
}

// Records before and after the group keep share 1; a group of one keeps 1; an empty group is fine.
TEST(RecordQueue, OnlyTheGroupIsShared) {
  Queue q;
  q.push({.tag = 1});
  q.open_group();
  q.push({.tag = 2});
  q.push({.tag = 3});
  EXPECT_EQ(q.close_group(), 2u);
  q.push({.tag = 4});
  EXPECT_DOUBLE_EQ(q.find(1)->share, 1.0);
  EXPECT_DOUBLE_EQ(q.find(2)->share, 0.5);
  EXPECT_DOUBLE_EQ(q.find(3)->share, 0.5);
  EXPECT_DOUBLE_EQ(q.find(4)->share, 1.0);
  q.open_group();
  q.push({.tag = 5});
  EXPECT_EQ(q.close_group(), 1u);
  EXPECT_DOUBLE_EQ(q.find(5)->share, 1.0);
  q.open_group();
  EXPECT_EQ(q.close_group(), 0u);
  EXPECT_EQ(q.size(), 5u);
}

// A group whose records are already gone when it closes (not possible with NCCL, whose group
// records have no done event before group_end, but the queue must not touch other records).
TEST(RecordQueue, ClosingAfterTheQueueEmptiedTouchesNothing) {
  Queue q;
  q.open_group();
  q.push({.tag = 1, .done = true});
  q.push({.tag = 2, .done = true});
  EXPECT_EQ(retire_done(q), 2u);
  EXPECT_TRUE(q.empty());
  q.push({.tag = 3});  // joins the still-open group
  EXPECT_EQ(q.close_group(), 3u);
  EXPECT_DOUBLE_EQ(q.find(3)->share, 1.0 / 3.0);
  q.push({.tag = 4});
  EXPECT_DOUBLE_EQ(q.find(4)->share, 1.0);
}

}  // namespace
}  // namespace zt
