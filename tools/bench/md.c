/* md: full MD steps of the water-density preset through the public engine API (mdrun.c):
 * ms/step, steps/s, ns/day (2 fs per step, as halox-md reports), and the halo's share of the
 * step. */
#include "bench.h"

static int report(const bench_md_case_t *c, const halox_md_result_t *res)
{
    const bench_opts_t *o = c->o;
    const halox_md_summary_t *s = &res->summary;
    const int gpu = halox_md_config_device(&c->cfg) == HALOX_MD_DEVICE_GPU;
    const double per = s->steps > 0 ? 1e3 / (double)s->steps : 0;
    const double halo =
        (s->timer_seconds[HALOX_MD_T_COORDS] + s->timer_seconds[HALOX_MD_T_FORCES]) * per;
    const int share_known = s->graph_steps == 0 && s->ms_per_step > 0;
    const int ok = bench_md_sane(res, c->natoms, o->steps);
    char grid[32], share[16] = "-";
    snprintf(grid, sizeof grid, "%dx%dx%d", s->grid.n[0], s->grid.n[1], s->grid.n[2]);
    if (share_known)
        snprintf(share, sizeof share, "%.1f", 100.0 * halo / s->ms_per_step);
    double tmean;
    char temp[16] = "-";
    if (halox_md_result_mean_temp(res, &tmean) > 0)
        snprintf(temp, sizeof temp, "%.3f", tmean);
    printf("%-22s %9lld %5d %-6s %-6s %-5s %6lld %10.4f %10.1f %9.2f %7s %7s %-6s\n", c->label,
           c->natoms, s->nranks, grid, gpu ? "gpu" : "cpu", s->graph_steps > 0 ? "yes" : "no",
           s->steps, s->ms_per_step, s->steps_per_second, s->ns_per_day, share, temp,
           ok ? "ok" : "WRONG");
    fflush(stdout);
    bench_record_t r;
    bench_md_record_start(&r, c, res);
    rec_bool(&r, "graph", s->graph_steps > 0); /* whether graphs ran, not what was asked */
    rec_int(&r, "graph_steps", s->graph_steps);
    rec_int(&r, "graph_launches", s->graph_launches);
    rec_int(&r, "graph_captures", s->graph_captures);
    rec_int(&r, "graph_kept", s->graph_kept);
    rec_int(&r, "inline_steps", s->inline_steps);
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
    rec_int(&r, "device_rebuilds", s->device_rebuilds); /* without the host */
    /* steps on lists an atom had outgrown (pairs may have been missed); -1: not counted (CPU) */
    rec_int(&r, "stale_list_steps", s->stale_steps);
    /* the rebuilds' parts, ms per rebuild (mean of ranks) */
    static const char *const parts[HALOX_MD_R_COUNT] = {
        "rebuild_ms.drain", "rebuild_ms.to_host", "rebuild_ms.migration", "rebuild_ms.plan",
        "rebuild_ms.bind",  "rebuild_ms.lists",   "rebuild_ms.graph"};
    for (int k = 0; k < HALOX_MD_R_COUNT; k++)
        rec_num(&r, parts[k],
                s->rebuilds > 0 ? 1e3 * s->rebuild_seconds[k] / (double)s->rebuilds : 0.0);
    /* across the parts, per rebuild: collectives and host waits for the GPU (drain included) */
    const double rb = s->rebuilds > 0 ? 1.0 / (double)s->rebuilds : 0.0;
    rec_num(&r, "rebuild_budget.collectives", s->rebuild_collectives * rb);
    rec_num(&r, "rebuild_budget.collective_ms", 1e3 * s->rebuild_collective_seconds * rb);
    rec_num(&r, "rebuild_budget.gpu_waits", s->rebuild_waits * rb);
    rec_num(&r, "rebuild_budget.gpu_wait_ms", 1e3 * s->rebuild_wait_seconds * rb);
    rec_num(&r, "halo_atoms", s->halo_atoms);
    rec_int(&r, "halo_bytes", s->halo_bytes);
    rec_num(&r, "setup_s", s->setup_seconds);
    rec_num(&r, "loop_s", s->loop_seconds);
    rec_bool(&r, "checked", ok);
    rec_str(&r, "check", "every atom and step, finite energies and pressure");
    return rec_write(&r, o) || !ok ? BENCH_FAILED : BENCH_OK;
}

int bench_cmd_md(const bench_opts_t *o)
{
    halox_md_config_t p; /* every rank alike: a refusal stops them all */
    if (bench_md_preset(o, &p))
        return BENCH_USAGE;
    if (bench_world_rank() == 0) {
        printf("halox-bench md: preset water-density%s%s, %lld steps after %d of equilibration "
               "(untimed), %d process(es), %d GPU(s) visible; ns/day at 2 fs per step; T: mean "
               "temperature of the timed steps (every 100 and the last; the target: %g)\n",
               o->engine_options[0] ? " with " : "", o->engine_options, o->steps, p.equilibrate,
               bench_world_size(), bench_gpu_count(), p.temp);
        printf("%-22s %9s %5s %-6s %-6s %-5s %6s %10s %10s %9s %7s %7s %-6s\n", "transport",
               "atoms", "ranks", "grid", "device", "graph", "steps", "ms/step", "steps/s", "ns/day",
               "halo%", "T", "check");
    }
    return bench_md_all(o, 0, report);
}
