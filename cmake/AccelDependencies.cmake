# Finds the dependencies of each part. A part the user asked for whose dependency is
# missing is turned off with a message naming the Debian package, except LibTorch for the
# runtime, which is the point of the project: that one fails at configure time.

set(ACCEL_HAVE_TORCH OFF)
if(ACCEL_BUILD_RUNTIME OR ACCEL_BUILD_EXAMPLES)
  find_package(Torch CONFIG QUIET)
  if(Torch_FOUND)
    set(ACCEL_HAVE_TORCH ON)
    message(STATUS "accelerate: LibTorch ${Torch_VERSION} found")
  elseif(ACCEL_BUILD_RUNTIME)
    message(FATAL_ERROR
      "accelerate: LibTorch not found. Install it with 'apt-get install libtorch-dev libgloo-dev' "
      "(or scripts/bootstrap.sh), point CMAKE_PREFIX_PATH at a LibTorch install, "
      "or configure with -DACCEL_BUILD_RUNTIME=OFF.")
  else()
    message(STATUS "accelerate: LibTorch not found: examples are off (apt-get install libtorch-dev)")
  endif()
endif()

if(ACCEL_BUILD_RUNTIME)
  find_package(yaml-cpp CONFIG QUIET)
  if(NOT yaml-cpp_FOUND)
    message(FATAL_ERROR "accelerate: yaml-cpp not found (launcher config files). "
                        "Install it with 'apt-get install libyaml-cpp-dev'.")
  endif()
  # spdlog: the runtime's and the launcher's levelled messages (accelerate/logging.h); a
  # logger's sink, pattern and locking are a library's job.
  find_package(spdlog CONFIG QUIET)
  if(NOT spdlog_FOUND)
    message(FATAL_ERROR "accelerate: spdlog not found (levelled logging). "
                        "Install it with 'apt-get install libspdlog-dev'.")
  endif()
  # OpenSSL's libcrypto: the launchers' job token proofs (HMAC-SHA256) and nonces
  # (docs/security.md); a security primitive is a library's job, not ours.
  find_package(OpenSSL QUIET COMPONENTS Crypto)
  if(NOT OpenSSL_FOUND)
    message(FATAL_ERROR "accelerate: OpenSSL's libcrypto not found (the launchers' job token). "
                        "Install it with 'apt-get install libssl-dev'.")
  endif()
  # xxHash: the content hashes of checkpoint files (docs/checkpointing.md). Checkpoints are
  # core, so a missing library stops the configure rather than turning the check off.
  find_path(ACCEL_XXHASH_INCLUDE_DIR xxhash.h)
  find_library(ACCEL_XXHASH_LIBRARY xxhash)
  if(NOT ACCEL_XXHASH_INCLUDE_DIR OR NOT ACCEL_XXHASH_LIBRARY)
    message(FATAL_ERROR "accelerate: xxHash not found (checkpoint content hashes). "
                        "Install it with 'apt-get install libxxhash-dev'.")
  endif()
  # Experiment tracking (docs/tracking.md): JSON lines with nlohmann-json, TensorBoard
  # records' CRC-32C with Boost.CRC; both header-only, used only inside the runtime.
  find_path(ACCEL_NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp)
  find_path(ACCEL_BOOST_CRC_INCLUDE_DIR boost/crc.hpp)
  if(NOT ACCEL_NLOHMANN_JSON_INCLUDE_DIR OR NOT ACCEL_BOOST_CRC_INCLUDE_DIR)
    message(FATAL_ERROR "accelerate: nlohmann-json or Boost.CRC not found (experiment tracking). "
                        "Install them with 'apt-get install nlohmann-json3-dev libboost-dev'.")
  endif()
endif()

if(ACCEL_BUILD_TOOL)
  # A version is always named: an unversioned search finds a broken clang-14 config on
  # Debian 12. The newest supported one wins (Debian 13 has 19, Debian 12 has 16); the
  # differences between them live in rewriters/include/accel/rewriters/engine/LLVMCompat.h.
  # -DACCEL_LLVM_VERSIONS=16 picks one when several are installed.
  set(ACCEL_LLVM_VERSIONS 19 16 CACHE STRING "LLVM major versions accel-migrate builds with, preferred first")
  # (LLVM's version file wants major.minor, which differs per distribution: compare the
  # major version ourselves.) An LLVM_DIR given on the command line is tried first.
  foreach(_v ${ACCEL_LLVM_VERSIONS})
    find_package(LLVM CONFIG QUIET NO_DEFAULT_PATH HINTS /usr/lib/llvm-${_v}/lib/cmake/llvm)
    if(LLVM_FOUND AND LLVM_VERSION_MAJOR IN_LIST ACCEL_LLVM_VERSIONS)
      find_package(Clang CONFIG QUIET NO_DEFAULT_PATH
                   HINTS ${LLVM_LIBRARY_DIRS}/cmake/clang /usr/lib/llvm-${LLVM_VERSION_MAJOR}/lib/cmake/clang)
      break()
    endif()
    unset(LLVM_DIR CACHE)
    set(LLVM_FOUND OFF)
  endforeach()
  if(NOT LLVM_FOUND OR NOT Clang_FOUND)
    message(WARNING "accelerate: LLVM/Clang ${ACCEL_LLVM_VERSIONS} not found: accel-migrate is off "
                    "(Debian 12: apt-get install llvm-16-dev libclang-16-dev clang-16; "
                    "Debian 13: llvm-19-dev libclang-19-dev clang-19)")
    set(ACCEL_BUILD_TOOL OFF)
    set(ACCEL_BUILD_TIDY_MODULE OFF)
  else()
    message(STATUS "accelerate: LLVM ${LLVM_PACKAGE_VERSION} found at ${LLVM_DIR}")
    if(ACCEL_BUILD_TIDY_MODULE AND NOT EXISTS "${LLVM_INCLUDE_DIRS}/clang-tidy/ClangTidyCheck.h")
      message(WARNING "accelerate: clang-tidy headers not found: clang-tidy module is off "
                      "(apt-get install clang-tidy-${LLVM_VERSION_MAJOR})")
      set(ACCEL_BUILD_TIDY_MODULE OFF)
    endif()
  endif()
endif()

find_package(GTest CONFIG QUIET)
if(ACCEL_BUILD_TESTS AND NOT GTest_FOUND)
  find_package(GTest QUIET)
endif()
if(ACCEL_BUILD_TESTS AND NOT GTest_FOUND)
  message(WARNING "accelerate: GoogleTest not found: unit tests are off (apt-get install libgtest-dev)")
endif()

# Precompiles <torch/torch.h> once for every target that includes LibTorch: it is most of
# every compile's cost (seconds per file, ~50 s for the PCH itself on 2 cores), so one
# shared PCH keeps rebuilds and CI fast. Targets reuse it (REUSE_FROM), which needs the same
# PIC setting and LibTorch's flags; GCC falls back to a plain include (with a warning) if a
# target's flags ever make the PCH unusable, so this can only cost time, never correctness.
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(ACCEL_USE_PCH AND ACCEL_HAVE_TORCH AND NOT TARGET accel_torch_pch)
  # CONFIGURE writes only when the text differs: file(WRITE) gave the file a new time at every
  # configure, so each re-run of CMake recompiled this object and relinked what uses it.
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/accel_torch_pch.cpp
       CONTENT "// anchor for the shared LibTorch PCH\n")
  add_library(accel_torch_pch OBJECT ${CMAKE_BINARY_DIR}/accel_torch_pch.cpp)
  target_link_libraries(accel_torch_pch PRIVATE torch)
  target_compile_features(accel_torch_pch PRIVATE cxx_std_17)
  target_precompile_headers(accel_torch_pch PRIVATE <torch/torch.h>)
  # clang records each header's modification time in a PCH and refuses the PCH when one
  # differs; CMake writes cmake_pch.hxx afresh in every build tree, so a PCH that ccache
  # restores into a new clone (CI clones afresh) would be refused. Without the timestamps
  # clang still checks each header's size, and ccache hashes their contents.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(accel_torch_pch PRIVATE -Xclang -fno-pch-timestamp)
  endif()
  if(ACCEL_CCACHE_PCH_LAUNCHER)  # cached under its own path only (AccelCcache.cmake)
    set_target_properties(accel_torch_pch PROPERTIES CXX_COMPILER_LAUNCHER "${ACCEL_CCACHE_PCH_LAUNCHER}")
  endif()
endif()

function(accel_torch_pch target)
  if(ACCEL_USE_PCH AND TARGET accel_torch_pch)
    target_precompile_headers(${target} REUSE_FROM accel_torch_pch)
    # GCC refuses a PCH built with -fPIC in a -fPIE compile: compile executables with
    # -fPIC too (valid code for an executable) so that they can use the shared PCH.
    get_target_property(_type ${target} TYPE)
    if(_type STREQUAL "EXECUTABLE")
      set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
      target_compile_options(${target} PRIVATE -fPIC)
    endif()
  endif()
endfunction()
