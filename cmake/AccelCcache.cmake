# ccache for every compile. The sloppiness settings let ccache cache objects built with a
# precompiled header (GCC's PCH embeds timestamps and defines ccache otherwise refuses);
# CCACHE_BASEDIR makes hits work across clones in different directories (CI clones afresh).
# The PCH itself is the exception (ACCEL_CCACHE_PCH_LAUNCHER, used by AccelDependencies.cmake):
# it records the absolute paths of its build tree's files, so one restored into a clone at
# another path named files of the other clone ("malformed or corrupted AST file: could not
# find file '/check/work/main/build-debian13/...'" once that clone was gone). Without
# CCACHE_BASEDIR its key holds its own path: a clone at the same path (CI) still hits, one
# elsewhere compiles its PCH once, and the objects using it miss because ccache hashes the
# PCH's contents.
if(ACCEL_USE_CCACHE)
  find_program(ACCEL_CCACHE ccache)
  if(ACCEL_CCACHE)
    set(ACCEL_CCACHE_PCH_LAUNCHER ${CMAKE_COMMAND} -E env
        CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime ${ACCEL_CCACHE})
    set(_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} ${ACCEL_CCACHE_PCH_LAUNCHER})
    set(CMAKE_C_COMPILER_LAUNCHER ${_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
    message(STATUS "accelerate: using ccache (${ACCEL_CCACHE})")
  else()
    message(STATUS "accelerate: ccache not found, compiling without it (apt-get install ccache)")
  endif()
endif()
