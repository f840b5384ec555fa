#include "workloads/validation_caveats.hpp"

#include <gtest/gtest.h>

#include "step_graph_util.hpp"

using namespace overlapsim::workloads;
using overlapsim::workloads::testing::shipped;

TEST(ValidationCaveats, MoeModelsCarryTheMoeCaveatDenseOnesNone) {
  const auto moe = validation_caveats(shipped("mixtral-8x7b"));
  ASSERT_EQ(moe.size(), 1u);
  EXPECT_EQ(moe[0].topic, "moe layers");
  EXPECT_NE(moe[0].text.find("docs/validation.md"), std::string::npos) << moe[0].text;
  EXPECT_TRUE(validation_caveats(shipped("gpt3-175b")).empty());
  EXPECT_TRUE(validation_caveats(shipped("llama3-70b")).empty());
}

TEST(ValidationCaveats, OnlyTensorFlowDlrmCarriesTheHostWorkCaveat) {
  ModelSpec dlrm = shipped("dlrm-dcnv2");
  dlrm.dlrm.embedding_ops = EmbeddingOps::Fused;
  EXPECT_TRUE(validation_caveats(dlrm).empty());
  dlrm.dlrm.embedding_ops = EmbeddingOps::TensorFlow;
  const auto tf = validation_caveats(dlrm);
  ASSERT_EQ(tf.size(), 1u);
  EXPECT_EQ(tf[0].topic, "framework host work");
}
