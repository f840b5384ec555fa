# Warnings for every C++ target of the project; CUDA sources get the host
# warnings through -Xcompiler in kernels/.
function(overlapsim_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)
endfunction()
