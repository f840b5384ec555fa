# Shared by tests/ and the kernels-only build.
# overlapsim_add_test(<name> SOURCES a_test.cpp ... LIBS overlapsim::sim ...)
function(overlapsim_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE OVERLAPSIM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  # Shared test helpers are included by repository path (tests/...).
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  overlapsim_warnings(${name})
  gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
endfunction()
