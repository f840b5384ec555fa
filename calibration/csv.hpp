#pragma once
// A small CSV reader for measurement files (RFC 4180: quoted fields, doubled quotes,
// CRLF). Every error is one line naming file:line:column and what was expected, so a
// truncated row or a stray quote in a 10,000-row file is found at once.
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim::calibration {

struct CsvRecord {
  int line = 0;  // 1-based line of the record's first character
  std::vector<std::string> fields;
  std::vector<int> columns;  // 1-based column where each field starts
};

struct CsvTable {
  std::string file;
  std::vector<std::string> header;
  std::vector<CsvRecord> rows;  // every record after the header, each with header.size() fields

  // Index of a header column, or -1.
  int column(std::string_view name) const;
};

// Throws config::ConfigError ("file:line:col: ...") for an empty file, an unterminated
// quote, or a record whose field count differs from the header's (a truncated row).
// Blank lines are skipped.
CsvTable parse_csv(std::string_view text, const std::string& file);
CsvTable read_csv(const std::string& path);

// A field of a parsed table, checked: each throws config::ConfigError "file:line:col:
// column: 'text' (expected ...)" for text that is not what the column holds.
[[noreturn]] void csv_fail_at(const CsvTable& t, const CsvRecord& r, int col,
                              const std::string& msg);
// An integer from min to max.
std::int64_t csv_int(const CsvTable& t, const CsvRecord& r, int col, std::int64_t min,
                     std::int64_t max = std::numeric_limits<std::int64_t>::max());
// A count held in an int: past INT_MAX is an error, never wrapped.
int csv_int32(const CsvTable& t, const CsvRecord& r, int col, int min);
// A time written in microseconds, > 0, in seconds.
double csv_time_s(const CsvTable& t, const CsvRecord& r, int col);

// One CSV line (no newline) with fields quoted where they need it.
std::string csv_join(const std::vector<std::string>& fields);

}  // namespace overlapsim::calibration
