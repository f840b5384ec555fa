# Writes a C++ file defining overlapsim::reports::vega_js(), vega_lite_js() and
# vega_embed_js() over byte arrays of the vendored files (byte arrays rather than string
# literals: no length limits, no escaping). Run by reports/CMakeLists.txt:
#   cmake -DASSET_DIR=<third_party/vega> -DOUT=<file.cpp> -P embed_assets.cmake
set(assets "vega_js=vega.min.js" "vega_lite_js=vega-lite.min.js"
           "vega_embed_js=vega-embed.min.js")
set(body "// Generated from third_party/vega/ by reports/embed_assets.cmake; do not edit.\n")
string(APPEND body "#include \"reports/vega_assets.hpp\"\n\nnamespace overlapsim::reports {\n")
foreach(asset IN LISTS assets)
  string(REPLACE "=" ";" parts "${asset}")
  list(GET parts 0 fn)
  list(GET parts 1 file)
  file(READ "${ASSET_DIR}/${file}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # A trailing 0 keeps the array non-empty; the view leaves it out.
  string(APPEND body "namespace {\nconst unsigned char ${fn}_bytes[] = {${bytes}0};\n}\n"
         "std::string_view ${fn}() {\n"
         "  return {reinterpret_cast<const char*>(${fn}_bytes), sizeof ${fn}_bytes - 1};\n}\n")
endforeach()
string(APPEND body "}  // namespace overlapsim::reports\n")
file(WRITE "${OUT}.tmp" "${body}")
file(RENAME "${OUT}.tmp" "${OUT}")
