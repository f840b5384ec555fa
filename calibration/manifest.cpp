#include "calibration/manifest.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>

#include "config/config_node.hpp"
#include "sim/profile/profile_load.hpp"

namespace overlapsim::calibration {
namespace {

// YAML double-quoted scalar (versions such as 13.0 must stay strings).
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

Manifest load_manifest(const std::string& data_dir) {
  const std::string path = (std::filesystem::path(data_dir) / "manifest.yaml").string();
  const config::ConfigNode root = config::ConfigNode::load_file(path);
  if (!root.is_map()) root.fail("expected a manifest map (see calibration/manifest.hpp)");
  root.check_keys(std::vector<std::string>{"format", "gpu", "gpus", "driver", "cuda", "nccl",
                                           "host", "date", "suite", "suite_hash", "files",
                                           "heldout", "notes"});
  if (root.get_int("format") != 1) root.fail_key("format", "unsupported (expected 1)");
  Manifest m;
  m.dir = data_dir;
  m.file = path;
  m.gpu = root.get_string("gpu");
  if (m.gpu.empty()) root.fail_key("gpu", "empty (expected the GPU name the rows report)");
  m.gpus = root.get_positive_int32("gpus");
  sim::read_software(root, m.driver, m.cuda, m.nccl, m.host, m.date);
  m.suite = root.get_string("suite", "");
  m.suite_hash = root.get_string("suite_hash", "");
  m.heldout = root.get_string("heldout", "");
  m.notes = root.get_string("notes", "");
  const config::ConfigNode files = root.child("files");
  if (!files.is_sequence() || files.size() == 0)
    files.fail("expected a non-empty list of {path, gpus, origin}");
  for (std::size_t i = 0; i < files.size(); ++i) {
    const config::ConfigNode f = files.at(i);
    f.check_keys(std::vector<std::string>{"path", "gpus", "origin"});
    ManifestFile mf;
    mf.path = f.get_string("path");
    mf.gpus = f.get_positive_int32("gpus");
    mf.origin = f.get_string("origin", "");
    if (mf.gpus > m.gpus)
      f.fail_key("gpus", fmt::format("{} is more than the machine's {} (expected 1..{})", mf.gpus,
                                     m.gpus, m.gpus));
    m.files.push_back(std::move(mf));
  }
  return m;
}

std::string format_manifest(const Manifest& m) {
  std::string s;
  s += "# Written by overlapsim calibrate; read by overlapsim fit (calibration/manifest.hpp).\n";
  s += "format: 1\n";
  s += fmt::format("gpu: {}\n", quoted(m.gpu));
  s += fmt::format("gpus: {}\n", m.gpus);
  s += fmt::format("driver: {}\n", quoted(m.driver));
  s += fmt::format("cuda: {}\n", quoted(m.cuda));
  s += fmt::format("nccl: {}\n", quoted(m.nccl));
  s += fmt::format("host: {}\n", quoted(m.host));
  s += fmt::format("date: {}\n", quoted(m.date));
  s += fmt::format("suite: {}\n", quoted(m.suite));
  s += fmt::format("suite_hash: {}\n", quoted(m.suite_hash));
  s += "files:\n";
  for (const auto& f : m.files)
    s += fmt::format("  - {{path: {}, gpus: {}, origin: {}}}\n", quoted(f.path), f.gpus,
                     quoted(f.origin));
  if (!m.heldout.empty()) s += fmt::format("heldout: {}\n", quoted(m.heldout));
  if (!m.notes.empty()) s += fmt::format("notes: {}\n", quoted(m.notes));
  return s;
}

std::string fnv1a64_hex(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("fnv1a64:{:016x}", h);
}

}  // namespace overlapsim::calibration
