#!/bin/sh
# halox-hostprof against a probe with known ranges and calls (tools/hostprof/probe.c):
#   hostprof_check.sh LIBRARY PROBE
# The report must hold the outer range once with 3 cudaEventQuery calls, the inner range twice
# with one nanosleep of at least 20 ms each, and the outer range's own time without the inner's;
# with HALOX_HOSTPROF_SKIP=1 the first occurrence of each range left out.
set -u
lib=$1
probe=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
LD_PRELOAD=$lib NVTX_INJECTION64_PATH=$lib HALOX_HOSTPROF=$out "$probe" || {
    echo "probe failed"
    exit 1
}
cat "$out"
fail() {
    echo "FAIL: $1"
    exit 1
}
grep -q '^range "probe: outer": 1 x' "$out" || fail "outer range not once"
grep -q '^range "probe: inner": 2 x' "$out" || fail "inner range not twice"
awk '/^range "probe: outer"/{o=1;next} /^range/{o=0} o && $1=="cudaEventQuery"{print $2}' "$out" |
    grep -qx '3.00' || fail "not 3 cudaEventQuery calls in outer"
# inner: one nanosleep per occurrence, >= 20 ms (20000 us) each
awk '/^range "probe: inner"/{i=1;next} /^range/{i=0}
     i && $1=="nanosleep" && $2=="1.00" && $4+0 >= 20000 {ok=1} END{exit !ok}' "$out" ||
    fail "inner's nanosleep not 1 x >= 20 ms"
# outer's own time excludes the inner ranges' 40 ms or more: at most its wall time less 40 ms
# (what the calls in it take, the first CUDA call on a loaded machine, does not matter)
awk '/^range "probe: outer"/{for(k=1;k<=NF;k++) if($k=="own"){w=$(k-2); o=$(k+1); sub(/,/,"",w)
     print w, o; exit}}' "$out" |
    awk '{exit !($2 + 0 <= $1 - 40000 + 1)}' || fail "outer's own time includes the inner ranges"
grep -A3 'outside every range' "$out" | grep -q sched_yield || fail "sched_yield outside not seen"
# HALOX_HOSTPROF_SKIP=1: the first occurrence of each range is not counted
HALOX_HOSTPROF_SKIP=1 LD_PRELOAD=$lib NVTX_INJECTION64_PATH=$lib HALOX_HOSTPROF=$out "$probe" ||
    fail "probe failed with HALOX_HOSTPROF_SKIP=1"
grep -q '^range "probe: inner": 1 x' "$out" || fail "HALOX_HOSTPROF_SKIP=1: inner range not once"
grep -q '^range "probe: outer"' "$out" && fail "HALOX_HOSTPROF_SKIP=1: outer range counted"
echo "hostprof: ok"
