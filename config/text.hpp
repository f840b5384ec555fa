#pragma once
// User text on its way in and out: names and CSV fields must be UTF-8 (JSON output and
// terminals rely on it), and a message that quotes user text stays one printable line.
#include <string>
#include <string_view>

namespace overlapsim::config {

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or bytes > U+10FFFF).
bool is_valid_utf8(std::string_view text);

// Byte offset of the first byte that breaks UTF-8, or npos when the text is valid.
std::size_t first_invalid_utf8(std::string_view text);

// `text` with each byte that breaks UTF-8 replaced by U+FFFD, for writers whose format
// must stay valid (JSON) whatever a caller passes.
std::string to_valid_utf8(std::string_view text);

// `text` with control characters (newline, ESC of ANSI sequences, DEL) and bytes that are
// not UTF-8 written as \n, \t, \xHH, so echoing it cannot break lines or drive a terminal.
std::string printable(std::string_view text);

}  // namespace overlapsim::config
