/* Output files, written by rank 0:
 *   CSV   one header line, then one row per thermo record, flushed as it comes
 *   JSON  {"program", "version", "units", "settings": {...}, "thermo": [records],
 *          "summary": {...}} written at the end of a run
 *   trajectory, one of (cfg.traj_format, by the file name when AUTO):
 *   XYZ   extended XYZ frames, in the conventions the readers share (OVITO, ASE: tested; VMD):
 *         N / Lattice="LX 0 0 0 LY 0 0 0 LZ" Properties=species:S:1:pos:R:3:velo:R:3:momenta:R:3
 *         pbc="T T T" Time=T Step=S / "X x y z vx vy vz vx vy vz" per atom. Species X: ASE's
 *         dummy element, of mass 1 as in reduced units (a name such as LJ is no element: ASE
 *         stopped on it). velo: the velocities, OVITO's Velocity (vel was a plain property to
 *         it); momenta: m v with m = 1, what ASE reads as velocities. Time (t = step dt) is
 *         ASE's info['Time'] and OVITO's attribute.
 *   LAMMPS text dump, for the readers that take no box from XYZ (MDAnalysis, VMD):
 *         ITEM: TIMESTEP / S / ITEM: NUMBER OF ATOMS / N / ITEM: BOX BOUNDS pp pp pp / 0 LX /
 *         0 LY / 0 LZ / ITEM: ATOMS id type mass x y z vx vy vz, ids from 1 (LAMMPS'), type 1,
 *         mass 1. No ITEM: TIME (MDAnalysis reads the items at fixed lines): time = step dt.
 *         Both: atoms in id order, positions wrapped into the box, printed with enough digits
 *         to read back the exact bits (9 significant digits for float, 17 for double).
 * Every file goes through halox_output_open(): a path that is not a regular file (a device such
 * as /dev/full, a FIFO, a directory), one that cannot be written, or two files of the run that
 * are one (md__files_check) are refused before any file is written, and a failed write, flush
 * or close stops the run with HALOX_ERR_WRITE (a run-time failure: halox-md exits 1). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/features.h"
#include "halox/file.h"
#include "halox/status.h"
#include "systems/system.h"

#define MD_CSV  "the CSV file"
#define MD_XYZ  "the XYZ file"
#define MD_DUMP "the LAMMPS dump file"
#define MD_JSON "the JSON file"
#define MD_CKPT "the checkpoint"

/* the last dot's suffix of the name (not of a directory), compared without case */
static int md__has_ext(const char *path, const char *ext)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (!dot || dot[1] == '\0')
        return 0;
    for (dot++; *dot && *ext; dot++, ext++)
        if ((*dot | 0x20) != *ext)
            return 0;
    return *dot == '\0' && *ext == '\0';
}

halox_md_traj_format_t halox_md_traj_format_by_name(const char *path)
{
    if (!path)
        return HALOX_MD_TRAJ_AUTO;
    if (md__has_ext(path, "xyz") || md__has_ext(path, "extxyz"))
        return HALOX_MD_TRAJ_XYZ;
    /* .lammpstrj: VMD's name for it; .lammpsdump: the one MDAnalysis recognises by itself */
    if (md__has_ext(path, "lammpstrj") || md__has_ext(path, "lammpsdump") ||
        md__has_ext(path, "dump"))
        return HALOX_MD_TRAJ_LAMMPS;
    return HALOX_MD_TRAJ_AUTO;
}

halox_md_traj_format_t halox_md_traj_format(const halox_md_config_t *cfg)
{
    if (cfg->traj_format != HALOX_MD_TRAJ_AUTO)
        return cfg->traj_format;
    /* extended XYZ for a name that says nothing: what --xyz wrote before the dump existed */
    return halox_md_traj_format_by_name(cfg->xyz_path) == HALOX_MD_TRAJ_LAMMPS
               ? HALOX_MD_TRAJ_LAMMPS
               : HALOX_MD_TRAJ_XYZ;
}

const char *halox_md_traj_format_name(halox_md_traj_format_t f)
{
    return f == HALOX_MD_TRAJ_XYZ      ? "extended XYZ"
           : f == HALOX_MD_TRAJ_LAMMPS ? "LAMMPS dump"
                                       : "by file name";
}

/* what the trajectory file is called in messages */
static const char *md__traj_what(const halox_md_config_t *c)
{
    return halox_md_traj_format(c) == HALOX_MD_TRAJ_LAMMPS ? MD_DUMP : MD_XYZ;
}

halox_status_t md__files_check(const halox_md_config_t *c)
{
    char cache[4096];
    const int placed = !c->restart_path && c->source == HALOX_MD_RANDOM;
    const int read = !c->restart_path && c->source == HALOX_MD_READ;
    /* the system cache is read and replaced, but only a cache: an output never takes its name,
     * and a cache folder that cannot be written refuses nothing */
    const halox_file_t files[] = {
        {c->csv_path, MD_CSV, HALOX_FILE_WRITE},
        {c->xyz_path, md__traj_what(c), HALOX_FILE_WRITE},
        {c->json_path, MD_JSON, HALOX_FILE_WRITE},
        {c->checkpoint_path, MD_CKPT, HALOX_FILE_REPLACE},
        {c->restart_path, "the --restart checkpoint", HALOX_FILE_READ_REPLACED},
        {read ? c->read_path : NULL, "the --read file", HALOX_FILE_READ},
        {placed && md__system_cache_path(c, cache, sizeof cache) ? cache : NULL,
         "the system cache file (HALOX_SYSTEM_CACHE)", HALOX_FILE_READ},
    };
    return halox_files_check(files, (int)(sizeof files / sizeof files[0]));
}

/* Rank 0 opens the CSV (header written) and the XYZ file, and creates the JSON file, so that a
 * long run does not fail at its end; every file of the run is checked first (md__files_check),
 * so that a refusal creates or empties none. */
halox_status_t md__outputs_open(halox_md_t *md)
{
    const halox_md_config_t *c = &md->cfg;
    if (md->rank != 0)
        return HALOX_OK;
    halox_status_t st = md__files_check(c);
    if (st != HALOX_OK)
        return st;
    if (c->csv_path) {
        st = halox_output_open(c->csv_path, MD_CSV, 0, &md->csv);
        if (st == HALOX_OK) {
            fprintf(md->csv, "step,time,temp,pe,ke,etotal,press\n");
            st = halox_output_flush(md->csv, c->csv_path, MD_CSV);
        }
        if (st != HALOX_OK)
            return st;
    }
    if (c->xyz_path &&
        (st = halox_output_open(c->xyz_path, md__traj_what(c), 0, &md->xyz)) != HALOX_OK)
        return st;
    if (c->json_path) {
        FILE *fp = NULL;
        st = halox_output_open(c->json_path, MD_JSON, 1, &fp);
        if (st == HALOX_OK)
            st = halox_output_close(fp, c->json_path, MD_JSON);
    }
    return st;
}

/* Rank 0, at the end of a run: close the CSV and trajectory files, reporting a failed close. */
halox_status_t md__outputs_close(halox_md_t *md)
{
    halox_status_t st = halox_output_close(md->csv, md->cfg.csv_path, MD_CSV);
    md->csv = NULL;
    halox_status_t xst = halox_output_close(md->xyz, md->cfg.xyz_path, md__traj_what(&md->cfg));
    md->xyz = NULL;
    return st != HALOX_OK ? st : xst;
}

halox_status_t md__csv_row(halox_md_t *md, const halox_md_thermo_t *r)
{
    if (!md->csv)
        return HALOX_OK;
    fprintf(md->csv, "%lld,%.10g,%.15g,%.15g,%.15g,%.15g,%.15g\n", r->step, r->time, r->temp, r->pe,
            r->ke, r->etotal, r->press);
    return halox_output_flush(md->csv, md->cfg.csv_path, MD_CSV);
}

/* JSON string with the characters JSON requires escaped. */
static void md__json_str(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 0x20)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

/* A finite number, or null (JSON has no inf/nan). */
static void md__json_num(FILE *fp, double v)
{
    if (v == v && v - v == 0)
        fprintf(fp, "%.15g", v);
    else
        fputs("null", fp);
}

/* ", \"key\": value" (one member after the first of an object on one line) */
static void md__json_kv(FILE *fp, const char *key, double v)
{
    fprintf(fp, ", \"%s\": ", key);
    md__json_num(fp, v);
}

/* md__json_kv for each of the n pairs, then the object's end */
static void md__json_kvs_end(FILE *fp, const char *const *keys, const double *vals, int n)
{
    for (int i = 0; i < n; i++)
        md__json_kv(fp, keys[i], vals[i]);
    fprintf(fp, "}");
}

static void md__json_path(FILE *fp, const char *p)
{
    if (p)
        md__json_str(fp, p);
    else
        fputs("null", fp);
}

static const char *const md__timer_keys[HALOX_MD_T_COUNT] = {
    "pair_forces",      "halo_coords",    "halo_forces", "integration",
    "neighbour_search", "migration_plan", "other"};

static const char *const md__rpart_keys[HALOX_MD_R_COUNT] = {
    "drain", "to_host", "migration", "plan", "bind", "lists", "graph"};

halox_status_t md__json_write(const halox_md_t *md, const char *path)
{
    FILE *fp = NULL;
    halox_status_t st = halox_output_open(path, MD_JSON, 0, &fp);
    if (st != HALOX_OK)
        return st;
    const halox_md_config_t *c = &md->cfg;
    fprintf(fp, "{\n  \"program\": \"halox-md\",\n  \"version\": \"%s\",\n", HALOX_VERSION_STRING);
    /* the build the run's timings come from (as halox-bench records it) */
    fprintf(fp,
            "  \"build\": {\"type\": \"%s\", \"c_flags\": \"%s\", \"cuda_flags\": \"%s\", "
            "\"optimised\": %s},\n",
            HALOX_BUILD_TYPE, HALOX_BUILD_C_FLAGS, HALOX_BUILD_CUDA_FLAGS,
            HALOX_BUILD_OPTIMISED ? "true" : "false");
    fprintf(fp, "  \"units\": \"lj (reduced: sigma = epsilon = mass = k_B = 1)\",\n");
    fprintf(fp, "  \"settings\": {\n    \"preset\": ");
    md__json_path(fp, c->preset);
    fprintf(fp, ",\n    \"system\": \"%s\",\n",
            c->restart_path ? "restart" : md__source_name(c->source));
    fprintf(fp, "    \"natoms\": %lld,\n    \"density\": ", md->natoms);
    md__json_num(fp, md->rho);
    fprintf(fp, ",\n    \"box\": [");
    for (int d = 0; d < 3; d++) {
        md__json_num(fp, md->box.len[d]);
        fputs(d < 2 ? ", " : "],\n", fp);
    }
    if (c->source == HALOX_MD_FCC && !c->restart_path)
        fprintf(fp, "    \"cells\": [%d, %d, %d],\n", c->cells[0], c->cells[1], c->cells[2]);
    fprintf(fp, "    \"read\": ");
    md__json_path(fp, c->source == HALOX_MD_READ && !c->restart_path ? c->read_path : NULL);
    if (c->source == HALOX_MD_READ && !c->restart_path) {
        /* the frame asked for ("last" or its number) and whether velocities were drawn anyway */
        if (c->read_frame == HALOX_MD_READ_LAST)
            fprintf(fp, ",\n    \"read_frame\": \"last\"");
        else
            fprintf(fp, ",\n    \"read_frame\": %lld", c->read_frame);
        fprintf(fp, ",\n    \"new_velocities\": %s", c->read_new_velocities ? "true" : "false");
    }
    fprintf(fp, ",\n    \"restart\": ");
    md__json_path(fp, c->restart_path);
    fprintf(fp, ",\n    \"temp\": ");
    md__json_num(fp, c->temp);
    fprintf(fp, ",\n    \"seed\": %llu,\n    \"cutoff\": ", (unsigned long long)c->seed);
    md__json_num(fp, c->cutoff);
    fprintf(fp, ",\n    \"skin\": ");
    md__json_num(fp, c->skin);
    fprintf(fp,
            ",\n    \"shift\": %s,\n    \"tail\": %s,\n    \"dt\": ", c->shift ? "true" : "false",
            c->tail ? "true" : "false");
    md__json_num(fp, c->dt);
    fprintf(fp,
            ",\n    \"first_step\": %lld,\n    \"steps\": %lld,\n    \"rebuild_every\": %d,\n"
            "    \"rebuild_check\": %s,\n    \"thermo_every\": %d,\n    \"ensemble\": \"%s\",\n"
            "    \"tau\": ",
            md->first_step, c->steps, c->rebuild_every, c->rebuild_check ? "true" : "false",
            c->thermo_every, md__ensemble_name(c->ensemble));
    if (c->ensemble == HALOX_MD_NVT)
        md__json_num(fp, c->tau);
    else
        fputs("null", fp);
    /* NVT steps before step 0 (a restart's state is past them: null) */
    if (c->restart_path)
        fprintf(fp, ",\n    \"equilibrate\": null");
    else
        fprintf(fp, ",\n    \"equilibrate\": %d", c->equilibrate);
    /* the pair-list drift tolerance the skin and interval were chosen for (verlet_buffer.h), and
     * the estimate for the run's own skin and interval at its temperature and density */
    fprintf(fp, ",\n    \"verlet_tolerance\": ");
    if (c->verlet_tolerance > 0) {
        md__json_num(fp, c->verlet_tolerance);
        fprintf(fp, ",\n    \"verlet_drift_estimate\": ");
        md__json_num(fp, halox_md_verlet_drift(c->temp, md->rho, c->cutoff, c->dt, c->shift,
                                               c->rebuild_every, c->skin));
    } else {
        fprintf(fp, "null,\n    \"verlet_drift_estimate\": null");
    }
    fprintf(fp,
            ",\n    \"thermostat\": %s,\n    \"grid\": [%d, %d, %d],\n    \"ranks\": %d,\n"
            "    \"transport\": ",
            c->ensemble == HALOX_MD_NVT ? "\"stochastic velocity rescaling (Bussi 2007)\"" : "null",
            c->grid.n[0], c->grid.n[1], c->grid.n[2], md->nranks);
    md__json_str(fp, halox_comm_transport(md->comm));
    fprintf(fp, ",\n    \"precision\": \"%s\",\n    \"xyz\": ",
            c->real == HALOX_DOUBLE ? "double" : "float");
    md__json_path(fp, c->xyz_path);
    fprintf(fp, ",\n    \"trajectory_format\": ");
    if (c->xyz_path)
        md__json_str(fp,
                     halox_md_traj_format(c) == HALOX_MD_TRAJ_LAMMPS ? "lammps-dump" : "extxyz");
    else
        fputs("null", fp);
    fprintf(fp, ",\n    \"xyz_every\": %d,\n    \"checkpoint\": ", c->xyz_every);
    md__json_path(fp, c->checkpoint_path);
    fprintf(fp, ",\n    \"checkpoint_every\": %lld\n  },\n", c->checkpoint_every);

    fprintf(fp, "  \"thermo\": [");
    for (int i = 0; i < md->nrec; i++) {
        const halox_md_thermo_t *r = &md->rec[i];
        static const char *const keys[] = {"temp", "pe", "ke", "etotal", "press"};
        const double vals[] = {r->temp, r->pe, r->ke, r->etotal, r->press};
        fprintf(fp, "%s\n    {\"step\": %lld", i ? "," : "", r->step);
        md__json_kvs_end(fp, keys, vals, 5);
    }
    fprintf(fp, "%s],\n", md->nrec ? "\n  " : "");

    const halox_md_summary_t *s = &md->summary;
    fprintf(fp, "  \"summary\": {\n    \"atoms\": %lld,\n    \"ranks\": %d,\n", s->natoms,
            s->nranks);
    fprintf(fp, "    \"grid\": \"%dx%dx%d\",\n    \"transport\": ", s->grid.n[0], s->grid.n[1],
            s->grid.n[2]);
    md__json_str(fp, s->transport);
    fprintf(fp,
            ",\n    \"precision\": \"%s\",\n    \"first_step\": %lld,\n    \"last_step\": %lld,\n"
            "    \"steps\": %lld,\n    \"interrupted\": %s,\n    \"setup_seconds\": ",
            s->real == HALOX_DOUBLE ? "double" : "float", s->first_step, s->last_step, s->steps,
            s->interrupted ? "true" : "false");
    md__json_num(fp, s->setup_seconds);
    fprintf(fp, ",\n    \"equilibrate_steps\": %lld,\n    \"equilibrate_seconds\": ",
            s->equilibrate_steps);
    md__json_num(fp, s->equilibrate_seconds);
    fprintf(fp, ",\n    \"seconds\": ");
    md__json_num(fp, s->loop_seconds);
    fprintf(fp, ",\n    \"ms_per_step\": ");
    md__json_num(fp, s->ms_per_step);
    fprintf(fp, ",\n    \"steps_per_s\": ");
    md__json_num(fp, s->steps_per_second);
    /* the timers' ms_per_step less this add up to ms_per_step (parts that ran side by side) */
    fprintf(fp, ",\n    \"concurrent_ms_per_step\": ");
    md__json_num(fp, s->steps > 0 ? 1e3 * s->concurrent_seconds / (double)s->steps : 0.0);
    if (s->fs_per_step > 0) {
        fprintf(fp, ",\n    \"ns_per_day\": ");
        md__json_num(fp, s->ns_per_day);
        fprintf(fp, ",\n    \"ns_per_day_convention\": \"%g fs per step\"", s->fs_per_step);
    }
    fprintf(fp, ",\n    \"timers\": {");
    double total = 0;
    for (int t = 0; t < HALOX_MD_T_COUNT; t++)
        total += s->timer_seconds[t];
    for (int t = 0; t < HALOX_MD_T_COUNT; t++) {
        fprintf(fp, "%s\n      \"%s\": {\"seconds\": ", t ? "," : "", md__timer_keys[t]);
        md__json_num(fp, s->timer_seconds[t]);
        md__json_kv(fp, "max_seconds", s->timer_max_seconds[t]);
        md__json_kv(fp, "ms_per_step",
                    s->steps > 0 ? 1e3 * s->timer_seconds[t] / (double)s->steps : 0.0);
        md__json_kv(fp, "percent", total > 0 ? 100.0 * s->timer_seconds[t] / total : 0.0);
        fprintf(fp, "}");
    }
    fprintf(fp, "\n    },\n    \"rebuild_ms_per_rebuild\": {");
    for (int k = 0; k < HALOX_MD_R_COUNT; k++) {
        fprintf(fp, "%s\"%s\": ", k ? ", " : "", md__rpart_keys[k]);
        md__json_num(fp, s->rebuilds > 0 ? 1e3 * s->rebuild_seconds[k] / (double)s->rebuilds : 0.0);
    }
    /* across the parts: collectives and host waits for the GPU, per rebuild */
    const double per = s->rebuilds > 0 ? 1.0 / (double)s->rebuilds : 0.0;
    fprintf(fp, "},\n    \"rebuild_budget_per_rebuild\": {\"collectives\": ");
    md__json_num(fp, s->rebuild_collectives * per);
    md__json_kv(fp, "collective_ms", 1e3 * s->rebuild_collective_seconds * per);
    md__json_kv(fp, "gpu_waits", s->rebuild_waits * per);
    md__json_kv(fp, "gpu_wait_ms", 1e3 * s->rebuild_wait_seconds * per);
    fprintf(fp,
            "},\n    \"rebuilds\": %lld,\n    \"device_rebuilds\": %lld,\n"
            "    \"migrated_atoms\": %lld,\n"
            "    \"max_hops\": %d,\n    \"stale_list_steps\": %lld,\n"
            "    \"halo_atoms_per_rank\": ",
            s->rebuilds, s->device_rebuilds, s->migrated, s->max_hops, s->stale_steps);
    md__json_num(fp, s->halo_atoms);
    fprintf(fp, ",\n    \"pairs_in_lists\": ");
    md__json_num(fp, s->pairs);
    fprintf(
        fp,
        ",\n    \"halo_bytes\": %lld,\n    \"checkpoints\": %d,\n    \"graph_steps\": %lld,\n"
        "    \"timed_steps\": %lld,\n    \"graph_launches\": %lld,\n    \"graph_captures\": %lld,\n"
        "    \"graph_updates\": %lld,\n    \"graph_kept\": %lld,\n    \"inline_steps\": %lld,\n"
        "    \"device_bytes\": %lld",
        s->halo_bytes, s->checkpoints, s->graph_steps, s->timed_steps, s->graph_launches,
        s->graph_captures, s->graph_updates, s->graph_kept, s->inline_steps, s->device_bytes);
    if (s->overlap_reps > 0) { /* the overlap probe (cfg.overlap_probe) ran */
        static const char *const keys[] = {"local_ms", "halo_ms", "both_ms", "percent"};
        const double vals[] = {s->overlap_local_ms, s->overlap_halo_ms, s->overlap_both_ms,
                               s->overlap_percent};
        fprintf(fp, ",\n    \"overlap\": {\"repetitions\": %d", s->overlap_reps);
        md__json_kvs_end(fp, keys, vals, 4);
    }
    fprintf(fp, "\n  }\n}\n");
    return halox_output_close(fp, path, MD_JSON);
}

/* The writers return 0, or the errno of the first write that failed (they stop there: the
 * message then names its reason, which a later flush no longer knows). */
static int md__write_errno(void) { return errno ? errno : EIO; }

/* One extended-XYZ frame (the conventions: the head of this file). */
static int md__xyz_write(FILE *fp, const halox_md_t *md, const double *x, const double *v)
{
    const long long n = md->natoms;
    errno = 0;
    if (fprintf(fp,
                "%lld\nLattice=\"%.17g 0 0 0 %.17g 0 0 0 %.17g\" "
                "Properties=species:S:1:pos:R:3:velo:R:3:momenta:R:3 pbc=\"T T T\" Time=%.10g "
                "Step=%lld\n",
                n, md->box.len[0], md->box.len[1], md->box.len[2], (double)md->step * md->cfg.dt,
                md->step) < 0)
        return md__write_errno();
    const char *fmt = md->cfg.real == HALOX_DOUBLE
                          ? "X %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n"
                          : "X %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g %.9g\n";
    for (long long i = 0; i < n; i++) {
        const double *p = x + 3 * i, *u = v + 3 * i; /* momenta = velocities: m = 1 */
        if (fprintf(fp, fmt, p[0], p[1], p[2], u[0], u[1], u[2], u[0], u[1], u[2]) < 0)
            return md__write_errno();
    }
    return 0;
}

/* One LAMMPS text-dump frame, as LAMMPS' `dump custom ... id type mass x y z vx vy vz` writes
 * it (ids from 1). */
static int md__dump_write(FILE *fp, const halox_md_t *md, const double *x, const double *v)
{
    const long long n = md->natoms;
    errno = 0;
    if (fprintf(fp,
                "ITEM: TIMESTEP\n%lld\nITEM: NUMBER OF ATOMS\n%lld\nITEM: BOX BOUNDS pp pp pp\n"
                "0 %.17g\n0 %.17g\n0 %.17g\nITEM: ATOMS id type mass x y z vx vy vz\n",
                md->step, n, md->box.len[0], md->box.len[1], md->box.len[2]) < 0)
        return md__write_errno();
    const char *fmt = md->cfg.real == HALOX_DOUBLE
                          ? "%lld 1 1 %.17g %.17g %.17g %.17g %.17g %.17g\n"
                          : "%lld 1 1 %.9g %.9g %.9g %.9g %.9g %.9g\n";
    for (long long i = 0; i < n; i++)
        if (fprintf(fp, fmt, i + 1, x[3 * i], x[3 * i + 1], x[3 * i + 2], v[3 * i], v[3 * i + 1],
                    v[3 * i + 2]) < 0)
            return md__write_errno();
    return 0;
}

/* A trajectory frame of the current step (collective: the atoms are gathered on rank 0). The
 * CPU and the GPU engine both write through here (the GPU engine copies its state to the host
 * first). */
halox_status_t md__xyz_frame(halox_md_t *md)
{
    long long n = md->natoms;
    double *x = NULL, *v = NULL;
    halox_status_t st = HALOX_OK;
    const char *what = md__traj_what(&md->cfg);
    if (md->rank == 0) {
        x = malloc(sizeof(double) * 3 * (size_t)n);
        v = malloc(sizeof(double) * 3 * (size_t)n);
        if (!x || !v)
            st = halox_set_error(HALOX_ERR_NO_MEMORY, "trajectory: no memory for %lld atoms", n);
    }
    st = md__agree(md, st);
    if (st == HALOX_OK)
        st = halox_md_gather(md, x, v, NULL, 0);
    if (st == HALOX_OK && md->rank == 0) {
        if (!md->xyz) /* closed at the end of a run, and written again: appended */
            st = halox_output_open(md->cfg.xyz_path, what, 1, &md->xyz);
        if (md->xyz) {
            int werr = halox_md_traj_format(&md->cfg) == HALOX_MD_TRAJ_LAMMPS
                           ? md__dump_write(md->xyz, md, x, v)
                           : md__xyz_write(md->xyz, md, x, v);
            st = halox_output_flush(md->xyz, md->cfg.xyz_path, what);
            if (werr) /* the reason of the write that failed */
                st = halox_set_error(HALOX_ERR_WRITE, "writing %s '%s' failed: %s", what,
                                     md->cfg.xyz_path, strerror(werr));
        }
    }
    free(x);
    free(v);
    return md__agree(md, st);
}
