/* halox-md's report on stdout (md_report.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include "halox/features.h"
#include "md_report.h"
#include "tool_common.h"

void md_clear_progress(md_printer_t *p)
{
    if (p->progress_shown) {
        printf("\r\033[K");
        p->progress_shown = 0;
    }
}

void md_on_thermo(void *user, const halox_md_thermo_t *r)
{
    md_printer_t *p = user;
    if (p->quiet || p->silent)
        return;
    md_clear_progress(p);
    if (!p->header_done) {
        printf("%10s %14s %14s %14s %14s %14s\n", "Step", "Temp", "E_pair", "KE", "TotEng",
               "Press");
        p->header_done = 1;
    }
    printf("%10lld %14.8g %14.8g %14.8g %14.8g %14.8g\n", r->step, r->temp, r->pe, r->ke, r->etotal,
           r->press);
    fflush(stdout);
}

void md_on_progress(void *user, long long step, long long last, double seconds)
{
    md_printer_t *p = user;
    if (p->first_step < 0)
        p->first_step = step - 1;
    if (!p->tty || p->quiet || p->silent || !p->progress || seconds < 1.0 ||
        seconds - p->last_progress < 0.5)
        return;
    p->last_progress = seconds;
    double rate = (double)(step - p->first_step) / seconds;
    double eta = rate > 0 ? (double)(last - step) / rate : 0;
    printf("\r\033[K  step %lld / %lld (%.0f%%), %.1f steps/s, %.0f s left", step, last,
           last > 0 ? 100.0 * (double)step / (double)last : 100.0, rate, eta);
    p->progress_shown = 1;
    fflush(stdout);
}

void md_on_notice(void *user, const char *text)
{
    md_printer_t *p = user;
    md_clear_progress(p);
    printf("halox-md: %s\n", text);
    fflush(stdout);
}

/* --read: the file, the frame read and where the velocities come from */
static void print_read(const halox_md_setup_t *s)
{
    const halox_md_config_t *c = &s->cfg;
    const halox_md_read_info_t *r = &s->read;
    printf("system: read from %s (%s), frame %lld%s of %lld (from 0%s)", c->read_path,
           r->format == HALOX_MD_TRAJ_LAMMPS ? "LAMMPS dump" : "XYZ", r->frame,
           r->frame == r->nframes - 1 && r->nframes > 1 ? " = the last" : "", r->nframes,
           halox_md_setup_given(s, "--read-frame") ? "" : "; --read-frame N reads another");
    if (r->step >= 0)
        printf(", step %lld", r->step);
    printf(", %lld atoms\n", r->natoms);
    if (halox_md_setup_given(s, "--box") && r->has_box)
        printf("box: the file's, %g x %g x %g (--box is not used)\n", r->box[0], r->box[1],
               r->box[2]);
    if (r->velocities && !c->read_new_velocities)
        printf("velocities: the file's%s\n",
               c->ensemble == HALOX_MD_NVT ? " (--temp is the NVT target only)"
               : halox_md_setup_given(s, "--temp")
                   ? " (--temp is not used: add --new-velocities to draw them at --temp)"
                   : " (--new-velocities draws them at --temp instead)");
    else
        printf("velocities: drawn at T %g (%s)\n", c->temp,
               r->velocities ? "--new-velocities: the file's are not used" : "the frame has none");
}

void md_print_banner(const md_printer_t *p, int nranks)
{
    const halox_md_setup_t *s = p->s;
    const halox_md_config_t *c = &s->cfg;
    if (p->silent)
        return;
    /* auto runs the CPU engine for want of a GPU (a build with the GPU engine): said, with the
     * options that choose the engine, so that a long CPU run does not pass for a GPU one */
    if (s->gpu_absent)
        fprintf(stderr, "halox-md: no GPU is visible, so --device auto runs the CPU engine "
                        "(--device cpu or HALOX_DEVICE=cpu chooses it without this note; "
                        "--device gpu refuses to run without a GPU)\n");
    printf("halox-md %s", HALOX_VERSION_STRING);
    if (c->preset)
        printf(" (preset %s)", c->preset);
    printf("\nbuild: %s\n", tool_build_line());
    if (c->restart_path) {
        printf("system: restart from %s\n", c->restart_path);
    } else if (c->source == HALOX_MD_FCC) {
        printf("system: fcc lattice, density %g, %dx%dx%d unit cells = %lld atoms\n", c->density,
               c->cells[0], c->cells[1], c->cells[2],
               4LL * c->cells[0] * c->cells[1] * c->cells[2]);
    } else if (c->source == HALOX_MD_RANDOM) {
        printf("system: %lld atoms at random (no overlaps), density %g\n", c->natoms, c->density);
    } else {
        print_read(s);
    }
    if (!c->restart_path) {
        printf("potential: LJ 12-6, cut-off %g (%s, %s), skin %g, rebuild every %d steps%s\n",
               c->cutoff, c->shift ? "shifted" : "unshifted",
               c->tail ? "tail corrections" : "no tail corrections", c->skin, c->rebuild_every,
               c->rebuild_check ? " or when an atom moved more than skin/2" : "");
        const halox_md_verlet_t *vb = &s->verlet;
        if (vb->tolerance > 0)
            printf("Verlet buffer: %s, estimated drift by missed pairs %.3g %s the tolerance "
                   "%g (energy per atom per unit time; ballistic at T %g, density %g; "
                   "cost model: a rebuild = %g steps)\n",
                   vb->chose_skin && vb->chose_rebuild ? "skin and rebuild interval chosen"
                   : vb->chose_skin                    ? "skin chosen (--rebuild-every given)"
                   : vb->chose_rebuild                 ? "rebuild interval chosen (--skin given)"
                                       : "--skin and --rebuild-every given, nothing chosen",
                   vb->drift, vb->drift <= vb->tolerance ? "<=" : "ABOVE", vb->tolerance, vb->temp,
                   vb->density, vb->rebuild_cost);
        printf("dynamics: velocity Verlet, dt %g, %s", c->dt,
               c->ensemble == HALOX_MD_NVT ? "NVT (stochastic velocity rescaling)" : "NVE");
        if (c->ensemble == HALOX_MD_NVT)
            printf(", T %g, tau %g", c->temp, c->tau);
        else if (c->source == HALOX_MD_READ && s->read.velocities && !c->read_new_velocities)
            printf(", velocities from the file");
        else
            printf(", initial T %g", c->temp);
        printf(", seed %llu\n", (unsigned long long)c->seed);
        if (c->equilibrate > 0)
            printf("equilibration: %d steps of NVT at T %g (tau %g) before step 0, then "
                   "velocities at exactly T %g; not timed, not counted\n",
                   c->equilibrate, c->temp, HALOX_MD_EQUILIBRATE_TAU_STEPS * c->dt, c->temp);
    }
    printf("run: steps up to %lld, grid %dx%dx%d (%d rank%s), transport %s, precision %s, "
           "device %s\n",
           c->steps, c->grid.n[0], c->grid.n[1], c->grid.n[2], nranks, nranks > 1 ? "s" : "",
           c->transport, c->real == HALOX_DOUBLE ? "double" : "float",
           halox_md_config_device(c) == HALOX_MD_DEVICE_GPU ? "gpu" : "cpu");
    if (s->why[0])
        printf("transport chosen automatically: %s\n", s->why);
    printf("units: reduced LJ; pressure includes the kinetic part with 3N-3 degrees of freedom\n");
    fflush(stdout);
}

void md_print_summary(const halox_md_result_t *res)
{
    const halox_md_summary_t *s = &res->summary;
    printf("\nSummary\n");
    printf("  atoms %lld, ranks %d (grid %dx%dx%d), transport %s, precision %s\n", s->natoms,
           s->nranks, s->grid.n[0], s->grid.n[1], s->grid.n[2], s->transport,
           s->real == HALOX_DOUBLE ? "double" : "float");
    printf("  steps %lld (%lld -> %lld) in %.3f s: %.3f ms/step, %.1f steps/s%s\n", s->steps,
           s->first_step, s->last_step, s->loop_seconds, s->ms_per_step, s->steps_per_second,
           s->interrupted ? " (stopped on request)" : "");
    if (s->fs_per_step > 0)
        printf("  %.2f ns/day (convention: %g fs per step)\n", s->ns_per_day, s->fs_per_step);
    double tmean;
    const int nt = halox_md_result_mean_temp(res, &tmean);
    if (nt > 0)
        printf("  temperature %.6g: mean of the %d thermo record%s of steps %lld to %lld\n", tmean,
               nt, nt > 1 ? "s" : "", s->first_step + 1, s->last_step);
    if (res->n_thermo > 0) {
        const halox_md_thermo_t *r = &res->thermo[res->n_thermo - 1];
        printf("  last thermo record: step %lld, Temp %.8g, E_pair %.8g, KE %.8g, TotEng %.8g, "
               "Press %.8g\n",
               r->step, r->temp, r->pe, r->ke, r->etotal, r->press);
    }
    if (s->equilibrate_steps > 0)
        printf("  equilibration: %lld steps before step 0 in %.3f s, outside every timing here\n",
               s->equilibrate_steps, s->equilibrate_seconds);
    printf("  set-up %.3f s; %lld rebuilds, %lld atoms migrated, %.0f halo atoms per rank, "
           "%.0f pairs in the lists\n",
           s->setup_seconds, s->rebuilds, s->migrated, s->halo_atoms, s->pairs);
    if (s->stale_steps > 0)
        printf("  LISTS OUTGROWN in %lld step(s): an atom had moved more than half the buffer "
               "since the list build, so pairs may have been missed: use a larger --skin, a "
               "smaller --rebuild-every or --rebuild-check\n",
               s->stale_steps);
    if (s->rebuilds > 0) {
        printf("  rebuilds, ms each (mean of ranks):");
        for (int k = 0; k < HALOX_MD_R_COUNT; k++)
            printf("%s %s %.3f", k ? "," : "",
                   halox_md_rebuild_part_name((halox_md_rebuild_part_t)k),
                   1e3 * s->rebuild_seconds[k] / (double)s->rebuilds);
        printf("\n");
        const double per = 1.0 / (double)s->rebuilds;
        printf("  of each rebuild, across its parts: %.1f collectives in %.3f ms, %.1f waits for "
               "the GPU in %.3f ms (the drain included)\n",
               s->rebuild_collectives * per, 1e3 * s->rebuild_collective_seconds * per,
               s->rebuild_waits * per, 1e3 * s->rebuild_wait_seconds * per);
    }
    if (s->graph_steps > 0)
        printf("  CUDA graphs: %lld of %lld steps replayed as a graph in %lld launches (%lld "
               "captures, %lld of them updating the executable in place; kept across %lld "
               "rebuilds)\n",
               s->graph_steps, s->steps, s->graph_launches, s->graph_captures, s->graph_updates,
               s->graph_kept);
    if (s->inline_steps > 0)
        printf("  halo exchanges inside the step's kernels (nvshmem-inline): %lld of %lld steps\n",
               s->inline_steps, s->steps);
    if (s->device_bytes > 0)
        printf("  NVSHMEM symmetric memory: %.1f MiB per rank (NVSHMEM_SYMMETRIC_SIZE must hold "
               "it)\n",
               (double)s->device_bytes / 1048576.0);
    if (s->overlap_reps > 0)
        printf("  overlap probe (%d repetitions, median of the slowest rank): local forces %.4f "
               "ms, halo %.4f ms, both %.4f ms: %.1f%% of the halo overlapped\n",
               s->overlap_reps, s->overlap_local_ms, s->overlap_halo_ms, s->overlap_both_ms,
               s->overlap_percent);
    if (s->steps == 0) {
        printf("  (no steps integrated: no timings)\n");
        fflush(stdout);
        return;
    }
    if (s->graph_steps > 0 && s->timed_steps <= 0) {
        printf("\n  time split: not measured (every step ran as a CUDA graph, timed only as a "
               "whole; --no-graph times the parts)\n");
        fflush(stdout);
        return;
    }
    if (s->graph_steps > 0)
        /* a replayed graph is timed only as a whole: its parts are a sample */
        printf("\n  time split: the step's parts timed on the %lld of %lld steps run outside the "
               "CUDA graph (rebuilds, energies) and scaled to all steps; the rest of the wall "
               "time is \"other\"\n",
               s->timed_steps, s->steps);
    double total = 0; /* the parts as measured, then less what ran at the same time: the wall */
    for (int t = 0; t < HALOX_MD_T_COUNT; t++)
        total += s->timer_seconds[t];
    const double wall = total - s->concurrent_seconds;
    double per = 1e3 / (double)s->steps;
    printf("\n  %-20s %12s %9s %16s\n", "part (mean of ranks)", "ms/step", "percent",
           "slowest ms/step");
    for (int t = 0; t < HALOX_MD_T_COUNT; t++)
        printf("  %-20s %12.4f %8.1f%% %16.4f\n", halox_md_timer_name((halox_md_timer_t)t),
               s->timer_seconds[t] * per, wall > 0 ? 100.0 * s->timer_seconds[t] / wall : 0.0,
               s->timer_max_seconds[t] * per);
    if (s->concurrent_seconds > 0)
        printf("  %-20s %12.4f %8.1f%%   (parts that ran at the same time on the GPU)\n",
               "concurrent", -s->concurrent_seconds * per,
               wall > 0 ? -100.0 * s->concurrent_seconds / wall : 0.0);
    printf("  %-20s %12.4f %8.1f%%\n", "total", wall * per, wall > 0 ? 100.0 : 0.0);
    fflush(stdout);
}
