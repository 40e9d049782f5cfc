#!/usr/bin/env bash
# The GPU suite of halox, in ONE device call (docs/DEVICE.md):
#
#   run: bash scripts/device/suite.sh        (kind nvidia-h200-x2; works on nvidia-h200 too)
#
# 1. facts of the machine (GPUs, links, driver, nvcc, MPI, NCCL, NVSHMEM wheel)
# 2. configure and build everything with CUDA, NCCL and NVSHMEM (-j16)
# 3. GPU tests (ctest -L gpu): kernels, every GPU transport against the reference on 1 and 2
#    ranks, bounded waits, the NVSHMEM smoke program, the GPU MD engine (test_gpu_md); then 4
#    and 8 ranks on the GPUs under MPS
# 3a. 4 and 8 ranks under MPS (ctest -L gpu -R np[48])
# 3b. compute-sanitizer: memcheck, racecheck and initcheck on the kernels, memcheck on small
#    MPI-launched exchanges (mpi-staged, nccl), then NVSHMEM cases (HALOX_SUITE_SANITIZE_CASES)
# 4. GPU MD engine speed: halox-md --preset water-density, 45k, 360k and 3M atoms, 200 steps, on
#    1 GPU (nccl, nccl --no-graph) and 2 GPUs (mpi-staged, nccl, nccl --no-graph): ms/step, halo
#    ms/step and share, time split, ns/day (scripts/plot/md-table.py makes the tables)
# 4b. pair-force roofline (bench/pair_roofline_bench): the first per-atom-list LJ kernel and the
#    engine's cluster kernel: pairs/s, bytes/s, flop/s
#    against copy bandwidth and fp32 FMA rate measured in the same run; 1 GPU
# 4c. benchmark: halo exchange time per transport (tools/halox-bench halo, with a barrier before
#    every exchange, with 20 exchanges back to back, and --mode in-step: 20 captured in one
#    graph) at 45k and 176k atoms on 1, 2 (one rank per GPU), 4 and 8 ranks (MPS for several
#    ranks per GPU); on one GPU also the MD engine on 2 ranks under MPS with rebuilds on the
#    device (the default) and with HALOX_MD_DEVICE_REBUILD=0
# 5. CPU tests (ctest -LE gpu, in parallel)
#
# Writes into $OUT (at most 8 files, flat): suite.log (everything printed), summary.json
# (phases, test counts, benchmark results), bench.jsonl (one line per transport and size),
# logs.tar.gz (every phase's full log). Keeps NVSHMEM_DISABLE_NVLS=1 and NCCL_NVLS_ENABLE=0
# exported (NVLink multicast stays off). Never touches GPU settings.
#
# Correctness first (tests, MPS, sanitizers), then the benchmarks, then the CPU tests; every phase
# is cut to the suite's deadline, so one call ends in time on every kind.
#
# Environment: OUT (default /tmp/halox-device-out), HALOX_JOBS (16), HALOX_SUITE_BUDGET_S
# (seconds after which optional phases are skipped, default 500), HALOX_SUITE_DEADLINE_S (no
# phase runs past it, default 540), HALOX_BENCH_NP ("1 2 4 8"),
# HALOX_BENCH_TRANSPORTS, HALOX_BENCH_B2B ("1 20": --back-to-back values), HALOX_MD_TRANSPORTS
# (2-GPU runs; T+nograph adds --no-graph), HALOX_BENCH_SIZES
# (45000,176000), HALOX_BENCH_REPEATS (200), HALOX_ROOF_SIZES (45000,360000,3000000),
# HALOX_MD_SIZES ("45000 360000 3000000"), HALOX_MD_REPEATS (1), HALOX_MD_STEPS (200),
# HALOX_SUITE_TESTS (ctest -R pattern for the GPU tests), HALOX_ENGINE_SIZES/STEPS/REPEATS/NP
# (the engine phase: halox-bench md records into engine.jsonl; NP: rank counts on one GPU, "2"),
# HALOX_MD_GPUS ("1 2"), HALOX_SUITE_ONLY (a subset of: gpu-tests md engine roofline mps bench
# sanitizer cpu-tests; machine facts and the build always run),
# (plus "nvshmem" and "tools": halox-bench latency/bandwidth/halo and halox-md auto/--autotune on
# 2 GPUs), HALOX_COMMIT (else git rev-parse, for the roofline JSON), NVSHMEM_HOME (else the python wheel
# nvidia-nvshmem-cu13), HALOX_SUITE_ALLOW_NO_GPU=1 (a dry run of the script on a machine without
# a GPU: GPU tests skip, the benchmark runs the CPU transport only).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
OUT="${OUT:-/tmp/halox-device-out}"
mkdir -p "$OUT"
WORK="$(mktemp -d /tmp/halox-suite.XXXXXX)"
LOGS="$WORK/logs"
mkdir -p "$LOGS"
BUILD="${HALOX_DEVICE_BUILD:-$WORK/build}"
JOBS="${HALOX_JOBS:-16}"
BUDGET="${HALOX_SUITE_BUDGET_S:-500}"
SIZES="${HALOX_BENCH_SIZES:-45000,176000}"
REPEATS="${HALOX_BENCH_REPEATS:-200}"
BENCH_TRANSPORTS="${HALOX_BENCH_TRANSPORTS:-mpi-staged,nccl,mpi,nvshmem-stream,nvshmem-pulse,nvshmem-fused,nvshmem-pulse+put,nvshmem-fused+put,nvshmem-fused+floor}"
T0=$SECONDS
# a tree from `git archive` has no .git of its own (git would answer for whatever repository
# encloses it): the commit it was made from, written beside it, is what the records carry
if [ -z "${HALOX_COMMIT:-}" ] && [ -f "$ROOT/.halox-commit" ]; then
    HALOX_COMMIT="$(cat "$ROOT/.halox-commit")"
    export HALOX_COMMIT
fi

# NVLink multicast off for NCCL, NVSHMEM and PyTorch, in every process we start
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export PYTHONUNBUFFERED=1

PHASES=() # "name|status|seconds|note"
note() { printf '\n=== [%4ds] %s\n' $((SECONDS - T0)) "$*"; }
# phase NAME TIMEOUT_S COMMAND...: run with a time limit, full log in $LOGS/NAME.log, tail shown
# A phase never runs past the suite's deadline (HALOX_SUITE_DEADLINE_S, default 540 s after the
# start): its limit is cut to what is left, and a phase with less than 20 s left is skipped, so
# one device call of 10 minutes always ends with its files written.
DEADLINE="${HALOX_SUITE_DEADLINE_S:-540}"
phase() {
    local name="$1" limit="$2"
    shift 2
    local left=$((DEADLINE - (SECONDS - T0) - 10))
    if [ "$left" -lt 20 ]; then
        skip "$name" "past the suite's deadline (${DEADLINE} s)"
        return 0
    fi
    local cut=0
    if [ "$limit" -gt "$left" ]; then
        limit=$left
        cut=1
    fi
    note "$name: $*"
    local t=$SECONDS rc=0
    timeout --kill-after=10 "$limit" "$@" >"$LOGS/$name.log" 2>&1 || rc=$?
    tail -n 25 "$LOGS/$name.log"
    local st=ok
    [ $rc -eq 0 ] || st="failed(rc=$rc)"
    [ $rc -eq 124 ] || [ $rc -eq 137 ] && st="timeout(${limit}s)"
    # stopped only because the suite's deadline shortened its limit: not run to the end, which
    # is not a failure of the code (the summary lists it as stopped)
    if [ "$cut" = 1 ] && { [ $rc -eq 124 ] || [ $rc -eq 137 ]; }; then
        st="stopped"
        PHASES+=("$name|$st|$((SECONDS - t))|cut by the suite's deadline (${DEADLINE} s)")
        echo "--- $name: stopped by the suite's deadline after $((SECONDS - t)) s"
        return 0
    fi
    PHASES+=("$name|$st|$((SECONDS - t))|")
    echo "--- $name: $st in $((SECONDS - t)) s"
    return $rc
}
# ctest_phase NAME LIMIT ARGS...: a ctest phase; its LastTest.log (every test's output) is kept
ctest_phase() {
    local name="$1" limit="$2" rc=0
    shift 2
    phase "$name" "$limit" ctest --test-dir "$BUILD" "$@" || rc=$?
    cp "$BUILD/Testing/Temporary/LastTest.log" "$LOGS/$name-output.log" 2>/dev/null || true
    return $rc
}
skip() { PHASES+=("$1|skipped|0|$2"); note "$1: skipped ($2)"; }
over_budget() { [ $((SECONDS - T0)) -gt "$BUDGET" ]; }
# HALOX_SUITE_ONLY="gpu-tests md roofline mps bench sanitizer cpu-tests": run only these parts
# (the machine facts and the build always run); unset: everything
want() { [ -z "${HALOX_SUITE_ONLY:-}" ] || [[ " $HALOX_SUITE_ONLY " == *" $1 "* ]]; }

MPS_ON=0
mps_start() {
    export CUDA_MPS_PIPE_DIRECTORY="$WORK/mps-pipe" CUDA_MPS_LOG_DIRECTORY="$WORK/mps-log"
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
        MPS_ON=1
        note "MPS control daemon started ($CUDA_MPS_PIPE_DIRECTORY)"
    else
        note "MPS could not start: several ranks per GPU run time-sliced"
        unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    fi
}
mps_stop() {
    if [ "$MPS_ON" = 1 ]; then
        echo quit | nvidia-cuda-mps-control || true
        sleep 1
        cp "$CUDA_MPS_LOG_DIRECTORY/control.log" "$LOGS/mps-control.log" 2>/dev/null || true
        MPS_ON=0
        unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
        note "MPS stopped"
    fi
}

# shellcheck disable=SC2317  # called by the EXIT trap
finish() {
    mps_stop
    # summary.json: phases, test counts, benchmark lines
    {
        printf '{\n  "suite": "halox device suite",\n  "seconds": %d,\n' $((SECONDS - T0))
        printf '  "gpus": %s,\n' "${NGPU:-0}"
        printf '  "gpu_names": "%s",\n' "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | tr '\n' ';' | sed 's/"/\\"/g')"
        printf '  "phases": [\n'
        local first=1 p
        for p in "${PHASES[@]}"; do
            IFS='|' read -r n s sec why <<<"$p"
            [ "$first" = 1 ] || printf ',\n'
            first=0
            printf '    {"name": "%s", "status": "%s", "seconds": %s, "note": "%s"}' "$n" "$s" "$sec" "$why"
        done
        printf '\n  ],\n  "ctest": {'
        first=1
        local f
        for f in "$LOGS"/ctest-*.log; do
            [ -e "$f" ] || continue
            local line
            line=$(grep -E "tests passed|tests failed" "$f" | tail -n 1 | sed 's/"/\\"/g')
            [ "$first" = 1 ] || printf ', '
            first=0
            printf '"%s": "%s"' "$(basename "$f" .log)" "$line"
        done
        printf '},\n  "bench": [\n'
        if [ -s "$OUT/bench.jsonl" ]; then
            sed 's/^/    /; $!s/$/,/' "$OUT/bench.jsonl"
        fi
        printf '  ]\n}\n'
    } >"$OUT/summary.json"
    tar -C "$WORK" -czf "$OUT/logs.tar.gz" logs 2>/dev/null || true
    note "summary"
    printf '%-28s %-18s %6s\n' phase status seconds
    local p
    for p in "${PHASES[@]}"; do
        IFS='|' read -r n s sec why <<<"$p"
        printf '%-28s %-18s %6s %s\n' "$n" "$s" "$sec" "$why"
    done
    if [ -s "$LOGS/bench-table.txt" ]; then
        echo
        echo "halo exchange time, coordinates + forces, slowest rank (median over repeats):"
        cat "$LOGS/bench-table.txt"
    fi
    echo "total $((SECONDS - T0)) s; results in $OUT"
}
suite() {
trap finish EXIT

# ---- 1. the machine ------------------------------------------------------------------------
note "machine"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
NGPU=${NGPU:-0}
{
    nvidia-smi -L
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
    nvidia-smi topo -m
    nproc
    nvcc --version | tail -n 2
    mpirun --version | head -n 1
    cmake --version | head -n 1
    command -v ninja && ninja --version
    command -v compute-sanitizer
    grep -E "define NCCL_(MAJOR|MINOR|PATCH)" /usr/local/cuda/include/nccl.h /usr/include/nccl.h 2>/dev/null
    python3 -c "import nvidia.nvshmem as m; print('nvshmem wheel:', list(m.__path__)[0])"
    env | grep -E "NVLS|MULTICAST|CUDA_VISIBLE" | sort
} >"$LOGS/machine.log" 2>&1
cat "$LOGS/machine.log"
echo "GPUs: $NGPU"
if [ "$NGPU" -lt 1 ] && [ "${HALOX_SUITE_ALLOW_NO_GPU:-0}" != 1 ]; then
    echo "no GPU visible: the suite needs a GPU machine (HALOX_SUITE_ALLOW_NO_GPU=1 for a dry run)"
    exit 1
fi
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)

# ---- 2. build -------------------------------------------------------------------------------
CONF=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DHALOX_ENABLE_CUDA=ON -DHALOX_ENABLE_MPI=ON
      -DHALOX_ENABLE_NVSHMEM=ON -DHALOX_BUILD_TESTS=ON)
if ! phase configure 180 cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" "${CONF[@]}"; then
    # NVSHMEM missing must not cost the rest of the suite
    CONF=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DHALOX_ENABLE_CUDA=ON -DHALOX_ENABLE_MPI=ON
          -DHALOX_ENABLE_NVSHMEM=AUTO -DHALOX_BUILD_TESTS=ON)
    rm -rf "$BUILD"
    phase configure-auto 180 cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" "${CONF[@]}" || exit 1
fi
grep -E "^-- halox" "$LOGS"/configure*.log
# keep going past a failing target (others' work in progress must not cost the GPU part)
KEEP=(-- -k 0)
[ ${#GEN[@]} -eq 0 ] && KEEP=(-- -k)
if ! phase build 300 cmake --build "$BUILD" -j "$JOBS" "${KEEP[@]}"; then
    grep -E "error|FAILED" "$LOGS/build.log" | head -n 20
    [ -x "$BUILD/tests/test_gpu_kernels" ] || exit 1
fi

# ---- 2b. NVSHMEM transports first (quick): exchanges on 2 ranks, timeout, MD on 2 ranks ------
if want nvshmem; then
    # hybrid: every pair direct on one node; +all: every pair through MPI
    # (HALOX_HYBRID_UNREACHABLE=all, set by the test)
    for t in nvshmem-stream nvshmem-pulse nvshmem-fused nvshmem-pulse+put nvshmem-fused+put \
        nvshmem-pulse+tma nvshmem-fused+tma hybrid hybrid+all; do
        phase "nvshmem-exchange-np2-$t" 120 "${MPIRUN[@]}" -np 2 "$BUILD/tests/test_gpu_exchange" \
            --transport "$t" --quick
    done
    phase nvshmem-timeout-np2 120 "${MPIRUN[@]}" -np 2 "$BUILD/tests/test_gpu_timeout"
    phase nvshmem-memory-np2 120 "${MPIRUN[@]}" -np 2 "$BUILD/tests/test_gpu_nvshmem"
    for t in nvshmem-fused nvshmem-pulse nvshmem-stream hybrid; do
        phase "nvshmem-md-np2-$t" 150 "${MPIRUN[@]}" -np 2 "$BUILD/tests/test_gpu_md" --transport "$t"
    done
    phase nvshmem-md-np2-hybrid-staged 150 env HALOX_HYBRID_UNREACHABLE=all "${MPIRUN[@]}" -np 2 \
        -x HALOX_HYBRID_UNREACHABLE "$BUILD/tests/test_gpu_md" --transport hybrid
    mps_start
    for np in 4 8; do
        phase "nvshmem-exchange-np$np" 150 "${MPIRUN[@]}" -np $np "$BUILD/tests/test_gpu_exchange" \
            --transport nvshmem-fused --quick
        # some pairs direct, some through MPI (pair 0-1; blocks of 2 ranks as nodes)
        for t in hybrid+0-1 hybrid+node:2; do
            phase "nvshmem-exchange-np$np-${t//:/-}" 150 "${MPIRUN[@]}" -np $np \
                "$BUILD/tests/test_gpu_exchange" --transport "$t" --quick
        done
    done
    mps_stop
fi

# ---- 2c. the tools on the GPUs: halox-bench latency/bandwidth/halo, halox-md's automatic choice
# and --autotune (quick; 2 GPUs) -------------------------------------------------------------
if want tools && [ "$NGPU" -ge 2 ]; then
    TB="$BUILD/tools/halox-bench"
    TT="mpi-staged,nccl,nvshmem-stream,nvshmem-pulse,nvshmem-fused,nvshmem-fused+put,nvshmem-fused+tma,nvshmem-fused+floor"
    phase tools-latency 150 "${MPIRUN[@]}" -np 2 "$TB" latency -t "$TT" -b 8 -e 4M -f 8 -n 50 \
        --json "$OUT/bench.jsonl"
    phase tools-bandwidth 150 "${MPIRUN[@]}" -np 2 "$TB" bandwidth -t "$TT" -b 1K -e 64M -f 8 -n 20 \
        --json "$OUT/bench.jsonl"
    phase tools-halo-b2b 150 "${MPIRUN[@]}" -np 2 "$TB" halo --atoms 45000 -t "$TT" -r 50 -w 10 \
        --back-to-back 20 --json "$OUT/bench.jsonl"
    # no --transport: the automatic choice (nvshmem-fused on 2 GPUs that reach each other)
    phase tools-md-auto 150 "${MPIRUN[@]}" -np 2 "$BUILD/tools/halox-md" --preset water-density \
        --atoms 45000 --steps 100 --device gpu --no-progress
    grep -iE "transport|chose|auto" "$LOGS/tools-md-auto.log" | head -n 5
    phase tools-md-autotune 240 env HALOX_AUTOTUNE_CACHE="$WORK/autotune.tsv" "${MPIRUN[@]}" -np 2 \
        "$BUILD/tools/halox-md" --preset water-density --atoms 45000 --steps 100 --device gpu \
        --autotune --autotune-steps 50 --no-progress
    phase tools-md-autotune-cached 150 env HALOX_AUTOTUNE_CACHE="$WORK/autotune.tsv" "${MPIRUN[@]}" \
        -np 2 "$BUILD/tools/halox-md" --preset water-density --atoms 45000 --steps 100 --device gpu \
        --autotune --autotune-steps 50 --no-progress
fi

# ---- 3. GPU tests ---------------------------------------------------------------------------
# one or two ranks: one rank per GPU where there are two; on one GPU, two ranks share it under
# MPS (time-sliced contexts make the two-rank tests several times slower)
if want gpu-tests; then
    [ "$NGPU" -lt 2 ] && mps_start
    # HALOX_SUITE_TESTS: a ctest -R pattern that narrows this phase (a quick check of a fix)
    ctest_phase ctest-gpu 240 -L gpu -E "_np[48]$" ${HALOX_SUITE_TESTS:+-R "$HALOX_SUITE_TESTS"} \
        --output-on-failure --timeout 200
    mps_stop
fi

# ---- 3a. four and eight ranks on the GPUs: several per GPU, under MPS
if ! want mps; then
    :
elif over_budget; then
    skip ctest-gpu-mps "over the time budget"
else
    mps_start
    # HALOX_SUITE_MPS_TESTS: another ctest -R pattern for this phase
    ctest_phase ctest-gpu-mps 240 -L gpu -R "${HALOX_SUITE_MPS_TESTS:-_np[48]\$}" --output-on-failure --timeout 200
    mps_stop
fi

# ---- 3b. compute-sanitizer -------------------------------------------------------------------
CS="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
if ! want sanitizer; then
    :
elif [ ! -x "$CS" ]; then
    skip sanitizer "no compute-sanitizer"
elif over_budget; then
    skip sanitizer "over the time budget"
else
    for tool in memcheck racecheck initcheck; do
        phase "sanitizer-$tool-kernels" 150 "$CS" --tool "$tool" --error-exitcode 3 \
            "$BUILD/tests/test_gpu_kernels"
        phase "sanitizer-$tool-clusters" 150 "$CS" --tool "$tool" --error-exitcode 3 \
            "$BUILD/tests/test_gpu_clusters"
    done
    phase sanitizer-memcheck-mpi-staged 150 "${MPIRUN[@]}" -np 2 "$CS" --tool memcheck \
        --error-exitcode 3 "$BUILD/tests/test_gpu_exchange" --transport mpi-staged --quick
    # the rebuild's kernels on device data (selection, compaction, migration records) on 2
    # ranks, and the engine's reads of memory it never wrote (an uninitialised array hides
    # behind fresh, zeroed allocations until the NVSHMEM heap is reused)
    for tool in memcheck racecheck; do
        for t in plan migrate; do
            phase "sanitizer-$tool-$t-device" 150 "${MPIRUN[@]}" -np 2 "$CS" --tool "$tool" \
                --error-exitcode 3 "$BUILD/tests/test_gpu_${t}_device" --transport mpi-staged
        done
    done
    phase sanitizer-initcheck-md 150 "${MPIRUN[@]}" -np 1 "$CS" --tool initcheck \
        --error-exitcode 3 "$BUILD/tests/test_gpu_md" --transport nccl
    # NVSHMEM: its VMM-mapped heap is not tracked by the sanitizer; plain cudaMalloc'ed heap.
    # About 70 s a case: the most telling first (HALOX_SUITE_SANITIZE_CASES, TOOL:TRANSPORT or
    # TOOL:TRANSPORT@TEST for tests/test_gpu_TEST instead of the quick exchange), the deadline
    # cuts the rest
    [ "$NGPU" -lt 2 ] && mps_start
    for c in ${HALOX_SUITE_SANITIZE_CASES:-memcheck:nvshmem-fused memcheck:nvshmem-fused@fields racecheck:nvshmem-fused synccheck:nvshmem-fused memcheck:hybrid+all racecheck:nvshmem-fused+tma memcheck:nvshmem-pulse+put synccheck:nvshmem-pulse+put memcheck:nvshmem-stream}; do
        tool="${c%%:*}" t="${c#*:}" prog=(test_gpu_exchange) args=(--quick)
        case "$t" in *@*) prog=("test_gpu_${t#*@}") args=() t="${t%@*}" ;; esac
        # NVSHMEM's team set-up creates an NCCL communicator, whose probes of kernels for
        # other architectures are API errors (as in the nccl phase below): not reported
        phase "sanitizer-$tool-$t-${prog[0]#test_gpu_}" 150 env NVSHMEM_DISABLE_CUDA_VMM=1 \
            "${MPIRUN[@]}" -np 2 "$CS" --tool "$tool" --report-api-errors no --error-exitcode 3 \
            "$BUILD/tests/${prog[0]}" --transport "$t" "${args[@]}"
    done
    mps_stop
    if [ "$NGPU" -ge 2 ] && ! over_budget; then
        # NCCL probes kernels of other architectures at creation (cudaFuncGetAttributes errors
        # it handles itself): API errors are not reported here, memory errors are
        phase sanitizer-memcheck-nccl 100 "${MPIRUN[@]}" -np 2 "$CS" --tool memcheck \
            --report-api-errors no --error-exitcode 3 "$BUILD/tests/test_gpu_exchange" --transport nccl --quick
    fi
fi

# ---- 4. GPU MD engine: halox-md ms/step (water-density, 200 steps) -------------------------
# (its correctness tests, test_gpu_md_np1/np2, ran in ctest-gpu above). One line per run in
# bench.jsonl: ms/step, halo (coordinate + force exchange) ms/step, halo share, ns/day.
MD="$BUILD/tools/halox-md"
# random placements of millions of atoms take minutes on the host: the first run of a size
# writes it, the later runs (every transport) read the same bits back
export HALOX_SYSTEM_CACHE="${HALOX_SYSTEM_CACHE:-$WORK/systems}"
mkdir -p "$HALOX_SYSTEM_CACHE"
MD_REPEATS="${HALOX_MD_REPEATS:-1}"
# md_bench NP TRANSPORT ATOMS [--no-graph]: HALOX_MD_REPEATS runs, one line each; rebuilds on the
# device (the engine's default), MD_DEVREB=0: HALOX_MD_DEVICE_REBUILD=0 (through the host)
md_bench() {
    local np="$1" tr="$2" n="$3" g="${4:-}" r j name dr="${MD_DEVREB:-1}"
    for ((r = 1; r <= MD_REPEATS; r++)); do
        name="md-np$np-$tr${g:+-nograph}${MD_DEVREB:+-hostrebuild}-$n-r$r"
        j="$LOGS/$name.json"
        phase "$name" "${HALOX_MD_PHASE_TIMEOUT:-120}" env HALOX_MD_DEVICE_REBUILD="$dr" "${MPIRUN[@]}" -np "$np" "$MD" --preset water-density \
            --atoms "$n" --steps "${HALOX_MD_STEPS:-200}" --grid "${np}x1x1" --transport "$tr" \
            --device gpu $g --json "$j" --no-progress || return 0
        python3 - "$j" "$np" "$tr" "$n" "" "$r" "$dr" >>"$OUT/bench.jsonl" <<'PY' || true
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
t = s["timers"]
steps = max(s["steps"], 1)
graph = s.get("graph_steps", 0)
halo = t["halo_coords"]["ms_per_step"] + t["halo_forces"]["ms_per_step"]
ms = s["ms_per_step"]
print(json.dumps({"bench": "halox-md", "preset": "water-density", "atoms": s["atoms"],
                  "ranks": int(sys.argv[2]), "transport": sys.argv[3],
                  "graph": graph > 0, "graph_steps": graph, "repeat": int(sys.argv[6]),
                  "steps": s["steps"], "ms_per_step": ms,
                  # with graphs the parts cover only the steps outside them
                  "halo_ms_per_step": halo if graph == 0 else None,
                  "halo_share": (halo / ms if ms > 0 else 0) if graph == 0 else None,
                  "pair_ms_per_step": t["pair_forces"]["ms_per_step"],
                  "neighbour_ms_per_step": t["neighbour_search"]["ms_per_step"],
                  "migration_plan_ms_per_step": t["migration_plan"]["ms_per_step"],
                  "rebuilds": s["rebuilds"], "ns_per_day": s.get("ns_per_day", 0),
                  "device_rebuild": sys.argv[7] == "1",
                  "rebuild_ms": s.get("rebuild_ms_per_rebuild")}))
PY
        tail -n 1 "$OUT/bench.jsonl" | sed "s/^/md  /" >>"$LOGS/bench-table.txt"
    done
}
: >"$LOGS/bench-table.txt"
if ! want md; then
    :
elif [ ! -x "$MD" ]; then
    skip md-bench "halox-md was not built"
else
    for n in ${HALOX_MD_SIZES:-45000 360000 3000000}; do
        if over_budget; then skip "md-bench-$n" "over the time budget"; continue; fi
        # HALOX_MD_GPUS="1 2" (default): the 1-GPU and the 2-GPU runs
        if [[ " ${HALOX_MD_GPUS:-1 2} " == *" 1 "* ]]; then
            md_bench 1 nccl "$n" --no-graph
            md_bench 1 nccl "$n"
        fi
        if [ "$NGPU" -eq 1 ] && [[ " ${HALOX_MD_GPUS:-1 2} " == *" 2 "* ]] && ! over_budget; then
            # one GPU: 2 ranks share it under MPS; host rebuilds against rebuilds on the device
            mps_start
            for t in ${HALOX_MD_MPS_TRANSPORTS:-mpi-staged nvshmem-fused}; do
                md_bench 2 "$t" "$n"
                MD_DEVREB=0 md_bench 2 "$t" "$n"
            done
            mps_stop
        fi
        if [ "$NGPU" -ge 2 ] && [[ " ${HALOX_MD_GPUS:-1 2} " == *" 2 "* ]]; then
            # HALOX_MD_TRANSPORTS: the 2-GPU transports; "T+nograph" runs T with --no-graph
            for t in ${HALOX_MD_TRANSPORTS:-mpi-staged nccl nccl+nograph nvshmem-stream nvshmem-pulse nvshmem-fused nvshmem-fused+nograph}; do
                if over_budget; then skip "md-np2-$t-$n" "over the time budget"; continue; fi
                case "$t" in
                *+nograph) md_bench 2 "${t%+nograph}" "$n" --no-graph ;;
                *) md_bench 2 "$t" "$n" ;;
                esac
            done
        fi
    done
fi

# ---- 4a. engine records: halox-bench md (records carry commit, hardware, date) -----------------
# HALOX_ENGINE_SIZES (45000), HALOX_ENGINE_STEPS (500), HALOX_ENGINE_REPEATS (3): one rank with
# CUDA graphs (the default) and without (--no-graph); on one GPU also 2 ranks under MPS (mpi-staged, nvshmem-fused) with host
# rebuilds and with HALOX_MD_DEVICE_REBUILD=1; records into $OUT/engine.jsonl
if want engine && [ -x "$BUILD/tools/halox-bench" ] && [ "$NGPU" -ge 1 ]; then
    eng() { # eng NAME NP DEVREB ARGS...: one halox-bench md phase
        local name="$1" np="$2" dr="$3"
        shift 3
        phase "$name" "${HALOX_MD_PHASE_TIMEOUT:-120}" env HALOX_MD_DEVICE_REBUILD="$dr" \
            "${MPIRUN[@]}" -x HALOX_MD_DEVICE_REBUILD -np "$np" "$BUILD/tools/halox-bench" md \
            --device gpu --atoms "${HALOX_ENGINE_SIZES:-45000}" \
            --steps "${HALOX_ENGINE_STEPS:-500}" --json "$OUT/engine.jsonl" "$@" || true
        grep -E "^(label|[a-z0-9+-]+ +[0-9]+ )" "$LOGS/$name.log" | sed "s/^/engine  /" >>"$LOGS/bench-table.txt"
    }
    for ((r = 1; r <= ${HALOX_ENGINE_REPEATS:-3}; r++)); do
        over_budget && break
        eng "engine-np1-r$r" 1 0 -t nccl
        eng "engine-np1-nograph-r$r" 1 0 -t nccl --no-graph
    done
    if [ "$NGPU" -eq 1 ] && ! over_budget; then
        mps_start
        for ((r = 1; r <= ${HALOX_ENGINE_REPEATS:-3}; r++)); do
            for np in ${HALOX_ENGINE_NP:-2}; do
                for t in mpi-staged nvshmem-fused; do
                    over_budget && break 3
                    eng "engine-np$np-$t-r$r" "$np" 0 -t "$t"
                    eng "engine-np$np-$t-devrebuild-r$r" "$np" 1 -t "$t"
                done
            done
        done
        mps_stop
    fi
fi

# ---- 4b. pair-force roofline: LJ kernels against measured copy bandwidth and fp32 FMA rate ----
# (bench/pair_roofline_bench, one GPU: forces checked against a CPU double reference first, then
# 45k, 360k and 3M atoms; one JSON line per kernel and size in bench.jsonl)
ROOF="$BUILD/bench/pair_roofline_bench"
if ! want roofline; then
    :
elif [ ! -x "$ROOF" ]; then
    skip pair-roofline "pair_roofline_bench was not built"
elif [ "$NGPU" -lt 1 ]; then
    skip pair-roofline "no GPU"
elif over_budget; then
    skip pair-roofline "over the time budget"
else
    phase pair-roofline 150 env HALOX_COMMIT="${HALOX_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)}" \
        "$ROOF" --atoms "${HALOX_ROOF_SIZES:-45000,360000,3000000}" --repeats 30 --warmup 5 \
        --json "$OUT/bench.jsonl"
    grep -E "^ +[0-9]+ (local|nonlocal|both|cl-local|cl-nonloc|cl-both|cl-shift|cl-super|skipped)|^(verify|roofline):" "$LOGS/pair-roofline.log" \
        | sed "s/^/roof  /" >>"$LOGS/bench-table.txt"
fi

# ---- 4c. benchmark ---------------------------------------------------------------------------
BENCH="$BUILD/tools/halox-bench"
bench() { # bench NP: halox-bench halo runs (one per HALOX_BENCH_B2B value), to bench.jsonl
    local np="$1" b name
    for b in ${HALOX_BENCH_B2B:-1 20}; do
        name="bench-np$np-b2b$b"
        phase "$name" "${HALOX_BENCH_PHASE_TIMEOUT:-240}" "${MPIRUN[@]}" -np "$np" "$BENCH" halo \
            --atoms "$SIZES" -t "$BENCH_TRANSPORTS" -r "$REPEATS" -w 20 --back-to-back "$b" \
            --json "$OUT/bench.jsonl"
        grep -E "^(mpi|nccl|mpi-|nvshmem)" "$LOGS/$name.log" | sed "s/^/np$np b2b$b  /" >>"$LOGS/bench-table.txt"
    done
    # in-step: 20 exchanges captured in one graph and launched at once, as the MD step does
    # (capturable transports; records carry "mode": "in-step")
    name="bench-np$np-instep"
    phase "$name" "${HALOX_BENCH_PHASE_TIMEOUT:-240}" "${MPIRUN[@]}" -np "$np" "$BENCH" halo \
        --atoms "$SIZES" -t "${HALOX_BENCH_INSTEP_TRANSPORTS:-nccl,nvshmem-stream,nvshmem-pulse,nvshmem-fused,nvshmem-fused+floor}" \
        -r "$REPEATS" -w 20 --mode in-step --json "$OUT/bench.jsonl"
    grep -E "^(nccl|nvshmem)" "$LOGS/$name.log" | sed "s/^/np$np in-step  /" >>"$LOGS/bench-table.txt"
}
if ! want bench; then
    :
elif [ ! -x "$BENCH" ]; then
    skip bench "halox-bench was not built"
else
    BNP=" ${HALOX_BENCH_NP:-1 2 4 8} " # which rank counts to benchmark
    [[ "$BNP" == *" 1 "* ]] && bench 1
    if [ "$NGPU" -ge 2 ]; then
        if over_budget; then skip bench-np2 "over the time budget"; elif [[ "$BNP" == *" 2 "* ]]; then bench 2; fi
        if [[ "$BNP" != *" 4 "* ]]; then
            :
        elif ! over_budget; then
            mps_start
            bench 4
            if over_budget; then skip bench-np8 "over the time budget"; else bench 8; fi
            mps_stop
        else
            skip bench-np4-np8 "over the time budget"
        fi
    else
        # one GPU: two ranks share it (MPS); the 2-GPU runs are skipped
        if ! over_budget; then
            mps_start
            bench 2
            mps_stop
        fi
        skip bench-np4-np8 "needs 2 GPUs"
    fi
fi
# ---- 5. CPU tests ---------------------------------------------------------------------------
if ! want cpu-tests; then
    :
elif over_budget; then
    skip ctest-cpu "over the time budget"
else
    ctest_phase ctest-cpu 200 -LE gpu -j "$JOBS" --timeout 180
fi

FAILED=0
for p in "${PHASES[@]}"; do
    case "$p" in *"|failed"* | *"|timeout"*) FAILED=1 ;; esac
done
exit $FAILED
}

# the whole suite in a pipeline, so that its last lines (the summary) are flushed before we exit
suite 2>&1 | tee -a "$OUT/suite.log"
exit "${PIPESTATUS[0]}"
