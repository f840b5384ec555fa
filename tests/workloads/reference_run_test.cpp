// Reference runs: loading run.yaml (paths beside it, checked keys) and predicting one through
// the scenario library, on the CLI tests' tiny GPT.
#include "workloads/reference_run.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "config/error.hpp"

namespace overlapsim::workloads {
namespace {

// Absolute: the tests write run files elsewhere that name files here.
const std::string kData =
    std::filesystem::absolute(OVERLAPSIM_SOURCE_DIR).string() + "/tests/workloads/data/reference";

TEST(ReferenceRun, LoadsPathsBesideTheRunFile) {
  const auto runs = load_reference_runs(kData);
  ASSERT_EQ(runs.size(), 1u);
  const ReferenceRun& r = runs[0];
  EXPECT_EQ(r.name, "tiny-gpt-8gpu");
  EXPECT_EQ(r.design, "sequential");
  EXPECT_DOUBLE_EQ(r.published.step_time_s, 10e-3);
  EXPECT_EQ(r.images, sim::BackgroundImages::InterHost);  // the default, as simulate's
  EXPECT_TRUE(std::filesystem::exists(r.model_file)) << r.model_file;
  EXPECT_EQ(r.model_file.find(".."), std::string::npos) << r.model_file;  // normalised
}

TEST(ReferenceRun, PredictsThroughTheScenarioLibrary) {
  const ReferenceOutcome o = predict_reference_run(load_reference_runs(kData)[0], true);
  EXPECT_EQ(o.gpus, 8);
  EXPECT_GT(o.predicted_s, 0);
  EXPECT_DOUBLE_EQ(o.error, (o.predicted_s - 10e-3) / 10e-3);
  EXPECT_LE(o.band.low_s, o.predicted_s);
  EXPECT_GE(o.band.high_s, o.predicted_s);
  EXPECT_FALSE(o.band.dominant.empty());
}

class BadRunFile : public ::testing::Test {
 protected:
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("overlapsim_reference_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir / "bad"); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string write(const std::string& text) {
    std::ofstream(dir / "bad" / "run.yaml") << text;
    return (dir / "bad" / "run.yaml").string();
  }
};

TEST_F(BadRunFile, NamesTheFileAndKey) {
  const std::string base =
      "format: 1\nname: bad\nmodel: " + kData + "/../../../app/data/tiny-gpt.yaml\ncluster: " +
      kData + "/../../../app/data/tiny-2node.yaml\n";
  const std::string pub =
      "published: {step_time: 1s, source: paper, citation: x, derivation: y}\n";
  auto message = [&](const std::string& text) {
    try {
      load_reference_run(write(text));
    } catch (const config::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(base).find("published"), std::string::npos);
  EXPECT_NE(message(base + "published: {step_time: 1 parsec, source: paper, citation: x, "
                           "derivation: y}\n")
                .find("step_time"),
            std::string::npos);
  EXPECT_NE(message(base + pub + "design: magic\n").find("design"), std::string::npos);
  EXPECT_NE(message(base + pub + "colour: red\n").find("colour"), std::string::npos);
  EXPECT_NE(message(base + pub + "images: some\n").find("images"), std::string::npos);
  EXPECT_EQ(message(base + pub + "images: none\n"), "no error");
  EXPECT_NE(message("format: 1\nname: bad\nmodel: nowhere.yaml\ncluster: nowhere.yaml\n" + pub)
                .find("does not exist"),
            std::string::npos);
  EXPECT_EQ(message(base + pub), "no error");
  EXPECT_THROW(load_reference_runs((dir / "nothing-here").string()), config::ConfigError);
}

}  // namespace
}  // namespace overlapsim::workloads
