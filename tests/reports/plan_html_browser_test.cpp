// index.html in a real browser: headless Chromium (the Debian package, installed by
// scripts/setup) loads the fixture's report from a file, runs its scripts, and dumps the
// DOM. The test checks that every chart drew an SVG with the data marks the fixture implies,
// that the configuration table has its rows, that no hostile string ran, and that the page
// logged nothing to the console. Skips where Chromium is absent.
//
// OVERLAPSIM_CHROMIUM=path picks the browser; OVERLAPSIM_REPORT_SCREENSHOT=file.png also
// writes a screenshot of the page (how docs/plan-report.png is made).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "reports/plan_html.hpp"
#include "tests/reports/fixture.hpp"

namespace overlapsim::reports {
namespace {

namespace fs = std::filesystem;
using test::count;

std::string find_chromium() {
  if (const char* env = std::getenv("OVERLAPSIM_CHROMIUM")) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
      if (!dir.empty() && ::access((fs::path(dir) / name).c_str(), X_OK) == 0)
        return (fs::path(dir) / name).string();
  return {};
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// Runs Chromium headless on `url` with extra flags; stdout and stderr into files. The
// virtual-time budget lets the page's scripts and timers finish before the DOM is taken.
int chromium(const std::string& bin, const fs::path& dir, const std::string& flags,
             const std::string& url, const fs::path& out, const fs::path& err) {
  const std::string cmd = "timeout 120 " + quoted(bin) +
                          " --headless --disable-gpu --no-sandbox --no-first-run"
                          " --hide-scrollbars --user-data-dir=" +
                          quoted((dir / "profile").string()) +
                          " --enable-logging=stderr --v=0 --virtual-time-budget=10000 " + flags +
                          " " + quoted(url) + " >" + quoted(out.string()) + " 2>" +
                          quoted(err.string());
  return std::system(cmd.c_str());
}

// Items of each data mark type ("symbol", "rect", ...) drawn in the chart `id`: Vega's SVG
// renderer draws a mark as <g class="mark-TYPE role-mark ..."> holding one element per
// item (axes and legends are role-axis-* / role-legend-*, not counted).
std::map<std::string, int> data_marks(const std::string& dom, const std::string& id) {
  std::map<std::string, int> marks;
  const std::size_t start = dom.find("id=\"" + id + "\"");
  if (start == std::string::npos) return marks;
  const std::size_t end = dom.find("</figure>", start);
  const std::string chart = dom.substr(start, end - start);
  if (chart.find("<svg") == std::string::npos) return marks;
  const std::regex group(R"re(<g class="mark-([a-z]+) role-mark[^"]*")re");
  const std::regex item(R"re(<(path|line|rect|text|circle)\b)re");
  for (auto g = std::sregex_iterator(chart.begin(), chart.end(), group);
       g != std::sregex_iterator(); ++g) {
    const std::size_t from = static_cast<std::size_t>(g->position() + g->length());
    const std::string inner = chart.substr(from, chart.find("</g>", from) - from);
    marks[(*g)[1]] += static_cast<int>(std::distance(
        std::sregex_iterator(inner.begin(), inner.end(), item), std::sregex_iterator()));
  }
  return marks;
}

TEST(PlanHtmlBrowser, ChartsDrawTableFillsNothingLogged) {
  const std::string bin = find_chromium();
  if (bin.empty())
    GTEST_SKIP() << "Chromium not found on PATH (scripts/setup installs the Debian package "
                    "chromium; OVERLAPSIM_CHROMIUM=path names another)";
  const fs::path dir =
      fs::temp_directory_path() / ("overlapsim-plan-html-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path page = dir / "index.html";
  std::ofstream(page, std::ios::binary) << render_plan_html(test::plan_fixture());
  const std::string url = "file://" + page.string();

  const int rc = chromium(bin, dir, "--dump-dom", url, dir / "dom.html", dir / "log.txt");
  const std::string dom = read(dir / "dom.html");
  const std::string log = read(dir / "log.txt");
  ASSERT_EQ(rc, 0) << "chromium failed:\n" << log;
  ASSERT_NE(dom.find("</html>"), std::string::npos) << "no DOM dumped:\n" << log;

  // Every chart drew its data: counts follow from the fixture (fixture.hpp).
  using Marks = std::map<std::string, int>;
  EXPECT_EQ(data_marks(dom, "chart-step-vs-nodes"),
            (Marks{{"area", 4}, {"line", 4}, {"symbol", 8}}))
      << "4 (cluster, design) bands and lines, 8 (cluster, design, nodes) points";
  EXPECT_EQ(data_marks(dom, "chart-breakdown"), (Marks{{"rect", 24}})) << "8 runs x 3 parts";
  EXPECT_EQ(data_marks(dom, "chart-pareto"), (Marks{{"line", 1}, {"symbol", 11}}))
      << "8 runs, 3 of them on the front";
  EXPECT_EQ(data_marks(dom, "chart-memory"), (Marks{{"rect", 36}}))
      << "6 configurations x 5 terms, 6 capacity ticks";
  EXPECT_EQ(data_marks(dom, "chart-bands"), (Marks{{"rule", 4}, {"symbol", 4}}))
      << "4 (cluster, design) fastest entries";
  EXPECT_EQ(count(dom, "data-failed=\"true\""), 0u);

  // The configuration table as the browser parsed it.
  EXPECT_EQ(count(dom, "<tr class=\"status-feasible\""), 4u);
  EXPECT_EQ(count(dom, "<tr class=\"status-rejected\""), 1u);
  EXPECT_EQ(count(dom, "<tr class=\"status-pruned\""), 1u);

  // Hostile strings stayed text: the payloads would set data-pwned on <body>.
  EXPECT_EQ(dom.find("data-pwned"), std::string::npos);
  EXPECT_NE(dom.find("<h1>Capacity plan: &lt;script&gt;alert(1)&lt;/script&gt;</h1>"),
            std::string::npos);

  // Chromium logs each console message of the page (log, warning, error, uncaught
  // exception) as "...:CONSOLE...] "text", source: <url> (line)".
  std::string console;
  std::stringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos && line.find(url) != std::string::npos)
      console += line + "\n";
  EXPECT_TRUE(console.empty()) << "the page logged to the console:\n" << console;

  if (const char* shot = std::getenv("OVERLAPSIM_REPORT_SCREENSHOT")) {
    const fs::path png = fs::absolute(shot);
    EXPECT_EQ(chromium(bin, dir, "--window-size=1280,3600 --screenshot=" + quoted(png.string()),
                       url, dir / "shot.out", dir / "shot.log"),
              0)
        << read(dir / "shot.log");
  }
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace overlapsim::reports
