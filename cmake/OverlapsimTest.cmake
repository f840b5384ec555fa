# Shared by tests/ and the kernels-only build.

# Test code is glue around the libraries, which keep the build's optimisation (-O2): at -O1
# a test file compiles about 30 % faster (GoogleTest's macro expansions dominate it), and
# the suite's run time is spent in the libraries.
function(overlapsim_test_options target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O1>)
endfunction()

# No absolute checkout path in a test's preprocessed code, so that ccache reuses its objects
# from a clone elsewhere (CI builds a fresh clone): the tests run from the source directory
# (WORKING_DIRECTORY below), so OVERLAPSIM_SOURCE_DIR is "." (the top CMakeLists.txt maps the
# checkout out of __FILE__ for every target).
function(overlapsim_test_source_paths target)
  target_compile_definitions(${target} PRIVATE OVERLAPSIM_SOURCE_DIR=".")
endfunction()

# overlapsim_add_test(<name> SOURCES a_test.cpp ... LIBS overlapsim::sim ... [COST n])
# Each test case is its own ctest test, unless the calling directory sets
# OVERLAPSIM_TEST_ONE_PROCESS: then the whole executable is one.
function(overlapsim_add_test name)
  cmake_parse_arguments(T "" "COST" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  overlapsim_test_source_paths(${name})
  # Shared test helpers are included by repository path (tests/...).
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  overlapsim_warnings(${name})
  overlapsim_test_options(${name})
  overlapsim_precompiled_headers(${name} TEST)
  if(OVERLAPSIM_TEST_ONE_PROCESS)
    add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  else()
    # COST (optional): ctest -j starts costlier tests first, so long ones do not end alone.
    if(T_COST)
      gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60
                           PROPERTIES COST ${T_COST})
    else()
      gtest_discover_tests(${name} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} DISCOVERY_TIMEOUT 60)
    endif()
  endif()
endfunction()
