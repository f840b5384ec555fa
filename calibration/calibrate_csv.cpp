#include "calibration/calibrate_csv.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>

#include "calibration/manifest.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

constexpr std::string_view kMarker = "#case-done ";

struct ParsedMarker {
  bool ok = false;
  int rows = 0;
  std::string checksum, key;
};

// "#case-done <rows> fnv1a64:<hex> <key>" (without the newline).
ParsedMarker parse_marker(std::string_view line) {
  ParsedMarker m;
  if (line.substr(0, kMarker.size()) != kMarker) return m;
  line.remove_prefix(kMarker.size());
  const auto sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0 || sp1 > 9) return m;
  int rows = 0;
  for (char c : line.substr(0, sp1)) {
    if (c < '0' || c > '9') return m;
    rows = rows * 10 + (c - '0');
  }
  line.remove_prefix(sp1 + 1);
  const auto sp2 = line.find(' ');
  if (sp2 == std::string_view::npos) return m;
  m.checksum = std::string(line.substr(0, sp2));
  m.key = std::string(line.substr(sp2 + 1));
  if (m.key.empty()) return m;
  m.rows = rows;
  m.ok = true;
  return m;
}

int count_lines(std::string_view text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

}  // namespace

CalibrateCsvScan scan_calibrate_csv(std::string_view text) {
  CalibrateCsvScan scan;
  const std::string first = std::string(kCalibrateCsvSignature) + "\n";
  if (text.size() < first.size()) {
    // Empty, or cut inside the signature line: calibrate's own, with nothing to trust.
    scan.marked = std::string_view(first).substr(0, text.size()) == text;
    if (scan.marked && !text.empty()) {
      scan.tail_lines = 1;
      scan.tail_line = 1;
      scan.why = "the first line is cut short";
    }
    return scan;
  }
  if (text.substr(0, first.size()) != first) return scan;  // not calibrate's: a plain CSV
  scan.marked = true;
  scan.trusted_bytes = first.size();
  int line = 2;        // of the next line to read
  int block_line = 2;  // where the current block began
  int block_rows = 0;  // data lines in it so far (the header is not one)
  std::size_t pos = first.size();
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) {
      scan.why = fmt::format("line {} has no line end (a write cut short)", line);
      break;
    }
    const std::string_view l = text.substr(pos, nl - pos);
    if (!l.empty() && l.front() == '#') {
      const ParsedMarker m = parse_marker(l);
      const std::string_view block = text.substr(scan.trusted_bytes, pos - scan.trusted_bytes);
      if (!m.ok) {
        scan.why = fmt::format(
            "line {} starts with '#' but is no completion marker (expected '#case-done <rows> "
            "fnv1a64:<hex> <case>')",
            line);
        break;
      }
      if (m.rows != block_rows || m.checksum != fnv1a64_hex(std::string(block))) {
        scan.why = fmt::format(
            "the completion marker on line {} ({} rows, {}) does not match the {} row(s) above it "
            "({}): the file was changed after calibrate wrote it",
            line, m.rows, m.checksum, block_rows, fnv1a64_hex(std::string(block)));
        break;
      }
      scan.cases.push_back({m.key, m.rows, block_line, line});
      scan.trusted_bytes = nl + 1;
      block_line = line + 1;
      block_rows = 0;
    } else if (!(scan.cases.empty() && line == block_line)) {
      ++block_rows;  // every line but the header (the first block's first line)
    }
    pos = nl + 1;
    ++line;
  }
  if (scan.trusted_bytes < text.size()) {
    scan.tail_line = block_line;
    const std::string_view tail = text.substr(scan.trusted_bytes);
    scan.tail_lines = count_lines(tail) + (tail.back() == '\n' ? 0 : 1);
    if (scan.why.empty())
      scan.why = fmt::format("no completion marker after line {} (a case cut short)", block_line);
  }
  return scan;
}

std::string format_case_marker(std::string_view block, int rows, const std::string& key) {
  return fmt::format("{}{} {} {}\n", kMarker, rows, fnv1a64_hex(std::string(block)), key);
}

CsvTable parse_trusted_calibrate_csv(std::string_view text, const CalibrateCsvScan& scan,
                                     const std::string& file) {
  // The signature and marker lines become blank lines, which the parser skips, so each row
  // keeps the line number a person sees in an editor.
  const std::string_view trusted = text.substr(0, scan.trusted_bytes);
  std::string cleaned;
  cleaned.reserve(trusted.size());
  for (std::size_t pos = 0; pos < trusted.size();) {
    std::size_t nl = trusted.find('\n', pos);
    if (nl == std::string_view::npos) nl = trusted.size();
    if (trusted[pos] != '#') cleaned += trusted.substr(pos, nl - pos);
    cleaned += '\n';
    pos = nl + 1;
  }
  if (scan.cases.empty()) return CsvTable{file, {}, {}};
  CsvTable t = parse_csv(cleaned, file);
  const int case_col = t.column("case");
  if (case_col < 0)
    throw config::ConfigError(fmt::format(
        "{}:{}:1: no 'case' column in calibrate's header (expected overlap-bench's columns, "
        "ctas, case)",
        file, scan.cases.front().first_line));
  std::map<std::string, int> seen;  // key -> marker line
  std::size_t r = 0;
  for (const MarkedCase& c : scan.cases) {
    if (const auto [it, fresh] = seen.emplace(c.key, c.marker_line); !fresh)
      throw config::ConfigError(fmt::format(
          "{}:{}:1: case '{}' is marked finished twice (first on line {}; expected each case "
          "once: two runs wrote into one directory)",
          file, c.marker_line, c.key, it->second));
    for (; r < t.rows.size() && t.rows[r].line < c.marker_line; ++r) {
      const std::string& label = t.rows[r].fields[static_cast<std::size_t>(case_col)];
      if (label != c.key)
        throw config::ConfigError(fmt::format(
            "{}:{}:{}: case '{}' in the block of case '{}' (marker on line {}; expected every "
            "row labelled with its block's case)",
            file, t.rows[r].line, t.rows[r].columns[static_cast<std::size_t>(case_col)], label,
            c.key, c.marker_line));
    }
  }
  return t;
}

CsvTable read_measurement_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return read_csv(path);  // its own "cannot open" error
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const CalibrateCsvScan scan = scan_calibrate_csv(text);
  if (!scan.marked) return parse_csv(text, path);
  if (!scan.why.empty())
    throw config::ConfigError(fmt::format(
        "{}:{}:1: {} line(s) no completion marker vouches for: {} (expected a finished "
        "calibrate run: rerun `overlapsim calibrate` with the same --out, which discards "
        "them and measures their case again)",
        path, scan.tail_line, scan.tail_lines, scan.why));
  if (scan.cases.empty())
    throw config::ConfigError(fmt::format(
        "{}:1:1: no finished case (expected rows: rerun `overlapsim calibrate` with the same "
        "--out)",
        path));
  return parse_trusted_calibrate_csv(text, scan, path);
}

}  // namespace overlapsim::calibration
