#!/usr/bin/env python3
"""The project's layering, checked: which module may include which.

Every quoted #include of a source file names its module by its first path
component ("core/link.h": module core of the tree the file is in).  The
table below is the whole of what is allowed; anything else is a layering
violation, printed as FILE:LINE and failing the check.  A new dependency is
a decision: add it to the table, in the same change, with its reason.

  tests/layering/check_layering.py [ROOT]      (ctest: layering)
"""
import os
import re
import sys

# Public headers: any module may include them.  An include is public when the
# file exists below one of these (the project's API, the ACL emulation's).
PUBLIC_DIRS = ["include", "emulation/acl/include"]

# tree -> {module: the modules of the same tree it may include}
#  src:        the engine and the cache layer, a DAG from common up.
#  plugin/ucx: the UCX plugin; core/ is the UCP core below the mover
#              families, which never include one another.
#  python/src, emulation, tools: consumers; the Python extensions see public
#              headers only.
ALLOWED = {
    "src": {
        "common": set(),
        "metadef": set(),
        "config": {"common"},
        "control": {"common"},
        "transport": {"common"},
        "memory": {"common", "config", "transport"},
        "core": {"common", "config", "control", "memory", "transport"},
        "facade": {"common", "core", "memory"},
        "llm_datadist": {"common", "memory"},
    },
    "plugin/ucx": {
        "core": set(),
        "am": {"core"},
        "hccs": {"core"},
        "rma": {"core"},
        "paths": {"core", "am"},  # a path is an AM transport of its own
        "": {"core", "am", "hccs", "rma", "paths"},  # the context and the ABI glue
    },
}
# Includes of another tree that a tree may make: (tree, module of that tree).
CROSS = {
    "plugin/ucx": {("src", "common")},           # thread annotations (adxl_base)
    "emulation": {("src", "common")},            # thread annotations, the logger
    "tools/bench": {("src", "common")},          # Fd
    "tools/info": {("src", "common"), ("src", "config"), ("src", "transport")},  # the option table, the plugin loader
    "python/src": set(),                         # public headers only
}
# Headers included by bare name from elsewhere in their tree: the build
# generates them, or (named here with the reason) a known edge.
GENERATED = {
    # plugin/ucx: the ABI's handle structs (adxl_plugin_ep, _rkey, _mem,
    # _batch) hold each mover family's per-handle state, so the families
    # include the top of the plugin for them: the one upward edge left.
    "ucx_handles.h",
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(tree, path):
    rel = os.path.relpath(path, tree)
    parts = rel.split(os.sep)
    return parts[0] if len(parts) > 1 else ""


def check(root):
    bad = []
    trees = list(ALLOWED) + [t for t in CROSS if t not in ALLOWED]
    for tree in trees:
        base = os.path.join(root, tree)
        if not os.path.isdir(base):
            bad.append("%s: no such tree (the table names it)" % tree)
            continue
        mods = ALLOWED.get(tree, {})
        for dirpath, _, files in os.walk(base):
            for f in files:
                if not f.endswith((".h", ".cc", ".cpp")):
                    continue
                path = os.path.join(dirpath, f)
                mod = module_of(base, path)
                with open(path, errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        if "/" not in m.group(1):
                            # "x.h": a file beside this one, or a generated
                            # header of the build; never one of another
                            # module reached through an include path.
                            if not os.path.isfile(os.path.join(dirpath, m.group(1))) and \
                                    m.group(1) not in GENERATED:
                                bad.append("%s:%d: %s is not beside it: %s" % (
                                    os.path.relpath(path, root), n, m.group(1), m.group(0).strip()))
                            continue
                        top = m.group(1).split("/")[0]
                        if any(os.path.isfile(os.path.join(root, d, m.group(1))) for d in PUBLIC_DIRS):
                            continue
                        if tree in ALLOWED and top in mods:
                            if top == mod or top in ALLOWED[tree].get(mod, set()):
                                continue
                            why = "module %s of %s may not include %s/" % (mod or "(top)", tree, top)
                        elif any(top == m2 for (t2, m2) in CROSS.get(tree, set())):
                            continue
                        else:
                            why = "%s may not include %s/ (not public, not in its table)" % (tree, top)
                        bad.append("%s:%d: %s: %s" % (os.path.relpath(path, root), n, why, m.group(0).strip()))
    return bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    bad = check(os.path.abspath(root))
    for b in bad:
        print(b)
    if bad:
        print("layering: %d include(s) outside the table (tests/layering/check_layering.py)" % len(bad))
        return 1
    print("layering: every include within the table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
