#!/usr/bin/env bash
# The step's latency budget on one GPU, in ONE device call: build the engine
# (scripts/device/engine.sh, nothing else run), then halox-md water-density runs with the kernel
# timeline (HALOX_MD_TIMELINE, docs/MD.md), each summarised by scripts/plot/timeline.py into
# $OUT/timeline.txt; the per-rank stamps go to $OUT/timeline-tsv.tgz. Several ranks share the
# GPU under MPS.
# Knobs: TL_RUNS (';'-separated "NP:TRANSPORT:ATOMS[:NAME=value ...]", default 1 rank nccl and 2
# ranks nvshmem-inline at 45,000 atoms), TL_STEPS (300), TL_ARGS (extra halox-md arguments for
# every run, e.g. --no-graph); the engine script's knobs pass through (ENGINE_NVSHMEM defaults to
# ON here).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/timeline-out}
B=${ENGINE_BUILD:-/tmp/hx-engine}
mkdir -p "$OUT"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 HALOX_SYSTEM_CACHE=${HALOX_SYSTEM_CACHE:-/tmp/hx-systems}
mkdir -p "$HALOX_SYSTEM_CACHE"
ENGINE_TESTS=${ENGINE_TESTS-} ENGINE_MD=${ENGINE_MD-} ENGINE_ROOF_ATOMS=${ENGINE_ROOF_ATOMS-} \
    ENGINE_SANITIZE=${ENGINE_SANITIZE:-0} ENGINE_NVSHMEM=${ENGINE_NVSHMEM:-ON} OUT="$OUT" \
    bash "$ROOT/scripts/device/engine.sh" | tail -n 4
rm -f "$OUT/md.log" "$OUT/md.jsonl"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/hx-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/hx-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control' EXIT
TL=/tmp/hx-timeline
rm -rf "$TL" && mkdir -p "$TL"
: >"$OUT/timeline.txt"
IFS=';' read -r -a RUNS <<<"${TL_RUNS:-1:nccl:45000;2:nvshmem-inline:45000}"
k=0
for spec in "${RUNS[@]}"; do
    IFS=':' read -r np tr n envs <<<"$spec"
    k=$((k + 1))
    p="$TL/run$k"
    xs=()
    for w in $envs; do
        export "${w?}"
        xs+=(-x "${w%%=*}")
    done
    {
        echo "== run $k: $np rank(s) $tr, $n atoms ${envs:+($envs)}, --steps ${TL_STEPS:-300} ${TL_ARGS-}"
        # shellcheck disable=SC2086
        HALOX_MD_TIMELINE=$p timeout 200 mpirun --allow-run-as-root --oversubscribe --bind-to none \
            -np "$np" -x HALOX_MD_TIMELINE -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
            -x HALOX_SYSTEM_CACHE -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE "${xs[@]}" \
            "$B/tools/halox-md" --preset water-density --atoms "$n" --steps "${TL_STEPS:-300}" \
            --device gpu ${TL_ARGS-} --grid "${np}x1x1" --transport "$tr" --no-progress \
            --quiet 2>&1 | tail -n 5
        echo "rc=${PIPESTATUS[0]}"
        python3 "$ROOT/scripts/plot/timeline.py" "$p"
        echo
    } >>"$OUT/timeline.txt" 2>&1
    for w in $envs; do unset "${w%%=*}"; done
done
tar -czf "$OUT/timeline-tsv.tgz" -C "$TL" .
cat "$OUT/timeline.txt"
