# The verdict of a check's self-test on one broken input, shared by the scripts whose
# --self-test feeds their check inputs broken on purpose (check-windows-build.sh,
# check-driver-image.sh). Sourced, never run.
#
# expect_refused NAME PATTERN LOG COMMAND [ARG ...]
#     runs COMMAND with its output in LOG; succeeds, printing the first matching line, only if
#     COMMAND fails and LOG has a line matching the extended regex PATTERN. A broken input the
#     check accepts, or refuses for another reason, fails with a message naming NAME and LOG.

expect_refused() {
    local name=$1 pattern=$2 log=$3
    shift 3
    if "$@" >"$log" 2>&1; then
        echo "self-test $name: the broken input passed the check (see $log)" >&2
        return 1
    fi
    if ! grep -q -E "$pattern" "$log"; then
        echo "self-test $name: refused, but not with the expected message (see $log)" >&2
        return 1
    fi
    grep -m1 -E "$pattern" "$log" | sed 's/^/   refused: /'
}
