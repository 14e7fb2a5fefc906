#!/usr/bin/env bash
# No Rust panic machinery may be reachable from libhopless.so's C entry points: a malloc that panics
# unwinds into C code (or aborts with a message that itself allocates).
#
# Builds libhopless.so (release), disassembles it, builds a call graph and walks it breadth-first from
# the exported roots (malloc, free, calloc, realloc, reallocarray, posix_memalign, aligned_alloc,
# memalign, valloc, pvalloc, malloc_usable_size, malloc_trim, and every other function it exports).
# Fails (exit 1) listing, for every reachable call site into a panic function (names in PANIC_MARKS
# below), the path root -> ... -> panic function and the source line of the call site (addr2line; the
# release profile keeps line tables).
#
# Edges followed:
#   - direct calls and jumps (call/jmp/jcc ADDR), including tail jumps into another function (also into
#     its middle: the edge goes to the function containing ADDR);
#   - calls and jumps through a GOT slot (`call *X(%rip)  # SLOT`): rustc builds x86-64 code without a
#     PLT, so calls to functions outside this crate's codegen unit, including core's panic functions,
#     are of this form; the slot is resolved through the dynamic relocations (R_X86_64_RELATIVE: a
#     function of this library; GLOB_DAT/JUMP_SLOT: a symbol, followed when this library defines it);
#   - PLT stubs and external symbols are leaves (still matched against PANIC_MARKS: _Unwind_Resume@plt).
#   - functions whose address a reached function takes (`lea fn(%rip),%reg`, or `mov SLOT(%rip),%reg` of
#     a GOT slot), conservatively, as if called: LLVM hoists a GOT load into a register and calls through
#     it (`call *%r12`), and callbacks handed to libc (pthread key destructor, fork handlers) run because
#     of the root's call.
# Not followed: other indirect calls (`call *0x18(%rax)`: trait objects, function pointers read from
# memory); those in reached functions are printed as warnings. Register jumps (`jmp *%rax`) are jump
# tables inside one function and are ignored. Panic functions are sinks: the walk does not go inside.
#
# Self-test: the same walk from functions of std that are known to reach a panic (raw_vec's
# handle_error, handle_alloc_error, core::fmt::write) must find one, or the check is broken.
#
# Environment:
#   HOPLESS_SO=path            check this library instead of building target/release/libhopless.so
#   NO_PANIC_ROOTS="a b"       walk from these functions instead (exported names or demangled names)
#   NO_PANIC_SELFTEST_ROOTS="a b"  the self-test's roots
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -z "${HOPLESS_SO:-}" ]; then
  cargo build --release -p hopless-malloc --quiet
  target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
  so=$target_dir/release/libhopless.so
else
  so=$HOPLESS_SO
fi
for tool in objdump nm addr2line python3; do
  command -v "$tool" >/dev/null || { echo "check_no_panic: $tool not found (binutils, python3)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
objdump -d --no-show-raw-insn -C "$so" > "$tmp/dis"
objdump -R "$so" > "$tmp/rel"
nm -D --defined-only "$so" > "$tmp/dynsym"
python3 - "$so" "$tmp" <<'PY'
import bisect, os, re, subprocess, sys
from collections import deque

# Names that mark Rust panic machinery (demangled; substring match). The last group goes beyond the
# core list: functions that exist only to panic (RefCell borrow failures, Vec capacity overflow, the
# allocation-failure handler, str slicing errors).
PANIC_MARKS = [
    "panicking", "panic_bounds_check", "panic_fmt", "rust_begin_unwind", "begin_panic",
    "unwrap_failed", "expect_failed", "slice_index", "slice_end_index", "slice_start_index",
    "core::panic", "std::panic", "rust_panic", "__rust_start_panic", "_Unwind_Resume",
    "panic_already_borrowed", "panic_already_mutably_borrowed", "capacity_overflow",
    "handle_alloc_error", "__rust_alloc_error_handler", "slice_error_fail", "panic_const",
]
ROOTS = "malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign valloc pvalloc malloc_usable_size malloc_trim"
SELFTEST = "alloc::raw_vec::handle_error alloc::alloc::handle_alloc_error core::fmt::write"

so, tmp = sys.argv[1], sys.argv[2]
roots = os.environ.get("NO_PANIC_ROOTS", ROOTS).split()
selftest = os.environ.get("NO_PANIC_SELFTEST_ROOTS", SELFTEST).split()

def is_panic(name):
    return any(m in name for m in PANIC_MARKS)

# --- functions and instructions ------------------------------------------------------------------------
HEAD = re.compile(r"^([0-9a-f]+) <(.*)>:$")
INS = re.compile(r"^\s+([0-9a-f]+):\s+(.*)$")
DIRECT = re.compile(r"(?:^|\s)(call|jmp|j[a-z]{1,4})\s+([0-9a-f]+) <")
VIA_SLOT = re.compile(r"(?:^|\s)(call|jmp)\s+\*0x[0-9a-f]+\(%rip\)\s+# ([0-9a-f]+)")
INDIRECT = re.compile(r"(?:^|\s)(call|jmp)\s+\*")
RIP_REF = re.compile(r"(?:^|\s)(lea|mov)\s+-?0x[0-9a-f]+\(%rip\),%(\w+)\s+# ([0-9a-f]+)")

names = {}   # start address -> demangled name
body = {}    # start address -> [(address, instruction text)]
cur = None
with open(f"{tmp}/dis") as f:
    for line in f:
        line = line.rstrip("\n")
        m = HEAD.match(line)
        if m:
            cur = int(m.group(1), 16)
            names[cur] = m.group(2)
            body[cur] = []
            continue
        m = INS.match(line)
        if m and cur is not None:
            body[cur].append((int(m.group(1), 16), m.group(2)))
starts = sorted(names)

def containing(addr):
    i = bisect.bisect_right(starts, addr) - 1
    return starts[i] if i >= 0 else None

# Exported symbols (several names can share an address: cfree and free).
exported = {}
for line in open(f"{tmp}/dynsym"):
    p = line.split()
    if len(p) == 3 and p[1] in "TtWi":
        exported[p[2].split("@")[0]] = int(p[0], 16)

# By default every function the library exports is a root, not only the malloc family: a program or
# a probe can call any of them (hopless_probe_intrusive_pop once reached a bounds-check panic).
if "NO_PANIC_ROOTS" not in os.environ:
    roots += sorted(set(exported) - set(roots))

# Name the roots as exported (objdump labels one of several aliases: __libc_realloc for realloc).
for r in ROOTS.split():
    if exported.get(r) in names:
        names[exported[r]] = r

# GOT slots: address -> ("fn", start) for a function of this library, ("ext", name) for a symbol.
slots = {}
for line in open(f"{tmp}/rel"):
    p = line.split()
    if len(p) != 3 or not p[1].startswith("R_X86_64_"):
        continue
    slot, kind, val = int(p[0], 16), p[1], p[2]
    if kind == "R_X86_64_RELATIVE" and val.startswith("*ABS*+"):
        target = int(val[6:], 16)
        if target in names:
            slots[slot] = ("fn", target)
    elif kind in ("R_X86_64_GLOB_DAT", "R_X86_64_JUMP_SLOT"):
        sym = val.split("@")[0].split("+")[0]
        slots[slot] = ("fn", exported[sym]) if exported.get(sym) in names else ("ext", sym)

# --- the call graph ------------------------------------------------------------------------------------
# Nodes: a function's start address, or ("ext", name) for a symbol outside the library. An edge is
# (call site, callee, how): how is "call" (direct or through a GOT slot), "reg" (a call through a register
# that this function loaded with a function's address) or "ref" (the function only takes the address:
# a callback it hands on, which may run later because of this call).
edges = {}      # node -> [(call site, callee node, how)]
indirect = {}   # start -> [(site, text)]: calls the walk cannot resolve
got_edges = 0
REG_CALL = re.compile(r"(?:^|\s)(call|jmp)\s+\*%(\w+)$")
for start, ins in body.items():
    out, ind, loaded = [], [], {}
    leaf = names[start].endswith("@plt")
    for addr, text in ins:
        if leaf:
            break
        m = DIRECT.search(text)
        if m:
            t = containing(int(m.group(2), 16))
            if t is not None and t != start:
                out.append((addr, t, "call"))
            continue
        m = VIA_SLOT.search(text)
        if m:
            s = slots.get(int(m.group(2), 16))
            if s is None:
                ind.append((addr, text))
            else:
                got_edges += 1
                out.append((addr, s[1] if s[0] == "fn" else ("ext", s[1]), "call"))
            continue
        m = REG_CALL.search(" ".join(text.split()))
        if m and m.group(2) in loaded:
            out.append((addr, loaded[m.group(2)], "reg"))
            continue
        m = INDIRECT.search(text)
        if m:
            if m.group(1) == "call":
                ind.append((addr, text))
            continue
        m = RIP_REF.search(text)
        if m:
            a = int(m.group(3), 16)
            if m.group(1) == "mov":
                s = slots.get(a)
                if s and s[0] == "ext":
                    loaded[m.group(2)] = ("ext", s[1])  # a symbol's address, for a call through the register
                    continue
                a = s[1] if s else None
            if a in names and a != start:
                loaded[m.group(2)] = a
                out.append((addr, a, "ref"))
    edges[start], indirect[start] = out, ind

def name_of(node):
    return node[1] if isinstance(node, tuple) else names[node]

def resolve(root):
    if root in exported and exported[root] in names:
        return exported[root]
    hits = [a for a, n in names.items() if n == root]
    return hits[0] if hits else None

def walk(root_names):
    """BFS from the roots: (parent map, panic call sites [(caller, site, panic callee, how)])."""
    parent, queue = {}, deque()
    for r in root_names:
        a = resolve(r)
        if a is not None and a not in parent:
            parent[a] = (None, None, None, r)
            queue.append(a)
    sites = []
    while queue:
        node = queue.popleft()
        if isinstance(node, tuple) or is_panic(names[node]):
            continue  # a leaf, or a sink
        for site, callee, how in edges[node]:
            if is_panic(name_of(callee)):
                sites.append((node, site, callee, how))
            if callee not in parent:
                parent[callee] = (node, site, how, None)
                queue.append(callee)
    return parent, sites

def path_to(parent, node):
    """[(function, call site in the previous one, how)], root first."""
    out = []
    while node is not None:
        prev, site, how, _ = parent[node]
        out.append((node, site, how))
        node = prev
    return out[::-1]

def root_of(parent, node):
    return parent[path_to(parent, node)[0][0]][3]

# --- addr2line, in one batch -----------------------------------------------------------------------------
def locate(addrs):
    addrs = sorted(set(addrs))
    if not addrs:
        return {}
    res = subprocess.run(["addr2line", "-e", so, "-f", "-i", "-C", "-a"] + [hex(a) for a in addrs],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    here = os.getcwd() + "/"
    out, cur = {}, None
    i = 0
    while i < len(res):
        if res[i].startswith("0x"):
            cur = int(res[i], 16)
            out[cur] = []
            i += 1
            continue
        fn, loc = res[i], res[i + 1] if i + 1 < len(res) else "??"
        loc = re.sub(r" \(discriminator \d+\)", "", loc).replace(here, "")
        loc = re.sub(r"^/rustc/[0-9a-f]+/", "<rust>/", loc)
        out[cur].append((fn, loc))
        i += 2
    return out

def where(locs, addr):
    """Innermost source line of a call site, then the functions it is inlined into."""
    frames = locs.get(addr) or [("??", "??")]
    s = frames[0][1]
    if len(frames) > 1:
        s += "  (inlined: " + " <- ".join(f"{short(fn)} {loc}" for fn, loc in frames[1:]) + ")"
    return s

def where_short(locs, addr):
    """Innermost source line of a call site, and the first line of this project's code around it."""
    frames = locs.get(addr) or [("??", "??")]
    s = frames[0][1]
    if not s.startswith("crates/"):
        mine = [f"{short(fn)} {loc}" for fn, loc in frames[1:] if loc.startswith("crates/")]
        if mine:
            s += f" in {mine[0]}"
    return s

def short(fn):
    """`hopless::heap::Heap<hopless::platform::OsPages>::free_ptr` -> `free_ptr`."""
    depth, plain = 0, ""
    for ch in fn:
        depth += ch == "<"
        if depth == 0:
            plain += ch
        depth -= ch == ">" and depth > 0
    return plain.split("::")[-1] or fn

# --- a library with no panic machinery at all ----------------------------------------------------------
# Built without `std` (release, panic = "abort", x86-64 Linux: see hopless-malloc's lib.rs), the library
# has no panic function for a path to reach: LTO keeps a panic only where some function calls it. Then
# there is nothing for the walk to find, nor for its self-test: say so, having looked at every function
# and every symbol the library imports.
imported = [l.split()[-1] for l in open(f"{tmp}/rel") if re.match(r"^[0-9a-f]+\s+R_X86_64_", l)]
if not any(is_panic(n) for n in names.values()) and not any(is_panic(n) for n in imported):
    print(f"ok: no panic machinery in the library at all: none of its {len(names)} functions and "
          f"{len(imported)} dynamic relocations names one ({len(PANIC_MARKS)} marks)")
    sys.exit(0)

# --- self-test: the walk must find a panic where one is known to be -----------------------------------
present = [r for r in selftest if resolve(r) is not None]
parent, found = walk(present)
if not found:
    # Without std (see above) the known roots may be missing or reach nothing; any function of this
    # build with a call into a panic function serves (a blind walk finds no such call at all).
    callers = sorted(n for n in edges if not isinstance(n, tuple) and not is_panic(names[n])
                     and any(is_panic(name_of(c)) for _, c, _ in edges[n]))
    if callers:
        present = [names[callers[0]]]
        parent, found = walk(present)
if not found:
    print(f"check_no_panic: SELF-TEST FAILED: the library has panic functions, but no panic is reachable "
          f"from {' '.join(present) or 'the self-test roots'} and no call into one was found: the walk is "
          "blind (set NO_PANIC_SELFTEST_ROOTS to functions that reach a panic)", file=sys.stderr)
    sys.exit(2)
fn, site, callee, _ = found[0]
print("self-test ok: " + " -> ".join(name_of(n) for n, _, _ in path_to(parent, fn)) + " -> " + name_of(callee))

# --- the real walk -------------------------------------------------------------------------------------
missing = [r for r in roots if resolve(r) is None]
if missing:
    print(f"check_no_panic: roots not found in {so}: {' '.join(missing)}", file=sys.stderr)
    sys.exit(2)
parent, found = walk(roots)
reached = [n for n in parent if not isinstance(n, tuple)]
print(f"walked {len(reached)} functions from {len(roots)} roots "
      f"({sum(len(e) for e in edges.values())} edges in the library, {got_edges} calls through GOT slots)")

locs = locate([f[1] for f in found] + [parent[n][1] for n in parent if parent[n][1] is not None]
              + [a for n in reached for a, _ in indirect[n]])

ind = [(n, a, t) for n in reached if not is_panic(names[n]) for a, t in indirect[n]]
if ind:
    print(f"\nWARNING: {len(ind)} indirect call(s) in reached functions could not be resolved and are not "
          "followed:", file=sys.stderr)
    for n, a, t in ind:
        print(f"  {names[n]}  {a:#x}: {' '.join(t.split())}  [{where(locs, a)}]", file=sys.stderr)
refs = sorted({(names[n], name_of(c)) for n in reached if not is_panic(names[n])
               for _, c, how in edges[n]
               if how == "ref" and not any(c == c2 and h2 != "ref" for _, c2, h2 in edges[n])})
if refs:
    print(f"\nnote: {len(refs)} function address(es) taken in reached functions; walked as if called:")
    for n, c in refs:
        print(f"  {n} takes {c}")

if not found:
    print("\nok: no panic machinery reachable from " + " ".join(roots))
    sys.exit(0)

# Landing pads call these only while a panic is already unwinding; they go once nothing they guard can
# unwind (extern "C" functions abort through panic_cannot_unwind; drops during unwinding resume through
# _Unwind_Resume). Listed after the call sites that start a panic.
UNWIND_ONLY = ("_Unwind_Resume", "panic_cannot_unwind", "panic_in_cleanup")
def secondary(f):
    return any(m in name_of(f[2]) for m in UNWIND_ONLY)
primary = sorted((f for f in found if not secondary(f)), key=lambda f: (name_of(f[2]), f[1]))
landing = sorted((f for f in found if secondary(f)), key=lambda f: (name_of(f[2]), f[1]))
HOW = {"call": "call", "reg": "call through register", "ref": "address taken"}

print(f"\nFAIL: {len(found)} call site(s) into panic machinery reachable from the C entry points "
      f"({len(primary)} that start a panic, {len(landing)} unwinding landing pads)\n")
for k, (fn, site, callee, how) in enumerate(primary, 1):
    p = path_to(parent, fn)
    print(f"[{k}] {name_of(callee)}  <- {HOW[how]} at {site:#x} in {names[fn]}")
    print(f"    source: {where(locs, site)}")
    print(f"    path: {root_of(parent, fn)}")
    for node, s, h in p[1:]:
        print(f"      -> {names[node]}   ({HOW[h]} at {s:#x}: {where_short(locs, s)})")
    print(f"      -> {name_of(callee)}\n")
if landing:
    print("unwinding landing pads (reached only while a panic unwinds):")
    for fn, site, callee, how in landing:
        print(f"  {name_of(callee)} <- {site:#x} in {names[fn]} (from {root_of(parent, fn)}): "
              f"{where_short(locs, site)}")
print("\n(each path is the shortest from the nearest root; other roots may reach the same site)")
print("panic functions reachable from each root:")
for r in roots:
    hit = sorted({name_of(f[2]) for f in walk([r])[1]})
    print(f"  {r}: {', '.join(hit) if hit else '-'}")
sys.exit(1)
PY
