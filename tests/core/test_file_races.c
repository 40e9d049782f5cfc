/* Files changed under a writer or a reader (src/core/file*.c), and the files of a run together.
 *   1. An atomic replacement whose target becomes a FIFO while the file is written leaves the
 *      FIFO and no temporary file; one whose folder is renamed and replaced (by a link to another
 *      folder) meanwhile lands in the folder it started in, the other left empty.
 *   2. A write past the file size limit fails with EFBIG, named, and removes the temporary file;
 *      the previous file is unchanged.
 *   3. An input or output that is a FIFO is refused at once, never waited on (also an optional
 *      input that is not followed through links); a missing optional input is no error.
 *   4. halox_files_check: the same file by path, ./x, dir/../x, a link and a hard link, for an
 *      existing and a missing file; the one pair allowed (an input read whole and its atomic
 *      replacement); a folder that does not exist. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/files/file.h"
#include "harness.h"

static char g_dir[64];

static void at(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", g_dir, name); }

static void put(const char *p, const char *text)
{
    FILE *f = fopen(p, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

/* The text of p ("" when missing). */
static const char *text_of(const char *p)
{
    static char buf[256];
    buf[0] = '\0';
    FILE *f = fopen(p, "r");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

/* Files in folder d whose name holds ".tmp.". */
static int temps_in(const char *d)
{
    int n = 0;
    DIR *dp = opendir(d);
    struct dirent *e;
    while (dp && (e = readdir(dp)))
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (dp)
        closedir(dp);
    return n;
}

static void swapped_under_the_writer(void)
{
    char t[256];
    at(t, sizeof t, "swap.out");
    put(t, "old\n");
    halox_replace_t *w = NULL;
    CHECK_OK(halox_replace_begin(t, "the test file", HALOX_REPLACE_FOLLOW, &w));
    halox_replace_write(w, "new\n", 4);
    CHECK(unlink(t) == 0 && mkfifo(t, 0600) == 0);
    CHECK_STATUS(halox_replace_commit(w), HALOX_ERR_WRITE);
    printf("target became a FIFO: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "became a FIFO (named pipe) while it was written") != NULL);
    struct stat sb;
    CHECK(lstat(t, &sb) == 0 && S_ISFIFO(sb.st_mode));
    CHECK(temps_in(g_dir) == 0);
    unlink(t);

    /* the folder renamed and a link to another folder put in its place */
    char sub[128], moved[128], other[128], in_sub[256], in_moved[256], in_other[256];
    at(sub, sizeof sub, "sub");
    at(moved, sizeof moved, "sub.moved");
    at(other, sizeof other, "other");
    snprintf(in_sub, sizeof in_sub, "%s/c.chk", sub);
    snprintf(in_moved, sizeof in_moved, "%s/c.chk", moved);
    snprintf(in_other, sizeof in_other, "%s/c.chk", other);
    CHECK(mkdir(sub, 0700) == 0 && mkdir(other, 0700) == 0);
    CHECK_OK(halox_replace_begin(in_sub, "the checkpoint", HALOX_REPLACE_FOLLOW, &w));
    halox_replace_write(w, "checkpoint\n", 11);
    CHECK(rename(sub, moved) == 0 && symlink("other", sub) == 0);
    CHECK_OK(halox_replace_commit(w));
    printf("folder swapped: the file is in the folder it started in: %s; the other folder: %s\n",
           text_of(in_moved)[0] ? "yes" : "NO", text_of(in_other)[0] ? "WRITTEN" : "empty");
    CHECK(!strcmp(text_of(in_moved), "checkpoint\n"));
    CHECK(access(in_other, F_OK) != 0 && temps_in(other) == 0 && temps_in(moved) == 0);
    unlink(in_moved);
    unlink(sub);
    rmdir(moved);
    rmdir(other);
}

static void past_the_size_limit(void)
{
    char t[256];
    at(t, sizeof t, "limit.out");
    put(t, "old\n");
    struct rlimit old, lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = 1024;
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN); /* as the tools do */
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    static char big[8192];
    halox_replace_t *w = NULL;
    CHECK_OK(halox_replace_begin(t, "the test file", HALOX_REPLACE_FOLLOW, &w));
    halox_replace_write(w, big, sizeof big);
    halox_status_t st = halox_replace_commit(w);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, was);
    CHECK_STATUS(st, HALOX_ERR_WRITE);
    printf("past the size limit: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), strerror(EFBIG)) != NULL);
    CHECK(!strcmp(text_of(t), "old\n") && temps_in(g_dir) == 0);
    unlink(t);
}

static void fifos(void)
{
    char f[256];
    at(f, sizeof f, "pipe");
    CHECK(mkfifo(f, 0600) == 0);
    FILE *fp = NULL;
    CHECK_STATUS(halox_input_open(f, "the input", "give a file", &fp), HALOX_ERR_IO);
    printf("input FIFO: %s\n", halox_last_error());
    CHECK(!fp && strstr(halox_last_error(), "is a FIFO (named pipe), not a regular file") != NULL);
    mode_t mode = 0;
    CHECK(halox__open_regular(f, O_RDONLY | O_NOFOLLOW, 0, &mode) == -2 && S_ISFIFO(mode));
    CHECK_STATUS(halox_input_open_flags(f, "the cache", "delete it",
                                        HALOX_INPUT_NOFOLLOW | HALOX_INPUT_OPTIONAL, &fp),
                 HALOX_ERR_IO);
    CHECK(!fp && strstr(halox_last_error(), "is a FIFO (named pipe), not a regular file") != NULL);
    char missing[256];
    at(missing, sizeof missing, "no-such-cache");
    CHECK_OK(halox_input_open_flags(missing, "the cache", "delete it", HALOX_INPUT_OPTIONAL, &fp));
    CHECK(!fp);
    CHECK_STATUS(halox_output_open(f, "the output", 0, &fp), HALOX_ERR_INVALID_ARG);
    unlink(f);
}

static void same_files(void)
{
    char x[256], dotx[256], viadir[256], lnk[256], hard[256], miss[256], miss2[256], sub[256];
    at(x, sizeof x, "x");
    snprintf(dotx, sizeof dotx, "%s/./x", g_dir);
    at(sub, sizeof sub, "d");
    snprintf(viadir, sizeof viadir, "%s/d/../x", g_dir);
    at(lnk, sizeof lnk, "l");
    at(hard, sizeof hard, "h");
    at(miss, sizeof miss, "m");
    snprintf(miss2, sizeof miss2, "%s/d/../m", g_dir);
    put(x, "x\n");
    CHECK(mkdir(sub, 0700) == 0 && symlink("x", lnk) == 0 && link(x, hard) == 0);
    CHECK(halox_file_same(x, dotx) && halox_file_same(x, viadir) && halox_file_same(x, lnk) &&
          halox_file_same(x, hard) && halox_file_same(miss, miss2));
    CHECK(!halox_file_same(x, miss) && !halox_file_same(x, sub));
    halox_file_t f[3] = {{x, "the A file", HALOX_FILE_WRITE},
                         {hard, "the B file", HALOX_FILE_WRITE},
                         {NULL, "the C file", HALOX_FILE_READ}};
    CHECK_STATUS(halox_files_check(f, 3), HALOX_ERR_INVALID_ARG);
    printf("hard link: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "are the same file") != NULL);
    f[1] = (halox_file_t){lnk, "the input", HALOX_FILE_READ};
    CHECK_STATUS(halox_files_check(f, 2), HALOX_ERR_INVALID_ARG);
    printf("link: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "give the A file another path") != NULL);
    f[0].use = HALOX_FILE_REPLACE;
    f[1].use = HALOX_FILE_READ_REPLACED;
    CHECK_OK(halox_files_check(f, 2)); /* read whole, then replaced atomically */
    f[1] = (halox_file_t){miss2, "the B file", HALOX_FILE_WRITE};
    f[0] = (halox_file_t){miss, "the A file", HALOX_FILE_REPLACE};
    CHECK_STATUS(halox_files_check(f, 2), HALOX_ERR_INVALID_ARG);
    f[1].path = x;
    CHECK_OK(halox_files_check(f, 2));
    char nowhere[256];
    snprintf(nowhere, sizeof nowhere, "%s/no/such/f", g_dir);
    f[1].path = nowhere;
    CHECK_STATUS(halox_files_check(f, 2), HALOX_ERR_IO);
    printf("missing folder: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "does not exist: create it first") != NULL);
    CHECK(access(miss, F_OK) != 0); /* checks create nothing */
    unlink(x);
    unlink(lnk);
    unlink(hard);
    rmdir(sub);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "file-races-XXXXXX");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 1;
    }
    swapped_under_the_writer();
    past_the_size_limit();
    fifos();
    same_files();
    if (!halox_test_failures)
        rmdir(g_dir);
    TEST_DONE();
}
