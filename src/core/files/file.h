/* Internal helpers of the files the library reads and writes (file.c, file_atomic.c,
 * file_set.c), for the readers and writers inside the library. */
#ifndef HALOX_CORE_FILE_H
#define HALOX_CORE_FILE_H

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

#endif
