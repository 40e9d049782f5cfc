/* Checkpoints whose checksums match but whose content is wrong (forged, or written by a broken
 * program): every setting and every atom record is checked as the command line checks it, and
 * a bad one is refused with a message naming the field, by halox_md_checkpoint_probe() (what
 * halox-md --restart asks first) and by the restart itself. Before these checks, rebuild_every 0
 * divided by zero, a transport name without its NUL was read past its end, a 1e6 x 1e6 grid
 * overflowed an int, and negative dt or step, an unknown ensemble, a NaN temperature or a
 * duplicated atom id ran, and so did a NaN tau (NVE), a temperature of 1e30, a position 1e6
 * outside the box and a speed that crosses the box in a step. Also: what is not a regular file
 * (a directory, a FIFO) is said to be one, not "truncated: 9223372036854775807 bytes", and a
 * real_size that does not match the data says so. The forger re-seals every file with the
 * checkpoint's own checksum code (md/checkpoint.h). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/checkpoint.h"
#include "test_md_common.h"

static char g_dir[64];
static char g_base[256];  /* a valid checkpoint: NVT, 2x1x1 ranks, float, step 20 */
static char g_forge[256]; /* the forged copy */
static unsigned char *g_file;
static size_t g_size;

static void base_config(halox_md_config_t *cfg)
{
    md_test_config(cfg, 5); /* 500 atoms */
    cfg->ensemble = HALOX_MD_NVT;
    cfg->tau = 0.1;
    cfg->rebuild_every = 10;
    cfg->steps = 20;
    cfg->grid = (halox_grid_t){{2, 1, 1}};
}

/* The payload of the base file, for a forger to change, then sealed and written to g_forge. */
typedef void (*forge_fn)(md_ckpt_settings_t *s, unsigned char *payload);

static void forge(forge_fn fn)
{
    size_t bytes = g_size - sizeof(md_ckpt_header_t);
    unsigned char *payload = malloc(bytes);
    memcpy(payload, g_file + sizeof(md_ckpt_header_t), bytes);
    md_ckpt_settings_t s;
    memcpy(&s, payload, sizeof s);
    fn(&s, payload);
    memcpy(payload, &s, sizeof s);
    md_ckpt_header_t h;
    md__ckpt_header_make(&h, payload, bytes);
    FILE *fp = fopen(g_forge, "wb");
    CHECK(fp && fwrite(&h, sizeof h, 1, fp) == 1 && fwrite(payload, 1, bytes, fp) == bytes);
    if (fp)
        fclose(fp);
    free(payload);
}

/* Atom k of the block of rank 0: its id, and its reals (0 position, 1 velocity, 2 force) */
static unsigned char *atom_id(unsigned char *payload, int k)
{
    return payload + sizeof(md_ckpt_settings_t) + 2 * sizeof(int64_t) + sizeof(int32_t) * k;
}
static unsigned char *atom_real(unsigned char *payload, const md_ckpt_settings_t *s, int what,
                                int k, int d)
{
    int64_t n;
    memcpy(&n, payload + sizeof(md_ckpt_settings_t) + sizeof(int64_t), sizeof n);
    const size_t rs = (size_t)s->real_size, row = 3 * rs * (size_t)n;
    return atom_id(payload, 0) + sizeof(int32_t) * (size_t)n + (size_t)what * row +
           rs * (3 * (size_t)k + (size_t)d);
}

/* Refused by the probe and by the restart, with `expect` in both messages. */
static void refused(const char *what, forge_fn fn, const char *expect)
{
    forge(fn);
    halox_md_checkpoint_info_t info;
    halox_status_t st = halox_md_checkpoint_probe(g_forge, &info);
    printf("%-32s probe: %s\n", what, st == HALOX_OK ? "ACCEPTED" : halox_last_error());
    CHECK_MSG(st != HALOX_OK, "%s: the probe accepted it", what);
    CHECK_MSG(st == HALOX_OK || strstr(halox_last_error(), expect) != NULL,
              "%s: probe message '%s' does not say '%s'", what, halox_last_error(), expect);
    halox_md_config_t cfg;
    base_config(&cfg);
    cfg.restart_path = g_forge;
    cfg.steps = 40;
    halox_md_result_t r;
    memset(&r, 0, sizeof r);
    st = halox_md_threads_run(&cfg, NULL, &r);
    CHECK_MSG(st != HALOX_OK, "%s: the restart ran", what);
    CHECK_MSG(st == HALOX_OK || strstr(r.error, expect) != NULL,
              "%s: restart message '%s' does not say '%s'", what, r.error, expect);
    halox_md_result_free(&r);
}

static void f_none(md_ckpt_settings_t *s, unsigned char *p) { (void)s, (void)p; }
static void f_rebuild0(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->rebuild_every = 0; }
static void f_rebuild_big(md_ckpt_settings_t *s, unsigned char *p)
{
    (void)p, s->rebuild_every = 1LL << 40;
}
static void f_transport(md_ckpt_settings_t *s, unsigned char *p)
{
    (void)p, memset(s->transport, 'x', sizeof s->transport);
}
static void f_transport_ctrl(md_ckpt_settings_t *s, unsigned char *p)
{
    (void)p, snprintf(s->transport, sizeof s->transport, "thr\033[2Jeads");
}
static void f_grid_huge(md_ckpt_settings_t *s, unsigned char *p)
{
    (void)p, s->grid[0] = s->grid[1] = 1000000, s->grid[2] = 1;
}
static void f_grid_nranks(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->nranks = 3; }
static void f_dt(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->dt = -0.005; }
static void f_step(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->step = -20; }
static void f_last(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->last_rebuild = 25; }
static void f_ensemble(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->ensemble = 7; }
static void f_temp(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->temp = NAN; }
static void f_tau(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->tau = 0; }
static void f_cutoff(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->cutoff = INFINITY; }
static void f_skin(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->skin = -1; }
static void f_box(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->box[1] = -8; }
static void f_box_huge(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->box[0] = 1e39; }
static void f_density(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->density = 0; }
static void f_fs(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->fs_per_step = NAN; }
static void f_shift(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->shift = 2; }
static void f_source(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->source = 9; }
static void f_natoms(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->natoms = 1; }
static void f_real(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->real_size = 8; }
static void f_dup(md_ckpt_settings_t *s, unsigned char *p)
{
    (void)s;
    memcpy(atom_id(p, 1), atom_id(p, 0), sizeof(int32_t));
}
static void f_id_range(md_ckpt_settings_t *s, unsigned char *p)
{
    (void)s;
    int32_t id = 500;
    memcpy(atom_id(p, 3), &id, sizeof id);
}
static void f_pos_nan(md_ckpt_settings_t *s, unsigned char *p)
{
    float v = NAN; /* the base file is in float */
    memcpy(atom_real(p, s, 0, 2, 0), &v, sizeof v);
}
static void f_vel_inf(md_ckpt_settings_t *s, unsigned char *p)
{
    float v = INFINITY;
    memcpy(atom_real(p, s, 1, 4, 1), &v, sizeof v);
}
/* an NVE checkpoint keeps tau too: a NaN one ran */
static void f_tau_nve(md_ckpt_settings_t *s, unsigned char *p)
{
    (void)p, s->ensemble = HALOX_MD_NVE, s->tau = NAN;
}
static void f_temp_huge(md_ckpt_settings_t *s, unsigned char *p) { (void)p, s->temp = 1e30; }
static void f_pos_far(md_ckpt_settings_t *s, unsigned char *p)
{
    float v = 1e6f; /* finite, and far beyond where 20 steps can carry an atom */
    memcpy(atom_real(p, s, 0, 2, 1), &v, sizeof v);
}
static void f_vel_fast(md_ckpt_settings_t *s, unsigned char *p)
{
    float v = 1e4f; /* 50 per step of 0.005, in a box of 8.4 */
    memcpy(atom_real(p, s, 1, 4, 2), &v, sizeof v);
}
static void f_block_rank(md_ckpt_settings_t *s, unsigned char *p)
{
    (void)s;
    int64_t r = 1;
    memcpy(p + sizeof(md_ckpt_settings_t), &r, sizeof r);
}

static void forged_settings_and_atoms(void)
{
    /* the forger itself: an unchanged, re-sealed copy restarts */
    forge(f_none);
    halox_md_checkpoint_info_t info;
    CHECK_OK(halox_md_checkpoint_probe(g_forge, &info));
    halox_md_config_t cfg;
    base_config(&cfg);
    cfg.restart_path = g_forge;
    cfg.steps = 40;
    halox_md_result_t r;
    CHECK(md_test_run(&cfg, NULL, 0, &r) == 0);
    halox_md_result_free(&r);

    refused("rebuild_every = 0", f_rebuild0, "rebuild every 0 steps");
    refused("rebuild_every = 2^40", f_rebuild_big, "rebuild_every = 1099511627776");
    refused("transport without its NUL", f_transport, "transport: the name is not terminated");
    refused("transport with an escape", f_transport_ctrl, "not a printable character");
    refused("grid 1000000x1000000x1", f_grid_huge, "grid 1000000x1000000x1 has 1000000000000");
    refused("nranks 3 on a 2x1x1 grid", f_grid_nranks, "has 2 ranks, but nranks = 3");
    refused("dt -0.005", f_dt, "time step -0.005");
    refused("step -20", f_step, "step = -20");
    refused("last_rebuild after the step", f_last, "last_rebuild = 25");
    refused("ensemble 7", f_ensemble, "unknown ensemble 7");
    refused("temperature NaN", f_temp, "temperature nan");
    refused("NVT with tau 0", f_tau, "thermostat time constant 0");
    refused("cut-off inf", f_cutoff, "cut-off inf");
    refused("skin -1", f_skin, "skin -1");
    refused("box y -8", f_box, "box length in y is -8");
    refused("box x 1e39 in float", f_box_huge, "1e+39"); /* beyond the precision */
    refused("density 0", f_density, "density 0");
    refused("fs_per_step NaN", f_fs, "fs_per_step = nan");
    refused("shift 2", f_shift, "shift = 2");
    refused("source 9", f_source, "source = 9");
    refused("natoms 1", f_natoms, "natoms = 1");
    /* what really mismatched, not "500 atoms in its blocks, 500 in its settings" */
    refused("real_size 8 on float data", f_real, "real_size = 8: double precision) make");
    refused("a duplicated atom id", f_dup, "appears twice");
    refused("an atom id out of range", f_id_range, "has id 500, but ids run from 0 to");
    refused("a NaN position", f_pos_nan, "non-finite position (x = nan)");
    refused("an infinite velocity", f_vel_inf, "non-finite velocity (y = inf)");
    refused("block 0 says rank 1", f_block_rank, "the block of rank 0 says rank 1");
    refused("NVE with tau NaN", f_tau_nve, "has an invalid setting: tau = nan");
    refused("temperature 1e30", f_temp_huge, "temperature 1e+30: give a finite temperature from 0");
    refused("a position 1e6 out", f_pos_far, "has position y = 1e+06, more than");
    refused("a speed of 1e4", f_vel_fast, "has speed 10000: it moves 50 per step of dt 0.005");
}

/* A huge grid overflows an int nowhere: its size is -1 and the check says why. */
static void grid_limits(void)
{
    halox_grid_t g = {{1000000, 1000000, 1}};
    CHECK(halox_grid_size(&g) == -1);
    CHECK(halox_grid_check(&g) == HALOX_ERR_INVALID_ARG);
    printf("grid 1000000x1000000x1: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "at most 2^31-1") != NULL);
    halox_grid_t ok = {{46340, 46340, 1}}; /* 2147395600 ranks: allowed */
    CHECK(halox_grid_size(&ok) == 2147395600);
    halox_grid_t zero = {{4, 0, 2}};
    CHECK(halox_grid_size(&zero) == -1);
    CHECK(halox_grid_parse("3000000000x1x1", &g) == HALOX_ERR_INVALID_ARG);
    printf("grid '3000000000x1x1': %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "more than 2^31-1 ranks in x") != NULL);
}

/* What is not a regular file says so (and a FIFO is not waited on). */
static void not_regular(void)
{
    halox_md_checkpoint_info_t info;
    CHECK(halox_md_checkpoint_probe("/", &info) == HALOX_ERR_IO);
    printf("probe of '/': %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "'/' is a directory, not a regular file") != NULL);
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/fifo.chk", g_dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    /* held open with data in it, so that a reader that opened it (before the fix) would not
     * wait for ever but fail on its own terms */
    int fd = open(fifo, O_RDWR | O_NONBLOCK);
    CHECK(fd >= 0 && write(fd, "HLXMDCK1", 8) == 8);
    CHECK(halox_md_checkpoint_probe(fifo, &info) == HALOX_ERR_IO);
    printf("probe of a FIFO: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "is a FIFO (named pipe), not a regular file") != NULL);
    close(fd);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "md-forged-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(g_base, sizeof g_base, "%s/base.chk", g_dir);
    snprintf(g_forge, sizeof g_forge, "%s/forged.chk", g_dir);
    halox_md_config_t cfg;
    base_config(&cfg);
    cfg.checkpoint_path = g_base;
    halox_md_result_t r;
    if (md_test_run(&cfg, NULL, 0, &r) == 0) {
        halox_md_result_free(&r);
        g_file = (unsigned char *)md_test_slurp(g_base, &g_size);
        CHECK(g_file && g_size > sizeof(md_ckpt_header_t) + sizeof(md_ckpt_settings_t));
        if (g_file)
            forged_settings_and_atoms();
    }
    grid_limits();
    not_regular();
    free(g_file);
    md_test_remove_dir(g_dir);
    TEST_DONE();
}
