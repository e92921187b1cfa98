# Precompiled headers: the third-party headers most files include (fmt,
# nlohmann/json, CLI11, GoogleTest) and the standard library parsed once per
# kind of target instead of once per file (issue 22: CLI11 alone costs 4 s a
# file to parse). Each kind has a donor, an object library of one empty file
# whose precompiled header its targets reuse (REUSE_FROM); a donor is built
# with its targets' flags so GCC accepts the header (-Winvalid-pch says when
# it would not).
#
#   trainscope_use_pch(TARGET lib|cli|test)

set(_trainscope_std_headers
  <algorithm> <array> <chrono> <cmath> <cstdint> <cstdio> <cstdlib> <cstring> <filesystem>
  <fstream> <functional> <map> <memory> <optional> <set> <span> <sstream> <string>
  <string_view> <utility> <vector>)
set(_trainscope_pch_lib ${_trainscope_std_headers} <fmt/format.h> <nlohmann/json.hpp>)
set(_trainscope_pch_cli ${_trainscope_pch_lib} <CLI/CLI.hpp>)
set(_trainscope_pch_test ${_trainscope_pch_lib} <gtest/gtest.h>)

file(WRITE ${CMAKE_BINARY_DIR}/pch_anchor.cpp "// The precompiled headers' anchor.\n")

function(_trainscope_pch_donor kind)
  set(donor trainscope_pch_${kind})
  add_library(${donor} OBJECT ${CMAKE_BINARY_DIR}/pch_anchor.cpp)
  target_link_libraries(${donor} PRIVATE OpenMP::OpenMP_CXX fmt::fmt nlohmann_json::nlohmann_json)
  if(kind STREQUAL "cli")
    target_link_libraries(${donor} PRIVATE CLI11::CLI11)
  elseif(kind STREQUAL "test")
    target_link_libraries(${donor} PRIVATE GTest::gtest)
    target_compile_options(${donor} PRIVATE ${TRAINSCOPE_TEST_OPTIMIZATION})
  endif()
  target_precompile_headers(${donor} PRIVATE ${_trainscope_pch_${kind}})
  target_compile_options(${donor} PUBLIC -Winvalid-pch)
endfunction()

function(trainscope_use_pch target kind)
  if(NOT TRAINSCOPE_PCH)
    return()
  endif()
  if(NOT TARGET trainscope_pch_${kind})
    _trainscope_pch_donor(${kind})
  endif()
  target_precompile_headers(${target} REUSE_FROM trainscope_pch_${kind})
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  target_compile_options(${target} PRIVATE -Winvalid-pch)
endfunction()
