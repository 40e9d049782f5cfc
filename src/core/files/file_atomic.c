/* Atomic replacement of a file (file.h): a temporary file written next to the target, synced,
 * then renamed over it, so that a crash at any point leaves the old file or the new one, never
 * a torn one. Every step is made relative to one descriptor of the target's folder: a folder
 * renamed or swapped for a link in the meantime cannot redirect the rename elsewhere. The
 * temporary file is created with O_EXCL | O_NOFOLLOW: a link or a FIFO planted under its name
 * is never opened, let alone written through. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files/file.h"

/* One replacement: the target's folder is opened once, and the temporary file ("<name>.tmp.XXXXXX",
 * created with O_EXCL | O_NOFOLLOW), the check before the rename, the rename and the clean-up all
 * go through that descriptor. */
struct halox_replace {
    int dir;           /* the target's folder */
    int fd;            /* the temporary file (-1 once closed) */
    char *target;      /* the file replaced (a link followed) */
    const char *name;  /* its name in dir, inside target */
    char *tmp;         /* the temporary file's name in dir */
    const char *step;  /* the first step that failed ("write", "fsync", ...), NULL while none */
    int err;           /* its errno */
    char *path, *what; /* as given, for the messages */
};

/* The next candidate suffix: O_EXCL makes any name safe, an unpredictable one only keeps
 * others from taking it first. */
static uint64_t halox__tmp_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static void halox__replace_free(halox_replace_t *a)
{
    if (a->fd >= 0)
        close(a->fd);
    if (a->dir >= 0)
        close(a->dir);
    free(a->target);
    free(a->tmp);
    free(a->path);
    free(a->what);
    free(a);
}

static char *halox__copy(const char *s)
{
    char *c = malloc(strlen(s) + 1);
    return c ? strcpy(c, s) : NULL;
}

halox_status_t halox_replace_begin(const char *path, const char *what, int flags,
                                   halox_replace_t **r_p)
{
    if (!r_p || !path || !what)
        return halox__error(HALOX_ERR_INVALID_ARG, "halox_replace_begin: NULL argument");
    *r_p = NULL;
    halox_replace_t *a = calloc(1, sizeof *a);
    if (!a)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    a->dir = a->fd = -1;
    a->path = halox__copy(path);
    a->what = halox__copy(what);
    if (flags & HALOX_REPLACE_FOLLOW) {
        halox_status_t st = halox__output_target(path, what, &a->target);
        if (st != HALOX_OK) {
            halox__replace_free(a);
            return st;
        }
    } else {
        a->target = halox__copy(path);
    }
    char *dir = a->target ? halox__path_split(a->target, &a->name) : NULL;
    a->tmp = a->target ? malloc(strlen(a->name) + 16) : NULL;
    if (!dir || !a->tmp || !a->path || !a->what) {
        free(dir);
        halox__replace_free(a);
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    }
    int err = 0;
    if (!a->name[0])
        err = EISDIR;
    else if ((a->dir = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        err = errno;
    free(dir);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                    ((uint64_t)getpid() << 20) ^ (uint64_t)(uintptr_t)a;
    static const char k_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int tries = 0; !err && a->fd < 0 && tries < 100; tries++) {
        uint64_t r = halox__tmp_mix(seed += 0x9e3779b97f4a7c15ull);
        char suffix[7];
        for (int k = 0; k < 6; k++, r /= 62)
            suffix[k] = k_chars[r % 62];
        suffix[6] = '\0';
        sprintf(a->tmp, "%s.tmp.%s", a->name, suffix);
        a->fd = openat(a->dir, a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (a->fd < 0 && errno != EEXIST)
            err = errno;
    }
    if (a->fd < 0) {
        halox__replace_free(a);
        return halox__error(HALOX_ERR_WRITE,
                            "cannot create a temporary file next to %s '%s': %s; the previous "
                            "one, if any, is unchanged",
                            what, path, strerror(err ? err : EEXIST));
    }
    /* others may read a shared file (it holds no secret); failing that, only its owner does */
    if (flags & HALOX_REPLACE_SHARED)
        (void)fchmod(a->fd, 0644);
    *r_p = a;
    return HALOX_OK;
}

void halox_replace_write(halox_replace_t *a, const void *data, size_t n)
{
    const char *p = data;
    while (!a->step && n > 0) {
        errno = 0;
        ssize_t w = write(a->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            a->step = "write";
            a->err = w == 0 ? EIO : errno;
            break;
        }
        p += w;
        n -= (size_t)w;
    }
}

halox_status_t halox_replace_commit(halox_replace_t *a)
{
    if (!a)
        return halox__error(HALOX_ERR_INVALID_ARG, "halox_replace_commit: no replacement");
    const char *path = a->path, *what = a->what;
    if (!a->step && fsync(a->fd) != 0) {
        a->step = "fsync";
        a->err = errno;
    }
    if (close(a->fd) != 0 && !a->step) {
        a->step = "close";
        a->err = errno;
    }
    a->fd = -1;
    /* the target may have been replaced since it was checked: never renamed over anything but
     * a regular file (a device node, a FIFO, a folder, a link put in its place stays) */
    struct stat sb;
    halox_status_t st = HALOX_OK;
    if (!a->step && fstatat(a->dir, a->name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(sb.st_mode))
        st = halox__error(HALOX_ERR_WRITE,
                          "%s '%s' became %s while it was written: it was left as it is "
                          "(nothing is renamed over a file that is not a regular file)",
                          what, path, halox__file_kind(sb.st_mode));
    if (st == HALOX_OK && !a->step && renameat(a->dir, a->tmp, a->dir, a->name) != 0) {
        a->step = "rename";
        a->err = errno;
    }
    if (st != HALOX_OK || a->step) {
        unlinkat(a->dir, a->tmp, 0);
        if (st == HALOX_OK)
            st = halox__error(HALOX_ERR_WRITE,
                              "writing %s '%s' failed (%s: %s); the previous one, if any, is "
                              "unchanged",
                              what, path, a->step, strerror(a->err));
    } else {
        fsync(a->dir); /* the rename itself made durable */
    }
    halox__replace_free(a);
    return st;
}
