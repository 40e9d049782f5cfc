#!/usr/bin/env bash
# The published benchmark set, in one device call on the 2-GPU machine:
#
#   run: bash scripts/device/bench-set.sh   (kind nvidia-h200-x2; builds into $HALOX_DEVICE_BUILD)
#
# For every size of HALOX_SET_SIZES (water-density, default 45k 180k 720k 3M 12M 23M atoms) on 1
# and 2 GPUs (one rank per GPU), every GPU transport side by side in one process per rank count:
#   latency/bandwidth  2 ranks, one pulse, every GPU path and the signal-only floor
#   halo               the exchange alone (coordinates + forces), with its floor; host-launched
#                      and in-step (--mode in-step: captured in one graph, capturable transports)
#   md                 full steps: ms/step, ns/day, halo share; with and without CUDA graphs;
#                      "auto" (no --transport: the automatic choice) as its own row (above 3M
#                      atoms: no graph and auto rows, 1 GPU runs nccl only: set-up dominates)
#   overlap            local forces / halo / both, overlap %
#   autotune           halox-md --autotune (measure, choose, cache; then the cached run)
# then scaling (1 -> 2 GPUs) and the PNG plots (scripts/plot/bench-plot.py).
#
# Writes into $HALOX_SET_DIR (/tmp/halox-set), packed into $OUT/set.tgz: latency.jsonl bandwidth.jsonl halo.jsonl md.jsonl md-auto.jsonl
# overlap.jsonl scaling.jsonl autotune.tsv *.png set.log (everything printed, autotune tables
# too). Copy its records to bench/results/<card>/<date>-set/.
#
# Environment: OUT, HALOX_DEVICE_BUILD (build folder, default /tmp/halox-set-build), HALOX_JOBS
# (16), HALOX_SET_SIZES, HALOX_SET_PARTS (subset of "latency halo md overlap autotune plots"),
# HALOX_SET_MD_REPEATS (runs of each md case at sizes up to 720k, default 3; larger sizes 1),
# HALOX_SET_GPUS ("1 2"; on 4 or 8 GPUs e.g. "1 2 4 8 8:4x2x1": P ranks, one per GPU, on the
# default grid or the one given), HALOX_SET_AUTOTUNE_SIZES ("45000 3000000"). Each step has a
# time limit; a step that fails or runs out of time is reported and the set goes on.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-/tmp/halox-set-out}"
# results are written here and packed into ONE file, $OUT/set.tgz, at the end (the device tool
# brings back only a few files per call)
SET="${HALOX_SET_DIR:-/tmp/halox-set}"
mkdir -p "$SET" "$OUT"
BUILD="${HALOX_DEVICE_BUILD:-/tmp/halox-set-build}"
SIZES="${HALOX_SET_SIZES:-45000 180000 720000 3000000 12000000 23000000}"
PARTS=" ${HALOX_SET_PARTS:-latency halo md overlap autotune plots} "
# runs: "P" (P ranks, one per GPU, the default grid: 2x1x1, 2x2x1, 2x2x2) or "P:AxBxC"
GPUS=" ${HALOX_SET_GPUS:-1 2} "
np_of() { echo "${1%%:*}"; }
grid_of() { [[ "$1" == *:* ]] && echo "--grid ${1#*:}"; }
REPS="${HALOX_SET_MD_REPEATS:-3}"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
export HALOX_SYSTEM_CACHE="${HALOX_SYSTEM_CACHE:-/tmp/halox-systems}"
mkdir -p "$HALOX_SYSTEM_CACHE"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
T0=$SECONDS
FAILS=0

exec > >(tee -a "$SET/set.log") 2>&1
step() { # step LIMIT_S NAME COMMAND...
    local limit="$1" name="$2" rc=0
    shift 2
    printf '\n=== [%4ds] %s\n' $((SECONDS - T0)) "$name"
    timeout --kill-after=10 "$limit" "$@" || rc=$?
    [ $rc -eq 0 ] || { echo "--- $name: rc=$rc"; FAILS=$((FAILS + 1)); }
    return 0
}
has() { [[ "$PARTS" == *" $1 "* ]]; }

if [ ! -x "$BUILD/tools/halox-bench" ]; then
    step 200 configure cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DHALOX_ENABLE_CUDA=ON -DHALOX_ENABLE_MPI=ON -DHALOX_ENABLE_NVSHMEM=ON -DHALOX_BUILD_TESTS=OFF
    step 300 build cmake --build "$BUILD" -j "${HALOX_JOBS:-16}"
fi
HB="$BUILD/tools/halox-bench"
MD="$BUILD/tools/halox-md"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c || true

GPU_T="mpi-staged,nccl,nvshmem-stream,nvshmem-pulse,nvshmem-fused,hybrid"
HALO_T="$GPU_T,nvshmem-fused+put,nvshmem-fused+tma,nvshmem-fused+floor"
INSTEP_T="nccl,nvshmem-stream,nvshmem-pulse,nvshmem-fused,nvshmem-fused+put,nvshmem-fused+tma,nvshmem-fused+floor"
csv() { echo "$*" | tr ' ' ','; }

if has latency; then
    step 150 latency "${MPIRUN[@]}" -np 2 "$HB" latency -t "$HALO_T" -b 8 -e 16M -f 4 -n 50 \
        --json "$SET/latency.jsonl"
    step 150 bandwidth "${MPIRUN[@]}" -np 2 "$HB" bandwidth -t "$HALO_T" -b 1K -e 64M -f 4 -n 20 \
        --json "$SET/bandwidth.jsonl"
fi

if has halo; then
    for run in $GPUS; do
        np=$(np_of "$run")
        # shellcheck disable=SC2046  # grid_of: nothing or two words
        step 400 "halo $run" "${MPIRUN[@]}" -np "$np" "$HB" halo $(grid_of "$run") \
            --atoms "$(csv $SIZES)" \
            -t "$HALO_T" -r 50 -w 10 --json "$SET/halo.jsonl"
        # the same exchanges as the MD step's graph enqueues them (capturable transports)
        # shellcheck disable=SC2046
        step 400 "halo in-step $run" "${MPIRUN[@]}" -np "$np" "$HB" halo $(grid_of "$run") \
            --atoms "$(csv $SIZES)" --mode in-step \
            -t "$INSTEP_T" -r 50 -w 10 --json "$SET/halo.jsonl"
    done
fi

if has md; then
    for n in $SIZES; do
        steps=100
        reps=$REPS
        [ "$n" -gt 720000 ] && { steps=50; reps=1; }
        [ "$n" -gt 3000000 ] && steps=30
        for ((r = 1; r <= reps; r++)); do
            for run in $GPUS; do
                np=$(np_of "$run")
                g=$(grid_of "$run")
                t="$GPU_T"
                [ "$np" = 1 ] && t="mpi-staged,nccl,nvshmem-fused"
                # above 3M atoms set-up dominates a run: 1 GPU runs nccl only, no graph/auto rows
                big=0
                [ "$n" -gt 3000000 ] && big=1
                [ "$big" = 1 ] && [ "$np" = 1 ] && t=nccl
                # shellcheck disable=SC2086  # $g: nothing or "--grid AxBxC"
                step 400 "md $run $n r$r" "${MPIRUN[@]}" -np "$np" "$HB" md $g --atoms "$n" -t "$t" \
                    --steps $steps --device gpu --json "$SET/md.jsonl"
                [ "$big" = 1 ] && continue
                # shellcheck disable=SC2086
                step 300 "md $run $n r$r graphs" "${MPIRUN[@]}" -np "$np" "$HB" md $g --atoms "$n" \
                    -t nccl,nvshmem-fused --graph --steps $steps --device gpu --json "$SET/md.jsonl"
                # no -t: the automatic choice, recorded under the transport it chose
                # shellcheck disable=SC2086
                step 200 "md $run $n r$r auto" "${MPIRUN[@]}" -np "$np" "$HB" md $g --atoms "$n" \
                    --steps $steps --device gpu --json "$SET/md-auto.jsonl"
            done
        done
    done
    [ -s "$SET/md.jsonl" ] && python3 - "$SET/md.jsonl" "$SET/scaling.jsonl" <<'PY' || true
# strong scaling 1 -> 2 GPUs per size and transport (medians of the md records)
import json, statistics, sys
from collections import defaultdict
ms = defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("bench") == "md" and r.get("ms_per_step"):
        grid = "x".join(str(v) for v in r.get("grid", [r["ranks"], 1, 1]))
        ms[(r["atoms"], r["transport"], bool(r.get("graph")), r["ranks"], grid)].append(r["ms_per_step"])
with open(sys.argv[2], "w") as out:
    for (n, t, g, p, grid), v in sorted(ms.items()):
        one = ms.get((n, t, g, 1, "1x1x1")) or ms.get((n, "nccl", g, 1, "1x1x1"))
        if p == 1 or not one:
            continue
        t1, tp = statistics.median(one), statistics.median(v)
        rec = {"bench": "scaling", "atoms": n, "transport": t, "graph": g, "ranks": p, "grid": grid,
               "ms_1gpu": t1, "ms": tp, "speedup": t1 / tp, "efficiency": t1 / tp / p}
        out.write(json.dumps(rec) + "\n")
        print(f"scaling {n:>9} {t + (' --graph' if g else ''):<22} 1 GPU {t1:8.3f} ms, "
              f"{p} GPUs ({grid}) {tp:8.3f} ms: speedup {t1 / tp:5.2f}, "
              f"efficiency {100 * t1 / tp / p:5.1f} %")
PY
fi

if has overlap; then
    ov_sizes=""
    for n in $SIZES; do [ "$n" -le 3000000 ] && ov_sizes="$ov_sizes $n"; done
    step 300 "overlap np2" "${MPIRUN[@]}" -np 2 "$HB" overlap --atoms "$(csv $ov_sizes)" \
        -t mpi-staged,nccl,nvshmem-stream,nvshmem-fused -r 30 --device gpu --json "$SET/overlap.jsonl"
fi

if has autotune; then
    for n in ${HALOX_SET_AUTOTUNE_SIZES:-45000 3000000}; do
        for pass in measure cached; do
            step 300 "autotune $n $pass" env HALOX_AUTOTUNE_CACHE="$SET/autotune.tsv" \
                "${MPIRUN[@]}" -np 2 "$MD" --preset water-density --atoms "$n" --steps 100 \
                --device gpu --autotune --autotune-steps 30 --no-progress
        done
    done
fi

if has plots; then
    # md-auto.jsonl stays out: its rows repeat a transport measured above
    files=()
    for f in latency bandwidth halo md overlap scaling; do
        [ -s "$SET/$f.jsonl" ] && files+=("$SET/$f.jsonl")
    done
    step 120 plots python3 "$ROOT/scripts/plot/bench-plot.py" "${files[@]}" --out "$SET"
fi
echo "bench-set: $((SECONDS - T0)) s, $FAILS step(s) failed; results in $SET, packed into $OUT/set.tgz"
tar -czf "$OUT/set.tgz" -C "$SET" .
exit $((FAILS > 0))
