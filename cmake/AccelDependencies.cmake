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
endif()

if(ACCEL_BUILD_TOOL)
  # The version is required: an unversioned search finds a broken clang-14 config on Debian.
  find_package(LLVM 16 CONFIG QUIET HINTS /usr/lib/llvm-16/lib/cmake/llvm)
  find_package(Clang 16 CONFIG QUIET HINTS /usr/lib/llvm-16/lib/cmake/clang)
  if(NOT LLVM_FOUND OR NOT Clang_FOUND)
    message(WARNING "accelerate: LLVM/Clang 16 not found: accel-migrate is off "
                    "(apt-get install llvm-16-dev libclang-16-dev clang-16)")
    set(ACCEL_BUILD_TOOL OFF)
    set(ACCEL_BUILD_TIDY_MODULE OFF)
  else()
    message(STATUS "accelerate: LLVM ${LLVM_PACKAGE_VERSION} found at ${LLVM_DIR}")
    if(ACCEL_BUILD_TIDY_MODULE AND NOT EXISTS "${LLVM_INCLUDE_DIRS}/clang-tidy/ClangTidyCheck.h")
      message(WARNING "accelerate: clang-tidy headers not found: clang-tidy module is off "
                      "(apt-get install clang-tidy-16)")
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

# Precompiles <torch/torch.h> for a target that includes LibTorch: it is most of every
# compile's cost (seconds per file), so this keeps rebuilds and CI fast on 2 cores.
function(accel_torch_pch target)
  if(ACCEL_USE_PCH)
    target_precompile_headers(${target} PRIVATE <torch/torch.h>)
  endif()
endfunction()
