#include "calibration/csv.hpp"

#include <gtest/gtest.h>

#include "calibration/measurement.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

const char* kHeader =
    "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
    "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong\n";

std::string error_of(const std::string& text) {
  try {
    parse_measurements(parse_csv(text, "m.csv"));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Csv, QuotedFieldsDoubledQuotesAndCrlf) {
  const CsvTable t = parse_csv("a,b,c\r\n1,\"x,\"\"y\"\"\",3\r\n\r\n4,5,6", "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].fields[1], "x,\"y\"");
  EXPECT_EQ(t.rows[0].line, 2);
  EXPECT_EQ(t.rows[1].line, 4);
  EXPECT_EQ(t.rows[1].fields[2], "6");
  EXPECT_EQ(t.column("c"), 2);
  EXPECT_EQ(t.column("z"), -1);
  EXPECT_EQ(csv_join({"a", "b,c", "d\"e"}), "a,\"b,c\",\"d\"\"e\"");
}

TEST(Csv, TruncatedRowNamesFileLineAndColumn) {
  const std::string err =
      error_of(std::string(kHeader) +
               "NVIDIA H200,580,13.0,2.28,2,allreduce,nccl,bf16,0,0,0,1024,1,"
               "18.0,16.7,20.1,0,58,58,0\n"
               "NVIDIA H200,580,13.0,2.28,2,allreduce,nccl,bf16,0,0,0,2048,1,1");
  EXPECT_NE(err.find("m.csv:3:"), std::string::npos) << err;
  EXPECT_NE(err.find("truncated row"), std::string::npos) << err;
  EXPECT_NE(err.find("14 fields, the header has 20"), std::string::npos) << err;
}

TEST(Csv, MissingColumnIsNamed) {
  const std::string err = error_of("gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes\n");
  EXPECT_NE(err.find("m.csv:1:1: missing column 'chunks'"), std::string::npos) << err;
}

TEST(Csv, BadNumberNamesColumnAndPosition) {
  const std::string err = error_of(std::string(kHeader) +
                                   "H200,580,13.0,2.28,2,allreduce,nccl,bf16,0,0,0,1024,1,"
                                   "fast,16.7,20.1,0,58,58,0\n");
  // time_us is the 14th field, starting at column 55.
  EXPECT_NE(err.find("m.csv:2:55: time_us: 'fast'"), std::string::npos) << err;
}

TEST(Csv, UnterminatedQuoteAndEmptyFile) {
  EXPECT_THROW(parse_csv("a,b\n\"1,2\n", "q.csv"), config::ConfigError);
  EXPECT_THROW(parse_csv("", "e.csv"), config::ConfigError);
  try {
    parse_csv("a,b\n\"1,2\n", "q.csv");
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("q.csv:2:1: unterminated"), std::string::npos) << e.what();
  }
}

TEST(Measurements, ParsesTimesInSecondsAndOptionalColumns) {
  const auto rows = parse_measurements(
      parse_csv("gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,"
                "time_min_us,time_max_us,wrong,ctas,case\n"
                "H200,580,13.0,2.28,2,allreduce,nccl,bf16,0,0,0,1024,1,18,16,20,0,4,coll/ar\n",
                "c.csv"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].time_s, 18e-6);
  EXPECT_EQ(rows[0].ctas, 4);
  EXPECT_EQ(rows[0].case_key, "coll/ar");
  EXPECT_EQ(rows[0].where(), "c.csv:2");
  EXPECT_EQ(split_key(rows[0]), "allreduce@1024#ctas4");  // CTA-limited: its own key
}

}  // namespace
}  // namespace overlapsim::calibration
