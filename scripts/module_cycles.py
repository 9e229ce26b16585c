#!/usr/bin/env python3
"""Import circles between the modules of one crate.

Usage: python3 scripts/module_cycles.py CRATE/src   (exit status 1 when there is a circle)

A module is a file (foo.rs, or foo/mod.rs); it depends on every other module whose items it
names through `crate::...` or `super::...` paths (in `use` lines, `{...}` groups, or inline),
outside its `#[cfg(test)] mod tests`. A module naming its own parent (a child using the types
its parent declares) is not counted: the parent declares it, and that is layering, not a
circle. Every strongly connected set of two or more modules is printed with its edges."""
import os
import re
import sys


def modules(root):
    mods = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(dirpath, f)
                parts = os.path.relpath(path, root)[:-3].split("/")
                if parts[-1] in ("mod", "lib", "main"):
                    parts = parts[:-1]
                mods["::".join(parts)] = path
    return mods


def dependencies(mods):
    def resolve(path):
        segs = [s for s in path.split("::") if s]
        for i in range(len(segs), 0, -1):
            m = "::".join(segs[:i])
            if m in mods:
                return m
        return None

    edges = {m: set() for m in mods}
    for m, path in mods.items():
        src = open(path).read()
        src = re.sub(r"#\[cfg\(test\)\]\s*mod tests\s*\{.*", "", src, flags=re.S)
        here = m.split("::") if m else []
        is_dir = os.path.basename(path) in ("mod.rs", "lib.rs", "main.rs")

        def absolute(kind, rest):
            if kind == "crate":
                return rest
            base = here if is_dir else here[:-1]
            while rest.startswith("super::"):
                base, rest = base[:-1], rest[len("super::"):]
            return "::".join(base + ([rest] if rest else []))

        targets = []
        for kind, rest in re.findall(r"\b(crate|super)((?:::[A-Za-z_]\w*)+)", src):
            targets.append(absolute(kind, rest[2:]))
        for kind, prefix, group in re.findall(r"\b(crate|super)((?:::\w+)*)::\{([^}]*)\}", src):
            base = absolute(kind, prefix[2:])
            for item in group.split(","):
                item = item.strip().split(" as ")[0].strip()
                targets.append(base if item in ("", "self") else f"{base}::{item}" if base else item)
        for t in filter(None, map(resolve, targets)):
            if t != m and not m.startswith(t + "::"):
                edges[m].add(t)
    return edges


def circles(edges):
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1]
    mods = modules(root)
    edges = dependencies(mods)
    found = circles(edges)
    for comp in found:
        print(f"{root}: import circle among {', '.join(comp)}:")
        for a in comp:
            print(f"    {a} -> {', '.join(sorted(b for b in edges[a] if b in comp))}")
    if not found:
        print(f"{root}: no import circle among {len(mods)} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
