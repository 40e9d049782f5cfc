#!/usr/bin/env bash
# The test command of halox: one command, works on a fresh Debian 12 machine.
#
#   ./scripts/test.sh              every suite
#   ./scripts/test.sh main asan    only some of them (main, asan, tsan, nompi, nocuda)
#
# Suites (each in its own build folder, so they never mix flags):
#   main  build/        RelWithDebInfo, -Werror; every CPU test (unit, threads, mpi, emu,
#                       install, ...) at full size
#   asan  build-asan/   AddressSanitizer + UndefinedBehaviorSanitizer, CUDA and NVSHMEM off:
#                       the GPU transports' and the GPU engine's host code runs sanitized through
#                       the CUDA emulation (label emu), the kernels on a GPU under
#                       compute-sanitizer (scripts/device/suite.sh). Leak checking is on for all
#                       tests except those labelled mpi: Open MPI unloads its plug-ins at
#                       MPI_Finalize and LeakSanitizer then reports thousands of allocations of
#                       Open MPI's own from "<unknown module>" frames, which no suppressions file
#                       can match. Those tests run in a second CTest pass (asan-mpi) with
#                       detect_leaks=0. The engine's long physics runs (label physics) are left
#                       to the main suite.
#   (every suite but main leaves out the tests of scripts alone, label script: Python over
#   committed data or the source tree, the same whatever the build)
#   tsan  build-tsan/   ThreadSanitizer, MPI and CUDA off (neither runtime is TSan-instrumented);
#                       the tests labelled threads and unit, but not those labelled core (the
#                       core is single-threaded: nothing for TSan to see there).
#   nompi build-nompi/  MPI off (CUDA as found)
#   nocuda build-nocuda/ CUDA and NVSHMEM off (MPI as found)
#                       These two build everything such a build registers (warnings as errors).
#                       nompi runs its tests but those labelled core, emu, docs and long: the
#                       first two link the core alone (and the emulation with fixed feature
#                       macros), so they are the main suite's binaries again; the docs' commands
#                       are those of a full build; the long ones run in the main suite on the
#                       same sources. nocuda runs the installed package's tests (label install):
#                       the asan suite runs the others in this configuration, sanitized.
# Tests see HALOX_TEST_SANITIZED=1 in the sanitizer builds (CMake passes it) and take smaller
# systems there; the main suite runs the full sizes.
#
# As root, missing Debian packages are installed first (scripts/common.sh lists them).
# Environment: HALOX_JOBS (default 2), HALOX_BUILD_TYPE (default RelWithDebInfo),
# HALOX_WERROR (main suite, default ON), HALOX_SAN_WERROR (sanitizer suites, default OFF),
# HALOX_ENABLE_MPI (default ON when MPI is installed).
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$HALOX_ROOT"

SUITES=("$@")
if [ "${#SUITES[@]}" -eq 0 ]; then
    SUITES=(main asan tsan nompi nocuda)
fi
for s in "${SUITES[@]}"; do
    case "$s" in
        main | asan | tsan | nompi | nocuda) ;;
        *) halox_die "unknown suite '$s' (suites: main asan tsan nompi nocuda)" ;;
    esac
done

halox_install_deps --tests
halox_mpi_env
command -v cmake >/dev/null 2>&1 || halox_die "cmake is missing (apt-get install cmake)"
command -v cc >/dev/null 2>&1 || halox_die "no C compiler (apt-get install gcc)"

BUILD_TYPE="${HALOX_BUILD_TYPE:-RelWithDebInfo}"
WERROR="${HALOX_WERROR:-ON}"
MPI_OPT="$(halox_mpi_option)"
# -Werror is the warning gate of the main suite only: gcc 12's sanitizer instrumentation yields
# false positives (-Warray-bounds, -Wmaybe-uninitialized, -Wstringop-overflow) in correct code, so
# the sanitizer suites show warnings without failing on them (HALOX_SAN_WERROR=ON to insist).
SAN_WERROR="${HALOX_SAN_WERROR:-OFF}"
COMMON_ARGS=(-DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DHALOX_BUILD_TESTS=ON)

export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
ASAN_BASE="${ASAN_OPTIONS:-strict_string_checks=1:check_initialization_order=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"

RESULTS=()
FAILED=0
FAILED_RUNS=() # SUITE:DIR of each ctest run that failed (their tests' output is quoted at the end)
FLAKY_RUNS=()  # SUITE:DIR of each whose failures (emulated tests) passed when run again (quoted too)
T_START=$SECONDS

record() { # record SUITE STATUS LINE [SECONDS]
    local took=""
    if [ -n "${4:-}" ]; then
        took="$(printf '%5d s' "$4")"
    fi
    RESULTS+=("$(printf '%-13s %-6s %7s  %s' "$1" "$2" "$took" "$3")")
    if [ "$2" = "FAILED" ]; then
        FAILED=1
    fi
}

# Does a program built with -fsanitize=$1 start here? Some kernels (vm.mmap_rnd_bits > 28)
# break the sanitizers' fixed memory layout; running without address-space randomisation
# (setarch -R) works around that. Prints the prefix to run tests with: "" or "setarch ... -R".
sanitizer_prefix() {
    local flags="$1" tmp
    tmp="$(mktemp -d)"
    cat >"$tmp/probe.c" <<'EOF'
#include <pthread.h>
static void *run(void *arg) { return arg; }
int main(void)
{
    pthread_t t;
    if (pthread_create(&t, 0, run, 0) != 0) return 1;
    return pthread_join(t, 0);
}
EOF
    if ! cc -fsanitize="$flags" -pthread "$tmp/probe.c" -o "$tmp/probe" >/dev/null 2>&1; then
        rm -rf "$tmp"
        echo "NOCOMPILE"
        return
    fi
    if timeout 60 "$tmp/probe" >/dev/null 2>&1; then
        echo ""
    elif timeout 60 setarch "$(uname -m)" -R "$tmp/probe" >/dev/null 2>&1; then
        echo "setarch $(uname -m) -R"
    else
        echo "BROKEN"
    fi
    rm -rf "$tmp"
}

# run_ctest SUITE DIR PREFIX [ctest args...]: run ctest, keep its log, record its summary line.
run_ctest() {
    local suite="$1" dir="$2" prefix="$3"
    shift 3
    local log="$HALOX_ROOT/$dir/ctest-$suite.log" rc=0 line t0=$SECONDS
    halox_log "[$suite] ctest $*"
    # shellcheck disable=SC2086  # prefix is a command prefix, split on purpose
    $prefix ctest --test-dir "$HALOX_ROOT/$dir" --output-on-failure -j "$HALOX_JOBS" "$@" \
        2>&1 | tee "$log" || rc=$?
    line="$(grep -E '^[0-9]+% tests passed|No tests were found' "$log" | tail -n 1 || true)"
    if [ -z "$line" ]; then
        line="ctest gave no summary (exit $rc)"
    fi
    local slow
    slow="$(slow_tests "$dir" "$log")"
    if [ -n "$slow" ]; then
        line="$line; ABOVE HALF THEIR TIME-OUT: $slow"
    fi
    # skipped tests (exit 77) said why in their output; name them so a skip is never silent
    local skipped names
    skipped="$(grep -cE '^[[:space:]]+[0-9]+ - .*\(Skipped\)' "$log" || true)"
    if [ "${skipped:-0}" -gt 0 ]; then
        names="$(grep -E '^[[:space:]]+[0-9]+ - .*\(Skipped\)' "$log" |
            sed -E 's/^[[:space:]]+[0-9]+ - ([^ ]+).*/\1/' | tr '\n' ' ')"
        line="$line; $skipped skipped (no GPU visible, or a transport this machine lacks: exit 77): $names"
    fi
    # this run's logs kept under the suite's name: two suites share build-asan, and a rerun
    # rewrites ctest's own
    local tmp="$HALOX_ROOT/$dir/Testing/Temporary"
    cp -f "$tmp/LastTest.log" "$tmp/LastTest-$suite.log" 2>/dev/null || true
    rm -f "$tmp/LastTestsFailed-$suite.log"
    if [ "$rc" -ne 0 ]; then
        cp -f "$tmp/LastTestsFailed.log" "$tmp/LastTestsFailed-$suite.log" 2>/dev/null || true
    fi
    if [ "$rc" -ne 0 ] && rerun_emu "$suite" "$dir" "$prefix" "$log"; then
        record "$suite" ok "$line; FLAKY, passed when run again: $(failed_names "$suite" "$dir")" \
            $((SECONDS - t0))
        FLAKY_RUNS+=("$suite:$dir")
    elif [ "$rc" -eq 0 ]; then
        record "$suite" ok "$line" $((SECONDS - t0))
    else
        record "$suite" FAILED "$line  (log: $dir/ctest-$suite.log)" $((SECONDS - t0))
        FAILED_RUNS+=("$suite:$dir")
    fi
}

# slow_tests DIR LOG: the tests of the run in LOG that took more than half their CTest time-out
# ("name 160/300 s", space-separated); a test that close to its time-out fails on a busier machine.
slow_tests() {
    ctest --test-dir "$HALOX_ROOT/$1" --show-only=json-v1 2>/dev/null | python3 -c '
import json, re, sys
timeout = {}
for t in json.load(sys.stdin).get("tests", []):
    for p in t.get("properties", []):
        if p.get("name") == "TIMEOUT":
            timeout[t["name"]] = float(p["value"])
slow = []
for m in re.finditer(r"Test +#\d+: (\S+) \.+.*? ([\d.]+) sec", open(sys.argv[1], errors="replace").read()):
    name, took = m.group(1), float(m.group(2))
    limit = timeout.get(name, 1500.0)
    if took > limit / 2:
        slow.append("%s %.0f/%.0f s" % (name, took, limit))
print(", ".join(slow))' "$2" 2>/dev/null || true
}

# failed_names SUITE DIR: the tests that failed in the suite's run (in DIR), space-separated
failed_names() {
    local f="$HALOX_ROOT/$2/Testing/Temporary/LastTestsFailed-$1.log"
    [ -f "$f" ] && sed 's/^[0-9]*://' "$f" | tr '\n' ' '
}

# rerun_emu SUITE DIR PREFIX LOG: when every failed test is an emulated multi-process GPU test
# (label emu: several processes, each with a pool of threads per emulated block, on CI's two
# cores), run those once more; 0 when they pass then. The first run's failures are quoted at the
# end of the output (from the suite's copies of the logs), so a flake stays on record with its
# message instead of being lost or turning the whole CI red. Any other failure is final.
rerun_emu() {
    local suite="$1" dir="$2" prefix="$3" log="$4" t emu failed
    failed="$(failed_names "$suite" "$dir")"
    [ -n "$failed" ] || return 1
    emu="$(ctest --test-dir "$HALOX_ROOT/$dir" -N -L '^emu$' | sed -n 's/^ *Test *#[0-9]*: //p')"
    for t in $failed; do
        grep -qx -- "$t" <<<"$emu" || return 1
    done
    halox_log "[$suite] emulated tests failed: $failed- running them once more"
    # shellcheck disable=SC2086  # prefix is a command prefix, split on purpose
    $prefix ctest --test-dir "$HALOX_ROOT/$dir" --output-on-failure --rerun-failed 2>&1 |
        tee -a "$log"
}

# failure_excerpts SUITE DIR: each failed test's telling lines, from ctest's own log of the
# suite's run (LastTest.log holds every test's whole output; under -j the console interleaves
# them, and a CI that keeps only the head and tail of the output would lose the message).
# Bounded: 3 tests, the lines that name a failure (at most 30) and the last 15.
failure_excerpts() {
    local suite="$1" tmp="$HALOX_ROOT/$2/Testing/Temporary" sfx="-$1" name n=0
    [ -f "$tmp/LastTestsFailed$sfx.log" ] && [ -f "$tmp/LastTest$sfx.log" ] || return 0
    while IFS= read -r name; do
        name="${name#*:}"
        n=$((n + 1))
        if [ "$n" -gt 3 ]; then
            echo "  (more failed tests: $tmp/LastTestsFailed$sfx.log)"
            break
        fi
        echo "---- [$suite] $name: lines naming the failure, then its last lines"
        awk -v t="$name" '$0 ~ "^[0-9]+/[0-9]+ Test: " && $3 == t { on = 1; next }
            on == 1 && /^Output:$/ { on = 2; getline; next }
            on == 2 && /^<end of output>/ { exit } on == 2 { print }' \
            "$tmp/LastTest$sfx.log" >"$tmp/excerpt.txt"
        grep -a -i -E 'fail|error|mismatch|timed? ?out|abort|assert|expected|refused|signal|killed' \
            "$tmp/excerpt.txt" | grep -a -v -E 'bit-identical|^0 check' | head -n 30 || true
        echo "  ..."
        tail -n 15 "$tmp/excerpt.txt"
    done <"$tmp/LastTestsFailed$sfx.log"
}

# build_suite SUITE DIR [cmake args...]: configure and build; record a failure.
build_suite() {
    local suite="$1" dir="$2" t0=$SECONDS
    shift 2
    halox_log "[$suite] configure $dir: $*"
    if ! halox_configure "$dir" "$@"; then
        record "$suite" FAILED "cmake configure failed in $dir"
        return 1
    fi
    halox_log "[$suite] build $dir (-j $HALOX_JOBS)"
    if ! halox_build "$dir"; then
        record "$suite" FAILED "build failed in $dir" $((SECONDS - t0))
        return 1
    fi
    record "$suite" built "configure + build of $dir" $((SECONDS - t0))
}

suite_main() {
    local t0=$SECONDS
    if build_suite main build "${COMMON_ARGS[@]}" -DHALOX_WERROR="$WERROR" "$MPI_OPT" \
        -DHALOX_SANITIZE=; then
        run_ctest main build "" --no-tests=error
    fi
    halox_log "[main] done in $((SECONDS - t0)) s"
}

# sanitizer_ready SUITE SANITIZERS NAME: the run prefix in SAN_PREFIX, or the suite recorded as
# failed (returns 1) when the sanitizer does not work on this machine.
sanitizer_ready() {
    SAN_PREFIX="$(sanitizer_prefix "$2")"
    case "$SAN_PREFIX" in
        NOCOMPILE | BROKEN)
            record "$1" FAILED "$3 does not work on this machine ($SAN_PREFIX)"
            return 1
            ;;
    esac
}

suite_asan() {
    local t0=$SECONDS prefix
    sanitizer_ready asan address,undefined AddressSanitizer || return 0
    prefix=$SAN_PREFIX
    if build_suite asan build-asan "${COMMON_ARGS[@]}" -DHALOX_WERROR="$SAN_WERROR" "$MPI_OPT" \
        -DHALOX_ENABLE_CUDA=OFF -DHALOX_ENABLE_NVSHMEM=OFF "-DHALOX_SANITIZE=address;undefined"; then
        ASAN_OPTIONS="$ASAN_BASE:detect_leaks=1" \
            run_ctest asan build-asan "$prefix" --no-tests=error -LE '^(mpi|script|physics)$'
        # Open MPI's own allocations: no leak checks; eight processes under ASan on two cores
        # take minutes, and the 4-rank runs cover the same code
        ASAN_OPTIONS="$ASAN_BASE:detect_leaks=0" \
            run_ctest asan-mpi build-asan "$prefix" -L '^mpi$' -LE '^(script|physics)$' \
                -E '^check_mpi_np8$'

    fi
    halox_log "[asan] done in $((SECONDS - t0)) s"
}

suite_tsan() {
    local t0=$SECONDS prefix
    sanitizer_ready tsan thread ThreadSanitizer || return 0
    prefix=$SAN_PREFIX
    if build_suite tsan build-tsan "${COMMON_ARGS[@]}" -DHALOX_WERROR="$SAN_WERROR" \
        -DHALOX_ENABLE_MPI=OFF -DHALOX_ENABLE_CUDA=OFF -DHALOX_ENABLE_NVSHMEM=OFF \
        -DHALOX_SANITIZE=thread; then
        # the 24-thread grids take minutes under TSan; the 27-thread 3x3x3 grid and the full
        # shell's 8x1x1 cover the same code
        run_ctest tsan build-tsan "$prefix" --no-tests=error -L '^(threads|unit)$' -LE '^(core|script)$' \
            -E '^check_threads_(full_)?4x3x2_2pulse$'
    fi
    halox_log "[tsan] done in $((SECONDS - t0)) s"
}

# Builds with a part switched off: the tests register only what such a build can pass.
suite_nompi() {
    local t0=$SECONDS
    if build_suite nompi build-nompi "${COMMON_ARGS[@]}" -DHALOX_WERROR="$WERROR" \
        -DHALOX_ENABLE_MPI=OFF -DHALOX_SANITIZE=; then
        run_ctest nompi build-nompi "" --no-tests=error -LE '^(core|emu|docs|long|script)$'
    fi
    halox_log "[nompi] done in $((SECONDS - t0)) s"
}

suite_nocuda() {
    local t0=$SECONDS
    if build_suite nocuda build-nocuda "${COMMON_ARGS[@]}" -DHALOX_WERROR="$WERROR" "$MPI_OPT" \
        -DHALOX_ENABLE_CUDA=OFF -DHALOX_ENABLE_NVSHMEM=OFF -DHALOX_SANITIZE=; then
        # the asan suite tests this configuration (CUDA off, MPI as found) sanitized: here the
        # build with warnings as errors and the installed package
        run_ctest nocuda build-nocuda "" --no-tests=error -L '^install$'
    fi
    halox_log "[nocuda] done in $((SECONDS - t0)) s"
}

halox_log "halox tests: suites ${SUITES[*]}; $(cmake --version | head -n 1);" \
    "$(cc --version | head -n 1);" \
    "$(nproc) cores; jobs $HALOX_JOBS"
for s in "${SUITES[@]}"; do
    "suite_$s"
done

echo
echo "================================ halox test summary ================================"
for r in "${RESULTS[@]}"; do
    echo "  $r"
done
echo "  total time: $((SECONDS - T_START)) s"
for r in "${FLAKY_RUNS[@]}"; do
    echo "  flaky (passed when run again; the first run's failure follows): ${r%%:*}"
done
if [ "$FAILED" -ne 0 ]; then
    echo "  RESULT: FAILED"
else
    echo "  RESULT: all suites passed"
fi
echo "===================================================================================="
for r in "${FAILED_RUNS[@]}" "${FLAKY_RUNS[@]}"; do
    failure_excerpts "${r%%:*}" "${r#*:}"
done
[ "$FAILED" -eq 0 ]
