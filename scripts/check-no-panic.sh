#!/usr/bin/env bash
# Proves that the engine's PoFx entry points (AcceptDeviceNotification,
# AcceptProcessorNotification), its initialisation (Pep::new) and the driver's DriverEntry
# sequence (ppm_engine::driver::driver_entry: registry parsing, pool, PMU reservation,
# registration, State, logging) cannot reach a panic.
#
# tools/panic-proof is a no_std cdylib that exports the engine's PEP_INFORMATION and Pep::new
# for a platform whose every answer is opaque to the optimiser. Its panic handler calls a symbol
# defined nowhere (ppm_engine_panic_is_reachable), and it links with --no-undefined, in the
# driver's release profile (panic = "abort", LTO). If any panicking path survives optimisation
# in the exported code, the handler is kept, its undefined reference with it, and the link
# fails. A successful link is the proof.
#
#   scripts/check-no-panic.sh              build the proof (and lint it)
#   scripts/check-no-panic.sh --self-test  also show that the proof can fail: build a copy of
#                                          the engine with one input-dependent indexing panic
#                                          injected into AcceptProcessorNotification and
#                                          require the link to fail on the panic symbol
#
# Needs cargo and a C linker (cc); no network once the crates are fetched. Non-interactive.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}/panic-proof
manifest=tools/panic-proof/Cargo.toml
panic_symbol=ppm_engine_panic_is_reachable
export CARGO_TERM_COLOR=never

self_test=false
case "${1:-}" in
    "") ;;
    --self-test) self_test=true ;;
    *) echo "usage: $0 [--self-test]" >&2; exit 2 ;;
esac

# Builds the proof from the repository at $1 into target dir $2; keeps the log in $2/build.log.
build() {
    mkdir -p "$2"
    cargo build --release --quiet --manifest-path "$1/$manifest" --target-dir "$2" \
        >"$2/build.log" 2>&1
}

echo "== panic-freedom proof: link tools/panic-proof (release, LTO, panic=abort, --no-undefined)"
if ! build "$root" "$target"; then
    cat "$target/build.log" >&2
    if grep -q "$panic_symbol" "$target/build.log"; then
        echo "FAIL: a panic is reachable from the engine's callbacks or Pep::new" \
            "(the link kept a reference to $panic_symbol)." >&2
        echo "Find it: cargo rustc --release --manifest-path $manifest -- --emit=llvm-ir," \
            "then look for callers of rust_begin_unwind / core::panicking." >&2
    else
        echo "FAIL: the proof did not build (see above)." >&2
    fi
    exit 1
fi
library="$target/release/libppm_panic_proof.so"
# The proof is only as good as what it contains: the callbacks must be in the library.
symbols=$(nm "$library")
for callback in accept_device_notification accept_processor_notification ppm_proof_driver_entry; do
    if ! grep -q "$callback" <<<"$symbols"; then
        echo "FAIL: $callback is not in $library: the proof would be vacuous." >&2
        exit 1
    fi
done
if grep -q "$panic_symbol" <<<"$symbols"; then
    echo "FAIL: $library references $panic_symbol." >&2
    exit 1
fi
echo "ok: no panic is reachable from AcceptDeviceNotification, AcceptProcessorNotification," \
    "Pep::new or DriverEntry's sequence (ppm_engine::driver::driver_entry, registry parsing" \
    "and logging included)"

echo "== lint tools/panic-proof"
(cd "$root/tools/panic-proof" && cargo fmt --check &&
    cargo clippy --release --quiet --target-dir "$target" -- -D warnings)

if $self_test; then
    echo "== self-test: the proof must fail on an engine with a reachable panic"
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
    mkdir -p "$scratch/tools"
    # The engine inherits from the workspace root: keep its [workspace.*] tables, not the driver.
    {
        printf '[workspace]\nmembers = ["engine"]\nresolver = "3"\n\n'
        awk '/^\[/ { keep = ($0 ~ /^\[workspace\./) } keep' "$root/Cargo.toml"
    } >"$scratch/Cargo.toml"
    cp -r "$root/engine" "$scratch/engine"
    cp -r "$root/tools/panic-proof" "$scratch/tools/panic-proof"
    rm -rf "$scratch/engine/target" "$scratch/tools/panic-proof/target"
    # An index that depends on the notification id: out of bounds for ids 4, 9, 14, ...
    perl -0pi -e 's/(fn accept_processor_notification<H: PepHost>\([^)]*\)\s*->\s*BOOLEAN\s*\{)/$1\n    let _injected_panic = [0u8; 4][notification as usize % 5];/s' \
        "$scratch/engine/src/callbacks.rs"
    if ! grep -q _injected_panic "$scratch/engine/src/callbacks.rs"; then
        echo "FAIL: self-test: could not inject the panic (accept_processor_notification changed?)" >&2
        exit 1
    fi
    if build "$scratch" "$scratch/target"; then
        echo "FAIL: self-test: the proof linked although a panic was reachable." >&2
        exit 1
    fi
    if ! grep -q "undefined symbol: $panic_symbol" "$scratch/target/build.log"; then
        cat "$scratch/target/build.log" >&2
        echo "FAIL: self-test: the build failed, but not on the panic symbol." >&2
        exit 1
    fi
    grep "undefined symbol" "$scratch/target/build.log" | sed 's/^/    /'
    echo "ok: with a reachable panic injected, the link fails on $panic_symbol"
fi
