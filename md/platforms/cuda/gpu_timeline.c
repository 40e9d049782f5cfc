/* HALOX_MD_TIMELINE (a diagnosis, gpu_internal.h): the step kernels stamp the GPU's global clock
 * (md_cluster.h, md_timeline_t) and one list life's stamps are written per rank to
 * <prefix>.rank<R>.tsv, for scripts/plot/timeline.py to line the ranks up. Without Nsight Systems
 * this is how a step's latency budget across ranks sharing a GPU is seen: ncu replays one kernel
 * at a time, which is not what ranks sharing a GPU do. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/file.h"
#include "halox/status.h"
#include "platforms/cuda/gpu_internal.h"

/* the life written: the 3rd list's (the set-up's and the equilibration's builds before it), or
 * the last one when the run has fewer builds */
enum { MD_TL_WRITE_AT_BUILD = 4 };

static const char *const md_tl_names[MD_TL_KINDS] = {"home_gather", "halo_gather", "local",
                                                     "nonlocal",    "halo_forces", "kick"};

halox_status_t md__gpu_timeline_open(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    const char *p = halox_env_string("HALOX_MD_TIMELINE");
    if (!p)
        return HALOX_OK;
    if (strlen(p) >= sizeof g->tl_path)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "HALOX_MD_TIMELINE is longer than %zu characters: give a shorter "
                               "prefix for the timeline files",
                               sizeof g->tl_path - 1);
    cudaError_t e = md__clusters_timeline(&g->cl);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return halox_set_error(
            HALOX_ERR_NO_MEMORY,
            "rank %d: the kernel timeline of HALOX_MD_TIMELINE (%zu bytes) could "
            "not be set up on the GPU (%s): unset HALOX_MD_TIMELINE",
            md->rank, sizeof(md_timeline_t), cudaGetErrorString(e));
    }
    strcpy(g->tl_path, p);
    return HALOX_OK;
}

/* The stamps since the last build into the rank's file, once; a file that cannot be written is
 * said in a notice (a diagnosis does not stop the run). */
static void md__gpu_timeline_write(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    g->tl_written = 1;
    md_timeline_t *t = malloc(sizeof *t);
    if (!t) {
        md__notice(md, "HALOX_MD_TIMELINE: no memory for the timeline's %zu bytes", sizeof *t);
        return;
    }
    char path[sizeof g->tl_path + 32];
    snprintf(path, sizeof path, "%s.rank%d.tsv", g->tl_path, md->rank);
    cudaError_t e = md__clusters_timeline_read(&g->cl, t);
    FILE *f = NULL; /* only a regular file (a FIFO is not waited on) */
    if (e == cudaSuccess && halox_output_open(path, "the timeline", 0, &f) != HALOX_OK)
        f = NULL;
    if (!f) {
        md__notice(md, "HALOX_MD_TIMELINE: %s not written (%s)", path,
                   e != cudaSuccess ? cudaGetErrorString(e) : halox_last_error());
        (void)cudaGetLastError();
        free(t);
        return;
    }
    fprintf(f,
            "# halox kernel timeline: rank %d of %d, list life %d (builds %d), step %lld, "
            "%d home / %d total atoms; times in ns on the GPU's global clock\n",
            md->rank, md->nranks, g->tl_builds - 1, g->tl_builds, md->step, g->n_home, g->n_total);
    fprintf(f, "# kind\tlaunch\tstart\tend\twait\n");
    for (int k = 0; k < MD_TL_KINDS; k++)
        for (int n = 0; n < MD_TL_LAUNCHES; n++) {
            if (t->start[k][n] == ~0ull || t->end[k][n] == 0)
                continue;
            fprintf(f, "%s\t%d\t%llu\t%llu\t", md_tl_names[k], n, t->start[k][n], t->end[k][n]);
            if (t->wait[k][n] == ~0ull)
                fprintf(f, "-\n");
            else
                fprintf(f, "%llu\n", t->wait[k][n]);
        }
    if (halox_output_close(f, path, "the timeline") != HALOX_OK)
        md__notice(md, "HALOX_MD_TIMELINE: %s", halox_last_error());
    free(t);
}

void md__gpu_timeline_build(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    if (!g->cl.tl || g->tl_written)
        return;
    if (++g->tl_builds == MD_TL_WRITE_AT_BUILD)
        md__gpu_timeline_write(md);
}

void md__gpu_timeline_end(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    if (g && g->cl.tl && !g->tl_written && g->tl_builds > 0) {
        g->tl_builds++;
        md__gpu_timeline_write(md);
    }
}
