# Which tests ctest runs alone (RUN_SERIAL) when the suite runs several tests
# at a time (ctest -j, as scripts/test.sh runs the plain suite).
#
# Most tests are two processes on loopback that idle much of the time, and
# run side by side safely.  The tests below time something against a bound:
# heartbeats and liveness timeouts, call deadlines, a stopped or killed peer,
# stalls, idle CPU, rates, network namespaces with links taken down, the
# connection pool's eviction, the GIL test of the Python bindings (the
# connect storms are RUN_SERIAL where they are added, tools/storm).  Beside other tests on a small machine (CI has 2 cores) their
# processes could be starved past those bounds, so each runs with nothing
# else of the suite beside it, as in a serial run.  A test is matched by its
# full ctest name; the suite names cover every test of a suite that times
# anything, the words cover single tests of other suites (and new ones
# named after what they time).  CMake regular expressions: [.] is a dot.
set(ADXL_SERIAL_TESTS_REGEX
    "^(plugin_conformance_ucx.*|python_tests)$"
    "|(Liveness|Netns|ChannelPool|HostileInput|Handshake|SilentSubscribers|Fault|KillTarget|NetworkTimeout"
    "|AutoConnect|LinksTest|LinkStats|LinkCounters|RefreshOnMiss|PostDeadline|BatchWait|LinkTest|ControlQueue"
    "|ControlConn|SyncSlicer|LaneTest|TimeoutChecks|Rejoin|InboundCap|EndpointTeardown|TableSnapshot|ApiFuzz"
    "|SameNodeCancel)"
    "[A-Za-z]*[.]"
    # Contract sections about stopped peers, liveness, deadlines and notify
    # timeouts (docs/contract.md).
    "|[.]S3_3_.*Stopped|[.]S5_[15678]_|[.]S6_[45]_|[.]S7_2_|[.]S9_3_NoReachable"
    "|Timeout|TimedOut|TimesOut|Deadline|Heartbeat|Dead|Stopped|Stall|Slow|Idle|Cpu|Flood|Killed|Evict"
    "|Promptly|Briefly|InTime|Concurrent|ManyThreads")
string(CONCAT ADXL_SERIAL_TESTS_REGEX ${ADXL_SERIAL_TESTS_REGEX})

# adxl_serial_tests(<target>): after gtest_discover_tests(<target>), marks
# RUN_SERIAL the discovered tests whose names match.  The test names exist
# only once the executable was built and listed them (ctest reads them from
# the generated <target>[1]_tests.cmake, which sets <target>_TESTS), so the
# marking is a script ctest runs after that one: TEST_INCLUDE_FILES are read
# in the order they were added.
function(adxl_serial_tests target)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_serial.cmake")
  file(WRITE "${script}"
       "foreach(t IN LISTS ${target}_TESTS)\n"
       "  if(t MATCHES \"${ADXL_SERIAL_TESTS_REGEX}\")\n"
       "    set_tests_properties(\"\${t}\" PROPERTIES RUN_SERIAL TRUE)\n"
       "  endif()\n"
       "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()

# adxl_serial_test(<name>...): the same for tests added with add_test, when
# their names match (called where they are added: a test's properties can only
# be set in its own directory).
function(adxl_serial_test)
  foreach(t IN LISTS ARGN)
    if(t MATCHES "${ADXL_SERIAL_TESTS_REGEX}")
      set_tests_properties("${t}" PROPERTIES RUN_SERIAL TRUE)
    endif()
  endforeach()
endfunction()
