# Sanitized builds (issue 32, docs/dev/sanitizers.md): ACCEL_SANITIZE=address,undefined or
# thread instruments every target of this build (runtime, launcher, tests) with GCC's
# sanitizers. LibTorch, Gloo and OpenBLAS come from Debian uninstrumented: what they do
# inside is not checked, what our code does with their memory and threads is.
set(ACCEL_SANITIZE "" CACHE STRING "Sanitizers for every target: address,undefined | thread | empty (none)")
if(ACCEL_SANITIZE)
  if(NOT ACCEL_SANITIZE MATCHES "^(address,undefined|address|undefined|thread)$")
    message(FATAL_ERROR "accelerate: ACCEL_SANITIZE=${ACCEL_SANITIZE}: expected address,undefined or thread")
  endif()
  # Every finding stops the program (UBSan would otherwise print and go on), so that a test
  # fails on it; frame pointers and -g give readable stacks; -O1 keeps the tests' run time
  # close to a release build's while inlining little.
  add_compile_options(-fsanitize=${ACCEL_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1)
  add_link_options(-fsanitize=${ACCEL_SANITIZE})
  message(STATUS "accelerate: sanitizers: ${ACCEL_SANITIZE}")
endif()
