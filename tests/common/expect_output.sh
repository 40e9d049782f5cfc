#!/bin/sh
# Run a command and judge its exit status and its output (stdout and stderr together): lines
# that must match, and how many lines may match a pattern (a launch that ran P copies prints its
# summary P times).
# usage: expect_output.sh [--rc N] [--grep PATTERN]... [--count N PATTERN]... -- COMMAND [ARGS...]
# --rc: the exit status wanted (default 0); patterns are extended regular expressions (grep -E).
rc_want=0
greps=$(mktemp)
counts=$(mktemp)
trap 'rm -f "$greps" "$counts"' EXIT
while [ "$#" -gt 0 ]; do
    case "$1" in
    --rc) rc_want=$2; shift 2 ;;
    --grep) printf '%s\n' "$2" >>"$greps"; shift 2 ;;
    --count) printf '%s %s\n' "$2" "$3" >>"$counts"; shift 3 ;;
    --) shift; break ;;
    *) echo "expect_output.sh: unknown argument $1"; exit 2 ;;
    esac
done
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
bad=0
if [ "$rc" -ne "$rc_want" ]; then
    echo "expect_output.sh: expected exit status $rc_want, got $rc"
    bad=1
fi
while IFS= read -r pattern; do
    if ! printf '%s\n' "$out" | grep -E -q -- "$pattern"; then
        echo "expect_output.sh: expected a line matching '$pattern'"
        bad=1
    fi
done <"$greps"
while read -r want pattern; do
    got=$(printf '%s\n' "$out" | grep -E -c -- "$pattern")
    if [ "$got" -ne "$want" ]; then
        echo "expect_output.sh: expected $want line(s) matching '$pattern', got $got"
        bad=1
    fi
done <"$counts"
[ "$bad" -eq 0 ] && echo "expect_output.sh: as expected"
exit "$bad"
