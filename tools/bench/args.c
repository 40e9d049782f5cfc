/* The command line: one option table for every subcommand, each option naming the subcommands
 * that take it, so a misplaced option is an error rather than silently ignored. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "halox/file.h"
#include "halox/md_options.h"
#include "tool_agree.h"
#include "tool_seed.h"

enum { C_HALO = 1, C_LAT = 2, C_BW = 4, C_MD = 8, C_SCAL = 16, C_OVL = 32, C_ALL = 63 };
#define C_EXCH  (C_HALO | C_LAT | C_BW)
#define C_MDRUN (C_MD | C_OVL) /* MD runs through the engine */
#define C_RUN   (C_EXCH | C_MDRUN)

typedef struct opt {
    const char *name, *alias;
    int value; /* takes a value */
    int cmds;
} opt_t;

static const opt_t k_opts[] = {
    {"--transport", "-t", 1, C_RUN},
    {"--atoms", NULL, 1, C_HALO | C_MDRUN},
    {"--grid", NULL, 1, C_HALO | C_MDRUN},
    {"--threads", NULL, 1, C_RUN},
    {"--repeats", "-r", 1, C_HALO | C_OVL},
    {"--back-to-back", NULL, 1, C_HALO},
    {"--mode", NULL, 1, C_HALO},
    {"--shifts", NULL, 0, C_HALO},
    {"--full-shell", NULL, 0, C_HALO},
    {"--fields", NULL, 1, C_HALO},
    {"--warmup", "-w", 1, C_EXCH},
    {"--iters", "-n", 1, C_LAT | C_BW},
    {"--minbytes", "-b", 1, C_LAT | C_BW},
    {"--maxbytes", "-e", 1, C_LAT | C_BW},
    {"--stepfactor", "-f", 1, C_LAT | C_BW},
    {"--no-verify", NULL, 0, C_EXCH},
    {"--double", NULL, 0, C_EXCH},
    {"--stride", NULL, 1, C_EXCH},
    {"--seed", NULL, 1, C_EXCH},
    {"--timeout", NULL, 1, C_RUN},
    {"--steps", NULL, 1, C_MDRUN},
    {"--graph", NULL, 0, C_MD},
    {"--no-graph", NULL, 0, C_MD},
    {"--device", NULL, 1, C_MDRUN},
    {"--json", NULL, 1, C_ALL},
    {"--csv", NULL, 1, C_ALL},
};

int bench_bad(const char *fmt, ...)
{
    if (bench_world_rank() != 0) /* every process finds the same fault: one says it */
        return BENCH_USAGE;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "halox-bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return BENCH_USAGE;
}

static int cmd_bit(const char *cmd)
{
    if (!strcmp(cmd, "halo"))
        return C_HALO;
    if (!strcmp(cmd, "latency"))
        return C_LAT;
    if (!strcmp(cmd, "bandwidth"))
        return C_BW;
    if (!strcmp(cmd, "md"))
        return C_MD;
    if (!strcmp(cmd, "overlap"))
        return C_OVL;
    return C_SCAL;
}

int bench_parse_size(const char *s, long long *v)
{
    char *end;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (end == s || errno || n < 0)
        return 0;
    long long mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1LL << 10;
    else if (*end == 'M' || *end == 'm')
        mul = 1LL << 20;
    else if (*end == 'G' || *end == 'g')
        mul = 1LL << 30;
    if (mul > 1)
        end++;
    if (*end || n > (1LL << 50) / mul)
        return 0;
    *v = n * mul;
    return 1;
}

static int parse_int(const char *s, long long lo, long long hi, long long *v)
{
    char *end;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (end == s || *end || errno || n < lo || n > hi)
        return 0;
    *v = n;
    return 1;
}

/* A transport label: a compiled-in name, optionally +put, +tma, +floor or +null. */
static int check_transport(const char *label)
{
    char base[64];
    bench_base_name(label, base, sizeof base);
    const char *plus = strchr(label, '+');
    if (plus && strcmp(plus, "+put") && strcmp(plus, "+tma") && strcmp(plus, "+floor") &&
        strcmp(plus, "+null"))
        return bench_bad("transport '%s': unknown variant '%s' (use +put, +tma, +floor or +null)",
                         label, plus);
    if (halox_transport_check_name(base, "--transport", NULL) != HALOX_OK)
        return bench_bad("%s", halox_last_error());
    return 0;
}

static int parse_transports(const char *v, bench_opts_t *o)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", v);
    o->n_transports = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->n_transports == BENCH_MAX_LIST)
            return bench_bad("--transport: more than %d transports: give at most %d (run the "
                             "others in a second run)",
                             BENCH_MAX_LIST, BENCH_MAX_LIST);
        if (strlen(t) >= sizeof o->transports[0])
            return bench_bad("--transport: '%.20s...' is longer than %zu characters: no "
                             "transport's name is (see --version)",
                             t, sizeof o->transports[0] - 1);
        if (check_transport(t))
            return BENCH_USAGE;
        snprintf(o->transports[o->n_transports++], sizeof o->transports[0], "%s", t);
    }
    return o->n_transports ? 0 : bench_bad("--transport needs at least one name");
}

static int parse_atoms(const char *v, bench_opts_t *o)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", v);
    o->n_atoms = 0;
    if (!*v || v[strlen(v) - 1] == ',')
        return bench_bad("--atoms '%s': give counts separated by commas, e.g. 45000,176000", v);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        long long n;
        if (!bench_parse_size(t, &n) || n < 1 || n > 2000000000LL)
            return bench_bad("--atoms '%s': '%s' is not a count of atoms (1 to 2e9; K and M "
                             "suffixes allowed)",
                             v, t);
        if (o->n_atoms == BENCH_MAX_LIST)
            return bench_bad("--atoms: at most %d sizes", BENCH_MAX_LIST);
        o->atoms[o->n_atoms++] = n;
    }
    return 0;
}

/* Defaults that depend on how the tool was started. */
static void defaults(bench_opts_t *o, int cmd)
{
    o->repeats = cmd == C_OVL ? 50 : 200;
    o->back_to_back = 1;
    o->warmup = cmd == C_HALO ? 20 : 10;
    o->iters = 100;
    o->min_bytes = 8;
    o->max_bytes = 16LL << 20;
    o->factor = 2;
    o->verify = 1;
    o->real = HALOX_FLOAT;
    o->stride = 3;
    o->seed = 2026;
    o->steps = cmd == C_OVL ? 20 : 200;
    o->device = HALOX_MD_DEVICE_AUTO;
    o->atoms[0] = 45000;
    o->atoms[1] = 176000;
    o->n_atoms = cmd == C_HALO ? 2 : 1;
}

/* Without --transport: thread ranks when not started by an MPI launcher; under one, every
 * compiled transport but threads (with the NVSHMEM variants) for the exchanges, and for md and
 * overlap the automatic choice (halox_transport_choose, as halox-md makes it on one node). */
static void default_transports(bench_opts_t *o, int cmd)
{
    o->n_transports = 0;
    if (bench_launched_processes() == 0) {
        snprintf(o->transports[o->n_transports++], sizeof o->transports[0], "threads");
        return;
    }
    if (cmd & C_MDRUN) {
        halox_topology_t t;
        halox_topology_guess(bench_launched_processes(), 0,
                             o->device != HALOX_MD_DEVICE_CPU && halox_gpu_count() > 0, &t);
        snprintf(o->transports[o->n_transports++], sizeof o->transports[0], "%s",
                 halox_transport_choose(&t, o->atoms[0], NULL, 0));
        return;
    }
    for (const char *const *t = halox_transport_names(); *t; t++)
        if (!bench_label_caps(*t).threads)
            snprintf(o->transports[o->n_transports++], sizeof o->transports[0], "%s", *t);
    if (halox_transport_available("nvshmem-fused")) {
        static const char *const v[] = {"nvshmem-pulse+put",  "nvshmem-fused+put",
                                        "nvshmem-fused+tma",  "nvshmem-fused+floor",
                                        "nvshmem-fused+null", "nvshmem-inline+floor",
                                        "nvshmem-inline+null"};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            snprintf(o->transports[o->n_transports++], sizeof o->transports[0], "%s", v[i]);
    }
}

static const opt_t *find_opt(const char *a)
{
    for (size_t k = 0; k < sizeof k_opts / sizeof k_opts[0]; k++)
        if (!strcmp(a, k_opts[k].name) || (k_opts[k].alias && !strcmp(a, k_opts[k].alias)))
            return &k_opts[k];
    return NULL;
}

static int set_value(bench_opts_t *o, const char *name, const char *v)
{
    long long n;
    if (!strcmp(name, "--transport"))
        return parse_transports(v, o);
    if (!strcmp(name, "--atoms"))
        return parse_atoms(v, o);
    if (!strcmp(name, "--grid") || !strcmp(name, "--timeout") || !strcmp(name, "--device")) {
        /* the same values as halox-md's, parsed and refused by the engine's table */
        halox_md_setup_t s;
        halox_md_setup_init(&s);
        if (halox_md_setup_option(&s, name, v) != HALOX_OK)
            return bench_bad("%s", halox_last_error());
        if (name[2] == 'g')
            o->grid = s.cfg.grid;
        else if (name[2] == 't')
            o->timeout_s = s.cfg.timeout_s;
        else
            o->device = s.cfg.device;
        o->grid_set |= name[2] == 'g';
    } else if (!strcmp(name, "--threads")) {
        if (!parse_int(v, 1, 4096, &n))
            return bench_bad("--threads '%s': give a number of ranks from 1 to 4096", v);
        o->threads = (int)n;
    } else if (!strcmp(name, "--repeats") || !strcmp(name, "--iters")) {
        if (!parse_int(v, 1, 100000000, &n))
            return bench_bad("%s '%s': give a count >= 1", name, v);
        *(!strcmp(name, "--repeats") ? &o->repeats : &o->iters) = (int)n;
    } else if (!strcmp(name, "--back-to-back")) {
        if (!parse_int(v, 1, 100000, &n))
            return bench_bad("--back-to-back '%s': give a count from 1 to 100000", v);
        o->back_to_back = (int)n;
        o->back_to_back_set = 1;
    } else if (!strcmp(name, "--mode")) {
        if (strcmp(v, "host") && strcmp(v, "in-step"))
            return bench_bad("--mode '%s': use host (each exchange launched by the host) or "
                             "in-step (the exchanges captured in one CUDA graph, as an MD step "
                             "enqueues them)",
                             v);
        o->in_step = v[0] == 'i';
    } else if (!strcmp(name, "--fields")) {
        if (!parse_int(v, 0, HALOX_MAX_FIELDS, &n))
            return bench_bad("--fields '%s': give a number of fields from 0 to %d", v,
                             HALOX_MAX_FIELDS);
        o->fields = (int)n;
    } else if (!strcmp(name, "--warmup")) {
        if (!parse_int(v, 0, 100000000, &n))
            return bench_bad("--warmup '%s': give a count >= 0", v);
        o->warmup = (int)n;
    } else if (!strcmp(name, "--minbytes") || !strcmp(name, "--maxbytes")) {
        if (!bench_parse_size(v, &n) || n < 1)
            return bench_bad("%s '%s': give bytes >= 1 (K, M, G suffixes allowed)", name, v);
        *(!strcmp(name, "--minbytes") ? &o->min_bytes : &o->max_bytes) = n;
    } else if (!strcmp(name, "--stepfactor")) {
        char *end;
        o->factor = strtod(v, &end);
        if (end == v || *end || !isfinite(o->factor) || o->factor <= 1)
            return bench_bad("-f '%s': give a factor > 1", v);
    } else if (!strcmp(name, "--stride")) {
        if (strcmp(v, "3") && strcmp(v, "4"))
            return bench_bad("--stride '%s': use 3 or 4", v);
        o->stride = atoi(v);
    } else if (!strcmp(name, "--seed")) {
        if (!tool_parse_seed(v, &o->seed))
            return bench_bad("--seed '%s': give %s", v, TOOL_SEED_RANGE);
    } else if (!strcmp(name, "--steps")) {
        if (!parse_int(v, 1, 1000000000, &n))
            return bench_bad("--steps '%s': give a count >= 1", v);
        o->steps = n;
    } else if (!strcmp(name, "--json") || !strcmp(name, "--csv")) {
        if (name[2] == 'j')
            o->json_path = v;
        else
            o->csv_path = v;
    }
    return 0;
}

static int set_flag(bench_opts_t *o, const char *name)
{
    if (!strcmp(name, "--no-verify"))
        o->verify = 0;
    else if (!strcmp(name, "--double"))
        o->real = HALOX_DOUBLE;
    else if (!strcmp(name, "--graph") || !strcmp(name, "--no-graph"))
        o->graph = !strcmp(name, "--graph") ? HALOX_MD_GRAPH_ON : HALOX_MD_GRAPH_OFF;
    else if (!strcmp(name, "--shifts"))
        o->shifts = 1;
    else if (!strcmp(name, "--full-shell"))
        o->full_shell = 1;
    return 0;
}

static int check_combinations(bench_opts_t *o, int cmd)
{
    if (cmd & (C_LAT | C_BW)) {
        if (o->min_bytes > o->max_bytes)
            return bench_bad("-b %lld is above -e %lld", o->min_bytes, o->max_bytes);
    }
    /* HALOX_TIMEOUT_S too: a bad bound is refused here, not after the ranks have started */
    if (cmd != C_SCAL && halox_timeout_resolve(o->timeout_s, NULL) != HALOX_OK)
        return bench_bad("%s", halox_last_error());
    /* in-step: K captured exchanges per launch, so that the graph launch is paid once as in
     * the MD step's graph */
    if (o->in_step && !o->back_to_back_set)
        o->back_to_back = 20;
    if (cmd == C_SCAL && o->n_files == 0)
        return bench_bad("scaling needs the JSON files of md runs: halox-bench scaling A.json "
                         "B.json ...");
    /* the records' files, before anything runs: a device, a FIFO, a folder, a file that cannot
     * be written, the two records in one file or in an input of scaling are refused */
    halox_file_t files[2 + BENCH_MAX_LIST] = {
        {o->json_path, "the --json file", HALOX_FILE_WRITE},
        {o->csv_path, "the --csv file", HALOX_FILE_WRITE},
    };
    for (int i = 0; i < o->n_files; i++)
        files[2 + i] = (halox_file_t){o->files[i], "the scaling input", HALOX_FILE_READ};
    if (halox_files_check(files, 2 + o->n_files) != HALOX_OK)
        return bench_bad("%s", halox_last_error());
    if ((cmd & C_MDRUN) && o->device == HALOX_MD_DEVICE_CPU)
        for (int i = 0; i < o->n_transports; i++)
            if (halox_transport_on_gpu(o->transports[i]))
                return bench_bad("--device cpu runs on threads or mpi, not '%s'", o->transports[i]);
    if (cmd & C_MDRUN)
        for (int i = 0; i < o->n_transports; i++)
            if (bench_label_floor(o->transports[i]))
                return bench_bad("%s: '%s': %s moves no atoms, it cannot run MD", o->cmd,
                                 o->transports[i], strchr(o->transports[i], '+'));
    return 0;
}

void bench_usage(FILE *to)
{
    fprintf(
        to,
        "usage: halox-bench SUBCOMMAND [options]     (MPI transports: mpirun -np P halox-bench "
        "...)\n"
        "\n"
        "Subcommands:\n"
        "  halo       the halo exchange alone (coordinates + forces) on a water-density system\n"
        "  latency    2 ranks: ping-pong (coordinates out, forces back), half round trip\n"
        "  bandwidth  2 ranks: streams of exchanges, bytes moved / time\n"
        "  md         full MD steps (preset water-density): ms/step, ns/day, halo share\n"
        "  scaling    strong scaling from the JSON files of md runs: scaling A.json B.json ...\n"
        "  overlap    MD (preset water-density): local forces alone, halo alone, both together,\n"
        "             overlap %% = 100 (t_halo + t_local - t_both) / t_halo\n"
        "\n"
        "Options (each subcommand takes those that apply to it):\n"
        "  -t, --transport T[,T...]  transports; NAME+put, NAME+tma, NAME+floor (signals only),\n"
        "                            NAME+null (the kernels launched empty): NVSHMEM paths\n"
        "                            (default: threads without mpirun, every other transport\n"
        "                            under mpirun)\n"
        "  --atoms N[,N...]          halo: system sizes (45000,176000); md, overlap: atoms\n"
        "                            (45000)\n"
        "  --grid AxBxC              rank grid (default: the most cubic for the rank count)\n"
        "  --threads P               ranks of the threads transport (default: the grid's, or 2)\n"
        "  -r, --repeats R           halo: timed repeats (200); overlap: repetitions (50)\n"
        "  --back-to-back K          halo: K exchanges per repeat, enqueued one after the other,\n"
        "                            time / K (1: a barrier before every exchange; 20 with\n"
        "                            --mode in-step)\n"
        "  --mode host|in-step       halo: each exchange launched by the host (host), or the K\n"
        "                            exchanges of a repeat captured in one CUDA graph and\n"
        "                            launched at once, as the MD step enqueues them (in-step;\n"
        "                            transports capturable in graphs only)\n"
        "  --shifts                  halo: periodic images of one-rank dimensions by shifts (no\n"
        "                            pulse there), the GPU engine's plans; default: copies\n"
        "  --full-shell              halo: a full-shell plan (ghosts from both neighbours)\n"
        "  --fields N                halo: N float fields per atom forwarded with every\n"
        "                            coordinate exchange (halox_comm_bind_fields; 0)\n"
        "  -w, --warmup W            untimed repeats first (halo 20, latency/bandwidth 10)\n"
        "  -b, --minbytes B          latency/bandwidth: smallest message (8; K, M, G suffixes)\n"
        "  -e, --maxbytes B          largest message (16M)\n"
        "  -f, --stepfactor F        size multiplier (2)\n"
        "  -n, --iters N             timed iterations per size (100)\n"
        "  --no-verify               skip the bit-for-bit check against the serial reference\n"
        "  --double, --stride 3|4    precision and reals per atom of the exchanges (float, 3)\n"
        "  --seed S                  random system and force values (2026)\n"
        "  --timeout S               bound on every wait for a peer (default HALOX_TIMEOUT_S/60)\n"
        "  --steps S                 md: steps (200); overlap: steps before the probe (20)\n"
        "  --graph | --no-graph      md: CUDA graphs of the GPU engine's steps (default: where\n"
        "                            the transport can be captured; --no-graph: none)\n"
        "  --device gpu|cpu|auto     md, overlap: engine (auto follows the transport)\n"
        "  --skin S, --rebuild-every K, --verlet-tolerance E, --cutoff RC, --dt DT, ...\n"
        "                            md, overlap: the engine's settings as halox-md takes them\n"
        "                            (potential, lists, integration, --temp, --density,\n"
        "                            --precision), after the preset; records: engine_options\n"
        "  --json FILE               append one JSON object per measured case\n"
        "  --csv FILE                append one CSV row per case (a header when FILE is new)\n"
        "  --version, --help-env, --help\n"
        "\n"
        "Exit status: 0 measured or skipped with a message, 1 a wrong result or a failure,\n"
        "2 bad usage. See docs/BENCH.md.\n");
}

/* The engine's settings halox-bench md and overlap pass on (the potential, the lists, the
 * integration, the state; not what the benchmark fixes itself: the preset and its system, the
 * steps, the parallel run, the output). */
static const halox_md_option_t *engine_option(const char *a)
{
    const halox_md_option_t *eo = halox_md_option_find(a);
    if (!eo)
        return NULL;
    static const char *const also[] = {"--temp", "--density", "--precision", NULL};
    int ok = (eo->group == HALOX_MD_GROUP_POTENTIAL || eo->group == HALOX_MD_GROUP_INTEGRATION) &&
             strcmp(a, "--steps") != 0;
    for (int k = 0; also[k]; k++)
        ok |= !strcmp(a, also[k]);
    return ok ? eo : NULL;
}

/* Check the value now (the engine's message), keep it for every case, and say it in records. */
static int add_engine_option(bench_opts_t *o, const halox_md_option_t *eo, const char *v)
{
    halox_md_setup_t s;
    halox_md_setup_init(&s);
    if (halox_md_setup_option(&s, eo->name, v) != HALOX_OK)
        return bench_bad("%s", halox_last_error());
    if (o->n_engine_opts == BENCH_MAX_LIST)
        return bench_bad("at most %d engine options", BENCH_MAX_LIST);
    o->engine_opt[o->n_engine_opts][0] = eo->name;
    o->engine_opt[o->n_engine_opts][1] = v;
    o->n_engine_opts++;
    size_t len = strlen(o->engine_options);
    snprintf(o->engine_options + len, sizeof o->engine_options - len, "%s%s%s%s", len ? " " : "",
             eo->name, v ? " " : "", v ? v : "");
    return 0;
}

int bench_parse(int argc, char **argv, bench_opts_t *o)
{
    const int cmd = cmd_bit(o->cmd);
    defaults(o, cmd);
    int transports_set = 0;
    /* the command line as the ranks of an MPI job compare it (tool_agree.h) */
    tool_agree_tool("halox-bench");
    tool_agree_option("halox-bench", o->cmd);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bench_usage(stdout);
            return 1;
        }
        const opt_t *op = find_opt(a);
        const halox_md_option_t *eo = op ? NULL : engine_option(a);
        if (eo && (cmd & C_MDRUN)) {
            const char *v = eo->metavar ? (i + 1 < argc ? argv[++i] : NULL) : NULL;
            if (add_engine_option(o, eo, v))
                return BENCH_USAGE;
            tool_agree_option(eo->name, v);
            continue;
        }
        if (!op) {
            if (a[0] == '-')
                return bench_bad("%s: unknown option '%s' (see halox-bench --help)", o->cmd, a);
            if (cmd != C_SCAL)
                return bench_bad("%s: unexpected argument '%s' (see halox-bench --help)", o->cmd,
                                 a);
            if (o->n_files == BENCH_MAX_LIST)
                return bench_bad("scaling: at most %d files", BENCH_MAX_LIST);
            o->files[o->n_files++] = a;
            continue;
        }
        if (!(op->cmds & cmd))
            return bench_bad("%s: option '%s' is not for this subcommand (see halox-bench "
                             "--help)",
                             o->cmd, a);
        if (!op->value) {
            set_flag(o, op->name);
            tool_agree_option(op->name, NULL);
            continue;
        }
        if (i + 1 >= argc)
            return bench_bad("%s needs a value (see halox-bench --help)", a);
        if (!strcmp(op->name, "--transport"))
            transports_set = 1;
        if (set_value(o, op->name, argv[++i]))
            return BENCH_USAGE;
        tool_agree_option(op->name, argv[i]);
    }
    if (!transports_set && cmd != C_SCAL)
        default_transports(o, cmd);
    return check_combinations(o, cmd);
}
