/* The engine's settings by name (include/halox/md_options.h), against the configuration fields
 * they must set and the checks they must make:
 * - the table: names unique, every setting with a value has a metavar, every listed one a help;
 * - every setting applied with a good value changes its field (compared with the default), and
 *   with a missing or bad value is refused naming the setting and the value;
 * - combinations: --read with --cells, --box without --read, --restart with a physics setting;
 * - the launch: under "2 processes", a transport whose ranks are threads is refused (naming
 *   where it came from), none given takes mpi (when built), a grid of another size is refused;
 * - transport capabilities: threads, mpi and the GPU transports of the build. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "halox/md_options.h"
#include "halox/transport.h"
#include "harness.h"

static halox_md_setup_t fresh(void)
{
    halox_md_setup_t s;
    halox_md_setup_init(&s);
    return s;
}

static void check_table(void)
{
    int n = 0;
    for (const halox_md_option_t *o = halox_md_options(); o->name; o++, n++) {
        CHECK_MSG(!strncmp(o->name, "--", 2), "%s", o->name);
        CHECK_MSG(halox_md_option_find(o->name) == o, "%s is not found as itself", o->name);
        CHECK_MSG(!o->usage || (o->help && *o->help), "%s is listed without help", o->name);
        CHECK_MSG(!o->usage || strstr(o->usage, o->name), "%s: usage '%s'", o->name, o->usage);
        CHECK_MSG(o->group >= 0 && o->group < HALOX_MD_GROUPS, "%s: group %d", o->name, o->group);
    }
    CHECK(n >= 40 && n <= 64);
    CHECK(halox_md_option_find("--no-such") == NULL);
    CHECK(!strcmp(halox_md_option_group_title(HALOX_MD_GROUP_OUTPUT), "Output"));
}

/* A good value must move its field away from the default; a bad one must be refused naming
 * both the setting and the value. */
typedef struct {
    const char *name, *good, *bad;
} sample_t;

static const sample_t k_samples[] = {
    {"--density", "0.5", "-1"},
    {"--cells", "3,4,5", "3,4"},
    {"--atoms", "500", "1"},
    {"--box", "5,6,7", "5,0,7"},
    {"--temp", "2.5", "-0.1"},
    {"--seed", "42", "-1"},
    {"--cutoff", "3.0", "0"},
    {"--skin", "0.5", "x"},
    {"--rebuild-every", "7", "0"},
    {"--verlet-tolerance", "1e-3", "0"},
    {"--dt", "0.002", "inf"},
    {"--steps", "33", "-5"},
    {"--ensemble", "nvt", "npt"},
    {"--tau", "0.5", "0"},
    {"--equilibrate", "12", "-1"},
    {"--grid", "2x1x1", "2x1"},
    {"--device", "cpu", "tpu"},
    {"--precision", "double", "half"},
    {"--timeout", "5", "1e99"},
    {"--overlap-probe", "3", "-1"},
    {"--thermo-every", "9", "0"},
    {"--traj-every", "4", "-2"},
    {"--checkpoint-every", "11", "-1"},
    {"--read-frame", "2", "first"},
    {"--lattice", "fcc", "bcc"},
    {"--traj", "out.lammpstrj", "out.bin"},
};

static void check_values(void)
{
    const halox_md_setup_t def = fresh();
    for (size_t i = 0; i < sizeof k_samples / sizeof k_samples[0]; i++) {
        const sample_t *k = &k_samples[i];
        halox_md_setup_t s = fresh();
        halox_status_t st = halox_md_setup_option(&s, k->name, k->good);
        CHECK_MSG(st == HALOX_OK, "%s %s: %s", k->name, k->good, halox_last_error());
        CHECK_MSG(halox_md_setup_given(&s, k->name), "%s not marked as given", k->name);
        /* --lattice fcc is the default source: only the given bit changes */
        if (strcmp(k->name, "--lattice"))
            CHECK_MSG(memcmp(&s.cfg, &def.cfg, sizeof s.cfg) != 0, "%s %s changed nothing", k->name,
                      k->good);
        s = fresh();
        st = halox_md_setup_option(&s, k->name, k->bad);
        CHECK_MSG(st == HALOX_ERR_INVALID_ARG && strstr(halox_last_error(), k->name) &&
                      strstr(halox_last_error(), k->bad),
                  "%s %s: %d %s", k->name, k->bad, (int)st, halox_last_error());
        st = halox_md_setup_option(&s, k->name, NULL);
        CHECK_MSG(st == HALOX_ERR_INVALID_ARG && strstr(halox_last_error(), "needs a value"),
                  "%s without a value: %s", k->name, halox_last_error());
    }
    halox_md_setup_t s = fresh();
    CHECK_OK(halox_md_setup_option(&s, "--shift", NULL));
    CHECK(s.cfg.shift == 1);
    CHECK_OK(halox_md_setup_option(&s, "--no-shift", NULL));
    CHECK(s.cfg.shift == 0);
    CHECK_OK(halox_md_setup_option(&s, "--seed", "18446744073709551615"));
    CHECK(s.cfg.seed == UINT64_MAX);
    CHECK_STATUS(halox_md_setup_option(&s, "--seed", "18446744073709551616"),
                 HALOX_ERR_INVALID_ARG);
    /* a temperature beyond HALOX_MD_MAX_TEMP blew the run up at its first step */
    CHECK_OK(halox_md_setup_option(&s, "--temp", "1e6"));
    CHECK_STATUS(halox_md_setup_option(&s, "--temp", "1e30"), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(halox_last_error(), "--temp '1e30': give a temperature from 0 to 1e+06"), "%s",
              halox_last_error());
    halox_md_config_t hot;
    halox_md_config_default(&hot);
    hot.temp = 1e30;
    CHECK_STATUS(halox_md_config_check(&hot), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(halox_last_error(), "temperature 1e+30: give a finite temperature from 0 to "
                                         "1e+06"),
              "%s", halox_last_error());
    /* a message built on an earlier one (halox_last_error() as an argument) stays whole */
    CHECK_STATUS(halox_md_setup_option(&s, "--grid", "2x2"), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(!strncmp(halox_last_error(), "--grid: cannot read grid '2x2': expected", 39), "%s",
              halox_last_error());
    CHECK_STATUS(halox_md_setup_option(&s, "--frobnicate", "1"), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "unknown option '--frobnicate'"));
    /* two trajectory options */
    CHECK_OK(halox_md_setup_option(&s, "--xyz", "a.xyz"));
    CHECK_STATUS(halox_md_setup_option(&s, "--traj", "b.xyz"), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "--xyz and --traj both name a trajectory"));
    /* the first physics setting is remembered for the restart check */
    s = fresh();
    CHECK_OK(halox_md_setup_option(&s, "--steps", "10"));
    CHECK(s.physics_option == NULL);
    CHECK_OK(halox_md_setup_option(&s, "--dt", "0.001"));
    CHECK_OK(halox_md_setup_option(&s, "--temp", "1"));
    CHECK(s.physics_option && !strcmp(s.physics_option, "--dt"));
}

static void check_combinations(void)
{
    halox_md_setup_t s = fresh();
    CHECK_OK(halox_md_setup_option(&s, "--read", "x.xyz"));
    CHECK_OK(halox_md_setup_option(&s, "--cells", "3,3,3"));
    CHECK_STATUS(halox_md_setup_finish(&s, NULL), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "--read takes the atoms from the file"));

    s = fresh();
    CHECK_OK(halox_md_setup_option(&s, "--box", "4,4,4"));
    CHECK_STATUS(halox_md_setup_finish(&s, NULL), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "--box is for --read"));

    s = fresh();
    CHECK_OK(halox_md_setup_option(&s, "--restart", "nowhere.ckpt"));
    CHECK_OK(halox_md_setup_option(&s, "--temp", "2"));
    CHECK_STATUS(halox_md_setup_finish(&s, NULL), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "--temp cannot be combined with --restart"));

    s = fresh();
    CHECK_OK(halox_md_setup_option(&s, "--cells", "3,3,3"));
    CHECK_OK(halox_md_setup_option(&s, "--device", "cpu"));
    CHECK_OK(halox_md_setup_finish(&s, NULL));
    CHECK(!strcmp(s.cfg.transport, "threads"));
}

/* water-density's skin is 3.0 at every size unless given; the description says so; other presets
 * keep theirs */
static void check_preset_sizes(void)
{
    halox_md_config_t c;
    halox_md_config_default(&c);
    CHECK_OK(halox_md_config_preset(&c, "water-density"));
    CHECK(c.skin == 3.0);
    const char *d = halox_md_preset_description("water-density");
    CHECK_MSG(d && strstr(d, "skin 3,"), "%s", d ? d : "(null)");
    /* through the options, as halox-md takes them (the preset first) */
    const char *sizes[][2] = {{"3000000", NULL}, {"45000", NULL}, {"3000000", "2"}};
    const double want[] = {3.0, 3.0, 2.0};
    for (int k = 0; k < 3; k++) {
        halox_md_setup_t s = fresh();
        CHECK_OK(halox_md_setup_option(&s, "--preset", "water-density"));
        CHECK_OK(halox_md_setup_option(&s, "--atoms", sizes[k][0]));
        if (sizes[k][1])
            CHECK_OK(halox_md_setup_option(&s, "--skin", sizes[k][1]));
        CHECK_OK(halox_md_setup_option(&s, "--device", "cpu"));
        CHECK_OK(halox_md_setup_finish(&s, NULL));
        CHECK_MSG(s.cfg.skin == want[k] && s.cfg.natoms == atoll(sizes[k][0]),
                  "--atoms %s --skin %s: skin %g, %lld atoms", sizes[k][0],
                  sizes[k][1] ? sizes[k][1] : "-", s.cfg.skin, s.cfg.natoms);
    }
}

static void check_launch(void)
{
    const halox_md_launch_t two = {.processes = 2, .var = "OMPI_COMM_WORLD_SIZE", .how = "TWO"};
    halox_md_setup_t s = fresh();
    CHECK_OK(halox_md_setup_option(&s, "--cells", "3,3,3"));
    CHECK_OK(halox_md_setup_option(&s, "--device", "cpu"));
    CHECK_OK(halox_md_setup_option(&s, "--transport", "threads"));
    halox_status_t st = halox_md_setup_finish(&s, &two);
    CHECK(st == HALOX_ERR_INVALID_ARG);
    if (halox_transport_available("mpi"))
        CHECK_MSG(strstr(halox_last_error(), "--transport threads runs every rank as a thread") &&
                      strstr(halox_last_error(), "TWO"),
                  "%s", halox_last_error());
    else
        CHECK(strstr(halox_last_error(), "this build has no MPI"));

    /* from HALOX_TRANSPORT, the message says so */
    setenv("HALOX_TRANSPORT", "threads", 1);
    s = fresh();
    CHECK_OK(halox_md_setup_env(&s));
    unsetenv("HALOX_TRANSPORT");
    CHECK(s.transport_from_env && halox_md_setup_given(&s, "--transport"));
    CHECK_OK(halox_md_setup_option(&s, "--device", "cpu"));
    st = halox_md_setup_finish(&s, &two);
    if (halox_transport_available("mpi"))
        CHECK_MSG(st == HALOX_ERR_INVALID_ARG &&
                      strstr(halox_last_error(), "HALOX_TRANSPORT=threads runs every rank"),
                  "%s", halox_last_error());

    if (!halox_transport_available("mpi"))
        return;
    /* nothing given: mpi, one rank per process, on the default grid of 2 */
    s = fresh();
    CHECK_OK(halox_md_setup_option(&s, "--cells", "3,3,3"));
    CHECK_OK(halox_md_setup_option(&s, "--device", "cpu"));
    CHECK_OK(halox_md_setup_finish(&s, &two));
    CHECK(!strcmp(s.cfg.transport, "mpi") && halox_grid_size(&s.cfg.grid) == 2);
    CHECK(strstr(s.why, "one rank per process"));
    /* a grid of 4 ranks for 2 processes */
    s = fresh();
    CHECK_OK(halox_md_setup_option(&s, "--cells", "3,3,3"));
    CHECK_OK(halox_md_setup_option(&s, "--device", "cpu"));
    CHECK_OK(halox_md_setup_option(&s, "--grid", "2x2x1"));
    CHECK_STATUS(halox_md_setup_finish(&s, &two), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(halox_last_error(), "grid 2x2x1 has 4 ranks but 2 MPI processes") &&
                  strstr(halox_last_error(), "OMPI_COMM_WORLD_SIZE=2"),
              "%s", halox_last_error());
}

static void check_caps(void)
{
    halox_transport_caps_t caps;
    CHECK_OK(halox_transport_caps("threads", &caps));
    CHECK(caps.threads && !caps.on_gpu && !caps.capturable && !caps.gpu_shared &&
          !caps.graph_update);
    if (halox_transport_available("mpi")) {
        CHECK_OK(halox_transport_caps("mpi", &caps));
        CHECK(!caps.threads && !caps.on_gpu);
    }
    if (halox_transport_available("nccl")) {
        CHECK_OK(halox_transport_caps("nccl", &caps));
        CHECK(caps.on_gpu && caps.capturable && !caps.gpu_shared && !caps.symmetric);
        CHECK(!caps.graph_update); /* its captured collectives own their plans in the graph */
    }
    if (halox_transport_available("mpi-staged")) {
        CHECK_OK(halox_transport_caps("mpi-staged", &caps));
        CHECK(caps.on_gpu && !caps.capturable && caps.gpu_shared && !caps.graph_update);
    }
    if (halox_transport_available("nvshmem-fused")) {
        CHECK_OK(halox_transport_caps("nvshmem-fused", &caps));
        CHECK(caps.on_gpu && caps.capturable && caps.symmetric && caps.gpu_shared &&
              caps.graph_update);
    }
    CHECK_STATUS(halox_transport_caps("carrier-pigeon", &caps), HALOX_ERR_UNKNOWN_TRANSPORT);
    CHECK(strstr(halox_last_error(), "this build has threads"));
    CHECK(!caps.threads && !caps.on_gpu);
}

int main(void)
{
    unsetenv("HALOX_TRANSPORT");
    unsetenv("HALOX_DEVICE");
    check_table();
    check_values();
    check_combinations();
    check_preset_sizes();
    check_launch();
    check_caps();
    TEST_DONE();
}
