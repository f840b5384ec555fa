#include "kernels/tilewise/tuning_cache.hpp"

#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "config/atomic_file.hpp"
#include "config/config_node.hpp"
#include "config/error.hpp"
#include "config/yaml_quote.hpp"
#include "kernels/tilewise/group_plan.hpp"

namespace overlapsim::kernels::tilewise {
namespace {

// The NCCL transport's wait modes, then the copy-engine entries' names: "copy_engine", or
// for an all-reduce whose phase 2 is done otherwise (CopyEngineOptions::phase2)
// "epilogue_phase2" or "tail_kernel"; each with "_ring" for the ring route
// (CopyEngineOptions::route), "_c2" / "_c4" for row chunks (CopyEngineOptions::row_chunks)
// or "_s<n>" for the slab order's slabs (CopyEngineOptions::slabs, ring only; "_s<n>d" skewed)
// and "_par" for phase 2 on one stream a peer (CopyEngineOptions::parallel_phase2) or
// "_whole" for the tail kernel carrying the whole own part (CopyEngineOptions::tail_whole_part).
std::vector<std::string> allowed_waits() {
  std::vector<std::string> names{"kernel", "stream_memop"};
  for (const char* mode : {"copy_engine", "epilogue_phase2", "tail_kernel"})
    for (const char* route : {"", "_ring"})
      for (const char* blocks : {"", "_c2", "_c4", "_s2", "_s3", "_s4", "_s6", "_s8", "_s2d",
                                 "_s3d", "_s4d", "_s6d", "_s8d"})
        for (const char* parallel : {"", "_par", "_whole", "_side", "_side_whole"})
          names.push_back(std::string(mode) + route + blocks + parallel);
  return names;
}

TuningEntry read_entry(const config::ConfigNode& node) {
  if (!node.is_map()) node.fail("expected an entry map (gpu, dtype, m, n, k, world, ...)");
  node.check_keys({"gpu", "dtype", "m", "n", "k", "world", "collective", "partition", "comm_sms",
                   "wait", "time_s", "predicted_s", "search"});
  TuningEntry e;
  e.key.gpu = node.get_string("gpu");
  e.key.dtype = node.get_enum("dtype", {"bf16", "fp16"});
  e.key.m = node.get_positive_int("m");
  e.key.n = node.get_positive_int("n");
  e.key.k = node.get_positive_int("k");
  e.key.world = static_cast<int>(node.get_positive_int("world"));
  e.key.collective = node.get_enum(
      "collective", {"allreduce", "reducescatter", "alltoall",
                     // transport copy_engine (copy_engine_design.hpp): partition = groups per part
                     "allreduce_ce", "reducescatter_ce", "alltoall_ce"});
  const std::string text = node.child("partition").as_string();
  auto partition = parse_partition(text);
  if (!partition) node.fail_key("partition", "expected waves per group such as 1+2+4+8");
  e.partition = *partition;
  e.comm_sms = static_cast<int>(node.get_int("comm_sms", 0));
  if (e.comm_sms < 0 || e.comm_sms > 128) node.fail_key("comm_sms", "expected 0..128 SMs");
  e.wait = node.get_enum("wait", allowed_waits(), "kernel");
  e.time_s = node.get_double("time_s", 0);
  e.predicted_s = node.get_double("predicted_s", 0);
  e.search = node.get_string("search", "");
  return e;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

namespace {

TuningCache from_root(const config::ConfigNode& root) {
  TuningCache cache;
  if (root.yaml().IsNull()) return cache;
  if (!root.is_map()) root.fail("expected a map with `entries`");
  root.check_keys({"entries"});
  const config::ConfigNode list = root.child("entries");
  if (!list.is_sequence()) list.fail("expected a list of entries");
  for (std::size_t i = 0; i < list.size(); ++i) cache.put(read_entry(list.at(i)));
  return cache;
}

}  // namespace

std::optional<TuningCache> TuningCache::parse(const std::string& text, const std::string& name,
                                              std::string* error) {
  try {
    return from_root(config::ConfigNode::load_string(text, name));
  } catch (const config::ConfigError& e) {
    *error = e.what();
    return std::nullopt;
  }
}

Status TuningCache::load(const std::string& path) {
  entries_.clear();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::success();
  try {
    *this = from_root(config::ConfigNode::load_file(path));
  } catch (const config::ConfigError& e) {
    return Status::failure(e.what());
  }
  return Status::success();
}

std::string TuningCache::to_yaml() const {
  std::string out =
      "# overlapsim tile-wise tuning cache (kernels/tilewise/tuning_cache.hpp): the best\n"
      "# measured group partition per problem. Written by overlap-bench; safe to delete.\n"
      "entries:\n";
  for (const TuningEntry& e : entries_) {
    out += "  - {gpu: " + config::yaml_quoted(e.key.gpu) + ", dtype: " + e.key.dtype +
           ", m: " + std::to_string(e.key.m) + ", n: " + std::to_string(e.key.n) +
           ", k: " + std::to_string(e.key.k) + ", world: " + std::to_string(e.key.world) +
           ", collective: " + e.key.collective + ",\n     partition: \"" +
           partition_string(e.partition) + "\", comm_sms: " + std::to_string(e.comm_sms) +
           ", wait: " + e.wait + ", time_s: " + number(e.time_s) +
           ", predicted_s: " + number(e.predicted_s) +
           ", search: " + (e.search.empty() ? "\"\"" : e.search) + "}\n";
  }
  if (entries_.empty()) out = out.substr(0, out.size() - 9) + "entries: []\n";
  return out;
}

Status TuningCache::save(const std::string& path) const {
  try {
    config::write_file_atomic(path, to_yaml());
  } catch (const std::exception& e) {
    return Status::failure(e.what());
  }
  return Status::success();
}

std::optional<TuningEntry> TuningCache::find(const TuningKey& key) const {
  for (const TuningEntry& e : entries_)
    if (e.key == key) return e;
  return std::nullopt;
}

void TuningCache::put(const TuningEntry& entry) {
  for (TuningEntry& e : entries_) {
    if (e.key == entry.key) {
      e = entry;
      return;
    }
  }
  entries_.push_back(entry);
}

}  // namespace overlapsim::kernels::tilewise
