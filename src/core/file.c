/* Output files: refuse paths that are not regular files, report every failed write. */
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
#include "core/file.h"

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
    /* O_NONBLOCK: a FIFO put in place since the check fails at once instead of waiting for a
     * reader; no O_TRUNC: a file is emptied only once it is known to be a regular file */
    int fd =
        open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : 0), 0666);
    if (fd < 0)
        return halox__error(HALOX_ERR_IO, "cannot write %s '%s': %s", what, path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        return halox__error(HALOX_ERR_IO, "cannot write %s '%s' (fstat: %s)", what, path,
                            strerror(err));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return halox__not_regular(HALOX_ERR_INVALID_ARG, path, what, halox__file_kind(sb.st_mode));
    }
    int flags = fcntl(fd, F_GETFL);
    const char *fail = NULL;
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
        fail = "fcntl";
    else if (!append && ftruncate(fd, 0) != 0)
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

halox_status_t halox__temp_next_to(const char *target, char **tmp_p, int *fd_p)
{
    *tmp_p = NULL;
    *fd_p = -1;
    size_t len = strlen(target);
    char *tmp = malloc(len + 16);
    if (!tmp)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    snprintf(tmp, len + 16, "%s.tmp.XXXXXX", target);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        errno = e;
        return HALOX_ERR_IO;
    }
    *tmp_p = tmp;
    *fd_p = fd;
    return HALOX_OK;
}

halox_status_t halox__rename_check(const char *target, const char *what)
{
    struct stat sb;
    if (lstat(target, &sb) != 0 || S_ISREG(sb.st_mode))
        return HALOX_OK;
    return halox__error(HALOX_ERR_WRITE,
                        "%s '%s' became %s while it was written: it was left as it is (nothing "
                        "is renamed over a file that is not a regular file)",
                        what, target, halox__file_kind(sb.st_mode));
}
