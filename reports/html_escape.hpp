#pragma once
// Escaping for the HTML report: user strings (model names, file paths, sources) as HTML
// text or attribute values, and JSON placed inside a <script> element.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace overlapsim::reports {

// & < > " ' as character references: safe as element text and as a quoted attribute value.
std::string html_escape(std::string_view text);

// `doc` serialised for a <script type="application/json"> element: <, >, & and the line
// separators U+2028/U+2029 written as \u escapes (valid JSON, equal after JSON.parse), so
// neither "</script>" nor "<!--" in a string can end or alter the element. Invalid UTF-8
// in strings is replaced by U+FFFD rather than throwing.
std::string script_json(const nlohmann::json& doc);

}  // namespace overlapsim::reports
