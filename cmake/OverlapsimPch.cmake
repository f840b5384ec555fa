# Precompiled headers. Nearly every translation unit parses Boost.Graph's adjacency_list
# (through the topology and the op graph), nlohmann/json and, in tests, GoogleTest: about
# 2.2, 2.3 and 1.7 s of CPU per file at -O2, most of a clean build on CI's two cores. Two
# headers are compiled once, one for libraries and one for tests, and every target reuses
# them (REUSE_FROM). GCC falls back to parsing the headers where a target's flags do not
# match the precompiled one (-Winvalid-pch says so), so the result never depends on them;
# clang stops with an error on such a mismatch instead, so they are off under clang.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(_overlapsim_pch_default ON)
else()
  set(_overlapsim_pch_default OFF)
endif()
option(OVERLAPSIM_PCH "Precompile the heavy third-party headers (GCC)" ${_overlapsim_pch_default})

set(_overlapsim_pch_std
  <algorithm> <array> <cmath> <cstdint> <filesystem> <fstream> <functional> <map> <memory>
  <optional> <set> <sstream> <stdexcept> <string> <string_view> <unordered_map> <utility>
  <variant> <vector>)

# The target owning one precompiled header: a generated empty source, the same compile
# options as the targets that reuse it.
function(_overlapsim_pch_owner name kind)
  set(stub ${PROJECT_BINARY_DIR}/pch/${name}.cpp)
  file(GENERATE OUTPUT ${stub} CONTENT "// owns the ${kind} precompiled header\n")
  add_library(${name} OBJECT ${stub})
  set(headers ${_overlapsim_pch_std})
  # Include paths only: a definition a target lacks (Boost's BOOST_ALL_NO_LIB) would make
  # GCC refuse the header for it.
  if(TARGET Boost::boost)
    target_include_directories(${name} SYSTEM PRIVATE ${Boost_INCLUDE_DIRS})
    list(APPEND headers <boost/graph/adjacency_list.hpp>)
  endif()
  if(TARGET nlohmann_json::nlohmann_json)
    list(APPEND headers <nlohmann/json.hpp>)
  endif()
  if(kind STREQUAL "TEST")
    target_link_libraries(${name} PRIVATE GTest::gtest)
    overlapsim_test_source_paths(${name})
    list(APPEND headers <gtest/gtest.h>)
    overlapsim_test_options(${name})
  endif()
  overlapsim_warnings(${name})
  target_precompile_headers(${name} PRIVATE ${headers})
endfunction()

# overlapsim_precompiled_headers(<target> LIB|TEST)
function(overlapsim_precompiled_headers target kind)
  if(NOT OVERLAPSIM_PCH)
    return()
  endif()
  if(kind STREQUAL "TEST")
    set(owner overlapsim_pch_test)
  else()
    set(owner overlapsim_pch_lib)
  endif()
  if(NOT TARGET ${owner})
    _overlapsim_pch_owner(${owner} ${kind})
  endif()
  target_precompile_headers(${target} REUSE_FROM ${owner})
endfunction()
