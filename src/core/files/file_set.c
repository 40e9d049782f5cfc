/* The files of a run checked together before any is opened (halox_files_check, file.h): each
 * output can be written, and no file that is written is also another output or an input. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/files/file.h"

/* Which file a path names: an existing file by its device and inode (whatever links or
 * spellings lead to it), a missing one by its folder's device and inode and its name. */
typedef struct halox__file_id {
    int kind; /* 1 exists, 2 missing in an existing folder, 0 neither (compared as text) */
    dev_t dev;
    ino_t ino;
    const char *name;
} halox__file_id_t;

static void halox__file_id(const char *path, halox__file_id_t *id)
{
    memset(id, 0, sizeof id[0]);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        id->kind = 1;
        id->dev = sb.st_dev;
        id->ino = sb.st_ino;
        return;
    }
    char *dir = halox__path_split(path, &id->name);
    if (dir && id->name[0] && stat(dir, &sb) == 0) {
        id->kind = 2;
        id->dev = sb.st_dev;
        id->ino = sb.st_ino;
    }
    free(dir);
}

int halox_file_same(const char *a, const char *b)
{
    if (!a || !b)
        return 0;
    halox__file_id_t ia, ib;
    halox__file_id(a, &ia);
    halox__file_id(b, &ib);
    if (ia.kind != ib.kind)
        return 0;
    if (ia.kind == 0)
        return strcmp(a, b) == 0;
    return ia.dev == ib.dev && ia.ino == ib.ino && (ia.kind == 1 || !strcmp(ia.name, ib.name));
}

/* An output that passed halox_output_check() can be written: an existing file written in place
 * by its permission, a new file or an atomic replacement by its folder's. */
static halox_status_t halox__output_writable(const halox_file_t *f)
{
    struct stat sb;
    const int exists = stat(f->path, &sb) == 0;
    if (exists && f->use == HALOX_FILE_WRITE)
        return access(f->path, W_OK) == 0 ? HALOX_OK
                                          : halox__error(HALOX_ERR_IO, "cannot write %s '%s': %s",
                                                         f->what, f->path, strerror(errno));
    char *target = NULL; /* a link's target is what an atomic writer replaces */
    halox_status_t st = halox__output_target(f->path, f->what, &target);
    if (st != HALOX_OK)
        return st;
    const char *name;
    char *dir = halox__path_split(target, &name);
    if (!dir)
        st = halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    else if (!name[0])
        st = halox__error(HALOX_ERR_IO,
                          "cannot write %s '%s': the path ends in '/': give a file name", f->what,
                          f->path);
    else if (stat(dir, &sb) != 0)
        st = halox__error(HALOX_ERR_IO, "cannot write %s '%s': its folder '%s' %s", f->what,
                          f->path, dir,
                          errno == ENOENT ? "does not exist: create it first" : strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        st = halox__error(HALOX_ERR_IO, "cannot write %s '%s': '%s' is not a folder", f->what,
                          f->path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        st = halox__error(HALOX_ERR_IO,
                          "cannot write %s '%s': no new file can be made in its folder '%s': %s",
                          f->what, f->path, dir, strerror(errno));
    free(dir);
    free(target);
    return st;
}

static int halox__writes(halox_file_use_t use)
{
    return use == HALOX_FILE_WRITE || use == HALOX_FILE_REPLACE;
}

halox_status_t halox_files_check(const halox_file_t *files, int n)
{
    for (int i = 0; i < n; i++) {
        const halox_file_t *f = &files[i];
        if (!f->path || !halox__writes(f->use))
            continue;
        halox_status_t st = halox_output_check(f->path, f->what);
        if (st == HALOX_OK)
            st = halox__output_writable(f);
        if (st != HALOX_OK)
            return st;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            const halox_file_t *a = &files[i], *b = &files[j];
            if (!a->path || !b->path || !(halox__writes(a->use) || halox__writes(b->use)))
                continue;
            /* an input read whole before the run, replaced atomically by the run's output */
            const int replaced =
                (a->use == HALOX_FILE_READ_REPLACED && b->use == HALOX_FILE_REPLACE) ||
                (b->use == HALOX_FILE_READ_REPLACED && a->use == HALOX_FILE_REPLACE);
            if (replaced || !halox_file_same(a->path, b->path))
                continue;
            if (halox__writes(a->use) && halox__writes(b->use))
                return halox__error(HALOX_ERR_INVALID_ARG,
                                    "%s '%s' and %s '%s' are the same file: give each output a "
                                    "path of its own",
                                    a->what, a->path, b->what, b->path);
            const halox_file_t *out = halox__writes(a->use) ? a : b, *in = out == a ? b : a;
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "%s '%s' is the same file as %s '%s': writing it would overwrite "
                                "that input; give %s another path",
                                out->what, out->path, in->what, in->path, out->what);
        }
    return HALOX_OK;
}
