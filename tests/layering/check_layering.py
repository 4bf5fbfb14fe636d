#!/usr/bin/env python3
"""The project's layering, checked: which module may include which.

Every quoted #include of a source file names its module by its first path
component ("core/link.h": module core of the tree the file is in).  The
table, cmake/Layering.cmake (read here; the build reads it too, for each
module's include root), is the whole of what is allowed; anything else is a
layering violation, printed as FILE:LINE and failing the check.  A new
dependency is a decision: add it to the table, in the same change, with its
reason.

  tests/layering/check_layering.py [ROOT]      (ctest: layering)
"""
import os
import re
import sys

# Public headers: any module may include them.  An include is public when the
# file exists below one of these (the project's API, the ACL emulation's).
PUBLIC_DIRS = ["include", "emulation/acl/include"]

# tree -> {module: the modules of the same tree it may include}, and
# tree -> {module: the headers at the top of the tree it may include by bare
# name (named upward edges)}: read from cmake/Layering.cmake, the one table
# the build also reads (each module's include root, cmake/ModuleIncludes.cmake),
# so that what compiles and what this check accepts cannot disagree.  The
# plugin's top module is "." there, "" here.
LAYERING = os.path.join("cmake", "Layering.cmake")
LAYER_ROW = re.compile(r"^\s*adxl_layer\(([^)]*)\)")
# And tree -> {(other tree, module of it)}: the includes of another tree a
# tree may make, from the adxl_layer_cross() rows (none: public headers only).
CROSS_ROW = re.compile(r"^\s*adxl_layer_cross\(([^)]*)\)")


def read_layering(root):
    allowed, up, cross = {}, {}, {}
    path = os.path.join(root, LAYERING)
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            c = CROSS_ROW.match(line.split("#", 1)[0])
            if c:
                words = c.group(1).split()
                if len(words) < 2 or words[0] in cross:
                    raise SystemExit("%s:%d: adxl_layer_cross(TREE OTHER_TREE MODULE...), one per tree" % (LAYERING, n))
                cross[words[0]] = set((words[1], w) for w in words[2:])
                continue
            m = LAYER_ROW.match(line.split("#", 1)[0])
            if not m:
                continue
            words = m.group(1).split()
            if len(words) < 2:
                raise SystemExit("%s:%d: adxl_layer(TREE MODULE ...) wants a tree and a module" % (LAYERING, n))
            tree, mod, rest = words[0], words[1], words[2:]
            mod = "" if mod == "." else mod
            deps = rest[:rest.index("UP")] if "UP" in rest else rest
            ups = rest[rest.index("UP") + 1:] if "UP" in rest else []
            if mod in allowed.setdefault(tree, {}):
                raise SystemExit("%s:%d: %s/%s has two rows" % (LAYERING, n, tree, mod or "."))
            allowed[tree][mod] = set("" if d == "." else d for d in deps)
            up.setdefault(tree, {})[mod] = set(ups)
    if not allowed:
        raise SystemExit("%s: no adxl_layer() rows" % LAYERING)
    return allowed, up, cross


# Headers included by bare name from elsewhere in their tree that the build
# generates (none today).  A known upward edge is a row's UP header in
# cmake/Layering.cmake instead.
GENERATED = set()
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(tree, path):
    rel = os.path.relpath(path, tree)
    parts = rel.split(os.sep)
    return parts[0] if len(parts) > 1 else ""


def check(root):
    bad = []
    ALLOWED, UP, CROSS = read_layering(root)
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
                                    m.group(1) not in GENERATED and \
                                    m.group(1) not in UP.get(tree, {}).get(mod, set()):
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
