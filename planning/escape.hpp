#pragma once
// Escaping user strings (model names, file paths, sources) for the report formats. JSON
// goes through nlohmann, which escapes by itself.
#include <string>
#include <string_view>

namespace overlapsim::planning {

// Markdown text (also inside a table cell): HTML's &, <, > as entities, so no tag or script
// survives a renderer; Markdown's punctuation and | backslash-escaped; newlines as spaces.
std::string markdown_escape(std::string_view text);

// RFC 4180: quoted (quotes doubled) when it holds a comma, quote or line break.
std::string csv_field(std::string_view text);

}  // namespace overlapsim::planning
