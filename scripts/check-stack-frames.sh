#!/usr/bin/env bash
# Stack frames of the code a PEP runs in the kernel, measured and held to a budget.
#
# Builds tools/panic-proof (the engine's callbacks, Pep::new and DriverEntry's whole sequence,
# over opaque platform and kernel services; see scripts/check-no-panic.sh) in the driver's
# release profile with `-Z emit-stack-sizes`, reads every function's frame from the
# .stack_sizes section (llvm-readobj --stack-sizes), prints the largest, and fails if
#   - any frame on the PoFx callbacks' paths exceeds CALLBACK_BUDGET bytes (every function but
#     the initialisation ones below: LTO inlines the callbacks' code into
#     accept_device_notification / accept_processor_notification);
#   - an initialisation frame (DriverEntry's sequence, into which LTO inlines driver_entry and
#     Pep::new; read_configuration; Config::new; report_registered; registry parsing; the log's
#     formatting) exceeds INIT_FRAME_BUDGET, or DriverEntry's deepest chain — the sequence,
#     read_configuration, Config::new — exceeds DRIVER_ENTRY_BUDGET.
# DRIVER_ENTRY_BUDGET is half the 24 KiB x64 kernel stack: the rest is the kernel's and KMDF's.
# The frames are the x86-64 System V ones of the host build of the same code; the Windows x64
# build adds 32 bytes of home space per call and probes frames over 4 KiB with __chkstk (not
# measured here).
#
# Needs cargo (RUSTC_BOOTSTRAP=1 for the -Z flag) and llvm-readobj (Debian: llvm, installed with
# apt-get when missing and running as root).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CALLBACK_BUDGET=512
INIT_FRAME_BUDGET=8192
DRIVER_ENTRY_BUDGET=12288
self_test=false
case "${1:-}" in
    "") ;;
    --self-test) self_test=true ;;
    *) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac
target=${CARGO_TARGET_DIR:-$PWD/target}/stack-frames

readobj=$(command -v llvm-readobj || ls /usr/lib/llvm-*/bin/llvm-readobj 2>/dev/null | tail -n1 || true)
if [[ -z $readobj ]]; then
    if [[ $(id -u) -eq 0 ]]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq llvm >/dev/null
        readobj=$(command -v llvm-readobj)
    else
        echo "check-stack-frames: llvm-readobj not found (install llvm)" >&2
        exit 1
    fi
fi

echo "== stack frames: tools/panic-proof, release, -Z emit-stack-sizes"
RUSTFLAGS="-Z emit-stack-sizes" RUSTC_BOOTSTRAP=1 cargo build --release --quiet \
    --manifest-path tools/panic-proof/Cargo.toml --target-dir "$target"
measure() {
"$readobj" --stack-sizes "$target/release/libppm_panic_proof.so" | python3 -c '
import re, sys
callback_budget, init_budget, entry_budget = map(int, sys.argv[1:4])
frames = [(int(size, 16), name) for name, size in
          re.findall(r"Functions: \[(.*?)\]\s*Size: (0x[0-9a-fA-F]+)", sys.stdin.read())]
if not frames:
    sys.exit("check-stack-frames: no .stack_sizes entries: nothing was measured")
frames.sort(reverse=True)
def short(name):
    # The identifiers of a v0-mangled name: <decimal length><identifier>, left to right.
    words, i = [], 0
    while i < len(name):
        digits = re.match(r"[0-9]+", name[i:])
        if digits and not (i > 0 and name[i - 1].isdigit()):
            n = int(digits.group())
            word = name[i + len(digits.group()):i + len(digits.group()) + n]
            if n >= 2 and len(word) == n and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", word):
                words.append(word)
                i += len(digits.group()) + n
                continue
        i += 1
    kept = [w for w in words if w not in ("ppm_engine", "ppm_panic_proof", "core")]
    return "::".join(kept)[:80] or name
INIT = re.compile(r"ppm_proof_driver_entry|ppm_proof_initialize|read_configuration|6Config3new|"
                  r"report_registered|report_failure|report_skipped|8registry|4core3fmt|3Pep.*3new|"
                  r"6detect|pmu_reservation|processor_table")
def size_of(pattern):
    return max((size for size, name in frames if re.search(pattern, name)), default=0)
for size, name in frames[:8]:
    print(f"  {size:6} bytes  {short(name)}")
failures = []
for size, name in frames:
    budget = init_budget if INIT.search(name) else callback_budget
    if size > budget:
        failures.append(f"{short(name)}: {size} bytes, budget {budget}")
chain = size_of(r"^ppm_proof_driver_entry$") + size_of(r"read_configuration") + size_of(r"6Config3new")
if not size_of(r"^ppm_proof_driver_entry$") or not size_of(r"accept_processor_notification"):
    failures.append("DriverEntry or the processor callback was not measured")
if chain > entry_budget:
    failures.append(f"DriverEntry chain {chain} bytes, budget {entry_budget}")
if failures:
    print("FAIL:", *failures, sep="\n  ")
    sys.exit(1)
callbacks = max(size for size, name in frames if not INIT.search(name))
print(f"ok: DriverEntry chain {chain} bytes (budget {entry_budget}), initialisation frames at most "
      f"{max(size for size, name in frames if INIT.search(name))} (budget {init_budget}), "
      f"callback-path frames at most {callbacks} (budget {callback_budget})")
' "$@"
}
measure "$CALLBACK_BUDGET" "$INIT_FRAME_BUDGET" "$DRIVER_ENTRY_BUDGET"
if $self_test; then
    # The same measurement against budgets below what the code needs must fail.
    if measure 64 1024 4096 >/dev/null; then
        echo "check-stack-frames self-test: budgets of 64/1024/4096 bytes were not refused" >&2
        exit 1
    fi
    echo "self-test: budgets below the measured frames are refused"
fi
