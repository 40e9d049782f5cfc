/* md: full MD steps of the water-density preset through the public engine API: ms/step,
 * steps/s, ns/day (2 fs per step, as halox-md reports), and the halo's share of the step. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct md_case {
    const bench_opts_t *o;
    const char *label;
    long long natoms;
    int nranks;
    halox_md_config_t cfg;
} md_case_t;

static int setup_config(md_case_t *c, const char *base)
{
    const bench_opts_t *o = c->o;
    halox_md_config_t *cfg = &c->cfg;
    halox_md_config_default(cfg);
    if (halox_md_config_preset(cfg, "water-density") != HALOX_OK)
        return bench_bad("%s", halox_last_error());
    cfg->natoms = c->natoms;
    cfg->steps = o->steps;
    cfg->thermo_every = (int)(o->steps < 1000000000 ? o->steps : 1000000000);
    cfg->transport = base;
    cfg->graph = o->graph;
    cfg->device = o->device;
    cfg->timeout_s = o->timeout_s;
    if (o->grid_set)
        cfg->grid = o->grid;
    else
        bench_make_grid(c->nranks, &cfg->grid);
    if (halox_grid_size(&cfg->grid) != c->nranks)
        return bench_bad("--grid %dx%dx%d has %d ranks but %s runs %d", cfg->grid.n[0],
                         cfg->grid.n[1], cfg->grid.n[2], halox_grid_size(&cfg->grid), c->label,
                         c->nranks);
    if (cfg->device == HALOX_MD_DEVICE_GPU && !halox_transport_on_gpu(base))
        return bench_bad("--device gpu runs on a GPU transport (mpi-staged, nccl, nvshmem-*), "
                         "not '%s'",
                         base);
    if (halox_md_config_check(cfg) != HALOX_OK)
        return bench_bad("%s", halox_last_error());
    return 0;
}

/* The run did what was asked: every atom, every step, finite energies. */
static int sane(const halox_md_result_t *res, long long natoms, long long steps)
{
    const halox_md_summary_t *s = &res->summary;
    int ok = s->natoms == natoms && s->steps == steps && res->n_thermo > 0;
    for (int i = 0; i < res->n_thermo; i++)
        ok &= isfinite(res->thermo[i].etotal) && isfinite(res->thermo[i].press);
    return ok;
}

static int report(const md_case_t *c, const halox_md_result_t *res)
{
    const bench_opts_t *o = c->o;
    const halox_md_summary_t *s = &res->summary;
    const int gpu = halox_md_config_device(&c->cfg) == HALOX_MD_DEVICE_GPU;
    const double per = s->steps > 0 ? 1e3 / (double)s->steps : 0;
    const double halo =
        (s->timer_seconds[HALOX_MD_T_COORDS] + s->timer_seconds[HALOX_MD_T_FORCES]) * per;
    const int share_known = s->graph_steps == 0 && s->ms_per_step > 0;
    const int ok = sane(res, c->natoms, o->steps);
    char grid[32], share[16] = "-";
    snprintf(grid, sizeof grid, "%dx%dx%d", s->grid.n[0], s->grid.n[1], s->grid.n[2]);
    if (share_known)
        snprintf(share, sizeof share, "%.1f", 100.0 * halo / s->ms_per_step);
    printf("%-22s %9lld %5d %-6s %-6s %-5s %6lld %10.4f %10.1f %9.2f %7s %-6s\n", c->label,
           c->natoms, s->nranks, grid, gpu ? "gpu" : "cpu", o->graph ? "yes" : "no", s->steps,
           s->ms_per_step, s->steps_per_second, s->ns_per_day, share, ok ? "ok" : "WRONG");
    fflush(stdout);
    bench_record_t r;
    rec_init(&r);
    rec_common(&r, o, c->label, s->nranks, &s->grid);
    rec_str(&r, "preset", "water-density");
    rec_int(&r, "atoms", s->natoms);
    rec_str(&r, "device", gpu ? "gpu" : "cpu");
    rec_bool(&r, "graph", o->graph);
    rec_int(&r, "graph_steps", s->graph_steps);
    rec_str(&r, "real", s->real == HALOX_FLOAT ? "float" : "double");
    rec_int(&r, "steps", s->steps);
    rec_num(&r, "ms_per_step", s->ms_per_step);
    rec_num(&r, "steps_per_second", s->steps_per_second);
    rec_num(&r, "ns_per_day", s->ns_per_day);
    rec_num(&r, "fs_per_step", s->fs_per_step);
    /* with graphs the parts cover only the steps outside them */
    if (share_known) {
        rec_num(&r, "halo_ms_per_step", halo);
        rec_num(&r, "halo_share", halo / s->ms_per_step);
    } else {
        rec_null(&r, "halo_ms_per_step");
        rec_null(&r, "halo_share");
    }
    rec_num(&r, "pair_ms_per_step", s->timer_seconds[HALOX_MD_T_PAIR] * per);
    rec_num(&r, "neighbour_ms_per_step", s->timer_seconds[HALOX_MD_T_NEIGHBOUR] * per);
    rec_num(&r, "migration_plan_ms_per_step", s->timer_seconds[HALOX_MD_T_MIGRATE] * per);
    rec_int(&r, "rebuilds", s->rebuilds);
    rec_num(&r, "halo_atoms", s->halo_atoms);
    rec_int(&r, "halo_bytes", s->halo_bytes);
    rec_num(&r, "setup_s", s->setup_seconds);
    rec_num(&r, "loop_s", s->loop_seconds);
    rec_bool(&r, "checked", ok);
    rec_str(&r, "check", "every atom and step, finite energies and pressure");
    return rec_write(&r, o) || !ok ? BENCH_FAILED : BENCH_OK;
}

static int run_mpi(md_case_t *c, halox_md_result_t *res)
{
    bench_rank_t who = {bench_world_rank(), bench_world_size(), NULL};
    halox_comm_t *comm = NULL;
    halox_md_hooks_t hooks;
    memset(&hooks, 0, sizeof hooks);
    halox_status_t st = bench_comm_create(&who, c->label, c->cfg.real, 3, c->o->timeout_s, &comm);
    if (st == HALOX_ERR_UNAVAILABLE) {
        if (who.rank == 0)
            printf("%-22s refused: %s\n", c->label, halox_last_error());
        return -1;
    }
    if (st == HALOX_OK)
        st = halox_md_rank_run(&c->cfg, comm, NULL, &hooks, res);
    else
        snprintf(res->error, sizeof res->error, "rank %d: %s", who.rank, halox_last_error());
    if (st != HALOX_OK && (st != HALOX_ERR_ABORTED || who.rank == 0))
        bench_rank_fail(&who, res->error);
    halox_comm_destroy(comm);
    return st == HALOX_OK ? 0 : 1;
}

static int run_case(const bench_opts_t *o, const char *label, long long natoms)
{
    md_case_t c = {.o = o, .label = label, .natoms = natoms};
    char base[64];
    bench_base_name(label, base, sizeof base);
    if (!bench_transport_ranks(o, label, &c.nranks))
        return BENCH_OK;
    if (setup_config(&c, base))
        return BENCH_USAGE;
    halox_md_result_t res;
    memset(&res, 0, sizeof res);
    int rc = 0;
    bench_variant_env(label, 1);
    if (!strcmp(base, "threads")) {
        halox_md_hooks_t hooks;
        memset(&hooks, 0, sizeof hooks);
        if (halox_md_threads_run(&c.cfg, &hooks, &res) != HALOX_OK) {
            fprintf(stderr, "halox-bench: %s: %s\n", label, res.error);
            rc = 1;
        }
    } else {
        rc = run_mpi(&c, &res);
    }
    bench_variant_env(label, 0);
    if (rc == 0 && bench_world_rank() == 0)
        rc = report(&c, &res);
    halox_md_result_free(&res);
    return rc < 0 ? BENCH_OK : rc ? BENCH_FAILED : BENCH_OK;
}

int bench_cmd_md(const bench_opts_t *o)
{
    if (bench_world_rank() == 0) {
        printf("halox-bench md: preset water-density, %lld steps, %d process(es), %d GPU(s) "
               "visible; ns/day at 2 fs per step\n",
               o->steps, bench_world_size(), bench_gpu_count());
        printf("%-22s %9s %5s %-6s %-6s %-5s %6s %10s %10s %9s %7s %-6s\n", "transport", "atoms",
               "ranks", "grid", "device", "graph", "steps", "ms/step", "steps/s", "ns/day", "halo%",
               "check");
    }
    int rc = BENCH_OK;
    for (int i = 0; i < o->n_atoms; i++)
        for (int t = 0; t < o->n_transports; t++) {
            int r = run_case(o, o->transports[t], o->atoms[i]);
            if (r == BENCH_USAGE)
                return r;
            if (r != BENCH_OK)
                rc = r;
        }
    return rc;
}
