#include "calibration/csv.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/error.hpp"
#include "config/integers.hpp"
#include "config/text.hpp"

namespace overlapsim::calibration {
namespace {

[[noreturn]] void fail(const std::string& file, int line, int col, const std::string& what) {
  throw config::ConfigError(fmt::format("{}:{}:{}: {}", file, line, col, what));
}

}  // namespace

int CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

CsvTable parse_csv(std::string_view text, const std::string& file) {
  CsvTable table;
  table.file = file;
  std::vector<CsvRecord> records;
  std::size_t i = 0;
  int line = 1, col = 1;
  while (i < text.size()) {
    // A blank line (or a lone CR before LF) holds no record.
    if (text[i] == '\n' || (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) {
      i += text[i] == '\r' ? 2 : 1;
      ++line;
      col = 1;
      continue;
    }
    CsvRecord rec;
    rec.line = line;
    bool end_of_record = false;
    while (!end_of_record) {
      std::string field;
      rec.columns.push_back(col);
      if (i < text.size() && text[i] == '"') {
        const int quote_line = line, quote_col = col;
        ++i;
        ++col;
        bool closed = false;
        while (i < text.size()) {
          const char c = text[i];
          if (c == '"') {
            if (i + 1 < text.size() && text[i + 1] == '"') {
              field += '"';
              i += 2;
              col += 2;
              continue;
            }
            ++i;
            ++col;
            closed = true;
            break;
          }
          if (c == '\n') {
            ++line;
            col = 1;
          } else {
            ++col;
          }
          field += c;
          ++i;
        }
        if (!closed)
          fail(file, quote_line, quote_col,
               "unterminated quoted field (expected a closing '\"' before the end of the file)");
        if (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          fail(file, line, col,
               fmt::format("'{}' after a closing quote (expected ',' or the end of the line)",
                           text[i]));
      } else {
        while (i < text.size() && text[i] != ',' && text[i] != '\n' &&
               !(text[i] == '\r' && (i + 1 == text.size() || text[i + 1] == '\n'))) {
          if (text[i] == '"')
            fail(file, line, col, "a quote inside an unquoted field (expected the field quoted)");
          field += text[i];
          ++i;
          ++col;
        }
      }
      rec.fields.push_back(std::move(field));
      if (i < text.size() && text[i] == ',') {
        ++i;
        ++col;
        continue;
      }
      if (i < text.size() && text[i] == '\r') ++i;
      if (i < text.size() && text[i] == '\n') ++i;
      ++line;
      col = 1;
      end_of_record = true;
    }
    records.push_back(std::move(rec));
  }
  if (records.empty()) fail(file, 1, 1, "empty file (expected a header row and data rows)");
  // Fields end up in JSON reports and profile YAML, which must stay UTF-8.
  for (const CsvRecord& rec : records)
    for (std::size_t f = 0; f < rec.fields.size(); ++f)
      if (const auto bad = config::first_invalid_utf8(rec.fields[f]); bad != std::string::npos)
        fail(file, rec.line, rec.columns[f],
             fmt::format("field {}: byte {} is not UTF-8 (expected UTF-8 text)", f + 1, bad + 1));
  table.header = records.front().fields;
  for (std::size_t r = 1; r < records.size(); ++r) {
    CsvRecord& rec = records[r];
    if (rec.fields.size() != table.header.size()) {
      const bool short_row = rec.fields.size() < table.header.size();
      const int col_at = rec.columns.back() + static_cast<int>(rec.fields.back().size());
      fail(file, rec.line, col_at,
           fmt::format("{} fields, the header has {} ({}; expected one value per column: {})",
                       rec.fields.size(), table.header.size(),
                       short_row ? "a truncated row" : "too many fields", csv_join(table.header)));
    }
    table.rows.push_back(std::move(rec));
  }
  return table;
}

CsvTable read_csv(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail(path, 1, 1, "is a directory (expected a readable CSV file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, 1, 1, "cannot open (expected a readable CSV file)");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_csv(buffer.str(), path);
}

std::string csv_join(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    const std::string& f = fields[i];
    if (f.find_first_of(",\"\r\n") == std::string::npos) {
      out += f;
      continue;
    }
    out += '"';
    for (char c : f) {
      if (c == '"') out += '"';
      out += c;
    }
    out += '"';
  }
  return out;
}

[[noreturn]] void csv_fail_at(const CsvTable& t, const CsvRecord& r, int col,
                              const std::string& msg) {
  throw config::ConfigError(
      fmt::format("{}:{}:{}: {}", t.file, r.line, r.columns[static_cast<std::size_t>(col)], msg));
}

std::int64_t csv_int(const CsvTable& t, const CsvRecord& r, int col, std::int64_t min,
                     std::int64_t max) {
  const std::string& s = r.fields[static_cast<std::size_t>(col)];
  const auto v = config::parse_int(s);
  if (!v || *v < min || *v > max)
    csv_fail_at(t, r, col,
                fmt::format("{}: '{}' (expected an integer from {} to {})",
                            t.header[static_cast<std::size_t>(col)], s, min, max));
  return *v;
}

int csv_int32(const CsvTable& t, const CsvRecord& r, int col, int min) {
  return static_cast<int>(csv_int(t, r, col, min, std::numeric_limits<int>::max()));
}

double csv_time_s(const CsvTable& t, const CsvRecord& r, int col) {
  const std::string& s = r.fields[static_cast<std::size_t>(col)];
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v) || !(v > 0))
    csv_fail_at(t, r, col,
                fmt::format("{}: '{}' (expected a time in microseconds > 0)",
                            t.header[static_cast<std::size_t>(col)], s));
  return v * 1e-6;
}

}  // namespace overlapsim::calibration
