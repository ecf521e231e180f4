# Shared setup of the scripts that build the driver crate for Windows on Linux
# (scripts/check-windows-build.sh, scripts/build-driver-image.sh). Sourced, never run.
#
# windows_target_packages [EXTRA_PACKAGE:COMMAND ...]
#     apt-installs what is missing (as root; otherwise fails naming the packages): rustc-web,
#     rust-web-src, rust-web-clippy (Rust 1.96 with its library source, for -Zbuild-std),
#     mingw-w64-x86-64-dev, clang, libclang-dev, llvm, binutils, and each EXTRA package whose
#     COMMAND (a path or a command name) is not there.
# windows_target_env
#     exports RUSTC (Debian's rustc), RUSTC_BOOTSTRAP=1, PPM_CHECK_INCLUDE, CLANG_PATH and
#     LIBCLANG_PATH (the `clang` on PATH and the libclang of the same LLVM, see below) and sets
#     BUILD_STD.
# windows_target_wdk_crates WORK
#     puts the check's wdk-sys (the real wdk-sys 0.5.2 src/ from the cargo registry over
#     bindings generated from mingw-w64's headers) and wdk-build stand-in under WORK, and sets
#     WDK_PATCH to the cargo --config arguments that select them.
# windows_target_copy_workspace DEST
#     brings DEST to the workspace's tracked and untracked-but-not-ignored sources (the patch
#     rewrites Cargo.lock, which the repository's must not): changed files copied, unchanged
#     ones left as they are (so cargo rebuilds exactly what changed), removed ones deleted.
# The caller sets ROOT (the repository root) and LOG_NAME (its name, for messages).

# shellcheck source=scripts/lib/setup.sh
source "$ROOT/scripts/lib/setup.sh"

windows_target_packages() {
    local need=() extra package command
    [[ -x /usr/bin/rustc ]] && /usr/bin/rustc --version | grep -q '^rustc 1\.9[6-9]' || need+=(rustc-web)
    [[ -d /usr/lib/rustlib/src/rust/library/core ]] || need+=(rust-web-src)
    [[ -x /usr/bin/clippy-driver ]] || need+=(rust-web-clippy)
    [[ -f /usr/share/mingw-w64/include/ddk/ntddk.h ]] || need+=(mingw-w64-x86-64-dev)
    command -v clang >/dev/null || need+=(clang)
    # The libclang bindgen loads must be the one of the LLVM `clang` belongs to (see
    # windows_target_env); another version's does not do.
    [[ -n $(windows_target_libclang) ]] || need+=(libclang-dev)
    # llvm-nm, llvm-objdump, llvm-readobj, llvm-dlltool read and make the COFF files.
    { command -v llvm-objdump || compgen -G "/usr/lib/llvm-*/bin/llvm-objdump"; } >/dev/null \
        || need+=(llvm)
    command -v ar >/dev/null || need+=(binutils)
    for extra in "$@"; do
        package=${extra%%:*}
        command=${extra#*:}
        if [[ $command == /* ]]; then
            [[ -e $command ]] || need+=("$package")
        else
            command -v "$command" >/dev/null || need+=("$package")
        fi
    done
    ((${#need[@]})) || return 0
    debian_install "${need[@]}"
}

# The LLVM installation the `clang` on PATH belongs to (/usr/lib/llvm-14 for Debian 12's
# clang), or nothing without a clang.
windows_target_llvm() {
    local clang
    clang=$(command -v clang) || return 0
    clang=$(readlink -f "$clang")
    dirname "$(dirname "$clang")"
}

# That LLVM's libclang (a path), or nothing.
windows_target_libclang() {
    local llvm
    llvm=$(windows_target_llvm)
    [[ -n $llvm ]] || return 0
    compgen -G "$llvm/lib/libclang.so*" | sort | head -n1 || true
}

windows_target_env() {
    export RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1
    export PPM_CHECK_INCLUDE=$ROOT/tools/windows-check/include
    BUILD_STD=(-Zbuild-std=core,alloc)
    # bindgen parses the headers with the libclang clang-sys finds — the newest one installed,
    # unless LIBCLANG_PATH names one — while the bindings' build script passes the resource
    # headers (intrinsics) of the `clang` it runs. A newer libclang beside Debian's clang 14
    # rejects clang 14's intrinsics headers ("unknown builtin __builtin_ia32_..."), so both
    # are pinned to one LLVM: the `clang` on PATH and its own libclang.
    local libclang
    libclang=$(windows_target_libclang)
    if [[ -z $libclang ]]; then
        echo "$LOG_NAME: no libclang beside $(command -v clang || echo clang) (install libclang-dev)" >&2
        return 1
    fi
    export CLANG_PATH
    CLANG_PATH=$(readlink -f "$(command -v clang)")
    export LIBCLANG_PATH=$libclang
}

windows_target_wdk_crates() {
    local work=$1 wdk_sys_src
    # The real wdk-sys source, from the registry (cargo fetch puts it there).
    (cd "$ROOT" && cargo fetch -q --target x86_64-pc-windows-msvc)
    wdk_sys_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/wdk-sys-0.5.2 2>/dev/null | head -n1)
    if [[ ! -d $wdk_sys_src/src ]]; then
        echo "$LOG_NAME: wdk-sys 0.5.2 not in the cargo registry" >&2
        return 1
    fi
    # Copied afresh with their timestamps (cp -p), so that cargo sees unchanged sources as
    # fresh and does not regenerate the bindings on every run.
    rm -rf "$work/wdk-sys" "$work/wdk-build"
    mkdir -p "$work/wdk-sys"
    cp -p "$ROOT/tools/windows-check/wdk-sys/Cargo.toml" "$ROOT/tools/windows-check/wdk-sys/build.rs" "$work/wdk-sys/"
    cp -rp "$wdk_sys_src/src" "$work/wdk-sys/src"
    cp -rp "$ROOT/tools/windows-check/wdk-build" "$work/wdk-build"
    WDK_PATCH=(--config "patch.crates-io.wdk-sys.path=\"$work/wdk-sys\""
        --config "patch.crates-io.wdk-build.path=\"$work/wdk-build\"")
}

windows_target_copy_workspace() {
    local dest=$1 file
    mkdir -p "$dest"
    local -A wanted=()
    while IFS= read -r -d '' file; do
        # A tracked file deleted in the work tree (not yet committed) is not part of it.
        [[ -e $ROOT/$file ]] || continue
        wanted[$file]=1
        # A changed (or new) file is copied with a new timestamp, so cargo rebuilds it; an
        # unchanged one is left alone, so cargo does not. (Copying timestamps instead, cp -p,
        # let an edit made while an earlier build was compiling look older than that build's
        # output: cargo then kept the stale crate.)
        if ! cmp -s "$ROOT/$file" "$dest/$file"; then
            mkdir -p "$dest/$(dirname "$file")"
            cp "$ROOT/$file" "$dest/$file"
        fi
    done < <(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard -- \
        .cargo Cargo.toml Cargo.lock build.rs src caller engine sim tools/image/doorbell \
        tools/image/file tools/image/runner)
    # Files gone from the workspace leave the copy too.
    while IFS= read -r -d '' file; do
        file=${file#"$dest"/}
        [[ -n ${wanted[$file]:-} ]] || rm -f "$dest/$file"
    done < <(find "$dest" -type f -not -path "$dest/target/*" -print0)
}
