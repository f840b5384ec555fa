#include "workloads/pipeline_schedule.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace overlapsim::workloads;

namespace {
int count(const std::vector<PipeStep>& steps, PipeAction a) {
  int n = 0;
  for (const auto& s : steps) n += s.action == a;
  return n;
}
}  // namespace

TEST(OneFOneB, EveryMicrobatchOnceForwardOnceBackwardInOrder) {
  for (int p : {1, 2, 4, 8})
    for (int m : {1, 3, 4, 8, 16})
      for (int s = 0; s < p; ++s) {
        auto steps = one_f_one_b(p, m, s);
        EXPECT_EQ(count(steps, PipeAction::Forward), m);
        EXPECT_EQ(count(steps, PipeAction::Backward), m);
        EXPECT_EQ(count(steps, PipeAction::SendForward), s < p - 1 ? m : 0);
        EXPECT_EQ(count(steps, PipeAction::RecvForward), s > 0 ? m : 0);
        EXPECT_EQ(count(steps, PipeAction::SendBackward), s > 0 ? m : 0);
        EXPECT_EQ(count(steps, PipeAction::RecvBackward), s < p - 1 ? m : 0);
        int next_f = 0, next_b = 0;
        std::map<int, bool> forwarded;
        for (const auto& st : steps) {
          if (st.action == PipeAction::Forward) {
            EXPECT_EQ(st.microbatch, next_f++);
          }
          if (st.action == PipeAction::Backward) {
            EXPECT_EQ(st.microbatch, next_b++);
            EXPECT_LT(st.microbatch, next_f);  // backward after its forward
          }
        }
      }
}

TEST(OneFOneB, WarmupDepthIsStagesMinusStageMinusOne) {
  auto steps = one_f_one_b(4, 8, 1);
  int forwards_before_first_backward = 0;
  for (const auto& st : steps) {
    if (st.action == PipeAction::Backward) break;
    forwards_before_first_backward += st.action == PipeAction::Forward;
  }
  EXPECT_EQ(forwards_before_first_backward, 4 - 1 - 1 + 1);  // warm-up + the first 1F1B forward
  EXPECT_EQ(one_f_one_b(4, 8, 3)[0].action, PipeAction::RecvForward);
  EXPECT_EQ(one_f_one_b(4, 8, 3)[1].action, PipeAction::Forward);
  EXPECT_EQ(one_f_one_b(4, 8, 3)[2].action, PipeAction::Backward);  // last stage: F, B, F, B
}

// Under rendezvous semantics with each stage's transfers in program order, the k-th
// transfer on each link must be the same message at both ends: then every stage can run
// its sequence to the end. Simulated here directly on the step lists.
TEST(OneFOneB, TransfersMatchInOrderSoRendezvousNeverDeadlocks) {
  for (int p : {2, 3, 4, 8})
    for (int m : {1, 2, 3, 5, 8, 12}) {
      std::vector<std::vector<PipeStep>> xfers(p);
      for (int s = 0; s < p; ++s)
        for (const auto& st : one_f_one_b(p, m, s))
          if (st.action != PipeAction::Forward && st.action != PipeAction::Backward)
            xfers[s].push_back(st);
      std::vector<std::size_t> at(p, 0);
      auto peer_of = [](int s, PipeAction a) {
        return (a == PipeAction::SendForward || a == PipeAction::RecvBackward) ? s + 1 : s - 1;
      };
      auto matches = [](PipeAction a, PipeAction b) {
        return (a == PipeAction::SendForward && b == PipeAction::RecvForward) ||
               (a == PipeAction::SendBackward && b == PipeAction::RecvBackward);
      };
      bool progress = true;
      while (progress) {
        progress = false;
        for (int s = 0; s < p; ++s) {
          if (at[s] >= xfers[s].size()) continue;
          const PipeStep mine = xfers[s][at[s]];
          const int q = peer_of(s, mine.action);
          if (q < 0 || q >= p || at[q] >= xfers[q].size()) continue;
          const PipeStep theirs = xfers[q][at[q]];
          if (peer_of(q, theirs.action) != s) continue;
          if (!matches(mine.action, theirs.action) && !matches(theirs.action, mine.action))
            continue;
          EXPECT_EQ(mine.microbatch, theirs.microbatch);
          ++at[s];
          ++at[q];
          progress = true;
        }
      }
      for (int s = 0; s < p; ++s)
        EXPECT_EQ(at[s], xfers[s].size()) << "deadlock: p=" << p << " m=" << m << " stage " << s;
    }
}

TEST(Interleaved, EveryChunkAndMicrobatchOnceEachWayBackwardAfterForward) {
  for (int p : {2, 4})
    for (int v : {2, 3})
      for (int m : {p, 2 * p, 4 * p})
        for (int s = 0; s < p; ++s) {
          auto order = interleaved_order(p, v, m, s);
          ASSERT_EQ(order.size(), static_cast<std::size_t>(2 * m * v));
          std::map<std::pair<int, int>, int> fwd_at, bwd_at;
          for (std::size_t i = 0; i < order.size(); ++i)
            (order[i].forward ? fwd_at : bwd_at)[{order[i].chunk, order[i].microbatch}] =
                static_cast<int>(i);
          EXPECT_EQ(fwd_at.size(), static_cast<std::size_t>(m * v));
          EXPECT_EQ(bwd_at.size(), static_cast<std::size_t>(m * v));
          for (const auto& [key, at] : bwd_at) EXPECT_GT(at, fwd_at.at(key));
        }
}

TEST(Interleaved, MegatronWarmupAndChunkOrder) {
  // p = 4, v = 2, m = 8: stage 0 warms up with (4-0-1)·2 + (2-1)·4 = 10 forwards:
  // microbatches 0-3 of chunk 0, 0-3 of chunk 1, then 4-5 of chunk 0.
  auto order = interleaved_order(4, 2, 8, 0);
  const int expected_chunk[] = {0, 0, 0, 0, 1, 1, 1, 1, 0, 0};
  const int expected_mb[] = {0, 1, 2, 3, 0, 1, 2, 3, 4, 5};
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(order[i].forward) << i;
    EXPECT_EQ(order[i].chunk, expected_chunk[i]) << i;
    EXPECT_EQ(order[i].microbatch, expected_mb[i]) << i;
  }
  EXPECT_FALSE(order[11].forward);  // 1F1B from here: the first backward is of the last chunk
  EXPECT_EQ(order[11].chunk, 1);
  EXPECT_EQ(order[11].microbatch, 0);
  EXPECT_THROW(interleaved_order(4, 2, 6, 0), std::invalid_argument);
}
