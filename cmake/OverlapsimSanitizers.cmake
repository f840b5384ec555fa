# OVERLAPSIM_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on all C++ host code, so
# the whole test suite runs under them. CUDA sources (nvcc) are compiled as usual; the tests
# that need a GPU skip without one. A UB report aborts the test (-fno-sanitize-recover).
# OVERLAPSIM_FUZZ: libFuzzer harnesses of the loaders (fuzz/); needs clang and implies the
# sanitizers, and adds libFuzzer's edge coverage to the same C++ code so the harnesses link
# the project's ordinary libraries.
option(OVERLAPSIM_SANITIZE "Build C++ host code with ASan and UBSan" OFF)
option(OVERLAPSIM_FUZZ "Build the libFuzzer harnesses in fuzz/ (clang only)" OFF)

if(OVERLAPSIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "OVERLAPSIM_FUZZ=ON needs clang (libFuzzer); configure with "
                        "-DCMAKE_CXX_COMPILER=clang++")
  endif()
  set(OVERLAPSIM_SANITIZE ON CACHE BOOL "Build C++ host code with ASan and UBSan" FORCE)
endif()

if(OVERLAPSIM_SANITIZE)
  set(_overlapsim_san -fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  if(OVERLAPSIM_FUZZ)
    # Edge counters and their PC table, the coverage libFuzzer needs to tell inputs apart.
    # Not -fsanitize=fuzzer-no-link's comparison tracing and indirect-call hooks: they slow
    # every instrumented run (the whole test suite runs on this build too) for mutations
    # that matter little to loaders fed from a seed corpus of real files.
    list(APPEND _overlapsim_san -fsanitize-coverage=inline-8bit-counters,pc-table)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${_overlapsim_san}>")
  # Every executable that links instrumented code needs the sanitizer runtimes, whichever
  # compiler drives its link.
  add_link_options(-fsanitize=address,undefined)
  message(STATUS "overlapsim: ASan+UBSan on C++ host code (fuzz instrumentation ${OVERLAPSIM_FUZZ})")
endif()

# Test code is glue around the libraries. Under ASan a test file compiles about 2.7 times
# faster at -O0 than at -O1 (tests/workloads' unity batch: 10.4 s user against 27.7 s), and
# tests are a third of the sanitized build, so tests are built at -O0 there. The price: the
# linker keeps the first copy of each inline function it meets, the test's unoptimised one,
# so library code that calls it out of line runs slower in test executables (the
# redistribution property test: 152 CPU-s against 101). The CLI, which runs the
# simulations, stays at the libraries' level for that reason (at -O0 a Mixtral step took
# 1.5 times the CPU time).
function(overlapsim_glue_options target)
  if(OVERLAPSIM_SANITIZE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O0>)
  endif()
endfunction()
