# Which tests may run beside another one (scripts/test.sh runs ctest -j 2; docs/dev/test-command.md).
#
# Every test runs alone (RUN_SERIAL) unless it carries the label "parallel". A test earns the
# label only when nothing it asserts depends on how fast it runs (no time limit near its
# duration, no heartbeat or watchdog it provokes, no benchmark figure) and it shares no
# fixed port, namespace, shared-memory name or output directory with another test. The
# end-to-end tests qualify: they compare numbers, files and messages, their only limits are
# per-run timeouts tens of times their durations, the launcher picks free ports
# (--main_process_port 0), shared-memory names carry the pid and a random part, and the
# tool's PCH cache is written then renamed. Serial is the default so that a new test is
# safe without thought; scripts/ci/test_report.py fails a test with neither mark.
#
# Call once near the top of every CMakeLists.txt that registers tests: the marking is
# deferred to the end of that directory (set_tests_properties sees only the directory's own
# tests before CMake 3.28), so tests added after the call, or before a return(), count too.
function(accel_tests_run_alone_unless_parallel)
  cmake_language(DEFER CALL _accel_mark_serial_tests)
endfunction()

function(_accel_mark_serial_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} LABELS labels)
    if(NOT labels OR NOT "parallel" IN_LIST labels)
      set_tests_properties(${t} PROPERTIES RUN_SERIAL ON)
    endif()
  endforeach()
endfunction()
