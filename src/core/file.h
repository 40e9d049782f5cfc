/* Internal helpers of the output files (file.c), for the writers inside the library. */
#ifndef HALOX_CORE_FILE_H
#define HALOX_CORE_FILE_H

#include <sys/types.h>

#include "halox/file.h"

/* What a file of this mode is, for messages: "a directory", "a character device", ... */
const char *halox__file_kind(mode_t mode);

/* The file an atomic writer replaces for `path` (after halox_output_check()): path itself, or
 * the file that a symbolic link leads to, so that the rename keeps the link. *target_p is
 * malloc'ed (NULL after an error). */
halox_status_t halox__output_target(const char *path, const char *what, char **target_p);

/* A new temporary file next to `target` ("<target>.tmp.XXXXXX", mode 0600) for an atomic
 * writer: its descriptor in *fd_p and its name in *tmp_p (malloc'ed; NULL after an error).
 * HALOX_ERR_NO_MEMORY with a message; HALOX_ERR_IO with errno set and no message when the file
 * cannot be made (the caller says what it was for). */
halox_status_t halox__temp_next_to(const char *target, char **tmp_p, int *fd_p);

/* Just before an atomic writer renames its temporary file over `target`: HALOX_OK when target
 * is missing or a regular file, else HALOX_ERR_WRITE naming what it became (nothing is
 * renamed over a device, a FIFO, a directory or a socket). */
halox_status_t halox__rename_check(const char *target, const char *what);

#endif
