#!/usr/bin/env bash
# The GPU engine's work loop in ONE device call on one GPU: build the engine's
# targets, run its GPU tests, the pair-kernel roofline and halox-md water-density runs, with
# results under $OUT (at most 8 files: build.log, tests.log, roofline.log, roofline.jsonl,
# md.log, md.jsonl, bench.jsonl, peer.txt). The full correctness suite is scripts/device/suite.sh.
#
# Knobs: ENGINE_TESTS ("test_gpu_clusters test_gpu_md": tests/ binaries to run),
# ENGINE_ROOF_ATOMS ("45000,360000,3000000"; empty: no roofline), ENGINE_MD ("45000 180000":
# atom counts), ENGINE_MD_ARGS (extra halox-md arguments, ';'-separated variants: each size runs
# every variant, e.g. "--graph;--graph --skin 1.0 --rebuild-every 50"; leading NAME=value words
# set the variant's environment, e.g. "HALOX_MD_ROW_CHUNK=0 --graph"), ENGINE_REPEATS (3),
# ENGINE_STEPS (500), ENGINE_SANITIZE (1: compute-sanitizer memcheck on test_gpu_clusters),
# ENGINE_BENCH (sizes for halox-bench md records; ENGINE_BENCH_BIG: one record each),
# ENGINE_SANITIZE_TOOLS ("memcheck racecheck synccheck"), ENGINE_PEER (1: GROMACS side by side from
# .peer/, see ../shared/peer/README.md; ENGINE_PEER_BOXES, ENGINE_PEER_ARGS), ENGINE_NCU (atom
# counts: ncu --clock-control none times every kernel of a short halox-md run, ENGINE_NCU_ARGS
# its halox-md arguments, ENGINE_NCU_OPTS its ncu options instead of the per-kernel times; the
# report goes to ncu.txt), ENGINE_NP ("1": rank counts of the halox-md runs; above 1 the ranks
# share the GPU under MPS, grid Nx1x1), ENGINE_TRANSPORT (nccl: the transport of one rank; several
# ranks: ENGINE_TRANSPORTS_NP, "nvshmem-fused"), ENGINE_NVSHMEM (OFF; ON or AUTO builds the NVSHMEM
# transports, from the python wheel), ENGINE_MPI_TESTS (';'-separated
# "[NAME=value ...] [TOOL@]NP:BINARY[:ARGS]": tests/ binaries run under mpirun with NP ranks on
# the GPU, under MPS, with the variables named first set for every rank; with TOOL@ inside
# compute-sanitizer --tool TOOL, NVSHMEM's heap as plain device memory; their targets are built
# too), ENGINE_HALO (atom counts: halox-bench halo --shifts on 2 ranks under MPS, host and in-step
# modes, transports ENGINE_HALO_T, records into bench.jsonl), ENGINE_BENCH_NP2_T (transports: the
# ENGINE_BENCH sizes also on 2 ranks under MPS, --graph), ENGINE_CTEST (a ctest -R pattern run in
# the build after the tests; its targets must be among those built).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/engine-out}
B=${ENGINE_BUILD:-/tmp/hx-engine}
mkdir -p "$OUT"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
export HALOX_SYSTEM_CACHE=${HALOX_SYSTEM_CACHE:-/tmp/hx-systems}
# the records' commit: .halox-commit when there is one (the device's copy of the tree may carry
# an older commit in its git metadata than the tree it carries)
if [ -z "${HALOX_COMMIT-}" ] && [ -s "$ROOT/.halox-commit" ]; then
    HALOX_COMMIT=$(cat "$ROOT/.halox-commit")
    export HALOX_COMMIT
fi
mkdir -p "$HALOX_SYSTEM_CACHE"
T0=$(date +%s)
el() { echo "[$(($(date +%s) - T0)) s]"; }
IFS=';' read -r -a MPI_TESTS <<<"${ENGINE_MPI_TESTS:-}"
MPI_TARGETS=""
for spec in "${MPI_TESTS[@]}"; do
    t=${spec#*@}
    t=${t#*:}
    MPI_TARGETS="$MPI_TARGETS ${t%%:*}"
done
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.mem --format=csv
    cmake -S "$ROOT" -B "$B" "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHALOX_ENABLE_CUDA=ON \
        -DHALOX_ENABLE_MPI=ON -DHALOX_ENABLE_NVSHMEM="${ENGINE_NVSHMEM:-OFF}" -DHALOX_BUILD_TESTS=ON &&
        cmake --build "$B" -j "$(nproc)" --target test_gpu_clusters test_gpu_md \
            pair_roofline_bench halox-md halox-bench $MPI_TARGETS ${ENGINE_TESTS-}
} >"$OUT/build.log" 2>&1 || {
    echo "build failed"
    grep -E "error|FAILED" "$OUT/build.log" | head -n 30
    exit 1
}
echo "$(el) built"
: >"$OUT/tests.log"
for t in ${ENGINE_TESTS-test_gpu_clusters test_gpu_md}; do
    echo "== $t" >>"$OUT/tests.log"
    (cd "$B/tests" && timeout 300 "./$t") >>"$OUT/tests.log" 2>&1
    rc=$?
    echo "$(el) $t rc=$rc"
    [ $rc -ne 0 ] && tail -n 15 "$OUT/tests.log"
done
MPS_ON=0
mps_start() {
    [ "$MPS_ON" = 1 ] && return 0
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/hx-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/hx-mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d && MPS_ON=1
}
mps_stop() {
    [ "$MPS_ON" = 1 ] && { echo quit | nvidia-cuda-mps-control; MPS_ON=0; }
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
}
trap mps_stop EXIT
for spec in "${MPI_TESTS[@]}"; do
    tool="" pre=() xs=()
    while [[ $spec =~ ^\ *([A-Za-z_][A-Za-z0-9_]*=[^\ ]*)\ +(.*)$ ]]; do
        xs+=(-x "${BASH_REMATCH[1]}")
        spec=${BASH_REMATCH[2]}
    done
    if [[ $spec == *@* ]]; then
        tool=${spec%%@*} spec=${spec#*@}
        pre=(env NVSHMEM_DISABLE_CUDA_VMM=1 compute-sanitizer --tool "$tool" --report-api-errors no
            --error-exitcode 3)
    fi
    np=${spec%%:*} rest=${spec#*:}
    t=${rest%%:*} args=""
    [[ $rest == *:* ]] && args=${rest#*:}
    mps_start # (one rank too: mpirun passes the MPS variables, which must be set)
    echo "== ${xs[*]} ${tool:+$tool: }mpirun -np $np $t $args" >>"$OUT/tests.log"
    # shellcheck disable=SC2086
    (cd "$B/tests" && timeout "${ENGINE_MPI_TIMEOUT:-300}" mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
        -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS \
        -x NCCL_NVLS_ENABLE "${xs[@]}" "${pre[@]}" "./$t" $args) >>"$OUT/tests.log" 2>&1
    rc=$?
    echo "$(el) ${xs[*]} ${tool:+$tool }np$np $t $args rc=$rc"
    [ -n "$tool" ] && grep -E "ERROR SUMMARY" "$OUT/tests.log" | tail -n 2
    [ $rc -ne 0 ] && grep -E "FAIL|error|differ" "$OUT/tests.log" | tail -n 12
done
if [ -n "${ENGINE_CTEST-}" ]; then
    (cd "$B" && timeout 300 ctest -R "$ENGINE_CTEST" --output-on-failure) >>"$OUT/tests.log" 2>&1
    echo "$(el) ctest -R $ENGINE_CTEST rc=$?"
    grep -E "tests passed|Failed|\*\*\*" "$OUT/tests.log" | tail -n 5
fi
if [ "${ENGINE_SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
    for tool in ${ENGINE_SANITIZE_TOOLS:-memcheck racecheck synccheck}; do
        echo "== compute-sanitizer $tool test_gpu_clusters" >>"$OUT/tests.log"
        (cd "$B/tests" && timeout 200 compute-sanitizer --tool $tool --error-exitcode 3 \
            ./test_gpu_clusters) >>"$OUT/tests.log" 2>&1
        echo "$(el) sanitizer $tool rc=$?"
    done
fi
if [ -n "${ENGINE_ROOF_ATOMS-45000,360000,3000000}" ]; then
    timeout 240 "$B/bench/pair_roofline_bench" --atoms "${ENGINE_ROOF_ATOMS-45000,360000,3000000}" \
        --repeats 30 --json "$OUT/roofline.jsonl" >"$OUT/roofline.log" 2>&1
    echo "$(el) roofline rc=$?"
    grep -E "^verify|^ +[0-9]+ (cl-|local|nonlocal|both)" "$OUT/roofline.log"
fi
: >"$OUT/md.jsonl"
: >"$OUT/md.log"
IFS=';' read -r -a VARIANTS <<<"${ENGINE_MD_ARGS:-}"
[ ${#VARIANTS[@]} -eq 0 ] && VARIANTS=("")
# one halox-md launch of NP ranks (MPS and mpirun above one rank) with transport TR, bounded
# to 200 s; the variables named in XENV (NAME=value words) set for every rank
md_launch() {
    local np="$1" tr="$2" w xs=()
    shift 2
    for w in ${XENV-}; do
        export "${w?}"
        xs+=(-x "${w%%=*}")
    done
    if [ "$np" -gt 1 ]; then
        mps_start
        timeout 200 mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
            -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x HALOX_SYSTEM_CACHE \
            -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE "${xs[@]}" "$@" --grid "${np}x1x1" --transport "$tr"
    else
        timeout 200 "$@" --transport "$tr"
    fi
}
for n in ${ENGINE_MD-45000 180000}; do
  for np in ${ENGINE_NP:-1}; do
    TRS=${ENGINE_TRANSPORT:-nccl}
    [ "$np" -gt 1 ] && TRS=${ENGINE_TRANSPORTS_NP:-nvshmem-fused}
    for tr in $TRS; do
    for ((r = 1; r <= ${ENGINE_REPEATS:-3}; r++)); do
        for v in "${VARIANTS[@]}"; do
            j=/tmp/md-$n-$np-$r.json
            # a variant's leading NAME=value words are its environment
            envs=() args=()
            for w in $v; do
                if [ ${#args[@]} -eq 0 ] && [[ $w =~ ^[A-Z_][A-Z0-9_]*= ]]; then envs+=("$w"); else args+=("$w"); fi
            done
            rm -f "$j"
            echo "== np $np $tr $n r$r $v" >>"$OUT/md.log"
            (XENV="${envs[*]}" md_launch "$np" "$tr" "$B/tools/halox-md" --preset water-density --atoms "$n" \
                --steps "${ENGINE_STEPS:-500}" --device gpu "${args[@]}" --json "$j" \
                --no-progress) >>"$OUT/md.log" 2>&1
            rc=$?
            python3 - "$j" "$n" "$r" "$np $tr $v" "$rc" >>"$OUT/md.jsonl" <<'PY'
import json, sys
j, n, r, v, rc = sys.argv[1:]
try:
    d = json.load(open(j))
    s = d["summary"]
    t = s["timers"]
    th = d.get("thermo", [])
    temps = [x["temp"] for x in th if x.get("step", 0) > 0] if th else []
    print(json.dumps({"atoms": int(n), "repeat": int(r), "args": v, "ms_per_step": s["ms_per_step"],
                      "rebuilds": s["rebuilds"], "pairs": s.get("pairs_in_lists"), "halo_atoms": s.get("halo_atoms_per_rank"),
                      "pair_ms": t["pair_forces"]["ms_per_step"],
                      "ns_ms": t["neighbour_search"]["ms_per_step"],
                      "plan_ms": t["migration_plan"]["ms_per_step"],
                      "halo_x_ms": t["halo_coords"]["ms_per_step"], "halo_f_ms": t["halo_forces"]["ms_per_step"],
                      "int_ms": t["integration"]["ms_per_step"],
                      "rebuild_ms": s.get("rebuild_ms_per_rebuild"),
                      "mean_temp": sum(temps) / len(temps) if temps else None,
                      "stale": s.get("stale_list_steps"),
                      "graph_steps": s.get("graph_steps", 0)}))
except Exception as e:
    print(json.dumps({"atoms": int(n), "repeat": int(r), "args": v, "rc": int(rc), "error": str(e)}))
PY
        done
    done
    done
  done
    echo "$(el) md $n"
done
python3 - "$OUT/md.jsonl" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
groups = {}
for x in rows:
    groups.setdefault((x["atoms"], x["args"]), []).append(x)
for (n, a), xs in groups.items():
    ok = [x for x in xs if "ms_per_step" in x]
    if not ok:
        print(n, repr(a), "FAILED", xs[0])
        continue
    med = lambda k: st.median([x[k] for x in ok if x.get(k) is not None]) if any(x.get(k) is not None for x in ok) else None
    print(f"{n:>8} {a!r:40} ms/step median {med('ms_per_step'):.4f} of {[round(x['ms_per_step'],4) for x in ok]}"
          f"  pair {med('pair_ms'):.4f} ns {med('ns_ms'):.4f} plan {med('plan_ms'):.4f} halo x {med('halo_x_ms')} f {med('halo_f_ms')} int {med('int_ms')} rebuilds {med('rebuilds')} stale {med('stale')} T {med('mean_temp')}")
PY
# every kernel's time on the device (ncu replays each launch; clocks left as they are)
if [ -n "${ENGINE_NCU-}" ] && command -v ncu >/dev/null; then
    : >"$OUT/ncu.txt"
    for n in $ENGINE_NCU; do
        # shellcheck disable=SC2086
        timeout 240 ncu --clock-control none ${ENGINE_NCU_OPTS:---metrics gpu__time_duration.sum --print-summary per-kernel} \
            "$B/tools/halox-md" --preset water-density --atoms "$n" --steps "${ENGINE_NCU_STEPS:-100}" \
            --transport nccl --device gpu ${ENGINE_NCU_ARGS-} --no-progress >/tmp/ncu-$n.txt 2>&1
        echo "$(el) ncu $n rc=$?"
        { echo "== ncu $n ${ENGINE_NCU_ARGS-}"; grep -vE "^==PROF==" /tmp/ncu-$n.txt | tail -n 2000; } >>"$OUT/ncu.txt"
    done
fi
: >"$OUT/bench.jsonl"
# halox-bench halo --shifts (the engine's plans) on 2 ranks under MPS: host and in-step modes
for n in ${ENGINE_HALO-}; do
    mps_start
    for mode in host in-step; do
        timeout 200 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
            -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS \
            -x NCCL_NVLS_ENABLE "$B/tools/halox-bench" halo --shifts --mode "$mode" --atoms "$n" \
            -t "${ENGINE_HALO_T:-nvshmem-stream,nvshmem-fused,nvshmem-fused+floor,nvshmem-fused+null,nvshmem-inline,nvshmem-inline+floor,nvshmem-inline+null}" \
            --json "$OUT/bench.jsonl" >>"$OUT/md.log" 2>&1
        echo "$(el) halo $n $mode rc=$?"
        grep -E "^nvshmem|^nccl|^mpi" "$OUT/md.log" | tail -n 6
    done
done
# halox-bench overlap (ENGINE_OVERLAP sizes) on 2 ranks under MPS with ENGINE_TRANSPORTS_NP
if [ -n "${ENGINE_OVERLAP-}" ]; then
    mps_start
    for tr in ${ENGINE_TRANSPORTS_NP:-nvshmem-fused}; do
        timeout 200 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
            -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x HALOX_SYSTEM_CACHE \
            -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE "$B/tools/halox-bench" overlap \
            --atoms "$ENGINE_OVERLAP" -t "$tr" --json "$OUT/bench.jsonl" >>"$OUT/md.log" 2>&1
        echo "$(el) overlap $tr rc=$?"
        grep -E "overlap|^ +[0-9]+ " "$OUT/md.log" | tail -n 4
    done
fi
# halox-bench md records (hardware, commit, date in every line): ENGINE_BENCH sizes, 3 repeats
for n in ${ENGINE_BENCH-} ${ENGINE_BENCH_BIG-}; do
    reps=${ENGINE_REPEATS:-3}
    [[ " ${ENGINE_BENCH_BIG-} " == *" $n "* ]] && reps=1 # big sizes: one record
    for ((r = 1; r <= reps; r++)); do
        timeout 300 "$B/tools/halox-bench" md -t nccl --device gpu --graph --atoms "$n" \
            --steps "${ENGINE_STEPS:-500}" --json "$OUT/bench.jsonl" >>"$OUT/md.log" 2>&1
        echo "$(el) halox-bench md $n rc=$?"
        for t in ${ENGINE_BENCH_NP2_T-}; do # 2 ranks of the GPU under MPS, interleaved
            mps_start
            timeout 300 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
                -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS \
                -x NCCL_NVLS_ENABLE -x HALOX_SYSTEM_CACHE "$B/tools/halox-bench" md -t "$t" \
                --device gpu --graph --atoms "$n" --steps "${ENGINE_STEPS:-500}" \
                --json "$OUT/bench.jsonl" >>"$OUT/md.log" 2>&1
            echo "$(el) halox-bench md np2 $t $n rc=$?"
        done
    done
done
# GROMACS beside (../shared/peer/README.md): .peer/ in ENGINE_PEER_ROOT (default: the parent
# of this tree, where the device call carries it), logs in /tmp/peer-out, the table to $OUT
PR=${ENGINE_PEER_ROOT:-$ROOT/..}
if [ "${ENGINE_PEER:-0}" = 1 ] && [ -f "$PR/.peer/gmx-build.sh" ]; then
    (cd "$PR" && OUT=/tmp/peer-out bash .peer/gmx-build.sh && OUT=/tmp/peer-out \
        HALOX_MD="$B/tools/halox-md" HALOX_ARGS="${ENGINE_PEER_ARGS:---graph}" \
        BOXES="${ENGINE_PEER_BOXES:-7.55}" REPEATS="${ENGINE_REPEATS:-3}" bash .peer/side-by-side.sh) \
        >/tmp/peer.log 2>&1
    echo "$(el) peer rc=$?"
    tail -n 12 /tmp/peer.log
    cp /tmp/peer-out/side-by-side.txt "$OUT/peer.txt" 2>/dev/null
fi
echo "$(el) done"
