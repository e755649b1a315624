# Installing without a build tree (docs/install.md, issue 31 item 5):
# - a pkg-config file, accelerate.pc, for builds that do not use CMake;
# - a Debian package of everything `cmake --install` installs: `cpack -G DEB` in the build
#   tree writes accelerate-libtorch_<version>_<arch>.deb.
# The package installs under /usr: the commands in /usr/bin (`accelerate`, `accel-migrate`),
# the library and the CMake package under /usr/lib, the headers under /usr/include.

# ---- pkg-config ------------------------------------------------------------------------
# LibTorch's include directories (the system one left out: it is the compiler's default),
# its compile flags and definitions, and the libraries a program links directly.
if(ACCEL_BUILD_RUNTIME)
  set(_pc_cflags ${TORCH_CXX_FLAGS})
  foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
    if(NOT dir STREQUAL "/usr/include")
      list(APPEND _pc_cflags "-I${dir}")
    endif()
  endforeach()
  get_target_property(_pc_defs torch_cpu INTERFACE_COMPILE_DEFINITIONS)
  foreach(def IN LISTS _pc_defs)
    if(def)
      list(APPEND _pc_cflags "-D${def}")
    endif()
  endforeach()
  get_filename_component(_torch_libdir "${TORCH_LIBRARY}" DIRECTORY)
  set(_pc_libs "-L${_torch_libdir}" -ltorch -ltorch_cpu -lc10)
  # The prefix relative to the .pc file (pkg-config's ${pcfiledir}), so the file is right
  # wherever the tree is installed: the build's test prefixes, /usr from the package.
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(ACCEL_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  else()
    string(REGEX MATCHALL "[^/]+" _pc_parts "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
    set(ACCEL_PC_PREFIX "\${pcfiledir}")
    foreach(_part IN LISTS _pc_parts)
      string(APPEND ACCEL_PC_PREFIX "/..")
    endforeach()
  endif()
  list(JOIN _pc_cflags " " ACCEL_PC_TORCH_CFLAGS)
  list(JOIN _pc_libs " " ACCEL_PC_TORCH_LIBS)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/accelerate.pc.in ${PROJECT_BINARY_DIR}/accelerate.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/accelerate.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

# ---- the Debian package -----------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME accelerate-libtorch)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "multi-process training for LibTorch programs: accel-migrate, libaccelerate, accelerate launch")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "Accelerate for LibTorch developers <accelerate-libtorch@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The shared libraries the binaries need, by dpkg-shlibdeps (libtorch, yaml-cpp, LLVM and
# Clang, xxHash, ...), with the versions this build was linked against.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/runtime)
# What dpkg-shlibdeps cannot see: building against the package needs LibTorch's headers and
# CMake package, a C++ compiler; accel-migrate parses with Clang's own headers (the resource
# directory of its LLVM version); `accelerate verify` is a Python 3 script (standard library);
# a traced original (Accelerate::trace, accelerate/trace.h) uses xxHash's header inline.
set(_deb_depends "libtorch-dev, g++, python3, libxxhash-dev")
if(ACCEL_BUILD_TOOL)
  string(APPEND _deb_depends ", libclang-common-${LLVM_VERSION_MAJOR}-dev")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_deb_depends}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "cmake, pkg-config")
if(ACCEL_BUILD_TOOL AND ACCEL_BUILD_TIDY_MODULE)
  set(CPACK_DEBIAN_PACKAGE_SUGGESTS "clang-tidy-${LLVM_VERSION_MAJOR}")  # loads the module
endif()
# Hugging Face's Python `accelerate` installs a command of the same name (pip: /usr/local/bin
# or ~/.local/bin, both before /usr/bin on Debian's PATH); docs/install.md says how to tell
# them apart. Nothing in Debian's archive ships /usr/bin/accelerate.
set(CPACK_PACKAGE_CONTACT "${CPACK_DEBIAN_PACKAGE_MAINTAINER}")
include(CPack)
