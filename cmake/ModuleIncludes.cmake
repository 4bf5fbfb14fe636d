# Per-module include roots: the layering of cmake/Layering.cmake, enforced by
# the compiler.  A module's target sees, of its tree, only a root in the build
# tree (layering/<tree>_<module>/) of links to the folders it may reach: its
# own and the closure of its edges in the table.  An include of any other
# module of the tree finds nothing there and fails to compile.

# adxl_layer(TREE MODULE [DEP...] [UP FILE...]): one row of the table.
function(adxl_layer tree module)
  cmake_parse_arguments(PARSE_ARGV 2 L "" "" "UP")
  string(MAKE_C_IDENTIFIER "${tree}/${module}" id)
  set_property(GLOBAL PROPERTY ADXL_LAYER_ROW_${id} TRUE)
  set_property(GLOBAL PROPERTY ADXL_LAYER_DEPS_${id} "${L_UNPARSED_ARGUMENTS}")
  set_property(GLOBAL PROPERTY ADXL_LAYER_UP_${id} "${L_UP}")
endfunction()

# The modules `module` reaches: itself and, transitively, its edges.
function(_adxl_layer_closure tree module out)
  set(todo ${module})
  set(seen)
  while(todo)
    list(POP_FRONT todo m)
    if(m IN_LIST seen)
      continue()
    endif()
    string(MAKE_C_IDENTIFIER "${tree}/${m}" id)
    get_property(known GLOBAL PROPERTY ADXL_LAYER_ROW_${id})
    if(NOT known)
      message(FATAL_ERROR "${tree}/${m}: not in the layering table (cmake/Layering.cmake)")
    endif()
    list(APPEND seen ${m})
    get_property(deps GLOBAL PROPERTY ADXL_LAYER_DEPS_${id})
    list(APPEND todo ${deps})
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# Links `file` (a path inside `tree`) into `root`, then the headers of the
# tree it includes whose module is not linked whole (`whole`): an upward
# edge's header compiles only with what it includes, and nothing more of
# those modules is exposed.
function(_adxl_link_header tree root file whole)
  set(dest ${root}/${file})
  if(EXISTS ${dest} OR IS_SYMLINK ${dest})
    return()
  endif()
  get_filename_component(dir ${dest} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${tree}/${file} ${dest} SYMBOLIC)
  file(STRINGS ${PROJECT_SOURCE_DIR}/${tree}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" inc "${line}")
    string(REGEX MATCH "^[^/]+/" top "${inc}")
    string(REGEX REPLACE "/$" "" top "${top}")
    if(top)
      if(NOT top IN_LIST whole AND EXISTS ${PROJECT_SOURCE_DIR}/${tree}/${inc})
        _adxl_link_header(${tree} ${root} ${inc} "${whole}")
      endif()
    elseif(EXISTS ${PROJECT_SOURCE_DIR}/${tree}/${inc})
      _adxl_link_header(${tree} ${root} ${inc} "${whole}")  # beside it, at the top
    endif()
  endforeach()
endfunction()

# adxl_module_includes(TARGET TREE MODULE): TARGET compiles MODULE of TREE
# and sees of TREE only the modules MODULE reaches, plus its UP headers
# (with the headers they include).  The root is made again at every
# configure, so a row taken out of the table takes its links with it.
function(adxl_module_includes target tree module)
  _adxl_layer_closure(${tree} ${module} reach)
  string(MAKE_C_IDENTIFIER "${tree}/${module}" id)
  set(root ${CMAKE_BINARY_DIR}/layering/${id})
  file(REMOVE_RECURSE ${root})  # removes the links, never what they point to
  file(MAKE_DIRECTORY ${root})
  foreach(m IN LISTS reach)
    if(NOT m STREQUAL ".")  # the top's own files are found beside the includer
      file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${tree}/${m} ${root}/${m} SYMBOLIC)
    endif()
  endforeach()
  get_property(up GLOBAL PROPERTY ADXL_LAYER_UP_${id})
  foreach(f IN LISTS up)
    _adxl_link_header(${tree} ${root} ${f} "${reach}")
  endforeach()
  target_include_directories(${target} PRIVATE ${root})
endfunction()

# adxl_layer_cross(TREE OTHER_TREE [MODULE...]): a row of cross-tree includes.
function(adxl_layer_cross tree other)
  string(MAKE_C_IDENTIFIER "${tree}" id)
  set_property(GLOBAL PROPERTY ADXL_LAYER_CROSS_${id} "${other};${ARGN}")
endfunction()

# adxl_cross_includes(TARGET TREE): TARGET, of TREE, sees of the other tree
# of TREE's cross row only those modules (and what they reach).
function(adxl_cross_includes target tree)
  string(MAKE_C_IDENTIFIER "${tree}" id)
  get_property(row GLOBAL PROPERTY ADXL_LAYER_CROSS_${id})
  if(NOT row)
    message(FATAL_ERROR "${tree}: no adxl_layer_cross row (cmake/Layering.cmake)")
  endif()
  list(POP_FRONT row other)
  set(reach)
  foreach(m IN LISTS row)
    _adxl_layer_closure(${other} ${m} r)
    list(APPEND reach ${r})
  endforeach()
  list(REMOVE_DUPLICATES reach)
  set(root ${CMAKE_BINARY_DIR}/layering/cross_${id})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root})
  foreach(m IN LISTS reach)
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${other}/${m} ${root}/${m} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PRIVATE ${root})
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/Layering.cmake)
