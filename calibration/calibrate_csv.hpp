#pragma once
// calibration.csv as `overlapsim calibrate` writes it: a CSV whose rows come in blocks, one
// per finished case, each closed by a completion marker that names the case, counts its
// rows and checksums their bytes. A reader trusts a row only when a marker below it vouches
// for it, so a file cut anywhere (a killed run, a full disk, a crash before the data
// reached the disk) is told apart from a finished one, even when the cut falls on a row
// boundary and every remaining row parses.
//
//   #overlapsim-calibrate 1                       <- first line: markers are mandatory
//   gpu,driver,...,wrong,ctas,case                <- header, in the first case's block
//   NVIDIA H200,...,0,coll/allreduce/ctas0/1024..16384
//   ...
//   #case-done 3 fnv1a64:0123456789abcdef coll/allreduce/ctas0/1024..16384
//   NVIDIA H200,...                               <- the next case's rows
//   #case-done 2 fnv1a64:... gemm/gemm/cublas/128x256x64..128x256x512
//
// A marker is `#case-done <rows> fnv1a64:<16 hex digits> <case key>`, a line of its own.
// <rows> counts the block's data rows (lines; no row of calibrate's spans two lines), the
// checksum is 64-bit FNV-1a over the block's bytes from the end of the line before it (the
// first line, or the previous marker) to the start of the marker line, so the first block's
// checksum covers the header too. Every row's `case` column equals its marker's key.
// Lines starting with '#' are no CSV rows: a reader that does not know the format stops at
// the first line instead of misreading it.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "calibration/csv.hpp"

namespace overlapsim::calibration {

// The first line (without its newline).
inline constexpr std::string_view kCalibrateCsvSignature = "#overlapsim-calibrate 1";

struct MarkedCase {
  std::string key;
  int rows = 0;
  int first_line = 0;   // 1-based line of the block's first line (the header for the first)
  int marker_line = 0;  // 1-based line of its marker
};

struct CalibrateCsvScan {
  // True when the text is calibrate's format: it begins with the signature line, or is
  // empty or a cut-off start of it (a run killed in its first write: nothing to trust).
  bool marked = false;
  std::vector<MarkedCase> cases;  // the verified blocks, in file order
  std::size_t trusted_bytes = 0;  // the signature line and the verified blocks
  // What follows the trusted bytes: lines no marker vouches for.
  int tail_lines = 0;
  int tail_line = 0;  // 1-based line where the tail begins
  std::string why;    // why the tail is not trusted; empty when there is no tail
};

// Never throws: whatever is not verified is the tail.
CalibrateCsvScan scan_calibrate_csv(std::string_view text);

// The marker line (with its newline) for a block of `rows` rows whose bytes are `block`.
std::string format_case_marker(std::string_view block, int rows, const std::string& key);

// The table of the trusted part of a calibrate CSV: signature and marker lines are blank
// lines to the CSV parser, so every row keeps its line number. Throws config::ConfigError
// (file:line) when a row's `case` is not its marker's key, or a case is marked twice.
CsvTable parse_trusted_calibrate_csv(std::string_view text, const CalibrateCsvScan& scan,
                                     const std::string& file);

// A measurement file for fit and validate: a calibrate CSV must be whole (every row under a
// marker that matches it; an unmarked tail is an error naming its first line, as is a
// marker that does not match its rows); any other CSV is read as it is.
CsvTable read_measurement_csv(const std::string& path);

}  // namespace overlapsim::calibration
