# OVERLAPSIM_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on all C++ host code, so
# the whole test suite runs under them. CUDA sources (nvcc) are compiled as usual; the tests
# that need a GPU skip without one. A UB report aborts the test (-fno-sanitize-recover).
# OVERLAPSIM_FUZZ: libFuzzer harnesses of the loaders (fuzz/); needs clang and implies the
# sanitizers, and adds libFuzzer's edge coverage to the same C++ code so the harnesses link
# the project's ordinary libraries.
option(OVERLAPSIM_SANITIZE "Build C++ host code with ASan and UBSan" OFF)
option(OVERLAPSIM_FUZZ "Build the libFuzzer harnesses in fuzz/ (clang only)" OFF)
# The test code (tests/) is compiled without the instrumentation unless this is on: the
# libraries it drives are instrumented either way, and GoogleTest's macro expansions under
# ASan + UBSan cost about 40 % more compile time for checks of test scaffolding.
option(OVERLAPSIM_SANITIZE_TESTS "Instrument the test code too (with OVERLAPSIM_SANITIZE)" OFF)

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
  # Kept in a variable so tests/ can take exactly these back off (OVERLAPSIM_SANITIZE_TESTS).
  set(OVERLAPSIM_SANITIZE_COMPILE_OPTIONS "$<$<COMPILE_LANGUAGE:CXX>:${_overlapsim_san}>")
  add_compile_options("${OVERLAPSIM_SANITIZE_COMPILE_OPTIONS}")
  # Every executable that links instrumented code needs the sanitizer runtimes, whichever
  # compiler drives its link.
  add_link_options(-fsanitize=address,undefined)
  message(STATUS "overlapsim: ASan+UBSan on C++ host code (fuzz instrumentation ${OVERLAPSIM_FUZZ})")
endif()

