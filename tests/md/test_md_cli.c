/* The halox-md command line, end to end (the program is started as a child process):
 *   - presets: lammps-lj on 4000 atoms prints LAMMPS' step-0 values; water-density reports
 *     ns/day with its 2 fs convention; options after a preset override it;
 *   - output files: JSON (valid syntax, settings, thermo records with step/temp/pe/ke/etotal/
 *     press, summary), CSV, extended XYZ that --read reads back to the same energy;
 *   - SIGINT: the run stops at the next rebuild boundary with a checkpoint and exit code 0, and
 *     the restart ends bit-identical (same XYZ text) to an uninterrupted run;
 *   - kill -9 while checkpoints are written: the checkpoint on disk is always whole;
 *   - bad usage, impossible combinations and bad files: a clear message and exit code 2.
 * Usage: test_md_cli PATH/TO/halox-md */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_run.h"
#include "json_syntax.h"
#include "test_md_common.h"

static const char *g_tool;
static char g_dir[64];

typedef child_cmd_t cmd_t;

static void cmd_free(cmd_t *c) { child_cmd_free(c); }

static pid_t start(const char *const args[], int *out_fd, int *err_fd)
{
    return child_start(g_tool, args, out_fd, err_fd);
}

static void finish(pid_t pid, int ofd, int efd, cmd_t *c,
                   int (*on_out)(const char *out, pid_t pid, void *user), void *user)
{
    child_finish(pid, ofd, efd, c, on_out, user);
}

static int run(cmd_t *c, const char *const args[]) { return child_run(g_tool, c, args); }

static void path(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", g_dir, name); }

/* The files in dir whose name starts with prefix. */
static int files_named(const char *dir, const char *prefix)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        n += strncmp(de->d_name, prefix, strlen(prefix)) == 0;
    if (d)
        closedir(d);
    return n;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* ---- the checks ----------------------------------------------------------------------------- */

static void presets_and_files(void)
{
    char json[256], csv[256], xyz[256];
    path(json, sizeof json, "l.json");
    path(csv, sizeof csv, "l.csv");
    path(xyz, sizeof xyz, "l.xyz");
    cmd_t c;
    const char *a1[] = {"--preset", "lammps-lj",   "--cells", "10,10,10", "--steps",
                        "0",        "--precision", "double",  "--json",   json,
                        "--csv",    csv,           "--xyz",   xyz,        NULL};
    run(&c, a1);
    printf("--preset lammps-lj --cells 10,10,10 --steps 0 --precision double: exit %d\n%s", c.code,
           c.out);
    CHECK(c.code == 0);
    CHECK(strstr(c.out, "-6.7733681") != NULL); /* LAMMPS' E_pair */
    CHECK(strstr(c.out, "4000 atoms") != NULL); /* the override of the cells */
    CHECK(strstr(c.out, "Summary") != NULL);
    cmd_free(&c);
    char *j = md_test_slurp(json, NULL);
    CHECK(j && json_valid(j));
    if (j) {
        CHECK(strstr(j, "\"settings\"") && strstr(j, "\"thermo\"") && strstr(j, "\"summary\""));
        CHECK(count(j, "\"step\":") == 1);
        const char *keys[] = {"\"temp\":",
                              "\"pe\":",
                              "\"ke\":",
                              "\"etotal\":",
                              "\"press\":",
                              "\"ms_per_step\":",
                              "\"pair_forces\"",
                              "\"halo_coords\"",
                              "\"halo_forces\"",
                              "\"integration\"",
                              "\"neighbour_search\"",
                              "\"migration_plan\"",
                              "\"atoms\": 4000",
                              "\"ranks\": 1",
                              "\"preset\": \"lammps-lj\"",
                              "\"precision\": \"double\""};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            CHECK_MSG(strstr(j, keys[k]) != NULL, "JSON lacks %s", keys[k]);
    }
    free(j);
    char *s = md_test_slurp(csv, NULL);
    CHECK(s && !strncmp(s, "step,time,temp,pe,ke,etotal,press\n0,", 36));
    free(s);
    /* the XYZ file reads back (box from its Lattice) to the same energy */
    const char *a2[] = {"--read", xyz,        "--steps", "0", "--precision",
                        "double", "--cutoff", "2.5",     NULL};
    run(&c, a2);
    printf("--read %s: exit %d\n", xyz, c.code);
    CHECK(c.code == 0 && strstr(c.out, "-6.7733681") != NULL);
    if (c.code)
        fprintf(stderr, "%s", c.err);
    cmd_free(&c);
    /* water-density on a smaller system, on 2x1x1 thread ranks */
    const char *a3[] = {"--preset", "water-density", "--atoms", "3000", "--steps",
                        "20",       "--grid",        "2x1x1",   NULL};
    run(&c, a3);
    printf("--preset water-density --atoms 3000 --steps 20: exit %d\n", c.code);
    CHECK(c.code == 0);
    CHECK(strstr(c.out, "ns/day (convention: 2 fs per step)") != NULL);
    CHECK(strstr(c.out, "3000 atoms") != NULL);
    /* its equilibration before step 0, said and reported apart; the mean T */
    CHECK(strstr(c.out, "halox-md: equilibrating: ") != NULL);
    CHECK(strstr(c.out, " steps before step 0 in ") != NULL);
    CHECK(strstr(c.out, "  temperature ") != NULL &&
          strstr(c.out, "mean of the 1 thermo record of steps 1 to 20") != NULL);
    if (c.code)
        fprintf(stderr, "%s%s", c.out, c.err);
    cmd_free(&c);
    /* --help and --version */
    const char *a4[] = {"--help", NULL};
    CHECK(run(&c, a4) == 0 && strstr(c.out, "--preset lammps-lj"));
    cmd_free(&c);
    const char *a5[] = {"--version", NULL};
    CHECK(run(&c, a5) == 0 && strstr(c.out, "threads"));
    cmd_free(&c);
}

typedef struct {
    long long stop_after;
    int sent;
    int sig;
} sig_user_t;

/* Send the signal once a thermo row at or after the given step has been printed. */
static int send_sigint(const char *out, pid_t pid, void *vp)
{
    sig_user_t *u = vp;
    const char *p = out;
    while ((p = strchr(p, '\n'))) {
        p++;
        long long step;
        char *end;
        step = strtoll(p, &end, 10);
        if (end != p && *end == ' ' && step >= u->stop_after) {
            kill(pid, u->sig);
            u->sent = 1;
            return 1;
        }
    }
    return 0;
}

static char *last_frame(const char *file)
{
    char *s = md_test_slurp(file, NULL);
    if (!s)
        return NULL;
    /* frames start with the atom count on its own line: find the last "\n500\nLattice" */
    char *last = s, *p = s;
    while ((p = strstr(p + 1, "\n500\nLattice")))
        last = p + 1;
    char *copy = strdup(last);
    free(s);
    return copy;
}

static void interrupt_and_restart(void)
{
    char ck[256], xr[256], xu[256], steps[32];
    path(ck, sizeof ck, "int.chk");
    path(xr, sizeof xr, "restart.xyz");
    path(xu, sizeof xu, "uninterrupted.xyz");
    const char *base[] = {"--cells",    "5,5,5", "--rebuild-every", "10", "--grid", "2x1x1",
                          "--ensemble", "nvt",   "--thermo-every",  "10", NULL};
    const char *args[32];
    int n = 0;
    for (int i = 0; base[i]; i++)
        args[n++] = base[i];
    args[n++] = "--steps";
    args[n++] = "100000000";
    args[n++] = "--checkpoint";
    args[n++] = ck;
    args[n] = NULL;
    int o, e;
    pid_t pid = start(args, &o, &e);
    sig_user_t u = {.stop_after = 200, .sent = 0, .sig = SIGINT};
    cmd_t c;
    finish(pid, o, e, &c, send_sigint, &u);
    const char *msg = strstr(c.out, "stopped on request at step ");
    long long at = msg ? strtoll(msg + strlen("stopped on request at step "), NULL, 10) : -1;
    printf("SIGINT after step %lld: exit %d, stopped at step %lld\n", u.stop_after, c.code, at);
    CHECK(u.sent);
    CHECK(c.code == 0);
    CHECK_MSG(at >= 200 && at % 10 == 0, "stopped at step %lld", at);
    CHECK(strstr(c.out, "Summary") != NULL);
    cmd_free(&c);
    if (at < 0)
        return;
    halox_md_checkpoint_info_t info;
    CHECK_OK(halox_md_checkpoint_probe(ck, &info));
    CHECK(info.step == at);
    snprintf(steps, sizeof steps, "%lld", at + 60);
    /* restarted to at + 60, and uninterrupted to at + 60 */
    const char *ar[] = {"--restart", ck, "--steps", steps, "--xyz", xr, NULL};
    run(&c, ar);
    CHECK(c.code == 0);
    if (c.code)
        fprintf(stderr, "%s%s", c.out, c.err);
    cmd_free(&c);
    n = 0;
    for (int i = 0; base[i]; i++)
        args[n++] = base[i];
    args[n++] = "--steps";
    args[n++] = steps;
    args[n++] = "--xyz";
    args[n++] = xu;
    args[n] = NULL;
    run(&c, args);
    CHECK(c.code == 0);
    cmd_free(&c);
    char *fr = last_frame(xr), *fu = last_frame(xu);
    CHECK(fr && fu && strlen(fr) > 1000);
    int same = fr && fu && !strcmp(fr, fu);
    printf("restart from step %lld to %s vs uninterrupted: final XYZ frames %s\n", at, steps,
           same ? "identical" : "DIFFER");
    CHECK(same);
    free(fr);
    free(fu);
}

/* SIGTERM stops a run the same way (what batch systems and mpirun send) */
static void sigterm(void)
{
    char ck[256];
    path(ck, sizeof ck, "term.chk");
    const char *args[] = {"--cells", "5,5,5",   "--rebuild-every", "10",           "--thermo-every",
                          "10",      "--steps", "100000000",       "--checkpoint", ck,
                          NULL};
    int o, e;
    pid_t pid = start(args, &o, &e);
    sig_user_t u = {.stop_after = 50, .sent = 0, .sig = SIGTERM};
    cmd_t c;
    finish(pid, o, e, &c, send_sigint, &u);
    halox_md_checkpoint_info_t info;
    int ok = halox_md_checkpoint_probe(ck, &info) == HALOX_OK;
    printf("SIGTERM after step 50: exit %d, checkpoint at step %lld\n", c.code,
           ok ? info.step : -1);
    CHECK(u.sent && c.code == 0 && ok && info.step >= 50);
    CHECK(strstr(c.out, "stopped on request") != NULL);
    cmd_free(&c);
}

/* kill -9 while checkpoints are being written: the file on disk is always a whole checkpoint */
static void kill_while_writing(void)
{
    char ck[256];
    path(ck, sizeof ck, "kill.chk");
    unlink(ck);
    const char *args[] = {"--cells",
                          "6,6,6",
                          "--rebuild-every",
                          "5",
                          "--checkpoint",
                          ck,
                          "--checkpoint-every",
                          "5",
                          "--steps",
                          "100000000",
                          "--quiet",
                          NULL};
    int ok = 0;
    long long last_step = -1;
    for (int round = 0; round < 6; round++) {
        int o, e;
        pid_t pid = start(args, &o, &e);
        /* wait for a checkpoint to exist, then kill at an arbitrary moment */
        for (int t = 0; t < 2000; t++) {
            struct stat sb;
            if (stat(ck, &sb) == 0 && (round > 0 || sb.st_size > 0))
                break;
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
        struct timespec ts = {0, 7000000 + 13000000L * round};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        cmd_t c;
        finish(pid, o, e, &c, NULL, NULL);
        CHECK(c.code == 128 + SIGKILL);
        cmd_free(&c);
        halox_md_checkpoint_info_t info;
        halox_status_t st = halox_md_checkpoint_probe(ck, &info);
        if (st == HALOX_OK) {
            ok++;
            last_step = info.step;
        } else {
            fprintf(stderr, "after kill -9: %s\n", halox_last_error());
        }
    }
    /* kills that landed inside a write leave their temporary file behind (never the target) */
    int torn = files_named(g_dir, "kill.chk.tmp.");
    printf("kill -9 during checkpointing, 6 times: the checkpoint was whole %d times (last at "
           "step %lld); %d kills landed inside a write\n",
           ok, last_step, torn);
    CHECK(ok == 6);
}

static void expect_bad(const char *const args[], const char *message)
{
    cmd_t c;
    run(&c, args);
    char line[512];
    snprintf(line, sizeof line, "%s", c.err);
    char *nl = strchr(line, '\n');
    if (nl)
        *nl = '\0';
    printf("  exit %d: %s\n", c.code, line);
    CHECK_MSG(c.code == 2, "exit code %d for a bad input (expected 2)", c.code);
    CHECK_MSG(strstr(c.err, message) != NULL, "stderr '%s' does not say '%s'", c.err, message);
    CHECK(strstr(c.out, "Summary") == NULL);
    cmd_free(&c);
}

static void write_file(const char *p, const char *text)
{
    FILE *fp = fopen(p, "w");
    fputs(text, fp);
    fclose(fp);
}

static void bad_input(void)
{
    printf("bad input:\n");
    const char *u1[] = {"--frobnicate", NULL};
    expect_bad(u1, "unknown option '--frobnicate'");
    const char *u2[] = {"--temp", NULL};
    expect_bad(u2, "--temp needs a value");
    const char *u3[] = {"--temp", "hot", NULL};
    expect_bad(u3, "--temp 'hot'");
    const char *u4[] = {"--cells", "4,4", NULL};
    expect_bad(u4, "--cells '4,4'");
    const char *u5[] = {"--preset", "gromacs", NULL};
    expect_bad(u5, "unknown preset 'gromacs'");
    const char *u6[] = {"--atoms", "500", "--cells", "4,4,4", NULL};
    expect_bad(u6, "--atoms places atoms at random");
    const char *u7[] = {"--ensemble", "npt", NULL};
    expect_bad(u7, "--ensemble 'npt'");
    const char *u8[] = {"--cells", "2,2,2", NULL}; /* box 3.36 < 2 x cut-off 2.5 */
    expect_bad(u8, "cut-off 2.5 is not below half the box");
    const char *u9[] = {"--cells", "6,6,6", "--grid", "16x1x1", NULL};
    expect_bad(u9, "pulses");
    const char *u10[] = {"--transport", "carrier-pigeon", NULL};
    expect_bad(u10, "transport 'carrier-pigeon'");
    const char *u11[] = {"--xyz-every", "10", NULL};
    expect_bad(u11, "--xyz-every needs --xyz");
    const char *u12[] = {"--steps", "-5", NULL};
    expect_bad(u12, "--steps '-5'");
    const char *u13[] = {"--dt", "0", NULL};
    expect_bad(u13, "--dt '0'");
    const char *u14[] = {"extra", NULL};
    expect_bad(u14, "unexpected argument 'extra'");
    /* HALOX_LOG_LEVEL: 0 prints nothing but errors; a bad value is a usage error */
    const char *q[] = {"--cells", "4,4,4", "--steps", "5", NULL};
    setenv("HALOX_LOG_LEVEL", "0", 1);
    cmd_t lq;
    run(&lq, q);
    CHECK_MSG(lq.code == 0 && lq.out[0] == '\0', "HALOX_LOG_LEVEL=0: exit %d, output '%.80s'",
              lq.code, lq.out);
    cmd_free(&lq);
    setenv("HALOX_LOG_LEVEL", "9", 1);
    expect_bad(q, "HALOX_LOG_LEVEL='9'");
    unsetenv("HALOX_LOG_LEVEL");
    const char *u15[] = {"--autotune", "--transport", "mpi", NULL};
    expect_bad(u15, "--autotune chooses the transport itself");
    const char *u16[] = {"--autotune-steps", "5", NULL};
    expect_bad(u16, "--autotune-steps '5'");
    const char *u17[] = {"--cells", "6,6,6", "--grid", "2x1x1", "--autotune", NULL};
    expect_bad(u17, "start the 2 ranks with mpirun -np 2");
    char f[256], ck[256];
    path(f, sizeof f, "bad.xyz");
    path(ck, sizeof ck, "int.chk");
    const char *r1[] = {"--restart", ck, "--steps", "1000", "--temp", "2", NULL};
    expect_bad(r1, "--temp cannot be combined with --restart");
    const char *r2[] = {"--restart", ck, NULL};
    expect_bad(r2, "--restart needs --steps");
    const char *r3[] = {"--restart", ck, "--steps", "1000", "--precision", "double", NULL};
    expect_bad(r3, "holds single-precision data");
    const char *r4[] = {"--restart", ck, "--steps", "1", NULL};
    expect_bad(r4, "give --steps >=");
    char bad[256];
    path(bad, sizeof bad, "corrupt.chk");
    size_t n = 0;
    char *buf = md_test_slurp(ck, &n);
    CHECK(buf != NULL);
    if (buf) {
        buf[n / 2] ^= 1;
        FILE *out = fopen(bad, "wb");
        fwrite(buf, 1, (size_t)n, out);
        fclose(out);
        const char *r5[] = {"--restart", bad, "--steps", "100000", NULL};
        expect_bad(r5, "is corrupted");
        out = fopen(bad, "wb");
        fwrite(buf, 1, (size_t)n - 100, out);
        fclose(out);
        expect_bad(r5, "is truncated");
        free(buf);
    }
    const char *f0[] = {"--read", "/no/such/file.xyz", NULL};
    expect_bad(f0, "cannot open '/no/such/file.xyz'");
    write_file(f, "3\ncomment\nAr 0 0 0\nAr 1 1 1\nAr 2 2 2\n");
    const char *f1[] = {"--read", f, NULL};
    expect_bad(f1, "give the box with --box");
    write_file(f, "4\nLattice=\"10 0 0 0 10 0 0 0 10\"\nAr 0 0 0\nAr 1 1 1\nAr 2 2 2\n");
    expect_bad(f1, "is truncated");
    write_file(f, "3\nLattice=\"10 0 0 0 10 0 0 0 10\"\nAr 0 0 0\nAr 1 x 1\nAr 2 2 2\n");
    expect_bad(f1, "line 4");
    write_file(f, "many\nLattice=\"10 0 0 0 10 0 0 0 10\"\n");
    expect_bad(f1, "line 1");
    write_file(f, "3\nLattice=\"10 1 0 0 10 0 0 0 10\"\nAr 0 0 0\nAr 1 1 1\nAr 2 2 2\n");
    expect_bad(f1, "not orthorhombic");
    const char *f2[] = {"--read", f, "--cells", "3,3,3", NULL};
    expect_bad(f2, "--read takes the atoms from the file");
    /* a run that blows up stops with a run-time error (exit 1) that says so */
    const char *b1[] = {"--cells", "5,5,5",  "--dt",  "0.05", "--steps",
                        "200",     "--grid", "2x1x1", NULL};
    cmd_t c;
    run(&c, b1);
    printf("  dt 0.05: exit %d: %s", c.code, c.err);
    CHECK(c.code == 1 && strstr(c.err, "the system blew up"));
    cmd_free(&c);
}

/* ---- outputs that are not regular files, outputs that fail --------------------------------- */

static int is_kind(const char *p, mode_t kind)
{
    struct stat sb;
    return lstat(p, &sb) == 0 && (sb.st_mode & S_IFMT) == kind;
}

/* A path that is not a regular file is refused (exit 2, saying what it is) before any output is
 * written, and left as it was: a FIFO, a link to a device, a directory, a device node (as root:
 * the atomic rename once replaced /dev/full with a regular file). A link to a regular file is
 * followed, and the checkpoint keeps the link; a link to nothing is refused. */
static void special_outputs(void)
{
    printf("outputs that are not regular files:\n");
    char fifo[256], link_dev[256], dir[256], node[256], other[256];
    path(fifo, sizeof fifo, "out.fifo");
    path(link_dev, sizeof link_dev, "device.link");
    path(dir, sizeof dir, "out.dir");
    path(node, sizeof node, "full.node");
    path(other, sizeof other, "other.out");
    CHECK(mkfifo(fifo, 0600) == 0);
    /* a reader holds the FIFO open: a writer that opened it would go on, not wait for ever */
    int rfd = open(fifo, O_RDONLY | O_NONBLOCK);
    CHECK(rfd >= 0);
    struct stat sb;
    const char *device =
        stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode) ? "/dev/full" : "/dev/null";
    CHECK(symlink(device, link_dev) == 0);
    CHECK(mkdir(dir, 0700) == 0);
    /* a device node of our own (the kind of /dev/full), where we may make one (root) */
    char mk[320];
    snprintf(mk, sizeof mk, "mknod '%s' c 1 7 2>/dev/null", node);
    int have_node = system(mk) == 0 && is_kind(node, S_IFCHR);
    const struct {
        const char *opt, *path;
        mode_t kind;
        const char *says;
    } cases[] = {
        {"--checkpoint", fifo, S_IFIFO, "is a FIFO (named pipe), not a regular file"},
        {"--csv", fifo, S_IFIFO, "is a FIFO (named pipe), not a regular file"},
        {"--json", fifo, S_IFIFO, "is a FIFO (named pipe), not a regular file"},
        {"--checkpoint", link_dev, S_IFLNK, "is a character device, not a regular file"},
        {"--csv", link_dev, S_IFLNK, "is a character device, not a regular file"},
        {"--xyz", link_dev, S_IFLNK, "is a character device, not a regular file"},
        {"--json", link_dev, S_IFLNK, "is a character device, not a regular file"},
        {"--checkpoint", dir, S_IFDIR, "is a directory, not a regular file"},
        {"--xyz", dir, S_IFDIR, "is a directory, not a regular file"},
        {"--checkpoint", node, S_IFCHR, "is a character device, not a regular file"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (cases[k].path == node && !have_node)
            continue;
        unlink(other);
        /* another output beside it: refused before it is written either */
        const char *other_opt = strcmp(cases[k].opt, "--csv") ? "--csv" : "--json";
        const char *args[] = {"--cells",         "4,4,4", "--steps",    "10",
                              "--rebuild-every", "10",    cases[k].opt, cases[k].path,
                              other_opt,         other,   NULL};
        printf("  %s %s:", cases[k].opt, cases[k].path);
        expect_bad(args, cases[k].says);
        CHECK_MSG(is_kind(cases[k].path, cases[k].kind), "%s %s was replaced", cases[k].opt,
                  cases[k].path);
        CHECK_MSG(!is_kind(other, S_IFREG), "%s %s was written although %s was refused", other_opt,
                  other, cases[k].path);
    }
    if (!have_node)
        printf("  (no device node of our own: mknod needs root)\n");
    close(rfd);
    /* a link to a regular file: the checkpoint goes to its target, the link stays */
    char target[256], link_ck[256], dangling[256];
    path(target, sizeof target, "target.chk");
    path(link_ck, sizeof link_ck, "link.chk");
    path(dangling, sizeof dangling, "dangling.csv");
    write_file(target, "an old file, replaced atomically\n");
    CHECK(symlink("target.chk", link_ck) == 0);
    const char *a1[] = {"--cells", "4,4,4",        "--steps", "10",      "--rebuild-every",
                        "10",      "--checkpoint", link_ck,   "--quiet", NULL};
    cmd_t c;
    run(&c, a1);
    halox_md_checkpoint_info_t info;
    int ok = halox_md_checkpoint_probe(target, &info) == HALOX_OK;
    printf("  --checkpoint through a link: exit %d, link %s, target %s\n", c.code,
           is_kind(link_ck, S_IFLNK) ? "kept" : "REPLACED", ok ? "a whole checkpoint" : "NOT");
    CHECK(c.code == 0 && is_kind(link_ck, S_IFLNK) && ok && info.step == 10);
    cmd_free(&c);
    CHECK(symlink("missing.csv", dangling) == 0);
    const char *a2[] = {"--cells", "4,4,4", "--steps", "10", "--csv", dangling, NULL};
    printf("  --csv to a dangling link:");
    expect_bad(a2, "is a symbolic link to a missing file");
    path(other, sizeof other, "missing.csv");
    CHECK(!is_kind(other, S_IFREG));
    /* inputs too: a directory is said to be one (it read as an empty file) */
    const char *a3[] = {"--read", "/", NULL};
    printf("  --read /:");
    expect_bad(a3, "'/' is a directory, not a regular file");
    const char *a4[] = {"--restart", "/", "--steps", "10", NULL};
    printf("  --restart /:");
    expect_bad(a4, "the checkpoint '/' is a directory, not a regular file");
}

/* A write that fails during the run (here: RLIMIT_FSIZE, as a disk that fills up, SIGXFSZ at its
 * default) stops it with exit 1 and a message naming the file, for every output, and leaves no
 * temporary file. */
static void write_failures(void)
{
    printf("outputs that fail while they are written (a file size limit, as a full disk):\n");
    const struct {
        const char *opt, *name;
        long limit;
        const char *says;
    } cases[] = {
        {"--csv", "full.csv", 2048, "writing the CSV file"},
        {"--xyz", "full.xyz", 4096, "writing the XYZ file"},
        {"--checkpoint", "full.chk", 4096, "writing the checkpoint"},
        {"--json", "full.json", 1024, "writing the JSON file"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char file[256];
        path(file, sizeof file, cases[k].name);
        const char *args[] = {"--cells",        "5,5,5", "--steps",         "100",
                              "--thermo-every", "1",     "--rebuild-every", "10",
                              cases[k].opt,     file,    "--quiet",         NULL};
        cmd_t c;
        child_fsize_limit = cases[k].limit;
        run(&c, args);
        child_fsize_limit = 0;
        char line[512];
        snprintf(line, sizeof line, "%s", c.err);
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        printf("  %s, %ld bytes at most: exit %d: %s\n", cases[k].opt, cases[k].limit, c.code,
               line);
        CHECK_MSG(c.code == 1, "%s: exit %d for a failed write (expected 1)", cases[k].opt, c.code);
        CHECK_MSG(strstr(c.err, cases[k].says) && strstr(c.err, "File too large"),
                  "%s: stderr '%s' does not say '%s' and why", cases[k].opt, c.err, cases[k].says);
        char tmp[64];
        snprintf(tmp, sizeof tmp, "%s.tmp.", cases[k].name);
        CHECK_MSG(files_named(g_dir, tmp) == 0, "%s: a temporary file %s* was left behind",
                  cases[k].opt, tmp);
        cmd_free(&c);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_md_cli PATH/TO/halox-md\n");
        return 2;
    }
    g_tool = argv[1];
    snprintf(g_dir, sizeof g_dir, "md-cli-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    presets_and_files();
    interrupt_and_restart();
    sigterm();
    kill_while_writing();
    bad_input();
    special_outputs();
    write_failures();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (!halox_test_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_dir);
    TEST_DONE();
}
