# The linker of this build's programs and libraries (ACCEL_LINKER, -fuse-ld=). GNU ld (bfd)
# spends about 2 s per program on LibTorch's symbol tables, gold 0.3 s (runtime_tests:
# 2.24 s -> 0.28 s; results/2026-11-28-corpus-clang.txt): the test command links some 90
# programs per platform. The ci preset asks for gold; a user's build keeps the toolchain's
# default. What is linked is the same; only the time differs.
set(ACCEL_LINKER "" CACHE STRING "Linker passed as -fuse-ld= (gold, lld); empty: the compiler's default")
if(ACCEL_LINKER)
  include(CheckLinkerFlag)
  check_linker_flag(CXX "-fuse-ld=${ACCEL_LINKER}" ACCEL_LINKER_WORKS)
  if(ACCEL_LINKER_WORKS)
    add_link_options("-fuse-ld=${ACCEL_LINKER}")
    message(STATUS "accelerate: linking with ${ACCEL_LINKER} (ACCEL_LINKER)")
  else()
    message(WARNING "accelerate: ACCEL_LINKER=${ACCEL_LINKER}, but ${CMAKE_CXX_COMPILER} cannot link with "
                    "-fuse-ld=${ACCEL_LINKER} (Debian: apt-get install binutils-gold, or lld): the default linker is used")
  endif()
endif()
