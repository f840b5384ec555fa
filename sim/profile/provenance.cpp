#include "sim/profile/provenance.hpp"

namespace overlapsim::sim {

const char* to_string(SourceKind kind) {
  switch (kind) {
    case SourceKind::Measured:
      return "measured";
    case SourceKind::Datasheet:
      return "datasheet";
    case SourceKind::Paper:
      return "paper";
    case SourceKind::Assumed:
      return "assumed";
  }
  return "?";
}

std::optional<SourceKind> parse_source_kind(std::string_view text) {
  if (text == "measured") return SourceKind::Measured;
  if (text == "datasheet") return SourceKind::Datasheet;
  if (text == "paper") return SourceKind::Paper;
  if (text == "assumed") return SourceKind::Assumed;
  return std::nullopt;
}

}  // namespace overlapsim::sim
