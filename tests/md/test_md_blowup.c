/* Blown-up states are never written (md/engine/state_check.c): the rebuild's speed check runs only
 * at rebuilds, and the state is checked before every thermo row, trajectory frame and
 * checkpoint, and at the end of the run.
 *   - the tool: a run with too large a --dt fails (exit 1, the step, the atom, --dt) before it
 *     prints a blown-up thermo row, and the last good checkpoint stays as it was (and restarts);
 *   - the library: a checkpoint due between thermo rows is not written, nor a trajectory frame
 *     (the file keeps its good frames).
 * Usage: test_md_blowup PATH/TO/halox-md */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child_run.h"
#include "test_md_common.h"

static const char *g_tool;
static char g_dir[256];

static int contains(const char *s, const char *what) { return s && strstr(s, what) != NULL; }

static void tool_keeps_checkpoint(void)
{
    char ck[512];
    snprintf(ck, sizeof ck, "%s/good.chk", g_dir);
    child_cmd_t c;
    const char *good[] = {"--cells", "4,4,4", "--steps", "20", "--checkpoint", ck, NULL};
    CHECK(child_run(g_tool, &c, good) == 0);
    child_cmd_free(&c);
    size_t n0 = 0, n1 = 0;
    char *before = md_test_slurp(ck, &n0);
    /* the same system with dt 0.05: T 5.8e39 by step 10 (the rebuild's check fires at 21) */
    const char *bad[] = {"--cells",      "4,4,4", "--steps",        "20", "--dt", "0.05",
                         "--checkpoint", ck,      "--thermo-every", "10", NULL};
    child_run(g_tool, &c, bad);
    printf("  dt 0.05: exit %d: %s", c.code, c.err);
    CHECK_MSG(c.code == 1 && contains(c.err, "step 10: the system blew up: atom id") &&
                  contains(c.err, "found before the thermo output: nothing is written from "
                                  "this state; use a smaller time step (--dt)"),
              "exit %d: %s", c.code, c.err);
    CHECK_MSG(!contains(c.out, "checkpoint written") && !contains(c.out, "e+39"), "stdout: %s",
              c.out);
    child_cmd_free(&c);
    char *after = md_test_slurp(ck, &n1);
    CHECK_MSG(before && after && n0 == n1 && memcmp(before, after, n0) == 0,
              "the checkpoint changed (%zu -> %zu bytes)", n0, n1);
    free(before);
    free(after);
    /* what was kept still restarts (zero steps: nothing left to run) */
    const char *again[] = {"--restart", ck, "--steps", "20", NULL};
    CHECK(child_run(g_tool, &c, again) == 0);
    child_cmd_free(&c);
}

/* cells 4 on 2 thread ranks, dt 0.05 (blown up by step 10), no thermo row before the end */
static void blowup_config(halox_md_config_t *c)
{
    halox_md_config_default(c);
    c->cells[0] = c->cells[1] = c->cells[2] = 4;
    c->grid = (halox_grid_t){{2, 1, 1}};
    c->dt = 0.05;
    c->steps = 40;
    c->thermo_every = 1000;
    c->rebuild_every = 10;
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void library_outputs(void)
{
    char ck[512], traj[512];
    snprintf(ck, sizeof ck, "%s/lib.chk", g_dir);
    snprintf(traj, sizeof traj, "%s/lib.lammpstrj", g_dir);
    halox_md_config_t c;
    halox_md_result_t res;
    /* a checkpoint due at step 10, a boundary, before the rebuild of step 11 */
    blowup_config(&c);
    c.checkpoint_path = ck;
    c.checkpoint_every = 10;
    CHECK(halox_md_threads_run(&c, NULL, &res) == HALOX_ERR_COORDINATE);
    printf("  checkpoint: %s\n", res.error);
    CHECK_MSG(contains(res.error, "step 10: the system blew up") &&
                  contains(res.error, "found before the checkpoint"),
              "%s", res.error);
    CHECK(!exists(ck));
    halox_md_result_free(&res);
    /* a trajectory frame due at step 10: the file holds step 0 alone */
    blowup_config(&c);
    c.xyz_path = traj;
    c.xyz_every = 10;
    c.rebuild_every = 20;
    CHECK(halox_md_threads_run(&c, NULL, &res) == HALOX_ERR_COORDINATE);
    printf("  trajectory: %s\n", res.error);
    CHECK_MSG(contains(res.error, "step 10: the system blew up") &&
                  contains(res.error, "found before the trajectory frame"),
              "%s", res.error);
    halox_md_result_free(&res);
    halox_md_read_info_t info;
    CHECK_OK(halox_md_read_probe(traj, HALOX_MD_READ_LAST, &info));
    CHECK_MSG(info.nframes == 1 && info.step == 0, "%lld frames, the last of step %lld",
              info.nframes, info.step);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH/TO/halox-md\n", argv[0]);
        return 2;
    }
    g_tool = argv[1];
    if (md_test_make_dir(g_dir, sizeof g_dir, "halox-md-blowup") != 0)
        return 1;
    tool_keeps_checkpoint();
    library_outputs();
    md_test_remove_dir(g_dir);
    TEST_DONE();
}
