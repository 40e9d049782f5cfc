# shellcheck shell=bash
# Shared helpers of scripts/*.sh and .ci/run (sourced, not run). Bash only.
#
#   halox_install_deps [--tests]   install what a build needs (and, with --tests, what only the
#                        tests need) (Debian/Ubuntu, as root), skipping what is there
#   halox_mpi_env        environment that lets Open MPI run here (root, oversubscribed cores)
#   halox_configure DIR [cmake args...]   configure DIR (cmake -S . -B DIR ...)
#   halox_build DIR [targets...]          build DIR with $HALOX_JOBS jobs

HALOX_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HALOX_JOBS="${HALOX_JOBS:-2}"
# Debian packages the builds and tests need. Keep in sync with README.md and docs/BUILD.md.
HALOX_APT_PACKAGES=(cmake gcc g++ make libopenmpi-dev openmpi-bin pkg-config python3 python3-pip)
# what only the tests need: the API reference's check (api_reference)
HALOX_APT_TEST_PACKAGES=(doxygen)

# Colour only on a terminal, so CI logs stay plain text.
_HB='' _HY='' _HR='' _H0=''
if [ -t 1 ]; then
    _HB=$'\033[1m' _HY=$'\033[1;33m' _HR=$'\033[1;31m' _H0=$'\033[0m'
fi
halox_log() { printf '%s[halox]%s %s\n' "$_HB" "$_H0" "$*"; }
halox_warn() { printf '%s[halox] warning:%s %s\n' "$_HY" "$_H0" "$*" >&2; }
halox_die() { printf '%s[halox] error:%s %s\n' "$_HR" "$_H0" "$*" >&2; exit 1; }

# Is a package's function already available (from the package or from elsewhere)?
_halox_have() {
    case "$1" in
        cmake | gcc | g++ | make) command -v "$1" >/dev/null 2>&1 ;;
        libopenmpi-dev) command -v mpicc >/dev/null 2>&1 ;;
        openmpi-bin) command -v mpirun >/dev/null 2>&1 ;;
        pkg-config) command -v pkg-config >/dev/null 2>&1 ;;
        python3) command -v python3 >/dev/null 2>&1 ;;
        python3-pip) python3 -m pip --version >/dev/null 2>&1 ;;
        doxygen) command -v doxygen >/dev/null 2>&1 ;;
        *) dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' ;;
    esac
}

halox_install_deps() {
    local missing=() p want=("${HALOX_APT_PACKAGES[@]}")
    if [ "${1:-}" = --tests ]; then
        want+=("${HALOX_APT_TEST_PACKAGES[@]}")
    fi
    for p in "${want[@]}"; do
        _halox_have "$p" || missing+=("$p")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        return 0
    fi
    if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        halox_warn "missing: ${missing[*]};" \
            "install them (Debian: sudo apt-get install ${missing[*]})." \
            "Continuing with what is there."
        return 0
    fi
    halox_log "installing ${missing[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    # another apt or dpkg (an unattended upgrade, a second shell) may hold the locks: wait for
    # them (bounded), and if apt still fails, say what to do instead of apt's raw lock error
    local lock=(-o DPkg::Lock::Timeout="${HALOX_APT_LOCK_WAIT_S:-300}")
    local tries
    for tries in 1 2 3 4 5 6; do
        apt-get "${lock[@]}" update -qq 2>/tmp/halox-apt.err && break
        if grep -qi 'lock' /tmp/halox-apt.err && [ "$tries" -lt 6 ]; then
            halox_log "another apt or dpkg holds its lock: waiting (try $tries of 6)"
            sleep 20
            continue
        fi
        cat /tmp/halox-apt.err >&2
        halox_die "apt-get update failed: if another apt or dpkg is running, let it finish and" \
            "run this again; else install by hand: apt-get install ${missing[*]}"
    done
    apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
        halox_die "apt-get install ${missing[*]} failed (messages above): if another apt or" \
            "dpkg is running, let it finish and run this again"
}

halox_mpi_env() {
    # Open MPI refuses to run as root without these; CI containers run as root.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # The MPI tests start more ranks than a 2-core machine has cores.
    export OMPI_MCA_rmaps_base_oversubscribe=1
    # Containers often lack the OpenFabrics / shared-memory hardware probes: keep the
    # single-node transports and stay quiet about the rest.
    export OMPI_MCA_btl_base_warn_component_unused="${OMPI_MCA_btl_base_warn_component_unused:-0}"
    # Shared-memory single-copy (CMA) needs ptrace rights that containers usually withhold; the
    # copy-in/copy-out path works everywhere.
    : "${OMPI_MCA_btl_vader_single_copy_mechanism:=none}"
    export OMPI_MCA_btl_vader_single_copy_mechanism
}

halox_configure() {
    local dir="$1"
    shift
    cmake -S "$HALOX_ROOT" -B "$HALOX_ROOT/$dir" "$@"
}

halox_build() {
    local dir="$1"
    shift
    local targets=()
    local t
    for t in "$@"; do
        targets+=(--target "$t")
    done
    cmake --build "$HALOX_ROOT/$dir" -j "$HALOX_JOBS" "${targets[@]}"
}

# cmake -D arguments for MPI: ON when an MPI is installed (so a missing MPI cannot silently drop
# the MPI tests), else AUTO. HALOX_ENABLE_MPI in the environment overrides.
halox_mpi_option() {
    if [ -n "${HALOX_ENABLE_MPI:-}" ]; then
        echo "-DHALOX_ENABLE_MPI=${HALOX_ENABLE_MPI}"
    elif command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
        echo "-DHALOX_ENABLE_MPI=ON"
    else
        echo "-DHALOX_ENABLE_MPI=AUTO"
    fi
}
