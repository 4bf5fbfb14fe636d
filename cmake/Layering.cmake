# The project's layering: which module may include which.  This file is the
# one place the module graph is written.  Two readers, so that they cannot
# disagree:
#  - the build: adxl_module_includes() below gives each module's target an
#    include root of its own in the build tree (links to the folders of the
#    modules it may reach, nothing else), so an include outside them fails to
#    compile;
#  - the check: tests/layering/check_layering.py (ctest layering) reads the
#    adxl_layer() lines of this file and fails on any quoted include that is
#    not a direct edge of the table.
# Why both: a header of an allowed module includes the modules below it by
# the same paths, so a module's include root must hold the modules it
# reaches through them (the closure of its edges: facade reaches control
# through core/engine.h).  The compiler rejects every include outside that
# closure (a module below or beside, a cycle); the check alone tells a
# direct edge from a transitive one.
#
#   adxl_layer(TREE MODULE [DEP...] [UP FILE...])
#   adxl_layer_cross(TREE OTHER_TREE [MODULE...])
# TREE: a folder of the repository; MODULE: a folder of it ("." for the
# files at its top); DEP: the modules of the same tree MODULE may include;
# UP FILE: a header at the top of the tree MODULE may include by its bare
# name, a named upward edge (its own includes are reachable through it).
# adxl_layer_cross: the modules of OTHER_TREE that the files of TREE may
# include (none: public headers only); adxl_cross_includes() gives a target
# of TREE a root of them (and what they reach).
# The check_layering.py parser reads one call per line, as written here.
# A new dependency is a decision: add it here, in the same change, with its
# reason.

# src: the engine and the cache layer, a DAG from common up.  The engine's
# modules get their roots from these rows (src/CMakeLists.txt); metadef and
# the cache layer have narrower ones of their own (the public headers; the
# cache layer's folder, common/ and memory/acl_host.h), within their rows.
adxl_layer(src common)
adxl_layer(src metadef)
adxl_layer(src config common)
adxl_layer(src control common)
adxl_layer(src transport common)
adxl_layer(src memory common config transport)
adxl_layer(src core common config control memory transport)
adxl_layer(src facade common core memory)
adxl_layer(src llm_datadist common memory)

# plugin/ucx: the UCX plugin; core/ is the UCP core below the mover
# families, which never include one another but paths -> am.  The ABI's
# handle structs (ucx_handles.h: adxl_plugin_ep, _rkey, _mem, _batch) hold
# each family's per-handle state, so the families include that top header:
# the one upward edge left.
adxl_layer(plugin/ucx core)
adxl_layer(plugin/ucx am core UP ucx_handles.h)
adxl_layer(plugin/ucx hccs core UP ucx_handles.h)
adxl_layer(plugin/ucx rma core UP ucx_handles.h)
adxl_layer(plugin/ucx paths core am UP ucx_handles.h)  # a path is an AM transport of its own
adxl_layer(plugin/ucx . core am hccs rma paths)        # the context and the ABI glue

# Includes of another tree.  The plugin and the emulation reach src/common
# through adxl_base's root (src/CMakeLists.txt), which holds that alone.
adxl_layer_cross(plugin/ucx src common)          # thread annotations
adxl_layer_cross(emulation src common)           # thread annotations, the logger
adxl_layer_cross(tools/bench src common)         # Fd
adxl_layer_cross(tools/info src common config transport)  # the option table, the plugin loader
adxl_layer_cross(python/src src)                 # public headers only
