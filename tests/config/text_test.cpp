// UTF-8 checking and the escaping of user text in messages.
#include "config/text.hpp"
#include "config/error.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace overlapsim::config;

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("gpt3-175b"));
  EXPECT_TRUE(
      is_valid_utf8("\xC2\xB5s micro_batch\xC2\xB7"
                    "dp"));                        // µ, ·
  EXPECT_TRUE(is_valid_utf8("\xE2\x82\xAC"));      // €
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x98\x80"));  // U+1F600
  EXPECT_TRUE(is_valid_utf8("\xF4\x8F\xBF\xBF"));  // U+10FFFF
}

TEST(Utf8, RejectsEveryIllFormedSequence) {
  const std::string bad[] = {
      "\xFF",              // never in UTF-8
      "a\x80",             // a lone continuation byte
      "\xC0\xAF",          // overlong '/'
      "\xE0\x80\xAF",      // overlong, three bytes
      "\xED\xA0\x80",      // a UTF-16 surrogate
      "\xF4\x90\x80\x80",  // past U+10FFFF
      "\xE2\x82",          // cut short
  };
  for (const auto& s : bad) EXPECT_FALSE(is_valid_utf8(s)) << printable(s);
  EXPECT_EQ(first_invalid_utf8("ab\xFF"), 2u);
  EXPECT_EQ(to_valid_utf8("a\xFF"
                          "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_TRUE(is_valid_utf8(to_valid_utf8("\xC0\xAF\xED\xA0\x80")));
}

TEST(Printable, KeepsOneLineAndNoTerminalControl) {
  EXPECT_EQ(printable("name: gpt"), "name: gpt");
  EXPECT_EQ(printable("a\nb"), "a\\nb");
  EXPECT_EQ(printable("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(printable("\xC2\x9B"
                      "31m"),
            "\\u009b31m");  // the 8-bit CSI
  EXPECT_EQ(printable("\xFF"), "\\xff");
  EXPECT_EQ(printable("\xC2\xB5s"), "\xC2\xB5s");  // printable UTF-8 is kept
  EXPECT_EQ(printable("\x7f"), "\\x7f");
}

// Every thrower's message is one printable line, whatever user text it quotes.
TEST(ConfigErrorMessage, QuotedUserTextStaysOneLine) {
  const ConfigError e("f.yaml:1:1: a\tb\nc\x1b[31m: unknown key (expected one of: name)");
  EXPECT_STREQ(e.what(), "f.yaml:1:1: a\\tb\\nc\\x1b[31m: unknown key (expected one of: name)");
  // Printable already: unchanged, so wrapping one message in another does not escape twice.
  const ConfigError wrapped(std::string("--out: ") + e.what());
  EXPECT_EQ(std::string(wrapped.what()), std::string("--out: ") + e.what());
}
