#!/usr/bin/env python3
"""The module graph of every crate: no circles, and no import from a lower layer up.

For each crate under crates/, every source file is a module (`a/b.rs` and `a/b/mod.rs` are `a::b`).
An edge M -> T is any path in M's code that names module T: `use crate::..`, `super::..`, `self::..`
(use trees with braces expanded) and paths written inline (`crate::heap::Heap::new`). A name that a
module re-exports (`pub use x::Y`) counts as an edge to where it comes from. Unit-test modules
(`#[cfg(test)] mod tests` at the end of a file, and files named `tests.rs`) are left out: a test may
look anywhere.

Checks:
1. no circle in any crate (a module reaching itself through others, or a child and its parent naming
   each other);
2. no module names an item defined in its crate's root (`crate::X` with X written in lib.rs, not
   re-exported from a module): everything sits below the root, so such an import runs back up;
3. a crate whose modules import each other has a layout table in lib.rs headed `Layers, top to bottom`
   (rows of `| \\`module\\` | ... |`): a module names only modules listed below it (or its own
   descendants); a module missing from the table, or a row naming no module, is an error.

Exit 1 with the offending edges or circles, 0 with a one-line summary per crate.
"""

import re
import sys
from pathlib import Path

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    out = []
    for line in src.splitlines():
        # Drop `//` comments (doc comments included), not inside strings: good enough for this tree.
        i = line.find("//")
        if i >= 0 and line[:i].count('"') % 2 == 0:
            line = line[:i]
        out.append(line)
    return "\n".join(out)


def strip_test_module(src: str) -> str:
    m = re.search(r"#\[cfg\((?:all\()?test[^\]]*\]\s*(?:#\[[^\]]*\]\s*)*mod\s+tests\s*\{", src)
    return src[: m.start()] if m else src


def expand_use_tree(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` -> [`a::b`, `a::c::d`, `a::c::e`] (renames and globs keep their path)."""
    # A rename (`x as y`) keeps its path: mark it before the spaces go, so a name that merely contains
    # "as" (`hash`, `class`) is left whole.
    tree = re.sub(r"\s+as\s+", "@", tree)
    tree = re.sub(r"\s+", "", tree)

    def split_top(s: str) -> list[str]:
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        return parts

    def go(prefix: str, s: str) -> list[str]:
        i = s.find("{")
        if i < 0:
            s = s.split("@")[0]
            return [prefix + s]
        head, body = s[:i], s[i + 1 : s.rfind("}")]
        out = []
        for part in split_top(body):
            out.extend(go(prefix + head, part))
        return out

    return go("", tree)


class Crate:
    def __init__(self, root: Path):
        self.root = root
        self.src = root / "src"
        self.modules: dict[str, Path] = {}
        for f in sorted(self.src.rglob("*.rs")):
            rel = f.relative_to(self.src).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "mod":
                parts = parts[:-1]
            if parts == ["main"] and (self.src / "lib.rs").exists():
                continue  # the binary beside a library is a crate of its own
            if parts in (["lib"], ["main"]):
                parts = []
            if parts and parts[-1] == "tests":
                continue
            # Binaries (src/bin/*) are crates of their own.
            if parts and parts[0] == "bin":
                continue
            self.modules["::".join(parts)] = f
        # Modules declared only for tests (`#[cfg(test)] mod x;`) are tests too.
        for m, f in list(self.modules.items()):
            text = f.read_text()
            for t in re.findall(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text):
                # Unless it is declared for other builds too (`forward`: where the heap does not run).
                if len(re.findall(rf"\bmod\s+{t}\s*;", text)) > 1:
                    continue
                self.modules.pop("::".join([x for x in [m, t] if x]), None)
        self.code = {m: strip_test_module(strip_comments(p.read_text())) for m, p in self.modules.items()}
        self.reexports = {m: self._reexports(m) for m in self.modules}
        self.crate_paths: dict[str, set[str]] = {m: set() for m in self.modules}

    def _paths(self, m: str) -> list[str]:
        """Every path in module m's code, made absolute (`a::b::C`, without `crate::`)."""
        code = self.code[m]
        raw = []
        for u in re.finditer(r"\buse\s+([^;]+);", code):
            raw.extend(expand_use_tree(u.group(1)))
        body = re.sub(r"\buse\s+[^;]+;", " ", code)
        raw.extend(re.findall(rf"\b(?:crate|super|self)(?:::{IDENT})+", body))
        out = []
        for p in raw:
            a = self._absolute(m, p)
            if a is not None:
                out.append(a)
                if p.startswith("crate::"):
                    self.crate_paths.setdefault(m, set()).add(a)
        return out

    def _absolute(self, m: str, p: str) -> str | None:
        parts = p.split("::")
        here = m.split("::") if m else []
        if parts[0] == "crate":
            return "::".join(parts[1:])
        if parts[0] in ("super", "self"):
            base = list(here)
            while parts and parts[0] in ("super", "self"):
                if parts[0] == "super":
                    if not base:
                        return None
                    base.pop()
                parts = parts[1:]
            return "::".join(base + parts)
        # A relative path `child::x` from a module that has such a child.
        first = "::".join(here + [parts[0]])
        if first in self.modules:
            return "::".join(here + parts)
        return None

    def _reexports(self, m: str) -> dict[str, str]:
        out = {}
        for u in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", self.code[m]):
            for p in expand_use_tree(u.group(1)):
                a = self._absolute(m, p)
                if a is None:
                    continue
                name = p.split("::")[-1].split(" as ")[-1]
                out[name] = a
        return out

    def resolve(self, path: str, depth: int = 0) -> str | None:
        """The module a path lands in (the longest module prefix), through re-exports."""
        parts = path.split("::") if path else []
        for k in range(len(parts), -1, -1):
            mod = "::".join(parts[:k])
            if mod in self.modules:
                rest = parts[k:]
                if rest and depth < 8 and rest[0] in self.reexports.get(mod, {}):
                    target = self.reexports[mod][rest[0]]
                    if target != path:
                        return self.resolve(target, depth + 1)
                return mod
        return None

    def edges(self) -> dict[str, set[str]]:
        g: dict[str, set[str]] = {m: set() for m in self.modules}
        for m in self.modules:
            if m == "":
                continue  # the crate root declares and re-exports everything
            for p in self._paths(m):
                t = self.resolve(p)
                if t is None or t == m or (t == "" and p not in self.crate_paths[m]):
                    # `super::` from a module written inline in a file is not the file's parent: only
                    # a `crate::` path is taken to name the root for certain.
                    continue
                if t.startswith(m + "::"):
                    # A module naming its own descendant is fine unless the descendant names it back,
                    # which the circle check finds.
                    pass
                g[m].add(t)
        return g

    def layout_table(self) -> list[str] | None:
        lib = self.src / "lib.rs"
        if not lib.exists():
            return None
        text = lib.read_text()
        if "//! Layers, top to bottom" not in text:
            return None
        rows = re.findall(r"^//! \| \[?`(?:mod@)?([a-z_:/]+)/?`\]? \|", text, flags=re.M)
        return [r.rstrip("/").replace("/", "::") for r in rows] or None


def circles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
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

    for v in g:
        if v not in index:
            visit(v)
    return out


def top_layer(m: str, table: list[str]) -> str | None:
    """The table row a module belongs to: itself, or its nearest listed ancestor."""
    parts = m.split("::")
    for k in range(len(parts), 0, -1):
        name = "::".join(parts[:k])
        if name in table:
            return name
    return None


def main() -> int:
    top = Path(__file__).resolve().parents[2]
    failed = False
    for root in sorted((top / "crates").iterdir()):
        if not (root / "src").is_dir():
            continue
        crate = Crate(root)
        g = crate.edges()
        name = root.name
        bad_before = failed
        failed = False
        n_edges = sum(len(v) for v in g.values())
        for comp in circles(g):
            failed = True
            print(f"{name}: circle among {', '.join(comp)}")
            for a in comp:
                for b in sorted(g[a] & set(comp)):
                    print(f"    {a} -> {b}")
        for a in sorted(g):
            if "" in g[a]:
                # An item defined in the crate root itself (not re-exported from a module): every module
                # sits below the root, so naming it runs back up. Constants and helpers belong in a leaf.
                failed = True
                print(f"{name}: `{a}` names an item defined in the crate root (lib.rs/main.rs)")
            g[a].discard("")
        table = crate.layout_table()
        if table is None and n_edges > 0:
            failed = True
            print(f"{name}: modules import each other but lib.rs has no `Layers, top to bottom` table")
        upward = 0
        if table:
            for row in table:
                if row not in crate.modules:
                    failed = True
                    print(f"{name}: the layout table lists `{row}`, which is not a module")
            rank = {m: i for i, m in enumerate(table)}
            for m in sorted(crate.modules):
                if m and top_layer(m, table) is None:
                    failed = True
                    print(f"{name}: module `{m}` is not in lib.rs's layout table")
            for a in sorted(g):
                la = top_layer(a, table) if a else None
                for b in sorted(g[a]):
                    lb = top_layer(b, table)
                    if la is None or lb is None or la == lb:
                        continue
                    if rank[lb] <= rank[la]:
                        failed = True
                        upward += 1
                        print(f"{name}: `{a}` names `{b}`, which its layout table lists above it")
        layers = f", {len(table)} layers in order" if table else ""
        if not failed:
            print(f"{name}: {len(crate.modules)} modules, {n_edges} edges, no circle{layers}")
        failed = failed or bad_before
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
