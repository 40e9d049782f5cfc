/* Files read and written: only regular files are opened (and a FIFO is never waited on), every
 * failed write is reported. Atomic replacement: file_atomic.c; the files of a run together:
 * file_set.c. */
/* realpath is XSI; 700 also gives POSIX 2008 (O_CLOEXEC, fdopen, lstat) */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files/file.h"

const char *halox__file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return "not a regular file";
}

static halox_status_t halox__not_regular(halox_status_t st, const char *path, const char *what,
                                         const char *kind)
{
    return halox__error(st,
                        "%s '%s' is %s, not a regular file: give the path of a regular file "
                        "or of a new one",
                        what, path, kind);
}

halox_status_t halox_output_check(const char *path, const char *what)
{
    if (!what)
        what = "the output file";
    if (!path || !*path)
        return halox__error(HALOX_ERR_INVALID_ARG, "%s: no path given", what);
    struct stat sb;
    if (stat(path, &sb) == 0)
        return S_ISREG(sb.st_mode) ? HALOX_OK
                                   : halox__not_regular(HALOX_ERR_INVALID_ARG, path, what,
                                                        halox__file_kind(sb.st_mode));
    /* a link to nothing: creating its target through it would surprise, and an atomic rename
     * would replace the link itself */
    if (errno == ENOENT && lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
        return halox__not_regular(HALOX_ERR_INVALID_ARG, path, what,
                                  "a symbolic link to a missing file");
    /* missing: created by the writer; other errors (no permission, a missing folder) are said
     * by the open, which knows why */
    return HALOX_OK;
}

int halox__open_regular(const char *path, int flags, mode_t perm, mode_t *mode_p)
{
    struct stat sb;
    /* a look first: a device or a FIFO is not opened at all where it is there already */
    if (((flags & O_NOFOLLOW) ? lstat(path, &sb) : stat(path, &sb)) == 0 && !S_ISREG(sb.st_mode)) {
        *mode_p = sb.st_mode;
        return -2;
    }
    /* O_NONBLOCK: a FIFO put in place since the look fails or returns at once instead of
     * waiting for its other end; no O_TRUNC: a file is emptied only once it is known to be a
     * regular file */
    int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, perm);
    if (fd < 0)
        return -1;
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        *mode_p = sb.st_mode;
        return -2;
    }
    int now = fcntl(fd, F_GETFL);
    if (now < 0 || fcntl(fd, F_SETFL, now & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

halox_status_t halox_input_open(const char *path, const char *what, const char *give, FILE **fp_p)
{
    return halox_input_open_flags(path, what, give, 0, fp_p);
}

halox_status_t halox_input_open_flags(const char *path, const char *what, const char *give,
                                      int flags, FILE **fp_p)
{
    *fp_p = NULL;
    const char *sp = what ? " " : "";
    what = what ? what : "";
    mode_t mode = 0;
    int fd = halox__open_regular(path, O_RDONLY | (flags & HALOX_INPUT_NOFOLLOW ? O_NOFOLLOW : 0),
                                 0, &mode);
    if (fd == -2)
        return halox__error(HALOX_ERR_IO, "%s%s'%s' is %s, not a regular file: %s", what, sp, path,
                            halox__file_kind(mode), give);
    FILE *fp = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!fp) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        if (flags & HALOX_INPUT_OPTIONAL)
            return HALOX_OK;
        return halox__error(HALOX_ERR_IO, "cannot open %s%s'%s': %s", what, sp, path,
                            strerror(err));
    }
    *fp_p = fp;
    return HALOX_OK;
}

halox_status_t halox_output_open(const char *path, const char *what, int append, FILE **fp_p)
{
    if (!fp_p)
        return halox__error(HALOX_ERR_INVALID_ARG, "halox_output_open: NULL argument");
    *fp_p = NULL;
    if (!what)
        what = "the output file";
    halox_status_t st = halox_output_check(path, what);
    if (st != HALOX_OK)
        return st;
    mode_t mode = 0;
    int fd = halox__open_regular(path, O_WRONLY | O_CREAT | (append ? O_APPEND : 0), 0666, &mode);
    if (fd == -2)
        return halox__not_regular(HALOX_ERR_INVALID_ARG, path, what, halox__file_kind(mode));
    if (fd < 0)
        return halox__error(HALOX_ERR_IO, "cannot write %s '%s': %s", what, path, strerror(errno));
    const char *fail = NULL;
    if (!append && ftruncate(fd, 0) != 0)
        fail = "truncate";
    FILE *fp = fail ? NULL : fdopen(fd, append ? "a" : "w");
    if (!fp) {
        int err = errno;
        close(fd);
        return halox__error(HALOX_ERR_IO, "cannot write %s '%s' (%s: %s)", what, path,
                            fail ? fail : "fdopen", strerror(err));
    }
    *fp_p = fp;
    return HALOX_OK;
}

halox_status_t halox_output_flush(FILE *fp, const char *path, const char *what)
{
    if (!fp)
        return HALOX_OK;
    errno = 0;
    int rc = fflush(fp);
    int err = errno;
    if (rc == 0 && !ferror(fp))
        return HALOX_OK;
    /* the buffer may have been written (and failed) by an earlier fprintf, whose errno is gone */
    return halox__error(HALOX_ERR_WRITE, "writing %s '%s' failed: %s", what ? what : "the file",
                        path ? path : "?", err ? strerror(err) : "an earlier write failed");
}

halox_status_t halox_output_close(FILE *fp, const char *path, const char *what)
{
    if (!fp)
        return HALOX_OK;
    halox_status_t st = halox_output_flush(fp, path, what);
    errno = 0;
    if (fclose(fp) != 0 && st == HALOX_OK)
        st = halox__error(HALOX_ERR_WRITE, "closing %s '%s' failed: %s", what ? what : "the file",
                          path ? path : "?", strerror(errno));
    return st;
}

char *halox__path_split(const char *path, const char **name_p)
{
    const char *slash = strrchr(path, '/');
    *name_p = slash ? slash + 1 : path;
    const char *dir = slash ? path : ".";
    size_t n = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 1;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, dir, n);
        d[n] = '\0';
    }
    return d;
}

halox_status_t halox__output_target(const char *path, const char *what, char **target_p)
{
    struct stat sb;
    *target_p = NULL;
    if (lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode)) {
        char *target = realpath(path, NULL);
        if (!target)
            return halox__error(HALOX_ERR_IO, "cannot follow %s '%s' (a symbolic link): %s", what,
                                path, strerror(errno));
        *target_p = target;
        return HALOX_OK;
    }
    size_t n = strlen(path) + 1;
    char *copy = malloc(n);
    if (!copy)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    memcpy(copy, path, n);
    *target_p = copy;
    return HALOX_OK;
}
