#!/usr/bin/env bash
# Settings A/B of ONE tree in one device call: halox-bench md records (--graph) of this tree
# under each setting, interleaved (A, B, A, B, ...), on one GPU (several ranks under MPS). The
# records carry the setting (field `env`). The tree must be built already (scripts/device/
# engine.sh; ENGINE_BUILD, /tmp/hx-engine).
# Knobs: ENVAB_SETS (';'-separated settings, each "NAME=value ..." or "-" for none, and any
# words from the first that starts with "--" on: halox-bench md options such as "--skin 3";
# required),
# ENVAB_NP ("2": rank counts), ENVAB_T ("nvshmem-inline": the transport above one rank; one rank
# runs nccl), ENVAB_SIZES ("45000 180000"), ENVAB_STEPS (1000), ENVAB_REPEATS (3), ENVAB_BENCH
# (md; overlap: halox-bench overlap records instead, above one rank only; halo: halox-bench halo
# --shifts --mode in-step records, ENVAB_T a list such as "nvshmem-fused,nvshmem-fused+floor",
# above one rank only). Results:
# $OUT/envab.jsonl (the records) and envab.log; the commit from .halox-commit.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/envab-out}
B=${ENGINE_BUILD:-/tmp/hx-engine}
mkdir -p "$OUT"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 HALOX_SYSTEM_CACHE=${HALOX_SYSTEM_CACHE:-/tmp/hx-systems}
mkdir -p "$HALOX_SYSTEM_CACHE"
export HALOX_COMMIT=${HALOX_COMMIT:-$(cat "$ROOT/.halox-commit" 2>/dev/null || echo unknown)}
IFS=';' read -r -a SETS <<<"${ENVAB_SETS:?name the settings in ENVAB_SETS}"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/hx-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/hx-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control' EXIT
for n in ${ENVAB_SIZES:-45000 180000}; do
    for ((r = 1; r <= ${ENVAB_REPEATS:-3}; r++)); do
        for np in ${ENVAB_NP:-2}; do
            for set in "${SETS[@]}"; do
                words=() vars=() xs=() opts=()
                [ "$set" != "-" ] && read -r -a words <<<"$set"
                for v in "${words[@]}"; do
                    if [ ${#opts[@]} -gt 0 ] || [[ $v == --* ]]; then
                        opts+=("$v")
                    else
                        vars+=("$v")
                        xs+=(-x "$v")
                    fi
                done
                tr=nccl
                [ "$np" -gt 1 ] && tr=${ENVAB_T:-nvshmem-inline}
                args=(md -t "$tr" --device gpu --graph --atoms "$n" --steps "${ENVAB_STEPS:-1000}"
                    "${opts[@]}")
                [ "${ENVAB_BENCH:-md}" = overlap ] && args=(overlap -t "$tr" --atoms "$n")
                [ "${ENVAB_BENCH:-md}" = halo ] &&
                    args=(halo --shifts --mode in-step -t "$tr" --atoms "$n" "${opts[@]}")
                env "${vars[@]}" timeout 200 mpirun --allow-run-as-root --oversubscribe \
                    --bind-to none -np "$np" -x HALOX_COMMIT -x CUDA_MPS_PIPE_DIRECTORY \
                    -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE \
                    -x HALOX_SYSTEM_CACHE "${xs[@]}" "$B/tools/halox-bench" "${args[@]}" \
                    --json "$OUT/envab.jsonl" >>"$OUT/envab.log" 2>&1
                echo "$n round $r np$np [$set] rc=$?"
            done
        done
    done
done
python3 - "$OUT/envab.jsonl" <<'EOF'
import json, statistics, sys
groups = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    key = (r["atoms"], r["ranks"],
           json.dumps(r.get("env", {}), sort_keys=True) + " " + r.get("engine_options", ""))
    what = "overlap_percent" if r.get("bench") == "overlap" else "ms_per_step"
    value = r.get(what)
    if r.get("bench") == "halo":  # per transport: in-step us per coordinates + forces
        what, value = r["transport"] + " us", r.get("time_us", {}).get("median")
    groups.setdefault(key + (what,), []).append(value)
for (n, np, env, what), v in sorted(groups.items()):
    v = [x for x in v if x is not None]
    if v:
        print(f"{n:>8} np{np} {env}: median {statistics.median(v):.4f} {what} of {len(v)}: "
              + " ".join(f"{x:.4f}" for x in v))
EOF
