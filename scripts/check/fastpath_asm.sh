#!/usr/bin/env bash
# A look at the assembly: the fast path must not load from the block it hands out.
# Builds libhopless.so and the SLUB experiment's libhopless_lab.so (release) and reads the machine code of
# the experiment's two out-of-line probes:
#   hopless_probe_fast_pop       the global allocator's magazine pop: must pass;
#   hopless_probe_intrusive_pop  the SLUB model's pop (hopless_lab::Slub<PLAIN>): must be caught (it reads the next
#                                pointer out of the popped block), which shows the check can fail;
# then the shipped library's exported malloc and free, which must carry no probe.
# The check follows registers through the straight-line code: the arguments (%rdi, %rsi) and registers
# copied or computed from them are metadata addresses; a register loaded from memory holds a value read
# from memory (a count, or a block pointer). A memory operand based on such a register is a load through
# a pointer the code read: the extra hop.
#
# `scripts/check/fastpath_asm.sh aarch64` does the same for aarch64 Linux (cross-built: the linker
# aarch64-linux-gnu-gcc and binutils-aarch64-linux-gnu's objdump and nm): arguments in x0/x1, loads and
# stores through `[xN, ...]`, the thread pointer read with `mrs tpidr_el0`.
set -euo pipefail
cd "$(dirname "$0")/../.."
arch=${1:-x86_64}
case "$arch" in
  x86_64) target_args=(); subdir=release; tools="" ;;
  aarch64)
    export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=${CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER:-aarch64-linux-gnu-gcc}
    target_args=(--target aarch64-unknown-linux-gnu); subdir=aarch64-unknown-linux-gnu/release
    tools=aarch64-linux-gnu- ;;
  *) echo "usage: $0 [x86_64|aarch64]" >&2; exit 2 ;;
esac
cargo build --release -p hopless-malloc -p hopless-lab --quiet "${target_args[@]}"
# Where cargo put them (CARGO_TARGET_DIR or a config may move the target directory).
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
so=$target_dir/$subdir/libhopless.so
lab=$target_dir/$subdir/libhopless_lab.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"${tools}objdump" -d --no-show-raw-insn "$so" > "$tmp/so.dis"
"${tools}nm" -D --defined-only "$so" > "$tmp/so.syms"
"${tools}objdump" -d --no-show-raw-insn "$lab" > "$tmp/lab.dis"
"${tools}nm" -D --defined-only "$lab" > "$tmp/lab.syms"
python3 - "$tmp" "$arch" <<'PY'
import re, sys
tmp, arch = sys.argv[1], sys.argv[2]

def load(which):
    dis = open(f"{tmp}/{which}.dis").read().splitlines()
    # Exported names by address: the linker may fold identical functions (malloc and __libc_malloc), and
    # objdump then labels the code with only one of the names.
    exported = {}
    for l in open(f"{tmp}/{which}.syms"):
        f = l.split()
        if len(f) == 3:
            exported.setdefault(f[2], int(f[0], 16))
    return dis, exported

def body(name, lib):
    dis, exported = lib
    out, on = [], False
    addr = exported.get(name)
    for l in dis:
        if l.endswith(f"<{name}>:") or (addr is not None and re.match(rf"0*{addr:x} <.*>:$", l)):
            on = True
            continue
        if on:
            if not l.strip():
                break
            out.append(l.split("\t", 1)[-1].strip())
    return out

R64 = {"eax": "rax", "ebx": "rbx", "ecx": "rcx", "edx": "rdx", "esi": "rsi", "edi": "rdi", "ebp": "rbp",
       "esp": "rsp", **{f"r{i}d": f"r{i}" for i in range(8, 16)}}
def reg(r):
    return R64.get(r, r)

def hops(code):
    derived = {"rdi", "rsi", "rsp", "rip"}
    bad = []
    for ins in code:
        if ins.startswith(("ret", "int3", "ud2", "call", "j")):
            if ins.startswith("ret"):
                break
            continue
        m = re.match(r"(\w+)\s+(.*)", ins)
        if not m:
            continue
        op, args = m.groups()
        for base in re.findall(r"\(%(\w+)", args):
            if reg(base) not in derived:
                bad.append(ins)
        parts = [a.strip() for a in re.split(r",(?![^(]*\))", args)]
        dst = parts[-1]
        if not dst.startswith("%"):
            continue
        d = reg(dst[1:])
        src = parts[0] if len(parts) > 1 else ""
        if op.startswith("mov") and src.startswith("%"):
            (derived.add if reg(src[1:]) in derived else derived.discard)(d)
        elif op.startswith("lea"):
            b = re.findall(r"\(%(\w+)", src)
            (derived.add if b and reg(b[0]) in derived else derived.discard)(d)
        elif "(" in src:
            derived.discard(d)  # loaded from memory
        elif op.startswith("imul") and len(parts) == 3 and parts[1].startswith("%"):
            # imul $k, %src, %dst: dst is computed from src alone.
            (derived.add if reg(parts[1][1:]) in derived else derived.discard)(d)
        elif op.startswith(("add", "sub")) and src.startswith("%") and reg(src[1:]) not in derived:
            derived.discard(d)  # mixed with a value read from memory
        elif op.startswith(("add", "sub", "inc", "dec", "and", "or", "xor", "shl", "shr", "imul")):
            pass  # arithmetic keeps what the register was (an address from an address stays one)
    return bad

def a64(r):
    """w5 -> x5: the 32-bit view of a register is the register."""
    return "x" + r[1:] if re.fullmatch(r"w\d+", r) else r

def hops_aarch64(code):
    derived = {"x0", "x1", "sp"}
    # Registers holding an index already scaled by a shift (`ubfiz x11, x10, #3, #32`, `lsl x11, x10,
    # #3`): as an index register scaled in the operand, it may be a count read from memory.
    shifted = set()
    bad = []
    for ins in code:
        m = re.match(r"([\w.]+)\s*(.*)", ins)
        if not m:
            continue
        op, args = m.groups()
        args = args.split("//")[0].strip()
        if op == "ret":
            break
        if op in ("b", "bl", "br", "blr", "cbz", "cbnz", "tbz", "tbnz", "nop", "udf", "brk") or op.startswith("b."):
            continue
        for base in re.findall(r"\[(\w+)", args):
            if a64(base) not in derived:
                bad.append(ins)
        parts = [a.strip() for a in re.split(r",(?![^\[]*\])", args) if a.strip()]
        if not parts or not re.fullmatch(r"[xw]\d+", parts[0]):
            continue
        d = a64(parts[0])
        srcs = [a64(p) for p in parts[1:] if re.fullmatch(r"[xw]\d+|sp|xzr|wzr", p)]
        shifts = op == "ubfiz" or (op == "lsl" and len(parts) == 3 and parts[2].startswith("#"))
        (shifted.add if shifts else shifted.discard)(d)
        if op.startswith(("ld", "cas", "swp")):
            derived.discard(d)  # loaded from memory
            if op.startswith("ldp") and len(parts) > 1 and re.fullmatch(r"[xw]\d+", parts[1]):
                derived.discard(a64(parts[1]))
        elif op.startswith("st"):
            continue  # a store writes memory, not a register (its base was checked above)
        elif op in ("adrp", "adr", "mrs"):
            derived.add(d)  # a PC-relative address, or the thread pointer
        elif op in ("add", "sub") and len(parts) >= 3 and re.fullmatch(r"[xw]\d+|sp", parts[1]):
            # base + index: as x86's (%base,%index,8) operand, the base decides. An index register
            # scaled or extended (`x9, lsl #3`, `w9, uxtw #3`) may be a count read from memory; an
            # unscaled register added must be an address too.
            index = parts[2]
            scaled = len(parts) > 3 or not re.fullmatch(r"[xw]\d+|sp", index) or a64(index) in shifted
            keep = a64(parts[1]) in derived and (scaled or a64(index) in derived)
            (derived.add if keep else derived.discard)(d)
        elif shifts:
            derived.discard(d)  # an index (above), not an address
        elif op in ("mov", "movz", "movk", "lsl", "lsr", "and", "orr", "eor", "madd", "mul", "csel", "neg"):
            # An address computed from addresses and constants stays one; mixed with a value read
            # from memory, it does not.
            (derived.add if all(r in derived or r in ("xzr", "wzr") for r in srcs) else derived.discard)(d)
        else:
            derived.discard(d)
    return bad

if arch == "aarch64":
    hops = hops_aarch64

so, lab = load("so"), load("lab")
if any(n.startswith("hopless_probe") for n in so[1]):
    sys.exit("FAIL: libhopless.so exports the experiment's probes: " + ", ".join(n for n in so[1] if n.startswith("hopless_probe")))
fast, intr = body("hopless_probe_fast_pop", lab), body("hopless_probe_intrusive_pop", lab)
if not fast or not intr:
    sys.exit("probes not found in libhopless_lab.so")
print("fast path pop (array):"); print("\n".join("  " + l for l in fast if not l.startswith("int3")))
print("intrusive pop:"); print("\n".join("  " + l for l in intr if not l.startswith("int3")))
if hops(fast):
    sys.exit("FAIL: the fast path loads through a pointer it read from memory: " + "; ".join(hops(fast)))
if not hops(intr):
    sys.exit("FAIL: the check did not catch the intrusive list's load through the block")
print("ok: the fast path reads only its metadata; the intrusive pop loads through the block: " + "; ".join(hops(intr)))

# The exported malloc and free: the thread's cache pointer (and, for free, the remembered segment next to
# it) are %fs-relative loads (initial-exec TLS), never a call to __tls_get_addr, and the code from the
# entry to the first `ret` (the magazine pop or push, laid out first) calls nothing. The count is of
# that code in layout order, so it is an upper bound on one call's path. On x86-64 free measures 39 (a
# pointer outside the thread's remembered segment goes out of line to the segment map first) and malloc
# 27: a pop loads the magazine's `top` copy, checks it against the slot and refreshes it, five
# instructions that keep a free-then-malloc chain off a second store-to-load forward (`hopless bench
# alloc --c-abi`, pair-16: 4.9 ns with the copy, 9.7 ns without, on a 2-core Intel VM); four of them are
# the heap profile's sampling countdown (a subtract from the thread's count in memory and its branch,
# and register moves for the out-of-line calls' arguments), whether profiling is on or off.
# On aarch64 (fixed-width instructions; the thread pointer read with `mrs`, the words' offset with an
# `adrp`/`ldr` pair from the GOT) malloc measures 34 (six for the countdown: a load, `subs`, a store and
# its branch, two moves) and free 46 the same way.
# The limits keep the paths from growing unnoticed.
LIMITS = {"malloc": 27, "free": 41} if arch == "x86_64" else {"malloc": 34, "free": 49}
tls_read = "%fs:" if arch == "x86_64" else "tpidr_el0"
for name, limit in LIMITS.items():
    code = [l for l in body(name, so) if not l.startswith("int3")]
    if not code:
        sys.exit(f"FAIL: {name} not found in libhopless.so")
    if any("__tls_get_addr" in l for l in code):
        sys.exit(f"FAIL: {name} calls __tls_get_addr (general-dynamic TLS)")
    first_ret = next((i for i, l in enumerate(code) if l.startswith("ret")), None)
    if first_ret is None:
        sys.exit(f"FAIL: {name} has no ret")
    straight = code[: first_ret + 1]
    calls = [l for l in straight if l.startswith(("call", "bl\t", "bl ", "blr")) or (("jmp" in l or l.startswith("b")) and "@plt" in l)]
    if calls:
        sys.exit(f"FAIL: {name} calls before its first ret: " + "; ".join(calls))
    if not any(tls_read in l for l in straight):
        sys.exit(f"FAIL: {name} does not read its cache pointer through {tls_read} before its first ret")
    if len(straight) > limit:
        sys.exit(f"FAIL: {name}: {len(straight)} instructions to its first ret (limit {limit})")
    print(f"ok: {name}: {len(straight)} instructions from entry to its first ret (the magazine "
          f"{'pop' if name == 'malloc' else 'push'}), {tls_read} loads, no call, no __tls_get_addr")
    if name == "malloc":
        # What malloc returns is the magazine's `top` copy, a load at a fixed offset, not the top slot
        # (a load indexed by the count, which waits for the count's load first): the last instruction
        # before the ret that writes the return register is such a load. A compiler that turned the
        # pop's test of the copy into a select would hand out the slot, and pay that wait again.
        # A register copy into the return register (`mov x0, x8`, where x0 held the cache for the
        # out-of-line calls) is followed back to the instruction that wrote its source.
        def operands(l):
            return [a.strip() for a in re.split(r",(?![^(\[]*[)\]])", l.split(None, 1)[1].split("//")[0])] if " " in l or "\t" in l else []
        def writes(l, reg):
            ops = operands(l)
            dst = ops[-1] if arch == "x86_64" else (ops[0] if ops else "")
            return dst == reg and not l.startswith(("cmp", "test", "str", "st"))
        reg = "%rax" if arch == "x86_64" else "x0"
        body_before = straight[:-1]
        last = None
        while True:
            i = next((k for k in range(len(body_before) - 1, -1, -1) if writes(body_before[k], reg)), None)
            last = body_before[i] if i is not None else None
            ops = operands(last) if last else []
            if last and last.startswith("mov") and len(ops) == 2 and re.fullmatch(r"%?[rx]\w+", ops[0 if arch == "x86_64" else 1]):
                reg, body_before = ops[0 if arch == "x86_64" else 1], body_before[:i]
                continue
            break
        fixed = last is not None and (re.search(r"-?(0x[0-9a-f]+)?\(%\w+\),%r\w+$", last) if arch == "x86_64"
                                      else re.search(r"^ldr\s+x\d+, \[x\d+(, #\d+)?\]!?$", last))
        if not fixed:
            sys.exit(f"FAIL: malloc returns {last!r}, not a load of the magazine's top copy at a fixed offset")
        print(f"ok: malloc returns the magazine's top copy ({' '.join(last.split())}), a load the count does not gate")
PY
