#!/usr/bin/env bash
# A/B of two commits in ONE device call: halox-bench md records of an older tree and of this one,
# interleaved (old, new, old, new, ...), 1 rank `nccl` and 2 ranks `AB_T2` under MPS, on one GPU.
# Make the older tree here first and carry it:
#   git archive --prefix=old/ <commit> | gzip > .diag/old.tgz      (device: carry [".diag/old.tgz"])
# Knobs: AB_OLD (the older commit's name, recorded in its records), AB_TGZ (.diag/old.tgz),
# AB_SIZES ("45000 180000"), AB_STEPS (1000), AB_REPEATS (3), AB_T2 (nvshmem-inline); this tree
# is built by scripts/device/engine.sh (its knobs pass through, e.g. ENGINE_OVERLAP), its commit
# from .halox-commit. Results: $OUT/ab.jsonl (the records), ab.log, build-old.log, and the
# engine script's files.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/ab-out}
mkdir -p "$OUT"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 HALOX_SYSTEM_CACHE=${HALOX_SYSTEM_CACHE:-/tmp/hx-systems}
mkdir -p "$HALOX_SYSTEM_CACHE"
OLD=${AB_OLD:?name the older commit in AB_OLD} NEW=$(cat "$ROOT/.halox-commit" 2>/dev/null || echo unknown)
ENGINE_TESTS=${ENGINE_TESTS-} ENGINE_MD=${ENGINE_MD-} ENGINE_ROOF_ATOMS=${ENGINE_ROOF_ATOMS-} \
    ENGINE_SANITIZE=${ENGINE_SANITIZE:-0} ENGINE_NVSHMEM=${ENGINE_NVSHMEM:-ON} OUT="$OUT" \
    bash "$ROOT/scripts/device/engine.sh" | tail -n 8
rm -rf /tmp/ab-oldsrc && mkdir -p /tmp/ab-oldsrc && tar -xzf "${AB_TGZ:-$ROOT/.diag/old.tgz}" -C /tmp/ab-oldsrc
GEN=()
command -v ninja >/dev/null 2>&1 && GEN=(-G Ninja)
(cmake -S /tmp/ab-oldsrc/old -B /tmp/hx-old "${GEN[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DHALOX_ENABLE_CUDA=ON -DHALOX_ENABLE_MPI=ON -DHALOX_ENABLE_NVSHMEM="${ENGINE_NVSHMEM:-ON}" \
    -DHALOX_BUILD_TESTS=OFF && cmake --build /tmp/hx-old -j "$(nproc)" --target halox-bench) \
    >"$OUT/build-old.log" 2>&1 || { echo "the older tree did not build"; tail -n 20 "$OUT/build-old.log"; exit 1; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/hx-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/hx-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control' EXIT
for n in ${AB_SIZES:-45000 180000}; do
    for ((r = 1; r <= ${AB_REPEATS:-3}; r++)); do
        for which in old new; do
            B=/tmp/hx-engine C=$NEW
            [ "$which" = old ] && B=/tmp/hx-old C=$OLD
            HALOX_COMMIT=$C timeout 200 "$B/tools/halox-bench" md -t nccl --device gpu --graph \
                --atoms "$n" --steps "${AB_STEPS:-1000}" --json "$OUT/ab.jsonl" >>"$OUT/ab.log" 2>&1
            HALOX_COMMIT=$C timeout 200 mpirun --allow-run-as-root --oversubscribe --bind-to none \
                -np 2 -x HALOX_COMMIT -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY \
                -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE -x HALOX_SYSTEM_CACHE \
                "$B/tools/halox-bench" md -t "${AB_T2:-nvshmem-inline}" --device gpu --graph \
                --atoms "$n" --steps "${AB_STEPS:-1000}" --json "$OUT/ab.jsonl" >>"$OUT/ab.log" 2>&1
            echo "$n round $r $which ($C) rc=$?"
        done
    done
done
