#pragma once
// The vendored chart library (third_party/vega/), embedded into the binary at build time
// by reports/embed_assets.cmake so a report can be written, and opened, without network
// access or the source tree.
#include <string_view>

namespace overlapsim::reports {

std::string_view vega_js();        // vega.min.js
std::string_view vega_lite_js();   // vega-lite.min.js
std::string_view vega_embed_js();  // vega-embed.min.js

}  // namespace overlapsim::reports
