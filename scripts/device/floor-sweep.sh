#!/usr/bin/env bash
# The strong-scaling sweep in ONE device call on one GPU: halox-md against GROMACS on identical
# Lennard-Jones physics (../shared/peer/lj-fluid.sh: halox-md's water-density system in real
# units), ms/step against atoms per GPU, one rank and two ranks sharing the GPU under MPS.
#
#   run (carry .peer): bash scripts/device/floor-sweep.sh
#
# Parts (SWEEP_PARTS, in this order; each runs lj-fluid.sh over SWEEP_SIZES with REPEATS runs,
# GROMACS and halox-md taking turns):
#   np1        GROMACS 1 rank without CUDA graphs   | halox-md 1 rank (its default: graphs)
#   np1-graph  GROMACS 1 rank, GMX_CUDA_GRAPH=1     | halox-md 1 rank
#   np2        GROMACS 2 thread-MPI ranks on the GPU, GPU-direct halo, CUDA graphs
#                                                   | halox-md 2 ranks (grid 2x1x1) under MPS
# Writes $OUT/sweep.txt (one line per run), $OUT/sweep.md (medians: the table for
# docs/PERFORMANCE.md), $OUT/sweep.png (ms/step against atoms per GPU), $OUT/build.log.
#
# Env: SWEEP_SIZES (n per edge of the cubic start, "10 13 16 20 25 36 56": 1,000 to 175,616
# atoms), REPEATS (3), SWEEP_PARTS ("np1 np1-graph np2"), GMX_STEPS (10000: GROMACS times the
# second half), HALOX_DEVICE_BUILD (/tmp/hx-sweep: the build, kept when it has halox-md),
# HALOX_ARGS (extra halox-md arguments for every run), SWEEP_DEADLINE_S (560: no part starts
# after it).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
OUT=${OUT:-/tmp/sweep-out}
B=${HALOX_DEVICE_BUILD:-/tmp/hx-sweep}
mkdir -p "$OUT"
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
T0=$SECONDS
DEADLINE=${SWEEP_DEADLINE_S:-560}
[ -f .peer/lj-fluid.sh ] || { echo "no .peer/ (see ../shared/peer/README.md; carry .peer)"; exit 1; }

# halox-md only (the library and the engine), with the NVSHMEM transports for two ranks
if [ ! -x "$B/tools/halox-md" ]; then
    GEN=()
    command -v ninja > /dev/null && GEN=(-G Ninja)
    { cmake -S . -B "$B" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DHALOX_ENABLE_CUDA=ON \
        -DHALOX_ENABLE_MPI=ON -DHALOX_ENABLE_NVSHMEM=AUTO -DHALOX_BUILD_TESTS=OFF &&
        cmake --build "$B" -j16 --target halox-md; } > "$OUT/build.log" 2>&1 ||
        { tail -30 "$OUT/build.log"; exit 1; }
fi
echo "halox-md built at $((SECONDS - T0)) s"
OUT=/tmp/gmx-out bash .peer/gmx-build.sh >> "$OUT/build.log" 2>&1 ||
    { tail -20 "$OUT/build.log" /tmp/gmx-out/*.log; exit 1; }
echo "GROMACS built at $((SECONDS - T0)) s"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$OUT/build.log"

# two ranks of halox-md on the one GPU: MPS, one process per rank
NP2="$OUT/.halox-np2.sh"
cat > "$NP2" << EOF
#!/usr/bin/env bash
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE "$B/tools/halox-md" "\$@" --grid 2x1x1
EOF
chmod +x "$NP2"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/sweep-mps CUDA_MPS_LOG_DIRECTORY=/tmp/sweep-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d || echo "MPS did not start: two ranks run time-sliced"
trap 'echo quit | nvidia-cuda-mps-control > /dev/null 2>&1; rm -f "$NP2"' EXIT

: > "$OUT/sweep.txt"
for part in ${SWEEP_PARTS:-np1 np1-graph np2}; do
    if [ $((SECONDS - T0)) -gt "$DEADLINE" ]; then
        echo "part $part skipped: past ${DEADLINE} s"
        continue
    fi
    case $part in
        np1) genv="" gargs="-ntmpi 1 -ntomp 8" md="$B/tools/halox-md" ;;
        np1-graph) genv="GMX_CUDA_GRAPH=1" gargs="-ntmpi 1 -ntomp 8" md="$B/tools/halox-md" ;;
        np2)
            genv="GMX_CUDA_GRAPH=1 GMX_ENABLE_DIRECT_GPU_COMM=1"
            gargs="-ntmpi 2 -npme 0 -ntomp 4 -gpu_id 00" md="$NP2"
            ;;
        *) echo "unknown part $part"; continue ;;
    esac
    echo "== part $part at $((SECONDS - T0)) s"
    OUT="$OUT/$part" SIZES="${SWEEP_SIZES:-10 13 16 20 25 36 56}" REPEATS="${REPEATS:-3}" \
        HALOX_MD="$md" HALOX_ARGS="${HALOX_ARGS:-}" GMX_ENV="$genv" GMX_ARGS="$gargs" \
        bash .peer/lj-fluid.sh | sed "s/^/$part /" | tee -a "$OUT/sweep.txt"
    rm -rf "${OUT:?}/$part"
done
python3 scripts/plot/floor-sweep.py "$OUT/sweep.txt" --table "$OUT/sweep.md" --png "$OUT/sweep.png"
cat "$OUT/sweep.md"
echo "total $((SECONDS - T0)) s"
