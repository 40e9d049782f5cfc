/** @file
 * Files. Every file that the MD engine and the tools write (CSV, JSON, XYZ, checkpoints,
 * benchmark records) is opened, flushed and closed through these, so that a path that is not a
 * regular file is refused before anything is written and every failed write is reported; the
 * files a run reads are opened through halox_input_open(), which never waits on a FIFO.
 *
 * Symbolic links: a link to a regular file is followed (the file it points to is written; an
 * atomic writer replaces that file and keeps the link). A link that points nowhere is refused. */
#ifndef HALOX_FILE_H
#define HALOX_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Whether `path` may be written as an output file: it does not exist yet (it will be created),
 *  or it is a regular file (through symbolic links too). A directory, a device (/dev/full,
 *  /dev/null, a disk), a FIFO, a socket or a dangling link is refused with
 *  HALOX_ERR_INVALID_ARG and a message that names `what` ("the CSV file"), the path and what
 *  it is. Creates nothing. */
halox_status_t halox_output_check(const char *path, const char *what);

/** Open `path` for writing after halox_output_check(): emptied first (append 0) or appended to
 *  (append 1), created when missing. The opened file is checked again, so a path replaced by a
 *  special file in between is refused as well, and a FIFO never blocks the call. HALOX_ERR_IO
 *  when it cannot be opened (a missing folder, no permission), with the reason. */
halox_status_t halox_output_open(const char *path, const char *what, int append, FILE **fp_p);

/** How a run uses one of its files (halox_files_check()). */
typedef enum halox_file_use {
    HALOX_FILE_READ,          /**< an input, only read */
    HALOX_FILE_READ_REPLACED, /**< an input read whole at the start, which an atomic writer of
                                   the same run may replace (a restart's checkpoint) */
    HALOX_FILE_WRITE,         /**< an output written in place: emptied or appended to */
    HALOX_FILE_REPLACE,       /**< an output replaced atomically (a new file renamed over it) */
} halox_file_use_t;

/** One file of a run: its path (NULL: not given, skipped), what messages call it ("the CSV
 *  file") and its use. */
typedef struct halox_file {
    const char *path;     /**< the file's path; NULL: not given, skipped */
    const char *what;     /**< what messages call it ("the CSV file") */
    halox_file_use_t use; /**< how the run uses it */
} halox_file_t;

/** Check every file of a run before any of them is opened, so that a refusal leaves every file
 *  as it was: each output with halox_output_check() and whether it can be written (an existing
 *  file written in place: its permission; a new or atomically replaced one: its folder exists
 *  and takes new files), HALOX_ERR_IO with the reason when not; and no two files that name the
 *  same file where one of them is written (the same path, "./x" and "x", symbolic links, hard
 *  links: the same device and inode where the file exists, the same folder and name where it
 *  does not), HALOX_ERR_INVALID_ARG naming both. The one pair allowed is an input read whole
 *  (HALOX_FILE_READ_REPLACED) and an atomic output. Inputs are not checked otherwise (their
 *  readers do). Creates nothing. */
halox_status_t halox_files_check(const halox_file_t *files, int n);

/** 1 when paths a and b name the same file (as halox_files_check() compares them), else 0. */
int halox_file_same(const char *a, const char *b);

/** Open an input file for reading, only when it is a regular file: checked before the open and
 *  again on the opened descriptor (a path replaced in between is refused too), and the open
 *  never waits on a FIFO. Messages: "<what> '<path>' is a FIFO (named pipe), not a regular
 *  file: <give>", "cannot open <what> '<path>': <reason>", HALOX_ERR_IO; what may be NULL (the
 *  path alone). */
halox_status_t halox_input_open(const char *path, const char *what, const char *give, FILE **fp_p);

/** Flags of halox_input_open_flags(). */
enum {
    HALOX_INPUT_NOFOLLOW = 1, /**< a symbolic link at the path is refused as not a regular file
                                   (a file the caller wrote itself, never reached through a link) */
    HALOX_INPUT_OPTIONAL = 2, /**< a file that cannot be opened (missing, not readable) is no
                                   error: HALOX_OK with *fp_p NULL (a cache not written yet) */
};

/** halox_input_open() with flags (HALOX_INPUT_*, or-ed; 0: halox_input_open() itself). A path
 *  that is there but not a regular file is refused with either flag, naming what it is. */
halox_status_t halox_input_open_flags(const char *path, const char *what, const char *give,
                                      int flags, FILE **fp_p);

/** Flush fp and check its error flag: HALOX_ERR_WRITE, naming `what` and `path`, when this or
 *  any earlier write to fp failed (disk full, file size limit, I/O error). */
halox_status_t halox_output_flush(FILE *fp, const char *path, const char *what);

/** halox_output_flush(), then close fp (closed in every case; NULL is fine): HALOX_ERR_WRITE when
 *  a write, the flush or the close failed. */
halox_status_t halox_output_close(FILE *fp, const char *path, const char *what);

/** A file replaced atomically, from halox_replace_begin() to halox_replace_commit(): a temporary
 *  file is written next to the target, synced, and renamed over it, so that a crash at any point
 *  leaves the previous file or the new one, never a torn one. Every step goes through one
 *  descriptor of the target's folder (a folder renamed or swapped for a link meanwhile cannot
 *  redirect the rename), and the temporary file ("<name>.tmp.XXXXXX") is created with O_EXCL |
 *  O_NOFOLLOW (a link or a FIFO planted under its name is never opened). One handle is used by
 *  one thread; handles are independent. */
typedef struct halox_replace halox_replace_t;

/** Flags of halox_replace_begin(). */
enum {
    HALOX_REPLACE_FOLLOW = 1, /**< a symbolic link at the path is followed: its target is
                                   replaced and the link kept; without it the path itself is
                                   replaced, and a link or anything but a regular file found there
                                   at the commit is left as it is (the commit fails) */
    HALOX_REPLACE_SHARED = 2, /**< the new file may be read by everyone (mode 0644); without it
                                   by its owner alone (0600) */
};

/** Start replacing `path` (after halox_output_check() where the caller wants a missing folder or
 *  a special file refused by name first); `what` names the file in messages ("the checkpoint").
 *  Nothing at `path` changes before halox_replace_commit(). HALOX_ERR_WRITE naming `what`, the
 *  path and the reason, and saying that the previous file is unchanged, when the temporary file
 *  cannot be made; *r_p is then NULL and nothing is left to clean up. */
halox_status_t halox_replace_begin(const char *path, const char *what, int flags,
                                   halox_replace_t **r_p);

/** Append n bytes to the temporary file. The first failure is kept (the later writes do nothing)
 *  and reported by halox_replace_commit(). */
void halox_replace_write(halox_replace_t *r, const void *data, size_t n);

/** Sync and close the temporary file, check that the target is still missing or a regular file,
 *  rename the temporary file over it and sync the folder. On any failure the temporary file is
 *  removed and HALOX_ERR_WRITE names `what`, the path, the step that failed and why (the previous
 *  file is unchanged). Frees r in every case. */
halox_status_t halox_replace_commit(halox_replace_t *r);

#ifdef __cplusplus
}
#endif
#endif
