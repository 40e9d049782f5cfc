#!/bin/sh
# Run a halox-bench command and judge it: exit status, output, and the JSON it wrote.
# usage: bench_run.sh [--rm FILE] [--rc N] [--grep PATTERN] [--json FILE KIND [CHECK-ARGS...] --] -- COMMAND...
# --json: FILE is removed first (the tool appends) and checked by bench_check.py afterwards.
rc_want=0
pattern=
json=
kind=
check_args=
while [ "$#" -gt 0 ]; do
    case "$1" in
    --rc) rc_want=$2; shift 2 ;;
    --grep) pattern=$2; shift 2 ;;
    --rm) rm -f "$2"; shift 2 ;;
    --json)
        json=$2; kind=$3; shift 3
        while [ "$1" != "--" ]; do check_args="$check_args $1"; shift; done
        shift ;;
    --) shift; break ;;
    *) echo "bench_run.sh: unknown argument $1"; exit 2 ;;
    esac
done
[ -n "$json" ] && rm -f "$json"
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$rc_want" ]; then
    echo "bench_run.sh: expected exit status $rc_want, got $rc"
    exit 1
fi
if [ -n "$pattern" ] && ! printf '%s\n' "$out" | grep -E -q -- "$pattern"; then
    echo "bench_run.sh: expected output matching '$pattern'"
    exit 1
fi
if [ -n "$json" ]; then
    # shellcheck disable=SC2086
    python3 "$(dirname "$0")/bench_check.py" "$json" "$kind" $check_args || exit 1
fi
echo "bench_run.sh: as expected"
