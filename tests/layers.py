#!/usr/bin/env python3
"""layers.py - checks that the code keeps the layering runtime/README.md
describes, and prints TAP:

- every #include of the product's C code (runtime/, plugin/) names a header
  of its own folder or of a folder of a lower layer;
- every call between its source files (read off the built objects with nm:
  one file's undefined symbols, another's definitions) goes to its own
  folder or down, and no two files call each other both ways;
- the Python package's modules import one another without a cycle (type-
  only imports count), in the order its layers give;
- no source file (the product's, the Python package's and the benchmarks')
  is over 600 lines and no C function over 80, but for the ones named
  below with the reason they are kept.

Usage: layers.py SRCDIR BUILDDIR
"""
import ast
import os
import re
import subprocess
import sys

# Bottom to top. Folders of one layer may not use each other.
LAYERS = [
    ["runtime/base"],
    ["runtime/planner"],
    ["runtime/apply", "runtime/net"],
    ["runtime/bootstrap", "runtime/work", "runtime/streams", "runtime/store", "runtime/watch"],
    ["runtime/coord_start"],
    ["runtime/relay"],
    ["runtime/coord", "runtime/libcohort", "runtime/agent", "runtime/profiler"],
    ["runtime/tools", "plugin"],
]
PY_LAYERS = [["errors", "_progress"], ["_lib", "info", "output"], ["_session"], ["work", "streams"], ["_core"],
             ["__init__"], ["__main__"]]
FILE_MAX, FUNC_MAX = 600, 80
KEPT = {}  # "path" or "path:function" -> why it is kept over the limit

n = 0
failed = 0


def ok(passed, text):
    global n, failed
    n += 1
    failed += not passed
    print("%sok %d - %s" % ("" if passed else "not ", n, text))


def level_of(folder, layers):
    for i, group in enumerate(layers):
        if folder in group:
            return i
    return None


def sources(src):
    out = []
    for group in LAYERS:
        for folder in group:
            d = os.path.join(src, folder)
            for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if name.endswith((".c", ".h")):
                    out.append(folder + "/" + name)
    return out


def check_includes(src, files):
    where = {}
    for f in files:
        if f.endswith(".h"):
            where.setdefault(os.path.basename(f), []).append(os.path.dirname(f))
    bad, dup = [], [h for h, ds in where.items() if len(ds) > 1]
    for f in files:
        folder = os.path.dirname(f)
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', fh.read(), re.M):
                dirs = where.get(os.path.basename(inc))
                if not dirs or folder in dirs:
                    continue  # config.h, a system header, its own folder
                if level_of(dirs[0], LAYERS) >= level_of(folder, LAYERS):
                    bad.append("%s includes %s/%s" % (f, dirs[0], inc))
    ok(not dup, "every header name is one file (%s)" % (", ".join(dup) or "none twice"))
    ok(not bad, "every #include goes to its own folder or a lower layer (%d files; %s)"
       % (len(files), "; ".join(bad) or "none up or across"))


def object_of(build, f):
    """The built object of source f: automake names it NAME.o or
    TARGET-NAME.o in the source's folder (libtool: in .libs)."""
    base = os.path.basename(f)[:-2]
    for d in (os.path.dirname(f), os.path.dirname(f) + "/.libs"):
        path = os.path.join(build, d)
        names = sorted(os.listdir(path)) if os.path.isdir(path) else []
        for name in names:
            if name == base + ".o" or name.endswith("-" + base + ".o"):
                return os.path.join(path, name)
    return None


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRGSVW":
            defined.add(parts[2])
    return defined, used


def check_calls(build, files):
    cs = [f for f in files if f.endswith(".c")]
    objs = {f: object_of(build, f) for f in cs}
    missing = [f for f, o in objs.items() if not o]
    # a source built only under an option this build lacks (PMIx, CUDA) is
    # not read; every other one must be there
    ok(len(missing) < len(cs) // 4, "the objects of %d of %d sources are read (not built here: %s)"
       % (len(cs) - len(missing), len(cs), ", ".join(missing) or "none"))
    defs, uses = {}, {}
    for f, o in objs.items():
        if o:
            d, u = symbols(o)
            uses[f] = u
            for s in d:
                defs.setdefault(s, f)
    edges = set()
    for f, u in uses.items():
        for s in u:
            g = defs.get(s)
            if g and g != f:
                edges.add((f, g))
    up = ["%s calls %s" % (f, g) for f, g in sorted(edges)
          if os.path.dirname(f) != os.path.dirname(g) and
          level_of(os.path.dirname(g), LAYERS) >= level_of(os.path.dirname(f), LAYERS)]
    both = ["%s <-> %s" % (f, g) for f, g in sorted(edges) if f < g and (g, f) in edges]
    ok(not up, "every call goes to its own folder or a lower layer (%d calls between files; %s)"
       % (len(edges), "; ".join(up) or "none up or across"))
    ok(not both, "no two files call each other both ways (%s)" % ("; ".join(both) or "none"))


def py_imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
    return out


def check_python(src):
    pkg = os.path.join(src, "python/cohort")
    mods = sorted(m[:-3] for m in os.listdir(pkg) if m.endswith(".py"))
    unknown = [m for m in mods if level_of(m, PY_LAYERS) is None]
    ok(not unknown, "every Python module has its layer (%s)" % (", ".join(unknown) or "all do"))
    bad = []
    for m in mods:
        for i in sorted(py_imports(os.path.join(pkg, m + ".py"))):
            if i in mods and i != m and m not in unknown and (
                    level_of(i, PY_LAYERS) >= level_of(m, PY_LAYERS)):
                bad.append("%s imports %s" % (m, i))
    ok(not bad, "every Python import goes down (%d modules; %s)"
       % (len(mods), "; ".join(bad) or "none up, across or in a cycle"))


def functions(text):
    """(name, lines) of each C function: clang-format puts a function's
    braces alone in column 0."""
    lines, out, start, name = text.splitlines(), [], None, ""
    for i, line in enumerate(lines):
        if line == "{" and i:
            start, m = i, re.search(r"(\w+)\s*\(", " ".join(lines[max(0, i - 3):i]))
            name = m.group(1) if m else lines[i - 1]
        elif line.startswith("}") and start is not None:
            out.append((name, i - start + 1))
            start = None
    return out


def check_sizes(src, files):
    pys = ["python/cohort/" + m for m in sorted(os.listdir(os.path.join(src, "python/cohort")))
           if m.endswith(".py")]
    # The benchmarks' programs keep the size rule too, though no layer owns them.
    bench = ["bench/" + m for m in sorted(os.listdir(os.path.join(src, "bench")))
             if m.endswith((".c", ".h"))]
    long_files, long_funcs = [], []
    for f in files + pys + bench:
        text = open(os.path.join(src, f), encoding="utf-8").read()
        count = text.count("\n")
        if count > FILE_MAX and f not in KEPT:
            long_files.append("%s %d" % (f, count))
        for name, length in functions(text) if f.endswith(".c") else []:
            if length > FUNC_MAX and f + ":" + name not in KEPT:
                long_funcs.append("%s:%s %d" % (f, name, length))
    ok(not long_files, "no source file over %d lines (%s)"
       % (FILE_MAX, ", ".join(long_files) or "none"))
    ok(not long_funcs, "no C function over %d lines (%s)"
       % (FUNC_MAX, ", ".join(long_funcs) or "none"))


def main():
    src, build = sys.argv[1], sys.argv[2]
    files = sources(src)
    check_includes(src, files)
    check_calls(build, files)
    check_python(src)
    check_sizes(src, files)
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
