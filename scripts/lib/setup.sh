# How every host-side script gets what it needs: Debian packages, Python virtual
# environments and the release ppm-sim. Sourced, never run; the caller sets LOG_NAME (its name, for messages).
#
# debian_install PACKAGE ...
#     apt-installs the packages (as root; otherwise fails naming them). Refreshes the package
#     lists once per process, waits up to 10 minutes for another apt/dpkg to release its lock
#     (a fresh machine's first minutes often run one) instead of failing at once, runs one
#     apt-get at a time across the project's scripts, and prints what it installs on stderr.
# python_venv VENV REQUIREMENTS
#     makes VENV a virtual environment with exactly the pinned REQUIREMENTS (a requirements
#     file) installed; reinstalled when the file changes (its installed copy is the stamp),
#     left alone otherwise. python3-venv is apt-installed when python3 lacks it.
# release_ppm_sim
#     builds ppm-sim as the checks that run it at length use it, release with line tables
#     (callgrind maps instructions to source lines; the image runs take half a debug build's
#     time), in CARGO_TARGET_DIR (default target/), and prints the binary's path. One build for
#     every script that calls it: the same profile and environment each time.

# How long apt-get waits for the dpkg lock, in seconds.
SETUP_APT_LOCK_TIMEOUT=600

debian_install() {
    (($#)) || return 0
    if [[ $(id -u) -ne 0 ]]; then
        echo "$LOG_NAME: missing Debian packages: $* (run as root or install them)" >&2
        return 1
    fi
    echo "$LOG_NAME: installing $*" >&2
    # One apt-get at a time across this project's scripts (.ci/run runs two tracks at once):
    # the dpkg lock is waited for, but `apt-get update`'s lock on the package lists is not.
    local apt=(flock -w "$SETUP_APT_LOCK_TIMEOUT" "${TMPDIR:-/tmp}/ppm-pep-apt.lock"
        apt-get -qq -o "DPkg::Lock::Timeout=$SETUP_APT_LOCK_TIMEOUT")
    if [[ -z ${SETUP_APT_UPDATED:-} ]]; then
        DEBIAN_FRONTEND=noninteractive "${apt[@]}" update >/dev/null
        SETUP_APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y "$@" >/dev/null
}

python_venv() {
    local venv=$1 requirements=$2
    local stamp=$venv/requirements.txt
    if [[ -x $venv/bin/python ]] && cmp -s "$requirements" "$stamp"; then
        return 0
    fi
    echo "$LOG_NAME: preparing $venv" >&2
    mkdir -p "$(dirname "$venv")"
    if ! python3 -m venv --clear "$venv" >/dev/null 2>&1; then
        debian_install python3-venv
        python3 -m venv --clear "$venv" >&2
    fi
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" >&2
    cp "$requirements" "$stamp"
}

release_ppm_sim() {
    local root target
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    target=${CARGO_TARGET_DIR:-$root/target}
    (cd "$root" && CARGO_TARGET_DIR="$target" CARGO_PROFILE_RELEASE_DEBUG=line-tables-only \
        cargo build --release --quiet -p ppm-sim) || return 1
    echo "$target/release/ppm-sim"
}
