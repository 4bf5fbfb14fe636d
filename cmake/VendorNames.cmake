# The vendor's library names and sonames, so that build files written for the
# vendor's stack link unchanged against the installed tree, and programs built
# against the vendor's stack load unchanged (a binary drop-in):
#   libcann_hixl.so     the engine: ADXL (adxl::AdxlEngine), HIXL (hixl::Hixl)
#                       and the extensions; the vendor builds its ADXL engine
#                       into libcann_hixl too (src/hixl/CMakeLists.txt links
#                       adxl_static into cann_hixl)
#   libllm_datadist.so  LLM-DataDist (llm_datadist::LlmDataDist); DT_NEEDED
#                       libcann_hixl.so (as the vendor's links cann_hixl)
#   libmetadef.so       ge::AscendString, out of line (the vendor's metadef)
# Each is a real shared object whose file name is its soname (no version
# suffix, as the vendor's).  One engine per process: the engine's code and
# state (statics, UCX context, threads) live in libcann_hixl.so only; the
# other libraries reach it through DT_NEEDED, never a copy.
#
# Compatibility names, symbolic links to the same files (so the loader maps
# one object whichever name a program asks for: it recognises a file it has
# already loaded):
#   libadxl.so, libadxl.so.0      -> libcann_hixl.so (-ladxl, and programs
#                                    built against earlier releases)
#   libllm_datadist.so.0          -> libllm_datadist.so
# plus pkg-config files (cann_hixl.pc, llm_datadist.pc) and
# lib/cmake/adxl/vendor-targets.cmake, which defines the plain target names
# the vendor's CMakeLists link (cann_hixl, llm_datadist, acl_rt_headers,
# acl_rt, ascend_hal) for -DCMAKE_PROJECT_INCLUDE=<that file>.
# docs/prebuilt-programs.md describes running programs built elsewhere.

file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/vendor)
foreach(_link "libadxl.so:libcann_hixl.so" "libadxl.so.${PROJECT_VERSION_MAJOR}:libcann_hixl.so"
              "libllm_datadist.so.${PROJECT_VERSION_MAJOR}:libllm_datadist.so")
  string(REPLACE ":" ";" _pair "${_link}")
  list(GET _pair 0 _name)
  list(GET _pair 1 _target)
  file(REMOVE ${CMAKE_BINARY_DIR}/vendor/${_name})
  file(CREATE_LINK ${_target} ${CMAKE_BINARY_DIR}/vendor/${_name} SYMBOLIC)
  install(FILES ${CMAKE_BINARY_DIR}/vendor/${_name} DESTINATION ${CMAKE_INSTALL_LIBDIR})
  # The same names in the build tree's lib/, for programs run from it.
  file(MAKE_DIRECTORY ${CMAKE_LIBRARY_OUTPUT_DIRECTORY})
  # A build tree from before the rename holds the real library's name as a
  # symlink to the old versioned file; left, it would close a loop with the
  # link made here and the linker could not write the library.
  if(IS_SYMLINK ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/${_target})
    file(REMOVE ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/${_target})
  endif()
  file(REMOVE ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/${_name})
  file(CREATE_LINK ${_target} ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/${_name} SYMBOLIC)
endforeach()

foreach(_pc cann_hixl llm_datadist)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${_pc}.pc.in ${CMAKE_BINARY_DIR}/${_pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/${_pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

file(RELATIVE_PATH ADXL_CMAKE_RELPREFIX "/p/${CMAKE_INSTALL_LIBDIR}/cmake/adxl" "/p")
configure_file(${PROJECT_SOURCE_DIR}/cmake/vendor-targets.cmake.in ${CMAKE_BINARY_DIR}/vendor-targets.cmake @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/vendor-targets.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/adxl)
