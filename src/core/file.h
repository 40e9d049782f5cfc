/* Internal helpers of the files the library reads and writes (file.c, file_atomic.c,
 * file_set.c), for the readers and writers inside the library. */
#ifndef HALOX_CORE_FILE_H
#define HALOX_CORE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "halox/file.h"

/* What a file of this mode is, for messages: "a directory", "a character device", ... */
const char *halox__file_kind(mode_t mode);

/* Open path with flags (O_RDONLY, or O_WRONLY with O_CREAT ...; perm for a new file) only when
 * it is a regular file: refused by a look before the open (a device is not opened at all) and by
 * fstat of the opened descriptor (so a path replaced in between is refused too). The open is
 * non-blocking, so a FIFO never waits for its other end; O_NONBLOCK is cleared before return.
 * Returns the descriptor (close-on-exec); -1 with errno when the open fails; -2 when the file
 * is not a regular file, *mode_p then its mode. */
int halox__open_regular(const char *path, int flags, mode_t perm, mode_t *mode_p);

/* The file an atomic writer replaces for `path` (after halox_output_check()): path itself, or
 * the file that a symbolic link leads to, so that the rename keeps the link. *target_p is
 * malloc'ed (NULL after an error). */
halox_status_t halox__output_target(const char *path, const char *what, char **target_p);

/* The folder part of path ("." when it has none, "/" for the root), malloc'ed (NULL: no
 * memory); *name_p points at the name after the last '/' in path ("" when path ends in '/'). */
char *halox__path_split(const char *path, const char **name_p);

/* An atomic replacement (file_atomic.c): the target's folder is opened once, and the temporary
 * file ("<name>.tmp.XXXXXX", mode 0600, created with O_EXCL | O_NOFOLLOW), the check before the
 * rename, the rename and the clean-up all go through that descriptor, so a folder swapped on
 * the way cannot redirect them and a name planted in advance is never opened. */
typedef struct halox__atomic {
    int dir;          /* the target's folder */
    int fd;           /* the temporary file (-1 once closed) */
    char *target;     /* the file replaced (a link followed) */
    const char *name; /* its name in dir, inside target */
    char *tmp;        /* the temporary file's name in dir */
    const char *step; /* the first step that failed ("write", "fsync", ...), NULL while none */
    int err;          /* its errno */
} halox__atomic_t;

/* Start replacing `path` (after halox_output_check()); follow: a link is followed to its target
 * (kept, its target replaced), else a link at path is left as it is and nothing is renamed.
 * HALOX_ERR_WRITE naming `what` and saying the previous file is unchanged when the temporary
 * file cannot be made; a->fd is then -1 and nothing is left to clean up. */
halox_status_t halox__atomic_begin(halox__atomic_t *a, const char *path, const char *what,
                                   int follow);

/* Append n bytes to the temporary file; the first failure is kept in a (the next writes do
 * nothing) and reported by halox__atomic_commit(). */
void halox__atomic_write(halox__atomic_t *a, const void *data, size_t n);

/* Sync and close the temporary file, check that the target is still missing or a regular file,
 * rename the temporary file over it and sync the folder. On any failure the temporary file is
 * removed and HALOX_ERR_WRITE names `what`, path, the step and its reason (the previous file is
 * unchanged). Frees a in every case. */
halox_status_t halox__atomic_commit(halox__atomic_t *a, const char *path, const char *what);

/* FNV-1a 64 of n bytes, continuing from h (start with HALOX__FNV_INIT). */
#define HALOX__FNV_INIT 0xcbf29ce484222325ull
uint64_t halox__fnv1a64(uint64_t h, const void *data, size_t n);

#endif
