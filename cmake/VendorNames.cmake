# The vendor's library names, so that build files written for the vendor's
# stack link unchanged against the installed tree:
#   libcann_hixl.so     HIXL                     -> libadxl (the engine and both facades)
#   libllm_datadist.so  LLM-DataDist + ADXL      -> libllm_datadist + libadxl
# plus pkg-config files (cann_hixl.pc, llm_datadist.pc) and
# lib/cmake/adxl/vendor-targets.cmake, which defines the plain target names
# the vendor's CMakeLists link (cann_hixl, llm_datadist, acl_rt_headers,
# acl_rt, ascend_hal) for -DCMAKE_PROJECT_INCLUDE=<that file>.
#
# Why GNU ld linker scripts (INPUT(...)) for the unversioned names, not more
# shared libraries: a second libadxl.so under another name would put a second
# copy of the engine (its statics, its UCX context, its threads) into a
# process that loads both names, and a thin wrapper library would need its own
# ABI and exports.  A linker script exists only at link time: -lcann_hixl
# makes the program depend on libadxl.so.N itself (its DT_NEEDED), and
# -lllm_datadist on libllm_datadist.so.N *and* libadxl.so.N, so a program that
# uses adxl::AdxlEngine and links only llm_datadist links (the vendor ships
# the ADXL engine inside libllm_datadist) and every name reaches one engine.
# The scripts name their inputs without a directory; ld finds them on the
# library search path (-L<prefix>/lib, which the .pc files give).

set(_adxl_soname libadxl.so.${PROJECT_VERSION_MAJOR})
set(_lld_soname libllm_datadist.so.${PROJECT_VERSION_MAJOR})
file(WRITE ${CMAKE_BINARY_DIR}/vendor/libcann_hixl.so
     "/* HIXL under the vendor's name: the ADXL engine library (cmake/VendorNames.cmake). */\nINPUT(${_adxl_soname})\n")
file(WRITE ${CMAKE_BINARY_DIR}/vendor/libllm_datadist.so
     "/* LLM-DataDist and the ADXL engine, as the vendor ships them (cmake/VendorNames.cmake). */\nINPUT(${_lld_soname} ${_adxl_soname})\n")
install(FILES ${CMAKE_BINARY_DIR}/vendor/libcann_hixl.so ${CMAKE_BINARY_DIR}/vendor/libllm_datadist.so
        DESTINATION ${CMAKE_INSTALL_LIBDIR})

foreach(_pc cann_hixl llm_datadist)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${_pc}.pc.in ${CMAKE_BINARY_DIR}/${_pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/${_pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

file(RELATIVE_PATH ADXL_CMAKE_RELPREFIX "/p/${CMAKE_INSTALL_LIBDIR}/cmake/adxl" "/p")
configure_file(${PROJECT_SOURCE_DIR}/cmake/vendor-targets.cmake.in ${CMAKE_BINARY_DIR}/vendor-targets.cmake @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/vendor-targets.cmake DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/adxl)
