/* overlap: how much of the halo exchange an MD step hides behind its force work. A short run of
 * the water-density preset (mdrun.c) with the engine's overlap probe (cfg.overlap_probe,
 * md/engine/overlap.c), which times after the last step the local forces alone, the halo exchange
 * alone and both as the step runs them: overlap % = 100 (t_halo + t_local - t_both) / t_halo. */
#include <math.h>

#include "bench.h"

static int positive(double x) { return isfinite(x) && x > 0; }

static int report(const bench_md_case_t *c, const halox_md_result_t *res)
{
    const bench_opts_t *o = c->o;
    const halox_md_summary_t *s = &res->summary;
    const int gpu = halox_md_config_device(&c->cfg) == HALOX_MD_DEVICE_GPU;
    const double loc = 1e3 * s->overlap_local_ms, halo = 1e3 * s->overlap_halo_ms,
                 both = 1e3 * s->overlap_both_ms, pct = s->overlap_percent;
    const int measured = s->overlap_reps == c->overlap_probe && positive(loc) && positive(halo) &&
                         positive(both) && isfinite(pct);
    const int ok = bench_md_sane(res, c->natoms, o->steps) && measured;
    char grid[32];
    snprintf(grid, sizeof grid, "%dx%dx%d", s->grid.n[0], s->grid.n[1], s->grid.n[2]);
    double tmean;
    char temp[16] = "-";
    if (halox_md_result_mean_temp(res, &tmean) > 0)
        snprintf(temp, sizeof temp, "%.3f", tmean);
    printf("%-22s %9lld %5d %-6s %-6s %11.1f %11.1f %11.1f %9.1f %7s %-6s\n", c->label, c->natoms,
           s->nranks, grid, gpu ? "gpu" : "cpu", loc, halo, both, pct, temp, ok ? "ok" : "WRONG");
    fflush(stdout);
    bench_record_t r;
    bench_md_record_start(&r, c, res);
    rec_int(&r, "repeats", s->overlap_reps);
    rec_num(&r, "t_local_us", loc);
    rec_num(&r, "t_halo_us", halo);
    rec_num(&r, "t_both_us", both);
    rec_num(&r, "overlap_percent", pct);
    rec_num(&r, "ms_per_step", s->ms_per_step);
    rec_num(&r, "halo_atoms", s->halo_atoms);
    rec_str(&r, "timing",
            gpu ? "CUDA events on the transport's stream, median of the slowest rank"
                : "host clock, median of the slowest rank");
    rec_bool(&r, "checked", ok);
    rec_str(&r, "check", "every atom and step, finite energies and pressure; positive times");
    return rec_write(&r, o) || !ok ? BENCH_FAILED : BENCH_OK;
}

int bench_cmd_overlap(const bench_opts_t *o)
{
    if (bench_world_rank() == 0) {
        printf("halox-bench overlap: preset water-density%s%s, %lld steps, then %d repetitions "
               "of local forces alone, halo alone, both; %d process(es), %d GPU(s) visible\n",
               o->engine_options[0] ? " with " : "", o->engine_options, o->steps, o->repeats,
               bench_world_size(), bench_gpu_count());
        printf("times in microseconds (median of the slowest rank); overlap %% = 100 (t_halo + "
               "t_local - t_both) / t_halo; the CPU engine does not overlap (about 0 %%)\n");
        printf("T: mean temperature of the timed steps (thermo every 100 and the last, after the "
               "preset's untimed equilibration)\n");
        printf("%-22s %9s %5s %-6s %-6s %11s %11s %11s %9s %7s %-6s\n", "transport", "atoms",
               "ranks", "grid", "device", "t_local", "t_halo", "t_both", "overlap%", "T", "check");
    }
    return bench_md_all(o, o->repeats, report);
}
