"""The package's ctypes prototypes, structs and constants against the C
headers (the installed ones under installcheck, $COHORT_INCLUDEDIR; else
the source tree's, which are what make install installs) and libcohort's
export map, and the structs' layout as the C compiler lays them out
(tests/python/layout)."""

import ctypes
import os
import re
import subprocess

import pytest

from cohort import _lib, errors
from conftest import BUILD, HEADERS, SRC

FILES = ("cohort.h", "cohort_work.h", "cohort_streams.h")
BASE = {"int": ctypes.c_int, "long": ctypes.c_long, "size_t": ctypes.c_size_t,
        "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64, "double": ctypes.c_double,
        "char": ctypes.c_char}
OPAQUE = {"cohort", "cohort_work", "cohort_streams"}


def source():
    text = ""
    for name in FILES:
        text += open(os.path.join(HEADERS, name)).read() + "\n"
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"^\s*#.*$", " ", text, flags=re.M)


def ctype(decl):
    """The ctypes type of a C type (without a name)."""
    t = " ".join(decl.replace("*", " * ").split()).replace("const ", "").strip()
    stars = t.count("*")
    base = t.replace("*", "").strip()
    if base.startswith("enum "):
        assert stars == 0
        return ctypes.c_int
    if base.startswith("struct "):
        name = base.split()[1]
        if name in OPAQUE:
            return {1: ctypes.c_void_p, 2: ctypes.POINTER(ctypes.c_void_p)}[stars]
        assert stars == 1, decl
        return ctypes.POINTER(_lib.STRUCTS[name])
    if base == "void":
        return {0: None, 1: ctypes.c_void_p}[stars]
    if base == "char" and stars == 1:
        return ctypes.c_char_p
    return BASE[base] if stars == 0 else ctypes.POINTER(BASE[base])


def split_decl(text):
    """'const char *journal' -> ('const char *', 'journal')"""
    m = re.match(r"^(.*?)(\w+)\s*(\[\s*(\d+)\s*\])?$", " ".join(text.split()))
    return m.group(1), m.group(2), m.group(4)


def functions():
    text = re.sub(r"\b(?:struct|enum)\s+\w+\s*\{.*?\}\s*;", " ", source(), flags=re.S)
    found = {}
    for m in re.finditer(r"([\w\s\*]+?)\b(cohort_\w+)\s*\(([^()]*)\)\s*;", text):
        args = [] if m.group(3).strip() == "void" else \
            [ctype(split_decl(a)[0]) for a in m.group(3).split(",")]
        found[m.group(2)] = (ctype(m.group(1)), args)
    return found


def structs():
    found = {}
    for m in re.finditer(r"struct\s+(\w+)\s*\{(.*?)\}\s*;", source(), flags=re.S):
        members = []
        for decl in m.group(2).split(";"):
            if not decl.strip():
                continue
            first, *more = decl.split(",")  # "uint64_t total, committed"
            typ, name, n = split_decl(first)
            members.append((name, ctype(typ) if n is None else ctype(typ) * int(n)))
            for other in more:
                assert re.fullmatch(r"\s*\w+\s*", other), decl
                members.append((other.strip(), ctype(typ)))
        found[m.group(1)] = members
    return found


def same(a, b):
    if isinstance(a, type) and issubclass(a, ctypes.Array):
        return issubclass(b, ctypes.Array) and a._type_ is b._type_ and a._length_ == b._length_
    return a is b


def test_every_function_the_package_binds_is_declared_alike():
    declared = functions()
    assert set(_lib.FUNCTIONS) == set(declared), set(_lib.FUNCTIONS) ^ set(declared)
    for name, (res, args) in _lib.FUNCTIONS.items():
        want_res, want_args = declared[name]
        assert same(res, want_res), "%s returns %s, the header %s" % (name, res, want_res)
        assert len(args) == len(want_args) and all(map(same, args, want_args)), \
            "%s takes %s, the header %s" % (name, list(args), want_args)


def test_every_public_export_is_bound():
    text = re.sub(r"/\*.*?\*/", " ", open(os.path.join(SRC, "runtime/libcohort/cohort.map")).read(),
                  flags=re.S)
    exported = set()
    for m in re.finditer(r"(COHORT_[\d.]+)\s*\{(.*?)\}", text, flags=re.S):
        body = m.group(2).split("local:")[0].replace("global:", "")
        exported |= {s.strip() for s in body.split(";") if s.strip()}
    assert exported == set(_lib.FUNCTIONS), exported ^ set(_lib.FUNCTIONS)


def test_structs_match_the_headers():
    declared = structs()
    assert set(declared) == set(_lib.STRUCTS)
    for name, cls in _lib.STRUCTS.items():
        fields = [(f[0], f[1]) for f in cls._fields_]
        assert [f[0] for f in fields] == [d[0] for d in declared[name]], name
        for (field, typ), (_, want) in zip(fields, declared[name]):
            assert same(typ, want), "%s.%s is %s, the header %s" % (name, field, typ, want)


def test_constants_match_the_headers():
    text = source()
    for name, value in _lib.CONSTANTS.items():
        m = re.search(r"\b%s\s*=\s*(\d+)" % name, text) or \
            re.search(r"#define\s+%s\s+(\d+)" % name,
                      "".join(open(os.path.join(HEADERS, f)).read() for f in FILES))
        assert m and int(m.group(1)) == value, name
    codes = dict((k, int(v)) for k, v in re.findall(r"\bCOHORT_(OK|ERR_\w+)\s*=\s*(\d+)", text))
    mine = {k: v for k, v in vars(errors).items() if k == "OK" or k.startswith("ERR_")}
    assert codes == mine


def test_struct_layouts_as_the_compiler_lays_them_out():
    prog = os.path.join(BUILD, "tests", "python", "layout")
    if not os.access(prog, os.X_OK):
        pytest.skip("tests/python/layout is not built")
    seen = {}
    for line in subprocess.run([prog], stdout=subprocess.PIPE, check=True).stdout.decode() \
            .splitlines():
        name, member, offset, size = line.split()
        cls = _lib.STRUCTS[name]
        if member == "-":
            assert ctypes.sizeof(cls) == int(size), name
        else:
            seen.setdefault(name, []).append(member)
            assert (getattr(cls, member).offset, getattr(cls, member).size) == \
                (int(offset), int(size)), "%s.%s" % (name, member)
    assert seen == {n: [f[0] for f in c._fields_] for n, c in _lib.STRUCTS.items()}
