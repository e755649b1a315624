# ccache for every compile. The sloppiness settings let ccache cache objects built with a
# precompiled header (GCC's PCH embeds timestamps and defines ccache otherwise refuses);
# CCACHE_BASEDIR makes hits work across clones in different directories (CI clones afresh).
if(ACCEL_USE_CCACHE)
  find_program(ACCEL_CCACHE ccache)
  if(ACCEL_CCACHE)
    set(_launcher ${CMAKE_COMMAND} -E env
        CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
        CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}
        ${ACCEL_CCACHE})
    set(CMAKE_C_COMPILER_LAUNCHER ${_launcher})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
    message(STATUS "accelerate: using ccache (${ACCEL_CCACHE})")
  else()
    message(STATUS "accelerate: ccache not found, compiling without it (apt-get install ccache)")
  endif()
endif()
