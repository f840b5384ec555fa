// Chunk plans and sizes of the overlap pairs (host only).
#include "kernels/designs/pair_op.hpp"

#include <gtest/gtest.h>

namespace overlapsim::kernels {
namespace {

TEST(PairOp, NamesRoundTrip) {
  for (const char* name : {"gemm+allreduce", "gemm+reducescatter", "allgather+gemm",
                           "gemm+alltoall", "gemv+allreduce", "embedding+alltoall"}) {
    const auto op = parse_pair_op(name);
    ASSERT_TRUE(op.has_value()) << name;
    EXPECT_STREQ(to_string(*op), name);
  }
  EXPECT_FALSE(parse_pair_op("gemm+broadcast"));
  EXPECT_TRUE(collective_first(PairOp::AllGatherGemm));
  EXPECT_FALSE(collective_first(PairOp::GemmAllToAll));
}

TEST(PairOp, ChunkPlansSplitRankBlocks) {
  const PairShape shape{8192, 1024, 512, 0};
  const ChunkPlan ar = make_chunk_plan(PairOp::GemmAllReduce, shape, 2, 4);
  EXPECT_EQ(ar.groups, 1);
  EXPECT_EQ(ar.chunk_rows, 2048);
  const ChunkPlan rs = make_chunk_plan(PairOp::GemmReduceScatter, shape, 2, 4);
  EXPECT_EQ(rs.groups, 2);
  EXPECT_EQ(rs.group_rows, 4096);
  EXPECT_EQ(rs.chunk_rows, 1024);
  const ChunkPlan gemv = make_chunk_plan(PairOp::GemvAllReduce, {1, 8192, 512, 0}, 2, 4);
  EXPECT_EQ(gemv.chunk_rows, 2048);  // splits N
}

TEST(PairOp, ChunkErrorsNameTheProblem) {
  EXPECT_FALSE(chunk_error(PairOp::GemmAllReduce, {4096, 64, 64, 0}, 2, 8));
  const auto uneven = chunk_error(PairOp::GemmReduceScatter, {1000, 64, 64, 0}, 2, 8);
  ASSERT_TRUE(uneven);
  EXPECT_NE(uneven->find("500 rows"), std::string::npos) << *uneven;
  EXPECT_TRUE(shape_error(PairOp::GemmAllToAll, {1001, 64, 64, 0}, 2));
  EXPECT_TRUE(shape_error(PairOp::GemvAllReduce, {2, 64, 64, 0}, 2));
  EXPECT_TRUE(shape_error(PairOp::EmbeddingAllToAll, {64, 64, 4, 0}, 2));
}

TEST(PairOp, SizesAndBytesFollowTheConventions) {
  const PairShape s{4096, 2048, 1024, 0};
  const PairSizes rs = pair_sizes(PairOp::GemmReduceScatter, s, 2);
  EXPECT_EQ(rs.c, 4096u * 2048u);
  EXPECT_EQ(rs.out, 2048u * 2048u);
  const PairSizes ag = pair_sizes(PairOp::AllGatherGemm, s, 2);
  EXPECT_EQ(ag.a, 2048u * 1024u);
  EXPECT_EQ(ag.staging, 4096u * 1024u);
  // nccl-tests bytes: allreduce/reducescatter/alltoall = C per rank; allgather = gathered A.
  EXPECT_EQ(collective_bytes(PairOp::GemmAllReduce, s, 2, DType::BF16), 4096ull * 2048 * 2);
  EXPECT_EQ(collective_bytes(PairOp::AllGatherGemm, s, 2, DType::BF16), 4096ull * 1024 * 2);
  EXPECT_DOUBLE_EQ(compute_flops(PairOp::GemmAllReduce, s), 2.0 * 4096 * 2048 * 1024);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllReduce, 2), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllGather, 4), 0.75);
}

}  // namespace
}  // namespace overlapsim::kernels
