# The build's half of the layering (cmake/ModuleIncludes.cmake): a module's
# target must not find a module outside its row's closure.  Each case
# compiles a one-line source, an include the table forbids, with the
# include directories of the module's own target (those it sets and those
# its linked libraries give it), and passes only on the compiler's "No such
# file or directory" (clang: "file not found") for that header: a module target given a wider root
# (-Isrc, -Iplugin/ucx, a row with one more edge) finds the header and fails
# the case.  The header must exist in the tree, so a case cannot pass on a
# typo.
function(adxl_layering_root_case target tree header)
  if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${tree}/${header})
    message(FATAL_ERROR "layering case ${target}: ${tree}/${header} does not exist")
  endif()
  string(MAKE_C_IDENTIFIER "layering_root_${target}_${header}" name)
  set(source ${CMAKE_CURRENT_BINARY_DIR}/layering_cases/${name}.cc)
  file(WRITE ${source} "#include \"${header}\"\n")
  add_test(NAME ${name}
           COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -fsyntax-only
                   "-I$<JOIN:$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>,;-I>" ${source}
           COMMAND_EXPAND_LISTS)
  string(REPLACE "." "\\." h "${header}")
  # GCC's words, and clang's (the fuzz build configures with clang).
  set_tests_properties(${name} PROPERTIES
    PASS_REGULAR_EXPRESSION "${h}: No such file or directory;'${h}' file not found" TIMEOUT 60)
endfunction()

# src/: a module above, one beside, the engine from the cache layer.
adxl_layering_root_case(adxl_module_memory src core/engine.h)
adxl_layering_root_case(adxl_module_control src config/options.h)
adxl_layering_root_case(adxl_module_config src transport/transport.h)
adxl_layering_root_case(adxl_module_common src memory/registry.h)
adxl_layering_root_case(llm_datadist_core src core/engine.h)
adxl_layering_root_case(llm_datadist_core src memory/registry.h)
# plugin/ucx: a family from core/, the top from core/, a family from another.
adxl_layering_root_case(adxl_ucx_family_core plugin/ucx am/am_mover.h)
adxl_layering_root_case(adxl_ucx_family_core plugin/ucx ucx_handles.h)
adxl_layering_root_case(adxl_ucx_family_am plugin/ucx rma/rma_mover.h)
adxl_layering_root_case(adxl_ucx_family_am plugin/ucx hccs/cma_mover.h)
adxl_layering_root_case(adxl_ucx_family_hccs plugin/ucx am/am_transport.h)
adxl_layering_root_case(adxl_ucx_family_rma plugin/ucx paths/paths_mover.h)
adxl_layering_root_case(adxl_ucx_stripe plugin/ucx hccs/cma_mover.h)
# Trees with a cross row: tools/info sees config and transport of src/, not
# the engine; tools/bench src/common alone.
adxl_layering_root_case(adxl-info src core/engine.h)
adxl_layering_root_case(adxl-bench src config/options.h)
