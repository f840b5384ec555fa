// The error contract of every command, one row per way to get an input wrong: exit 2, one
// line on stderr naming the file (and line where there is one) and the key or flag, no
// terminal control codes, and nothing written. Each row writes its tiny bad input into a
// fresh temp directory; afterwards that directory holds exactly the inputs it wrote.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/cli_test_util.hpp"

namespace overlapsim {
namespace {

namespace fs = std::filesystem;

using testing::CliRun;
using testing::kRoot;
using testing::slurp;

struct Row {
  std::string name;
  std::map<std::string, std::string> files;  // written into the temp dir: name -> text
  std::string args;                          // {dir} stands for the temp dir
  std::vector<std::string> expect;           // substrings of the one stderr line ({dir} too)
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// A shipped fixture with some lines replaced (each `from` must be present).
std::string edited(const std::string& fixture,
                   const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text = slurp(fs::path(kRoot) / fixture);
  for (const auto& [from, to] : edits) {
    const auto at = text.find(from);
    if (at == std::string::npos)
      ADD_FAILURE() << fixture << " has no '" << from << "'";
    else
      text.replace(at, from.size(), to);
  }
  return text;
}

const std::string kModel = "tests/app/data/tiny-gpt.yaml";
const std::string kCluster = "tests/app/data/tiny-2node.yaml";
const std::string kProfile = "calibration/profiles/datasheet-h200.yaml";
const std::string kSim = "simulate --no-timing -w " + kModel + " -c " + kCluster + " ";
const std::string kCsvHeader =
    "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
    "time_max_us,wrong,ctas\n";

std::vector<Row> rows() {
  return {
      // pp·virtual_stages once wrapped an int to 0 and `layers % 0` trapped (SIGFPE).
      {"pp_times_virtual_stages_overflow",
       {{"m.yaml", edited(kModel, {{"  pp: 2", "  pp: 65536\n  virtual_stages: 65536"}})}},
       "simulate --no-timing -w {dir}/m.yaml -c " + kCluster,
       {"{dir}/m.yaml:33:", "parallelism.pp", "4294967296"}},
      {"int_past_int_max",
       {{"m.yaml", edited(kModel, {{"layers: 4", "layers: 4294967297"}})}},
       "simulate --no-timing -w {dir}/m.yaml -c " + kCluster,
       {"{dir}/m.yaml:7:", "transformer.layers", "4294967297"}},
      // A null required key read as absent-with-default: heads 0, then `hidden % 0` (SIGFPE).
      {"required_key_null",
       {{"m.yaml", edited(kModel, {{"heads: 8", "heads: ~"}})}},
       "simulate --no-timing -w {dir}/m.yaml -c " + kCluster,
       {"{dir}/m.yaml:", "transformer.attention.heads", "missing (required)"}},
      // max_split_k 2^31 - 1 looped past INT_MAX (signed overflow) after billions of splits.
      {"profile_max_split_k_huge",
       {{"p.yaml", edited("calibration/profiles/datasheet-h100.yaml",
                          {{"max_split_k: 4", "max_split_k: 2147483647"}})}},
       kSim + "--profile {dir}/p.yaml",
       {"{dir}/p.yaml:", "max_split_k 2147483647 is outside 1..64"}},
      {"profile_sms_past_int_max",
       {{"p.yaml", edited(kProfile, {{"sms: 132", "sms: 4294967297"}})}},
       kSim + "--profile {dir}/p.yaml",
       {"{dir}/p.yaml:12:", "device.sms", "out of range"}},
      {"key_that_is_a_list",
       {{"c.yaml", "? [a, b]\n: 1\n" + slurp(fs::path(kRoot) / kCluster)}},
       "simulate --no-timing -w " + kModel + " -c {dir}/c.yaml",
       {"{dir}/c.yaml:1:", "(top level)", "a key that is a list"}},
      {"duplicate_key",
       {{"c.yaml", edited(kCluster, {{"nodes: 2", "nodes: 2\nnodes: 4"}})}},
       "collective --op allreduce --bytes 1MiB --cluster {dir}/c.yaml",
       {"{dir}/c.yaml:6:1:", "nodes: duplicate key"}},
      {"second_document",
       {{"m.yaml", slurp(fs::path(kRoot) / kModel) + "---\nname: other\n"}},
       "simulate --no-timing -w {dir}/m.yaml -c " + kCluster,
       {"{dir}/m.yaml:", "second YAML document"}},
      {"name_not_utf8",
       {{"m.yaml", edited(kModel, {{"name: tiny-gpt", "name: tiny\xff-gpt"}})}},
       "simulate --no-timing -w {dir}/m.yaml -c " + kCluster,
       {"{dir}/m.yaml:3:", "name: byte 5 is not UTF-8"}},
      // Newlines and ANSI escapes of user text are escaped, never echoed raw.
      {"control_characters_in_a_value",
       {{"m.yaml", edited(kModel, {{"kind: transformer", "kind: \"tr\\e[31m\\nx\""}})}},
       "simulate --no-timing -w {dir}/m.yaml -c " + kCluster,
       {"{dir}/m.yaml:4:", "kind: 'tr\\x1b[31m\\nx' is not allowed"}},
      {"directory_as_model",
       {},
       "simulate --no-timing -w {dir} -c " + kCluster,
       {"{dir}: is a directory"}},
      {"directory_as_csv",
       {},
       "validate --profile " + kProfile + " --measurements {dir}",
       {"{dir}:1:1:"}},
      {"csv_ctas_past_int_max",
       {{"h.csv",
         kCsvHeader + "H200,1,2,3,2,allreduce,nccl,bf16,0,0,0,1024,1,5,4,6,0,4294967296\n"}},
       "validate --profile " + kProfile + " --measurements {dir}/h.csv",
       {"{dir}/h.csv:2:", "ctas: '4294967296'"}},
      {"csv_unknown_dtype",
       {{"h.csv", kCsvHeader + "H200,1,2,3,2,allreduce,nccl,allreduce,0,0,0,1024,1,5,4,6,0,0\n"}},
       "validate --profile " + kProfile + " --measurements {dir}/h.csv",
       {"{dir}/h.csv:2:", "dtype: unknown dtype 'allreduce'"}},
      {"csv_field_not_utf8",
       {{"h.csv", kCsvHeader + "H\xc0\xaf,1,2,3,2,allreduce,nccl,bf16,0,0,0,1024,1,5,4,6,0,0\n"}},
       "validate --profile " + kProfile + " --measurements {dir}/h.csv",
       {"{dir}/h.csv:2:1:", "not UTF-8"}},
      {"design_param_out_of_range",
       {{"p.yaml", edited(kProfile, {{"comm_ctas: {value: 16,", "comm_ctas: {value: 1000,"}})}},
       kSim + "--design decomposed --profile {dir}/p.yaml",
       {"{dir}/p.yaml", "designs.decomposed.comm_ctas"}},
      {"bytes_past_int64",
       {},
       "collective --op allreduce --bytes 1e19 --cluster " + kCluster,
       {"--bytes", "'1e19' is not a size"}},
      {"tp_zero", {}, kSim + "--tp 0", {"--tp", "0"}},
      {"dp_zero", {}, kSim + "--dp 0", {"--dp", "0"}},
      {"tp_past_int_max", {}, kSim + "--tp 4294967297", {"--tp", "4294967297"}},
      {"nodes_zero",
       {},
       "collective --op allreduce --bytes 1MiB --nodes 0 --cluster " + kCluster,
       {"--nodes", "0"}},
      {"gpus_zero", {}, "calibrate --dry-run --out {dir}/cal --gpus 0", {"--gpus", "0"}},
      {"trace_rank_outside_the_cluster",
       {},
       kSim + "--trace {dir}/t.json --trace-ranks 99999",
       {"--trace-ranks", "99999", "tiny-2node.yaml"}},
      {"trace_rank_not_a_number",
       {},
       kSim + "--trace {dir}/t.json --trace-ranks 0,x",
       {"--trace-ranks", "'x'"}},
      // Unwritable outputs are found before the run, and nothing else is written then.
      {"output_in_a_missing_directory",
       {},
       kSim + "-o {dir}/missing/out.txt",
       {"--output", "{dir}/missing/out.txt", "cannot write"}},
      {"output_is_a_directory",
       {},
       kSim + "--format json -o {dir}",
       {"--output", "cannot write", "directory"}},
      {"trace_in_a_missing_directory",
       {},
       kSim + "--design all --trace {dir}/missing/t.json -o {dir}/out.txt",
       {"--trace", "{dir}/missing/t.", "cannot write"}},
      {"collective_output_unwritable",
       {},
       "collective --op allreduce --bytes 1MiB --cluster " + kCluster +
           " --output {dir}/missing/o.txt",
       {"--output", "{dir}/missing/o.txt"}},
      {"fit_out_unwritable",
       {},
       "fit {dir} --out {dir}/missing/p.yaml",
       {"--out", "{dir}/missing/p.yaml"}},
      // create_directories' filesystem_error once ended a plan as an internal error.
      {"plan_out_under_a_file",
       {{"f.txt", "x"}},
       "plan -w " + kModel + " -c " + kCluster + " --out {dir}/f.txt/report",
       {"--out", "{dir}/f.txt/report", "cannot create directory"}},
      // A latency near the double range once made the collective's finish time infinite.
      {"latency_past_the_double_range",
       {{"c.yaml", edited(kCluster, {{"gpu_nic_latency_s: 1us", "gpu_nic_latency_s: 1e308"}})}},
       "collective --op allreduce --bytes 1MiB --cluster {dir}/c.yaml",
       {"{dir}/c.yaml:20:", "inter_node.gpu_nic_latency_s", "longer than 10^6 s"}},
      {"bandwidth_below_one_byte_per_second",
       {{"c.yaml",
         edited(kCluster, {{"gpu_bandwidth_Bps: 450GBps", "gpu_bandwidth_Bps: 1e-320"}})}},
       "collective --op allreduce --bytes 1MiB --cluster {dir}/c.yaml",
       {"{dir}/c.yaml:12:", "intra_node.gpu_bandwidth_Bps", "below 1 B/s"}},
      // yaml-cpp's LoadAll once collected empty documents after the stray ',' until memory
      // ran out.
      {"stray_comma_after_a_flow_list",
       {{"m.yaml", "[1], 2\n" + slurp(fs::path(kRoot) / kModel)}},
       "simulate --no-timing -w {dir}/m.yaml -c " + kCluster,
       {"{dir}/m.yaml:"}},
      // 2^39 microbatches once filled memory while the step graph was generated.
      {"microbatches_past_the_memory",
       {{"m.yaml", edited(kModel, {{"global_batch: 16", "global_batch: 1099511627776"}})}},
       "simulate --no-timing -w {dir}/m.yaml -c " + kCluster,
       {"{dir}/m.yaml", "microbatches per step"}},
  };
}

class ErrorContract : public testing::CliTest {};

TEST_F(ErrorContract, EveryBadInputExits2WithOneLineNamingFileAndKeyAndWritesNothing) {
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.name);
    const fs::path dir = dir_ / row.name;
    fs::create_directories(dir);
    for (const auto& [name, text] : row.files) std::ofstream(dir / name, std::ios::binary) << text;
    const CliRun r = run_cli(replace_all(row.args, "{dir}", dir.string()));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
    for (const std::string& want : row.expect)
      EXPECT_NE(r.err.find(replace_all(want, "{dir}", dir.string())), std::string::npos)
          << "expected '" << want << "' in: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    std::vector<std::string> left;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      left.push_back(e.path().filename().string());
    std::sort(left.begin(), left.end());
    std::vector<std::string> inputs;
    for (const auto& [name, text] : row.files) inputs.push_back(name);
    EXPECT_EQ(left, inputs) << "a failed run wrote files";
  }
}

}  // namespace
}  // namespace overlapsim
