#!/usr/bin/env python3
"""Finds import circles between the modules of each crate of the workspace.

A module (a file: foo.rs or foo/mod.rs) depends on another when its code (a `use` or a path in
an expression) names an item of the other through `crate::`, `super::` or `self::`.
Re-exports (`pub use`) are followed to the module that defines the item and are not
dependencies themselves (a facade), and a child naming its ancestors' items is not one either,
nor a parent naming its children's (a child is part of its parent). The modules of a crate and
these dependencies must form no circle.

Test code (`#[cfg(test)]` modules, inline or in files) is left out.

    python3 scripts/module_cycles.py            # every crate; exit status 1 on a circle
    python3 scripts/module_cycles.py CRATE/src  # one crate
    python3 scripts/module_cycles.py --edges    # and print the dependencies found
    python3 scripts/module_cycles.py --self-test  # check the checker on crates made up for it
"""

import os
import re
import sys
from collections import defaultdict

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def strip_comments_and_strings(text):
    """The code of `text` with comments, string and char literals blanked (kept line breaks)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 8]) and (i == 0 or not text[i - 1].isalnum()):
            m = re.match(r'r(#*)"', text[i:])
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}'); a lifetime ('a) is left as it is.
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def drop_test_modules(code):
    """`code` without `#[cfg(test)] mod name { ... }` blocks; returns it and the names of
    test-only file modules (`#[cfg(test)] mod name;`)."""
    test_files = set(re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code))
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", code)
        if not m:
            return code, test_files
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        code = code[:m.start()] + "\n" * code.count("\n", m.start(), j) + code[j:]


def expand_use_tree(tree):
    """`a::{b, c::{d, e as f}, self}` -> [[a, b], [a, c, d], [a, c, e], [a]]."""

    def parse(s, prefix):
        out = []
        depth, start, parts = 0, 0, []
        for k, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:k])
                start = k + 1
        parts.append(s[start:])
        for part in (p.strip() for p in parts):
            if not part:
                continue
            brace = part.find("{")
            if brace >= 0:
                head = [x.strip() for x in part[:brace].split("::") if x.strip()]
                out += parse(part[brace + 1:part.rfind("}")], prefix + head)
                continue
            part = re.sub(r"\s+as\s+\w+$", "", part)
            segs = [x.strip() for x in part.split("::") if x.strip() and x.strip() != "*"]
            out.append(prefix + [x for x in segs if x != "self"])
        return out

    return parse(" ".join(tree.split()), [])


class Crate:
    def __init__(self, name, src):
        self.name = name
        self.src = src
        self.files = {}  # module path (tuple) -> code
        self.reexports = defaultdict(dict)  # module -> {name: absolute path}
        self.uses = defaultdict(list)  # module -> [absolute path]

    def load(self, root_file):
        self._load(os.path.join(self.src, root_file), ())

    def _load(self, path, module):
        with open(path, encoding="utf-8") as f:
            code = strip_comments_and_strings(f.read())
        code, test_files = drop_test_modules(code)
        self.files[module] = code
        here = os.path.dirname(path)
        base = os.path.basename(path)
        child_dir = here if base in ("lib.rs", "main.rs", "mod.rs") else os.path.join(here, base[:-3])
        for m in re.finditer(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code, re.M):
            name = m.group(1)
            if name in test_files:
                continue
            for cand in (os.path.join(child_dir, name + ".rs"), os.path.join(child_dir, name, "mod.rs")):
                if os.path.exists(cand):
                    self._load(cand, module + (name,))
                    break

    def absolute(self, module, segs):
        """The path `segs` written in `module`, from the crate root; None when it leaves it."""
        if not segs:
            return None
        if segs[0] == "crate":
            return tuple(segs[1:])
        cur = list(module)
        k = 0
        if segs[0] == "self":
            k = 1
        while k < len(segs) and segs[k] == "super":
            if not cur:
                return None
            cur.pop()
            k += 1
        if k == 0:
            # A path starting with a child module's name (2018 uniform paths).
            if tuple(module) + (segs[0],) in self.files:
                return tuple(module) + tuple(segs)
            return None
        return tuple(cur) + tuple(segs[k:])

    def collect(self):
        for module, code in self.files.items():
            for m in re.finditer(r"(?:^|[;{}\s])(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", code):
                public = bool(m.group(1))
                for segs in expand_use_tree(m.group(2)):
                    path = self.absolute(module, segs)
                    if path is None:
                        continue
                    if public:
                        if path:
                            self.reexports[module][path[-1]] = path
                    else:
                        self.uses[module].append(path)
            # Paths in code (and in private `use` lines: already counted, harmless twice).
            for m in re.finditer(r"(?<![\w:])((?:crate|self|super)(?:::(?:super|\w+))+)", code):
                segs = m.group(1).split("::")
                if segs[0] == "self" and len(segs) > 1 and segs[1] not in ("super",) and \
                        tuple(module) + (segs[1],) not in self.files:
                    continue
                path = self.absolute(module, segs)
                if path is not None:
                    self.uses[module].append(path)

    def resolve(self, path, depth=0):
        """The module that defines the item at `path` (following re-exports)."""
        best = ()
        for k in range(len(path), -1, -1):
            if tuple(path[:k]) in self.files:
                best = tuple(path[:k])
                break
        rest = path[len(best):]
        if rest and depth < 8:
            target = self.reexports.get(best, {}).get(rest[0])
            if target and tuple(target) != tuple(path):
                return self.resolve(tuple(target) + tuple(rest[1:]), depth + 1)
        return best

    def edges(self):
        """(from module, to module) for every dependency between two modules neither of which
        holds the other."""
        out = set()
        for module, paths in self.uses.items():
            for path in paths:
                target = self.resolve(path)
                common = 0
                while common < min(len(module), len(target)) and module[common] == target[common]:
                    common += 1
                if common == len(module) or common == len(target):
                    continue  # an ancestor or a descendant
                out.add((module, target))
        return out


def cycles(edges):
    """Strongly connected sets of more than one module, each with the graph."""
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    found = []
    index, low, stack, on, counter = {}, {}, [], set(), [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                found.append((sorted(comp), graph))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def crates(root=ROOT, only=None):
    for entry in sorted(os.listdir(root)):
        src = os.path.join(root, entry, "src")
        if only and os.path.realpath(src) != os.path.realpath(only):
            continue
        if not os.path.isdir(src) or entry == "target":
            continue
        for root_file in ("lib.rs", "main.rs"):
            if os.path.exists(os.path.join(src, root_file)):
                c = Crate(f"{entry} ({root_file})", src)
                c.load(root_file)
                c.collect()
                yield c
                break
        bins = os.path.join(src, "bin")
        if os.path.isdir(bins):
            for b in sorted(os.listdir(bins)):
                if b.endswith(".rs"):
                    c = Crate(f"{entry} (bin/{b})", bins)
                    c.load(b)
                    c.collect()
                    yield c


def self_test():
    """The checker on made-up crates: it must find a circle through `use` trees, paths in code
    and re-exports, and none where a child names its parent or a facade re-exports."""
    import tempfile

    files = {
        # a -> b through a path in code, b -> a through a re-export at the root.
        "circle/src/lib.rs": "pub mod a;\npub mod b;\npub use a::Thing;\n",
        "circle/src/a.rs": "pub struct Thing;\nfn f() { crate::b::g(); }\n",
        "circle/src/b.rs": "use crate::{Thing as T};\npub fn g() {}\n",
        # Three deep: x/one -> x/two through super::, x/two -> x/one through a use tree.
        "deep/src/lib.rs": "mod x;\n",
        "deep/src/x/mod.rs": "mod one;\nmod two;\npub(crate) struct Shared;\n",
        "deep/src/x/one.rs": "use super::two::B; // crate::x::two in a comment\npub struct A;\n",
        "deep/src/x/two.rs": "use super::{one::{self, A}, Shared};\npub struct B;\n",
        # No circle: a child naming its parent, the parent its child, a facade, a test module.
        "clean/src/lib.rs": "pub mod p;\npub mod q;\npub use p::P;\npub const K: u8 = 1;\n",
        "clean/src/p/mod.rs": "mod c;\npub struct P;\nfn f() { c::g(); }\n",
        "clean/src/p/c.rs": "use super::P;\nuse crate::K;\npub fn g() { let _ = \"crate::q::Q\"; }\n",
        "clean/src/q.rs": "use crate::P;\npub struct Q;\n#[cfg(test)]\nmod tests {\n    use crate::p::P;\n}\n",
    }
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        found = {}
        for c in crates(d):
            found[c.name.split()[0]] = [comp for comp, _ in cycles(c.edges())]
    expected = {
        "circle": [[("a",), ("b",)]],
        "deep": [[("x", "one"), ("x", "two")]],
        "clean": [],
    }
    if found != expected:
        print(f"self-test failed: found {found}, expected {expected}")
        return 1
    print("self-test: ok")
    return 0


def main():
    if "--self-test" in sys.argv:
        return self_test()
    show = "--edges" in sys.argv
    only = next((a for a in sys.argv[1:] if not a.startswith("--")), None)
    bad = 0
    modules = 0
    name = lambda m: "::".join(m) or "crate"
    for c in crates(only=only):
        modules += len(c.files)
        edges = c.edges()
        if show:
            for a, b in sorted(edges):
                print(f"{c.name}: {name(a)} -> {name(b)}")
        for comp, graph in cycles(edges):
            bad += 1
            inner = [f"{name(a)} -> {name(b)}" for a in comp for b in sorted(graph[a]) if b in comp]
            print(f"{c.name}: an import circle: {', '.join(inner)}")
    if bad:
        print(f"{bad} import circle(s)")
        return 1
    print(f"no import circles ({modules} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
