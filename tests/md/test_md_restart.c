/* Checkpoints and restarts.
 *   1. A run stopped at step 100 (its final checkpoint) and restarted to step 200 ends with
 *      positions, velocities and forces bit-identical to the uninterrupted 200-step run, and with
 *      the same thermo records; NVT (thermostat noise) and NVE, float and double, 2x2x1 ranks.
 *   2. A stop request (the flag a signal handler sets) raised at step 55 stops the run at the
 *      next rebuild boundary (step 60) with a checkpoint; restarting it gives the same bits.
 *   3. Periodic checkpoints land on the requested steps; no temporary files are left behind.
 *   4. Truncated, corrupted, foreign and missing files are refused with a clear message.
 *   5. A checkpoint can only be written at a rebuild boundary; a restart on another grid
 *      continues (not bit-identically, but within rounding of the original run).
 *   2b. With the rebuild check, a list lives until the check says or K steps, past the
 *      multiples of K; the step after a checkpoint rebuilds, as its restart does: 200 steps
 *      with a checkpoint at 100 equal 100 + restart + 100 (without that rebuild they differ).
 *   6. A checkpoint path that is not a regular file (a FIFO, a directory) is refused and left
 *      as it was; through a symbolic link the target is replaced and the link kept. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files/file.h"
#include "test_md_common.h"

static char g_dir[64];

static void path_in_dir(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", g_dir, name);
}

static void base_config(halox_md_config_t *cfg, halox_real_t real, halox_md_ensemble_t ens)
{
    md_test_config(cfg, 5);
    cfg->real = real;
    cfg->ensemble = ens;
    cfg->tau = 0.1;
    cfg->rebuild_every = 10;
    cfg->thermo_every = 10;
    cfg->steps = 200;
    cfg->grid = (halox_grid_t){{2, 2, 1}};
}

static void same_bits(const halox_md_result_t *a, const halox_md_result_t *b, const char *what)
{
    size_t bytes = sizeof(double) * 3 * (size_t)a->natoms;
    int same_x = a->natoms == b->natoms && !memcmp(a->x, b->x, bytes);
    int same_v = a->natoms == b->natoms && !memcmp(a->v, b->v, bytes);
    double box[3] = {100, 100, 100}, dx = 0, dv = 0;
    if (a->natoms == b->natoms)
        md_test_compare(a, b, box, &dx, &dv);
    printf("%s: positions %s, velocities %s (max |dx| %.3g, |dv| %.3g)\n", what,
           same_x ? "bit-identical" : "DIFFER", same_v ? "bit-identical" : "DIFFER", dx, dv);
    CHECK_MSG(same_x && same_v, "%s is not bit-identical", what);
    /* the thermo records of the restarted part match the uninterrupted run's, bit for bit */
    int matched = 0;
    for (int i = 0; i < b->n_thermo; i++)
        for (int j = 0; j < a->n_thermo; j++)
            if (a->thermo[j].step == b->thermo[i].step) {
                CHECK_MSG(!memcmp(&a->thermo[j], &b->thermo[i], sizeof a->thermo[j]),
                          "%s: thermo at step %lld differs", what, b->thermo[i].step);
                matched++;
            }
    CHECK(matched == b->n_thermo);
}

/* set by the thermo hook and read by the stop hook, both on the rank-0 thread */
static int g_flag;

static int flag_set(void *user)
{
    (void)user;
    return g_flag;
}

static void raise_at_55(void *user, const halox_md_thermo_t *rec)
{
    (void)user;
    if (rec->step >= 55)
        g_flag = 1;
}

static long long g_notices;
static void count_notice(void *user, const char *text)
{
    (void)user;
    printf("  notice: %s\n", text);
    g_notices++;
}

/* cfg's run stopped at step 100 with its final checkpoint ck, then restarted from it to the
 * end into *cont (with `other`, from a config whose dt and cut-off differ: the file's rule) */
static int stop_at_100_and_restart(const halox_md_config_t *cfg, const char *ck, int other,
                                   halox_md_result_t *cont)
{
    halox_md_result_t part;
    halox_md_config_t c1 = *cfg;
    c1.steps = 100;
    c1.checkpoint_path = ck;
    if (md_test_run(&c1, NULL, 0, &part))
        return 1;
    CHECK(part.summary.checkpoints == 1 && part.summary.checkpoint_step == 100);
    halox_md_result_free(&part);
    halox_md_config_t c2 = *cfg;
    c2.restart_path = ck;
    if (other) {
        c2.dt = 0.123;
        c2.cutoff = 1.1;
    }
    return md_test_run(&c2, NULL, 1, cont);
}

static void bit_identical(halox_real_t real, halox_md_ensemble_t ens)
{
    const char *name = real == HALOX_DOUBLE ? (ens == HALOX_MD_NVT ? "double NVT" : "double NVE")
                                            : (ens == HALOX_MD_NVT ? "float NVT" : "float NVE");
    char ck[256];
    path_in_dir(ck, sizeof ck, "a.chk");
    halox_md_config_t cfg;
    base_config(&cfg, real, ens);
    cfg.thermo_every = 5;
    halox_md_result_t full, part, cont;
    if (md_test_run(&cfg, NULL, 1, &full))
        return;
    /* stopped at 100 with its final checkpoint, then continued; the restart takes the
     * trajectory's settings from the file, whatever the config says */
    if (stop_at_100_and_restart(&cfg, ck, 1, &cont))
        return;
    CHECK(cont.summary.first_step == 100 && cont.summary.last_step == 200);
    char what[128];
    snprintf(what, sizeof what, "%s, 2x2x1: 200 steps vs 100 + restart + 100", name);
    same_bits(&full, &cont, what);
    halox_md_result_free(&cont);

    /* a stop request at step 55: stops at 60, continues identically */
    halox_md_hooks_t hooks = {.thermo = raise_at_55, .notice = count_notice, .stop = flag_set};
    g_flag = 0;
    halox_md_config_t c3 = cfg;
    c3.checkpoint_path = ck;
    if (md_test_run(&c3, &hooks, 0, &part))
        return;
    CHECK(part.summary.interrupted);
    CHECK_MSG(part.summary.last_step == 60, "stopped at step %lld, expected 60",
              part.summary.last_step);
    CHECK(part.summary.checkpoint_step == 60);
    halox_md_checkpoint_info_t info;
    CHECK_OK(halox_md_checkpoint_probe(ck, &info));
    CHECK(info.step == 60 && info.natoms == full.natoms && info.nranks == 4);
    CHECK(info.real == real && info.grid.n[0] == 2 && info.grid.n[1] == 2);
    g_flag = 0;
    halox_md_config_t c2 = cfg;
    c2.restart_path = ck;
    if (md_test_run(&c2, NULL, 1, &cont))
        return;
    snprintf(what, sizeof what, "%s, 2x2x1: 200 steps vs stop at 60 + restart", name);
    same_bits(&full, &cont, what);
    halox_md_result_free(&part);
    halox_md_result_free(&cont);
    halox_md_result_free(&full);
}

/* 2b: the rebuild check's rule (engine.c md__rebuild_due) */
static void bit_identical_check(void)
{
    char ck[256];
    path_in_dir(ck, sizeof ck, "c.chk");
    halox_md_config_t cfg;
    base_config(&cfg, HALOX_FLOAT, HALOX_MD_NVE);
    /* skin 0.3 lives 10-20 steps here: the check rebuilds between the boundaries (every 25) */
    md_test_lists(&cfg, 0.3, 25, 1);
    halox_md_result_t full, cont;
    /* the run a restart continues is the one that wrote the checkpoint (the rebuild after it) */
    char ck_full[256];
    path_in_dir(ck_full, sizeof ck_full, "c-full.chk");
    halox_md_config_t c0 = cfg;
    c0.checkpoint_path = ck_full;
    c0.checkpoint_every = 100;
    if (md_test_run(&c0, NULL, 1, &full))
        return;
    CHECK(full.summary.checkpoints == 2);
    printf("rebuild check, every 25 at the latest: %lld rebuilds in 200 steps\n",
           (long long)full.summary.rebuilds);
    CHECK(full.summary.rebuilds > 200 / 25);
    if (stop_at_100_and_restart(&cfg, ck, 0, &cont))
        return;
    same_bits(&full, &cont, "float NVE with the rebuild check, 2x2x1: 200 vs 100 + restart + 100");
    halox_md_result_free(&cont);
    halox_md_result_free(&full);
}

static int no_temp_files(void)
{
    DIR *d = opendir(g_dir);
    int bad = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp."))
            bad++;
    if (d)
        closedir(d);
    return bad == 0;
}

static void periodic(void)
{
    char ck[256];
    path_in_dir(ck, sizeof ck, "p.chk");
    halox_md_config_t cfg;
    base_config(&cfg, HALOX_FLOAT, HALOX_MD_NVE);
    cfg.steps = 130;
    cfg.checkpoint_path = ck;
    cfg.checkpoint_every = 50;
    halox_md_hooks_t hooks = {.notice = count_notice};
    g_notices = 0;
    halox_md_result_t r;
    if (md_test_run(&cfg, &hooks, 0, &r))
        return;
    /* at 50 and 100; 130 is a boundary and the last step: a final one */
    printf("periodic: %d checkpoints, the last at step %lld\n", r.summary.checkpoints,
           r.summary.checkpoint_step);
    CHECK(r.summary.checkpoints == 3 && r.summary.checkpoint_step == 130);
    CHECK(no_temp_files());
    halox_md_result_free(&r);
    /* checkpoint-every 25 with rebuild-every 10: at the first boundary at or after 25, 50, ... */
    cfg.checkpoint_every = 25;
    cfg.steps = 100;
    if (md_test_run(&cfg, &hooks, 0, &r))
        return;
    printf("every 25 with rebuilds every 10, 100 steps: %d checkpoints, the last at step %lld\n",
           r.summary.checkpoints, r.summary.checkpoint_step);
    CHECK(r.summary.checkpoints == 4 && r.summary.checkpoint_step == 100); /* 30 50 80 100 */
    halox_md_result_free(&r);
}

/* Write a modified copy of src to dst: keep `keep` bytes (all if < 0) and flip byte `flip`. */
static void mutate(const char *src, const char *dst, long keep, long flip)
{
    FILE *in = fopen(src, "rb");
    CHECK(in != NULL);
    if (!in)
        return;
    fseek(in, 0, SEEK_END);
    long n = ftell(in);
    rewind(in);
    unsigned char *buf = malloc((size_t)n);
    CHECK(fread(buf, 1, (size_t)n, in) == (size_t)n);
    fclose(in);
    if (flip >= 0 && flip < n)
        buf[flip] ^= 0x10;
    FILE *out = fopen(dst, "wb");
    fwrite(buf, 1, keep >= 0 ? (size_t)keep : (size_t)n, out);
    fclose(out);
    free(buf);
}

static void refused(const char *path, const char *expect)
{
    halox_md_config_t cfg;
    base_config(&cfg, HALOX_FLOAT, HALOX_MD_NVE);
    cfg.restart_path = path;
    halox_md_result_t r;
    memset(&r, 0, sizeof r);
    halox_status_t st = halox_md_threads_run(&cfg, NULL, &r);
    printf("restart from a bad file: %s\n", r.error);
    CHECK(st != HALOX_OK);
    CHECK_MSG(strstr(r.error, expect) != NULL, "message '%s' does not say '%s'", r.error, expect);
    halox_md_checkpoint_info_t info;
    CHECK(halox_md_checkpoint_probe(path, &info) != HALOX_OK);
    halox_md_result_free(&r);
}

static void bad_files(void)
{
    char ck[256], bad[256];
    path_in_dir(ck, sizeof ck, "p.chk");
    path_in_dir(bad, sizeof bad, "bad.chk");
    FILE *fp = fopen(ck, "rb");
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fclose(fp);
    mutate(ck, bad, n / 2, -1);
    refused(bad, "truncated");
    mutate(ck, bad, 20, -1);
    refused(bad, "truncated");
    mutate(ck, bad, -1, n - 7); /* a bit in the last atom's force */
    refused(bad, "corrupted");
    mutate(ck, bad, -1, 100); /* a bit in the settings */
    refused(bad, "corrupted");
    mutate(ck, bad, -1, 17); /* a bit in the header */
    refused(bad, "corrupted");
    mutate(ck, bad, -1, 0);
    refused(bad, "not a halox-md checkpoint");
    FILE *out = fopen(bad, "wb");
    fputs("HLXMDCK1", out);
    fclose(out);
    refused(bad, "truncated");
    path_in_dir(bad, sizeof bad, "does-not-exist.chk");
    refused(bad, "cannot open");
    /* a failed write (the directory does not exist) leaves nothing behind and says why */
    halox_md_config_t cfg;
    base_config(&cfg, HALOX_FLOAT, HALOX_MD_NVE);
    cfg.steps = 10;
    char nodir[256];
    path_in_dir(nodir, sizeof nodir, "no/such/dir/x.chk");
    cfg.checkpoint_path = nodir;
    halox_md_result_t r;
    memset(&r, 0, sizeof r);
    CHECK(halox_md_threads_run(&cfg, NULL, &r) == HALOX_ERR_IO);
    printf("write into a missing directory: %s\n", r.error);
    CHECK(strstr(r.error, "checkpoint") != NULL);
    halox_md_result_free(&r);
}

/* base_config's NVE system (1x1x1) in the precision on one threads rank (md_test_engine_create):
 * the engine, or NULL (e destroyed) when a step of its set-up failed. */
static halox_md_t *one_rank(halox_md_config_t *cfg, halox_real_t real, md_test_engine_t *e)
{
    base_config(cfg, real, HALOX_MD_NVE);
    cfg->grid = (halox_grid_t){{1, 1, 1}};
    CHECK_OK(md_test_engine_create(cfg, NULL, 0, e));
    if (!e->md)
        md_test_engine_destroy(e);
    return e->md;
}

static void boundary_and_other_grid(void)
{
    char ck[256];
    path_in_dir(ck, sizeof ck, "b.chk");
    halox_md_config_t cfg;
    md_test_engine_t e;
    halox_md_t *md = one_rank(&cfg, HALOX_DOUBLE, &e);
    if (!md)
        return;
    CHECK_OK(halox_md_run_until(md, 15));
    CHECK(!halox_md_at_boundary(md));
    CHECK_STATUS(halox_md_write_checkpoint(md, ck), HALOX_ERR_STATE);
    printf("checkpoint at step 15: %s\n", halox_last_error());
    CHECK_OK(halox_md_run_until(md, 20));
    CHECK(halox_md_at_boundary(md));
    CHECK_OK(halox_md_write_checkpoint(md, ck));
    CHECK_OK(halox_md_run_until(md, 200));
    double *xa = malloc(sizeof(double) * 3 * 500), *va = malloc(sizeof(double) * 3 * 500);
    CHECK_OK(halox_md_gather(md, xa, va, NULL, 0));
    md_test_engine_destroy(&e);
    /* continue the 1-rank checkpoint on 2x2x1 ranks: the same physics within rounding */
    halox_md_config_t c2 = cfg;
    c2.restart_path = ck;
    c2.grid = (halox_grid_t){{2, 2, 1}};
    halox_md_hooks_t hooks = {.notice = count_notice};
    halox_md_result_t r;
    if (md_test_run(&c2, &hooks, 1, &r))
        return;
    halox_md_result_t a = {.natoms = 500, .x = xa, .v = va};
    double box[3], dx, dv;
    md_test_fcc_box(&cfg, box);
    md_test_compare(&a, &r, box, &dx, &dv);
    printf(
        "1-rank checkpoint at 20 continued on 2x2x1 to 200 vs 1 rank: max |dx| %.3g, |dv| %.3g\n",
        dx, dv);
    CHECK(dx < 1e-9 && dv < 1e-9);
    halox_md_result_free(&r);
    free(xa);
    free(va);
}

/* The atomic writer through the API: a target that is not a regular file is refused before
 * anything is written and stays as it was; a link to a regular file keeps the link. And a
 * stream whose writes fail is reported by halox_output_close(). */
static void special_targets(void)
{
    halox_md_config_t cfg;
    md_test_engine_t e;
    halox_md_t *md = one_rank(&cfg, HALOX_FLOAT, &e);
    if (!md)
        return;
    CHECK_OK(halox_md_run_until(md, 10));
    char fifo[256], dir[256], target[256], link[256];
    path_in_dir(fifo, sizeof fifo, "t.fifo");
    path_in_dir(dir, sizeof dir, "t.dir");
    path_in_dir(target, sizeof target, "t.target");
    path_in_dir(link, sizeof link, "t.link");
    CHECK(mkfifo(fifo, 0600) == 0 && mkdir(dir, 0700) == 0);
    struct stat sb;
    CHECK_STATUS(halox_md_write_checkpoint(md, fifo), HALOX_ERR_INVALID_ARG);
    printf("checkpoint to a FIFO: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "is a FIFO (named pipe), not a regular file") != NULL);
    CHECK(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
    CHECK_STATUS(halox_md_write_checkpoint(md, dir), HALOX_ERR_INVALID_ARG);
    printf("checkpoint to a directory: %s\n", halox_last_error());
    CHECK(lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode));
    FILE *fp = fopen(target, "w");
    CHECK(fp && fputs("old\n", fp) >= 0 && fclose(fp) == 0);
    CHECK(symlink("t.target", link) == 0);
    CHECK_OK(halox_md_write_checkpoint(md, link));
    halox_md_checkpoint_info_t info;
    CHECK(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
    CHECK_OK(halox_md_checkpoint_probe(target, &info));
    CHECK(info.step == 10);
    printf("checkpoint through a link: the link %s, its target a checkpoint at step %lld\n",
           lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode) ? "kept" : "REPLACED", info.step);
    CHECK(no_temp_files());
    md_test_engine_destroy(&e);
    unlink(fifo);
    rmdir(dir);
    /* /dev/full, opened by hand (halox_output_open refuses it): the failed write is reported */
    fp = stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode) ? fopen("/dev/full", "w") : NULL;
    if (fp) {
        fputs("a line that does not fit\n", fp);
        CHECK_STATUS(halox_output_close(fp, "/dev/full", "the test file"), HALOX_ERR_WRITE);
        printf("close of /dev/full: %s\n", halox_last_error());
        CHECK(strstr(halox_last_error(), "writing the test file '/dev/full' failed") != NULL);
    }
    CHECK_STATUS(halox_output_check("/", "the test file"), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "is a directory") != NULL);
    path_in_dir(target, sizeof target, "new.out");
    CHECK_OK(halox_output_check(target, "the test file")); /* a new file */
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "md-restart-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    bit_identical(HALOX_FLOAT, HALOX_MD_NVT);
    bit_identical(HALOX_DOUBLE, HALOX_MD_NVE);
    bit_identical_check();
    periodic();
    bad_files();
    boundary_and_other_grid();
    special_targets();
    /* clean up */
    md_test_remove_dir(g_dir);
    TEST_DONE();
}
