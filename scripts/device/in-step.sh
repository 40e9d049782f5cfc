#!/usr/bin/env bash
# The in-step table of this tree in ONE device call (one GPU, 2 ranks under MPS): build with the
# NVSHMEM transports, the GPU tests that guard the in-step paths, then at 45k atoms the in-step
# exchange of `nvshmem-fused` and `nvshmem-inline` with their floors and null launches
# (halox-bench halo --mode in-step), the overlap probe, and halox-bench md on 1 and 2 ranks at
# 45k, 180k and 1M atoms (the rebuild share and the 2-ranks/1-rank ratio), every repeat
# interleaved. The commit comes from .halox-commit.
#
# Knobs: INSTEP_CARD (e.g. "H200": stop at once, exit 3, unless nvidia-smi names that card; a
# call that gets another card then costs only its start), INSTEP_REPEATS (3: halo, overlap and
# 45k md; 180k runs min(2, it), 1M once), INSTEP_TESTS (1: the tests first; 0: none),
# INSTEP_MORE_TESTS (more ENGINE_MPI_TESTS entries, ';'-separated, e.g. compute-sanitizer runs
# "racecheck@2:test_gpu_exchange:--transport nvshmem-fused --quick").
# Results in $OUT: in-step.tgz (build, tests and bench logs, the records) and in-step.txt (the
# medians, also printed).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/in-step-out}
W=/tmp/in-step
# a fresh start: a second run on a warm machine must not take the first one's records into its
# medians
rm -rf "$W"
mkdir -p "$OUT" "$W"
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "card: $card"
if [ -n "${INSTEP_CARD-}" ] && [[ $card != *"$INSTEP_CARD"* ]]; then
    echo "not a $INSTEP_CARD: nothing run"
    exit 3
fi
R=${INSTEP_REPEATS:-3}
R2=$((R < 2 ? R : 2))
TESTS=""
if [ "${INSTEP_TESTS:-1}" = 1 ]; then
    TESTS="2:test_gpu_exchange:--quick;4:test_gpu_exchange:--transport nvshmem-fused --quick"
    TESTS="$TESTS;4:test_gpu_exchange:--transport nvshmem-inline --quick"
    TESTS="$TESTS;2:test_gpu_md:--transport nvshmem-inline;2:test_gpu_timeout"
fi
[ -n "${INSTEP_MORE_TESTS-}" ] && TESTS="${TESTS:+$TESTS;}$INSTEP_MORE_TESTS"
# build (and tests) through the engine script: its build is the one the bench scripts use
ENGINE_TESTS= ENGINE_MD= ENGINE_ROOF_ATOMS= ENGINE_SANITIZE=0 ENGINE_NVSHMEM=ON \
    ENGINE_MPI_TESTS="$TESTS" OUT="$W/engine" bash "$ROOT/scripts/device/engine.sh" | tail -n 12
[ -x /tmp/hx-engine/tools/halox-bench ] || { echo "no halox-bench: build failed"; exit 1; }
envab() { OUT="$W/$1" bash "$ROOT/scripts/device/settings-ab.sh" | tail -n 40; }
halo_t="nvshmem-fused,nvshmem-fused+floor,nvshmem-fused+null"
halo_t="$halo_t,nvshmem-inline,nvshmem-inline+floor,nvshmem-inline+null"
{
    echo "== halo in-step, 45k, 2 ranks"
    ENVAB_BENCH=halo ENVAB_T="$halo_t" ENVAB_SETS="-" ENVAB_NP=2 ENVAB_SIZES=45000 \
        ENVAB_REPEATS=$R envab halo
    echo "== overlap, 45k, 2 ranks"
    ENVAB_BENCH=overlap ENVAB_SETS="-" ENVAB_NP=2 ENVAB_SIZES=45000 ENVAB_REPEATS=$R envab overlap
    echo "== md, 1 and 2 ranks"
    ENVAB_SETS="-" ENVAB_NP="1 2" ENVAB_SIZES=45000 ENVAB_REPEATS=$R envab md45k
    ENVAB_SETS="-" ENVAB_NP="1 2" ENVAB_SIZES=180000 ENVAB_REPEATS=$R2 envab md180k
    ENVAB_SETS="-" ENVAB_NP="1 2" ENVAB_SIZES=1000000 ENVAB_STEPS=500 ENVAB_REPEATS=1 envab md1m
} | tee "$OUT/in-step.txt"
# the rebuild share as the records compute it: the rebuild's parts without drain, times the
# rebuilds, over the loop time
cat "$W"/md*/envab.jsonl >"$W/md.jsonl" 2>/dev/null
python3 - "$W/md.jsonl" <<'EOF' | tee -a "$OUT/in-step.txt"
import json, statistics, sys
shares = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    parts = r.get("rebuild_ms") or {}
    steps, ms, nreb = r.get("steps"), r.get("ms_per_step"), r.get("rebuilds")
    if not (parts and steps and ms and nreb):
        continue
    host = sum(v for k, v in parts.items() if k != "drain" and isinstance(v, (int, float)))
    shares.setdefault((r["atoms"], r["ranks"]), []).append(100.0 * host * nreb / (steps * ms))
for (n, np), v in sorted(shares.items()):
    print(f"rebuild share {n} np{np}: median {statistics.median(v):.2f} % of {len(v)}: "
          + " ".join(f"{x:.2f}" for x in v))
EOF
tar -czf "$OUT/in-step.tgz" -C "$W" . 2>/dev/null
echo "results: $OUT/in-step.tgz, $OUT/in-step.txt"
