#!/bin/sh
# Run a command that must fail with exit status 2 and print a message matching a pattern.
# usage: expect_error.sh PATTERN COMMAND [ARGS...]
pattern=$1
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 2 ]; then
    echo "expected exit status 2, got $rc"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -E -q -- "$pattern"; then
    echo "expected a message matching '$pattern'"
    exit 1
fi
echo "failed as expected"
