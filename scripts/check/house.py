#!/usr/bin/env python3
"""The house rules a reviewer would otherwise check by eye, so they stay true:

1. README.md is a front page: at most 300 lines, and no commit hash in it.
2. One concept per file: no source file of the production crates (hopless, hopless-kv, hopless-server,
   hopless-malloc) has more than 600 lines before its unit-test module (`#[cfg(test)] mod ...`).
3. One module-file style per crate: a module with children is `foo/mod.rs` everywhere in a crate, or
   `foo.rs` beside `foo/` everywhere, not both.
4. Code says what is true now: no comment in any crate's source, test or bench names a date, an issue
   number, a work session or a commit hash, and none says "the seed" for the write-ups the project
   started from (the README says so once). A random or hash seed is a seed: only the write-up sense is
   refused (`the seed`, `the seed's`, `seed KV`, `seed's`).

The layout tables are checked by layers.py beside this file.
Exit 1 with every finding, 0 with a one-line summary.
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_MAX_LINES = 300
FILE_MAX_LINES = 600
PRODUCTION = ["hopless", "hopless-kv", "hopless-server", "hopless-malloc"]

# What a comment must not carry: where a change or figure came from in time.
HISTORY = [
    (re.compile(r"\b20\d\d-\d\d-\d\d\b"), "a date"),
    (re.compile(r"\bissues? #?\d+", re.I), "an issue number"),
    (re.compile(r"\b(?:this|that|the \w+|earlier|previous|next) session\b", re.I), "a work session"),
    (re.compile(r"\bstop \d+\b", re.I), "a stop number"),
    (re.compile(r"\bused to be\b|\buntil commit\b|\bas [\w-]+ did until\b", re.I), "what the code did before"),
    (re.compile(r"\bthe seed(?:'s)?\b|\bseed(?:'s)? (?:KV|kv|write-up|pool|workload|design|constants?)\b"),
     "the write-ups named as 'the seed'"),
]


def commit_hashes(line: str) -> list[str]:
    """Words of 7 to 40 hex digits with a letter and a digit in them, not written as `0x...`."""
    out = []
    for m in re.finditer(r"\b[0-9a-f]{7,40}\b", line):
        word = m.group(0)
        if re.search(r"[a-f]", word) and re.search(r"\d", word) and "0x" + word not in line:
            out.append(word)
    return out


def test_module_start(lines: list[str]) -> int:
    """The index of the line that opens the file's unit-test module, or len(lines)."""
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]") or line.startswith("#[cfg(all(test"):
            for nxt in lines[i + 1 : i + 4]:
                if re.match(r"(pub(\([^)]*\))? )?mod \w+", nxt):
                    return i
                if not nxt.startswith("#["):
                    break
    return len(lines)


def comments(text: str) -> list[tuple[int, str]]:
    """(line number, comment text) for every `//` comment (doc comments included) and block comment."""
    out = []
    in_block = False
    for n, line in enumerate(text.splitlines(), 1):
        if in_block:
            out.append((n, line))
            if "*/" in line:
                in_block = False
            continue
        i = line.find("//")
        # A `//` inside a string literal is not a comment (good enough for this tree).
        if i >= 0 and line[:i].count('"') % 2 == 0:
            out.append((n, line[i:]))
        elif "/*" in line and line[: line.find("/*")].count('"') % 2 == 0:
            out.append((n, line[line.find("/*") :]))
            in_block = "*/" not in line[line.find("/*") :]
    return out


def tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / p for p in out.stdout.split()]


def main() -> int:
    problems = []

    readme = (ROOT / "README.md").read_text().splitlines()
    if len(readme) > README_MAX_LINES:
        problems.append(f"README.md: {len(readme)} lines (at most {README_MAX_LINES}: the rest belongs in docs/)")
    for n, line in enumerate(readme, 1):
        for word in commit_hashes(line):
            problems.append(f"README.md:{n}: `{word}` looks like a commit hash")

    longest = (0, "")
    for crate in PRODUCTION:
        for f in sorted((ROOT / "crates" / crate / "src").rglob("*.rs")):
            lines = f.read_text().splitlines()
            n = test_module_start(lines)
            longest = max(longest, (n, str(f.relative_to(ROOT))))
            if n > FILE_MAX_LINES:
                problems.append(
                    f"{f.relative_to(ROOT)}: {n} lines before its tests (at most {FILE_MAX_LINES}: split it by concept)"
                )

    for src in sorted((ROOT / "crates").glob("*/src")):
        mod_rs = [d for d in src.rglob("*") if d.is_dir() and (d / "mod.rs").exists()]
        beside = [d for d in src.rglob("*") if d.is_dir() and d.with_suffix(".rs").exists()]
        if mod_rs and beside:
            problems.append(
                f"{src.relative_to(ROOT)}: both module-file styles: {mod_rs[0].relative_to(src)}/mod.rs and "
                f"{beside[0].relative_to(src)}.rs (choose one per crate)"
            )

    files = tracked("crates/*.rs", "fuzz/*.rs")
    for f in files:
        for n, text in comments(f.read_text()):
            for pattern, what in HISTORY:
                m = pattern.search(text)
                if m:
                    problems.append(f"{f.relative_to(ROOT)}:{n}: a comment names {what}: `{m.group(0)}`")
            for word in commit_hashes(text):
                problems.append(f"{f.relative_to(ROOT)}:{n}: a comment names a commit hash: `{word}`")

    for p in problems:
        print(p)
    if problems:
        return 1
    print(
        f"house: README {len(readme)} lines; longest production file {longest[0]} lines before its tests "
        f"({longest[1]}); {len(files)} source files' comments free of history"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
