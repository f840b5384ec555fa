#pragma once
// Where a number of a profile comes from. Every number the simulator uses is measured
// (with the fit error against its measurements) or cited (a datasheet or paper named),
// and outputs say which kind they used.
#include <optional>
#include <string>
#include <string_view>

namespace overlapsim::sim {

enum class SourceKind {
  Measured,   // fitted from measurements (fit_error says how well)
  Datasheet,  // a vendor datasheet, named in `citation`
  Paper,      // a publication, named in `citation`
  Assumed,    // carried over from elsewhere; `citation` says from what and why
};
const char* to_string(SourceKind kind);
std::optional<SourceKind> parse_source_kind(std::string_view text);

struct Provenance {
  SourceKind kind = SourceKind::Datasheet;
  std::string citation;
  double fit_error = -1;  // relative RMS error of the fit against its measurements; < 0: none
};

// A scalar with its source.
struct Sourced {
  double value = 0;
  Provenance source;
};

}  // namespace overlapsim::sim
