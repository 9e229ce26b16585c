"""The OpenACC validation suite's layout (OpenACCUserGroup/OpenACCV-V): its test files, the
subtests in each, and the compiler command that builds one subtest alone.

The suite's own infrastructure.py finds subtests by lines starting `#ifndef T<n>` and builds a
file with `-DT<n>` for every subtest it leaves out; its default flags are
`-fopenacc -cpp -lm -foffload=-lm`. Building each subtest with every other one defined out does
the same, one subtest per executable, so that one subtest's crash or refusal never hides
another's result.

A subtest's failure is its bit in the exit status (1 << (n - 1)), so the exit status of a
subtest numbered 9 or more cannot show it failed; those (routine_gang's T9 and T10) do not build
with GCC 12.
"""

import os
import re
from dataclasses import dataclass, field

SUBTEST_LINE = re.compile(r"^#ifndef T([0-9]+)")
FORTRAN_MODULE = re.compile(r"^\s*MODULE\s+(\w+)\s*$", re.IGNORECASE)
FORTRAN_USE = re.compile(r"^\s*USE\s+(\w+)", re.IGNORECASE)
FORTRAN_PROGRAM = re.compile(r"^\s*PROGRAM\s+\w+", re.IGNORECASE)

# The suite's default flags (init_config.txt), for every language.
SUITE_FLAGS = ["-fopenacc", "-cpp", "-lm", "-foffload=-lm"]

LANGUAGES = {".c": "c", ".cpp": "c++", ".F90": "fortran"}


@dataclass
class TestFile:
    """One source file of the suite: its subtests' numbers, and for Fortran the other files of
    the suite that define modules it uses (compiled before it)."""

    path: str
    language: str
    subtests: list
    module_sources: list = field(default_factory=list)

    @property
    def name(self):
        return os.path.basename(self.path)


@dataclass
class Subtest:
    file: TestFile
    number: int

    @property
    def id(self):
        """`acc_copyin.c:T1`: the key of the TSV, stable between runs."""
        return f"{self.file.name}:T{self.number}"


def read_lines(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.readlines()


def fortran_modules(tests_dir, names):
    """Module name (lower case) -> the file defining it, for files that define modules and
    hold no program (the suite's declare_copyin_mod.F90): they are not tests themselves."""
    modules = {}
    for name in names:
        if not name.endswith(".F90"):
            continue
        lines = read_lines(os.path.join(tests_dir, name))
        if any(FORTRAN_PROGRAM.match(line) for line in lines):
            continue
        for line in lines:
            m = FORTRAN_MODULE.match(line)
            if m and m.group(1).lower() != "procedure":
                modules[m.group(1).lower()] = os.path.join(tests_dir, name)
    return modules


def discover(suite_dir):
    """The suite's test files, sorted by name, each with its subtest numbers."""
    tests_dir = os.path.join(suite_dir, "Tests")
    if not os.path.isdir(tests_dir):
        raise SystemExit(f"conformance: {suite_dir} has no Tests/ folder; give the root of an OpenACCV-V checkout")
    names = sorted(os.listdir(tests_dir))
    modules = fortran_modules(tests_dir, names)
    module_files = set(modules.values())
    files = []
    for name in names:
        ext = os.path.splitext(name)[1]
        path = os.path.join(tests_dir, name)
        if ext not in LANGUAGES or path in module_files:
            continue
        lines = read_lines(path)
        numbers = sorted({int(m.group(1)) for line in lines if (m := SUBTEST_LINE.match(line))})
        if not numbers:
            continue
        used = []
        if ext == ".F90":
            for line in lines:
                m = FORTRAN_USE.match(line)
                if m and m.group(1).lower() in modules and modules[m.group(1).lower()] not in used:
                    used.append(modules[m.group(1).lower()])
        files.append(TestFile(path, LANGUAGES[ext], numbers, used))
    return files


def subtests(files):
    return [Subtest(f, n) for f in files for n in f.subtests]


def compile_command(subtest, compilers, output, seed):
    """The command building `subtest` alone into `output`: the suite's flags, every other
    subtest defined out, and a fixed seed so that each runtime sees the same data."""
    f = subtest.file
    cmd = [compilers[f.language], *SUITE_FLAGS, "-I", os.path.dirname(f.path)]
    cmd += [f"-DT{n}" for n in f.subtests if n != subtest.number]
    if seed is not None:
        cmd.append(f"-DSEED={seed}")
    # -lm once more after the sources: where the linker drops libraries named before the
    # objects that need them (--as-needed), the suite's leading -lm alone would not link.
    cmd += ["-o", output, *f.module_sources, f.path, "-lm"]
    return cmd
