#include "reports/html_escape.hpp"

#include <gtest/gtest.h>

namespace overlapsim::reports {
namespace {

TEST(HtmlEscape, EscapesTheFiveSpecialCharacters) {
  EXPECT_EQ(html_escape(R"(<a href="x" title='y'>&amp;</a>)"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  EXPECT_EQ(html_escape("plain text, ünïcode"), "plain text, ünïcode");
  EXPECT_EQ(html_escape(""), "");
}

TEST(ScriptJson, NoSequenceCanEndTheScriptElement) {
  const nlohmann::json doc = {{"name", "</script><script>alert(1)</script><!-- & -->"},
                              {"sep", "a\u2028b\u2029c"}};
  const std::string out = script_json(doc);
  EXPECT_EQ(out.find('<'), std::string::npos) << out;
  EXPECT_EQ(out.find('>'), std::string::npos) << out;
  EXPECT_EQ(out.find('&'), std::string::npos) << out;
  EXPECT_EQ(out.find("\xE2\x80\xA8"), std::string::npos) << out;
  EXPECT_EQ(out.find("\xE2\x80\xA9"), std::string::npos) << out;
  EXPECT_NE(out.find("\\u003c/script\\u003e"), std::string::npos) << out;
  EXPECT_NE(out.find("a\\u2028b\\u2029c"), std::string::npos) << out;
  // The escapes are JSON's own: parsing gives back the document.
  EXPECT_EQ(nlohmann::json::parse(out), doc);
}

TEST(ScriptJson, KeepsOtherUnicodeAndReplacesInvalidUtf8) {
  EXPECT_EQ(script_json(nlohmann::json("H200 — ünï")), "\"H200 — ünï\"");
  EXPECT_EQ(script_json(nlohmann::json(std::string("bad \xFF byte"))), "\"bad \xEF\xBF\xBD byte\"");
}

}  // namespace
}  // namespace overlapsim::reports
