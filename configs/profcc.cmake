# CMake toolchain file: build C and C++ with profcc / profcc++ (clang-22 that instruments what it
# compiles and links profcc's runtime into executables).
#
#   cmake -DCMAKE_TOOLCHAIN_FILE="$(profcc --print-cmake-toolchain)" -S . -B build
#
# How profcc is found (first match wins):
#   1. the cache variable PROFCC_EXECUTABLE (-DPROFCC_EXECUTABLE=/path/to/profcc);
#   2. the environment variable PROFCC_BIN (path of the profcc executable);
#   3. the workspace's build output beside this file: ../target/release/profcc, then
#      ../target/debug/profcc (a checkout after `cargo build --release` / `cargo xtask build`);
#   4. `profcc` on PATH.
# profcc++ is a symlink to profcc in the same directory; it is created here when missing.
# CMake identifies the compilers as Clang 22 (profcc runs clang-22 and keeps its output).
# Environment variables (PROFCC_DISABLE, PROFCC_INSTRUMENT, ...) work as with `make CC=profcc`.
# Without this file, launcher mode works too: -DCMAKE_C_COMPILER_LAUNCHER=profcc together with
# -DCMAKE_C_LINKER_LAUNCHER=profcc (CMake >= 3.21; same for CXX), so links get the runtime.

set(_profcc "")
if(PROFCC_EXECUTABLE)
  set(_profcc "${PROFCC_EXECUTABLE}")
elseif(DEFINED ENV{PROFCC_BIN} AND NOT "$ENV{PROFCC_BIN}" STREQUAL "")
  set(_profcc "$ENV{PROFCC_BIN}")
else()
  foreach(_cand "${CMAKE_CURRENT_LIST_DIR}/../target/release/profcc"
                "${CMAKE_CURRENT_LIST_DIR}/../target/debug/profcc")
    if(EXISTS "${_cand}")
      get_filename_component(_profcc "${_cand}" REALPATH)
      break()
    endif()
  endforeach()
  if(NOT _profcc)
    find_program(_profcc_on_path NAMES profcc)
    if(_profcc_on_path)
      set(_profcc "${_profcc_on_path}")
    endif()
  endif()
endif()

if(NOT _profcc OR NOT EXISTS "${_profcc}")
  message(FATAL_ERROR "profcc.cmake: profcc not found (\"${_profcc}\"); build it with "
    "`cargo build --release` (or `cargo xtask build`), or pass -DPROFCC_EXECUTABLE=/path/to/profcc")
endif()

# Remember the choice for try_compile projects, which re-read this file.
set(PROFCC_EXECUTABLE "${_profcc}" CACHE FILEPATH "profcc executable used by profcc.cmake")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES PROFCC_EXECUTABLE)

get_filename_component(_profcc_dir "${_profcc}" DIRECTORY)
if(NOT EXISTS "${_profcc_dir}/profcc++")
  file(CREATE_LINK "profcc" "${_profcc_dir}/profcc++" RESULT _profcc_link SYMBOLIC)
  if(NOT EXISTS "${_profcc_dir}/profcc++")
    message(FATAL_ERROR "profcc.cmake: ${_profcc_dir}/profcc++ is missing and could not be "
      "created (${_profcc_link}); run `ln -sf profcc ${_profcc_dir}/profcc++`")
  endif()
endif()

set(CMAKE_C_COMPILER "${_profcc}")
set(CMAKE_CXX_COMPILER "${_profcc_dir}/profcc++")

# The tools (CMAKE_AR, CMAKE_NM, CMAKE_RANLIB, CMAKE_OBJCOPY, ...): CMake looks for them
# beside the compiler, with the compiler's version suffix (clang-22 -> llvm-ar-22 in its
# directory, CMakeDetermineCCompiler.cmake), which it cannot read from the name "profcc".
# Give it the directory and suffix of the clang profcc runs, so it finds what it finds with
# CMAKE_C_COMPILER=clang-22 (not the unversioned llvm-ar of another LLVM on PATH).
# _CMAKE_TOOLCHAIN_LOCATION/_SUFFIX are CMake's own (internal) inputs to that search.
execute_process(COMMAND "${_profcc}" --profcc-clang
  OUTPUT_VARIABLE _profcc_clang OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_VARIABLE _profcc_clang_err RESULT_VARIABLE _profcc_clang_rc)
if(NOT _profcc_clang_rc EQUAL 0 OR NOT _profcc_clang)
  message(FATAL_ERROR "profcc.cmake: ${_profcc} --profcc-clang failed: ${_profcc_clang_err}")
endif()
get_filename_component(_CMAKE_TOOLCHAIN_LOCATION "${_profcc_clang}" DIRECTORY)
get_filename_component(_profcc_clang_name "${_profcc_clang}" NAME)
# The same pattern CMake applies to a compiler's name (prefix, clang, -VERSION, suffix).
if(_profcc_clang_name MATCHES "^(.+-)?(clang|g?cc)(-cl)?(-[0-9]+(\\.[0-9]+)*)?(-[^.]+)?(\\.exe)?$")
  set(_CMAKE_TOOLCHAIN_PREFIX "${CMAKE_MATCH_1}")
  set(_CMAKE_TOOLCHAIN_SUFFIX "${CMAKE_MATCH_4}")
endif()
