/* pair_roofline_bench: the GPU engine's Lennard-Jones force kernel against a roofline measured
 * in the same run, on one GPU.
 *
 * System: water density (reduced density 0.8, cut-off 5.0, pair-list buffer 0.5), atoms on a
 * randomly filled cubic lattice with a small random jitter (no overlaps), periodic box. The
 * periodic images within rl = rc + skin of the box become halo atoms (zone 1, home atoms zone 0),
 * so the lists are built as a per-atom engine builds them (the baseline of
 * pair_roofline_atoms.cu, prb_atoms_bin, prb_atoms_pairlist: local list home-home, non-local list
 * home-halo; halo-halo pairs excluded by the zone rule) and every home row is a bulk row. Timed:
 * prb_atoms_lj without energies (a per-step force call of that engine) on the local list (home
 * rows) and on the non-local list (all rows), each with CUDA events around one launch, after
 * warm-up; median, minimum and maximum over the repeats.
 * The engine's cluster kernels run on the same atoms twice: with the halo copies (cl-local,
 * cl-nonloc, cl-both: the multi-rank layout) and as one periodic-shift list of the home atoms
 * (cl-shift: what a 1x1x1 run uses; no halo), and the shift list's super-rows (cl-super: rows 2r
 * and 2r + 1 merged, an entry's mask naming the rows that hold it, entries in segments by mask;
 * the experiment of grouped i-clusters). Cluster lists are half lists, pruned once to
 * the engine's default inner radius (rc + 5 %) before the timing; their "within" is the atom lists'
 * (full) count, so Gpair/s compares like with like across the rows.
 *
 * Before any timing the forces of a small system (--verify-atoms, default 4000) are checked
 * against a CPU double-precision O(N^2) minimum-image computation: relative error
 * ||F_gpu - F_cpu|| / ||F_cpu|| must be < 1e-4, else nothing is reported (exit 1).
 *
 * Roofline, measured: memory bandwidth by a device-to-device cudaMemcpy (read + write bytes
 * counted), fp32 peak by an FMA-chain kernel (2 flops per FMA). Best of the repeats.
 *
 * Counting (full lists hold every pair on both of its atoms' rows):
 *   entries  = list entries (pair interactions evaluated), cutoff = entries with r < rc
 *   flops    = 8 per entry (3 sub, r^2 as 3 mul + 2 add) + 13 per entry within the cut-off
 *              (1 division counted as 1 flop, 2 mul for 1/r^6, 4 for the pair factor, 3 FMA)
 *   bytes    = lo: compulsory traffic, 4 B (index) per entry + 28 B per row (x_i, cnt, f_i);
 *              hi: lo + 12 B per entry (x_j, as if it never hit in cache)
 *
 *   pair_roofline_bench [--atoms N[,N...]] [--repeats R] [--warmup W] [--json FILE]
 *                       [--seed S] [--verify-atoms N]
 *
 * Defaults: --atoms 45000,360000,3000000 (sizes that do not fit in free GPU memory are skipped),
 * --repeats 50 (at least 20), --warmup 10. JSON: one object per line, appended: a "roofline"
 * line and one line per (atoms, kernel). HALOX_COMMIT in the environment is copied into every
 * line. Exit 77 when no GPU is visible. The files of the program: pair_roofline.h. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair_roofline.h"
#include "platforms/cuda/md_cluster.h"

/* ---- device helpers -------------------------------------------------------------------- */

/* FMA chains: 8 independent chains per thread, 16 flops per iteration. The result is stored
 * only when it equals a value it never takes, so nothing is written but nothing is elided. */
__global__ void prb_fma_kernel(float *out, int iters, float b, float c)
{
    float a0 = threadIdx.x * 1e-6f, a1 = a0 + 0.1f, a2 = a0 + 0.2f, a3 = a0 + 0.3f;
    float a4 = a0 + 0.4f, a5 = a0 + 0.5f, a6 = a0 + 0.6f, a7 = a0 + 0.7f;
#pragma unroll 16
    for (int k = 0; k < iters; k++) {
        a0 = fmaf(a0, b, c);
        a1 = fmaf(a1, b, c);
        a2 = fmaf(a2, b, c);
        a3 = fmaf(a3, b, c);
        a4 = fmaf(a4, b, c);
        a5 = fmaf(a5, b, c);
        a6 = fmaf(a6, b, c);
        a7 = fmaf(a7, b, c);
    }
    float s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    if (s == -1234.5f)
        out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

/* ---- host helpers ---------------------------------------------------------------------- */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct prb_stats {
    float med, min, max; /* ms */
} prb_stats_t;

static prb_stats_t stats(float *t, int r)
{
    qsort(t, (size_t)r, sizeof(float), cmp_float);
    prb_stats_t s = {r % 2 ? t[r / 2] : 0.5f * (t[r / 2 - 1] + t[r / 2]), t[0], t[r - 1]};
    return s;
}

static char g_common[1024]; /* JSON fields shared by every line */

/* src without quotes, backslashes and control characters, into dst[cap] */
static void json_safe(char *dst, size_t cap, const char *src)
{
    size_t k = 0;
    for (; *src && k + 1 < cap; src++)
        if (*src != '"' && *src != '\\' && (unsigned char)*src >= 0x20)
            dst[k++] = *src;
    dst[k] = 0;
}

/* one result row: the table line and the JSON line */
static void report(FILE *jf, const char *name, int nh, int halo, int rows, double entries,
                   double within, prb_stats_t ks, int repeats, int warmup, double bw_best,
                   double fp_best, double rel)
{
    const double sec = ks.med * 1e-3;
    const double flops = 8.0 * entries + 13.0 * within;
    /* cluster kernels ("cl-" names; rows are clusters, entries pair evaluations): per cluster
     * entry a 4-byte index and 8 float4 j positions, per row 8 i positions, perms and forces */
    const int cl = !strncmp(name, "cl-", 3);
    const double blo = cl ? (4.0 + 128.0) * entries / 64.0 + (128.0 + 32.0 + 96.0) * rows
                          : 4.0 * entries + 28.0 * rows;
    const double bhi = cl ? blo : blo + 12.0 * entries;
    const double ent_s = entries / sec, pair_s = within / sec;
    const double bw_lo = blo / sec, bw_hi = bhi / sec, fl_s = flops / sec;
    char gbs[32];
    snprintf(gbs, sizeof gbs, "%.0f-%.0f", bw_lo * 1e-9, bw_hi * 1e-9);
    printf("%9d %-9s %9d %7.1f %7.1f %8.3f %8.3f %8.3f %8.2f %8.2f %13s %5.1f %8.0f %5.1f\n", nh,
           name, rows, entries / rows, within / rows, ks.med, ks.min, ks.max, ent_s * 1e-9,
           pair_s * 1e-9, gbs, 100.0 * bw_lo / bw_best, fl_s * 1e-9, 100.0 * fl_s / fp_best);
    if (!jf)
        return;
    fprintf(jf,
            "{%s, \"kind\": \"lj\", \"kernel\": \"%s\", \"atoms\": %d, \"halo\": %d, "
            "\"rows\": %d, \"entries\": %.0f, \"within_cutoff\": %.0f, \"repeats\": %d, "
            "\"warmup\": %d, \"ms_median\": %.6f, \"ms_min\": %.6f, \"ms_max\": %.6f, "
            "\"entries_per_s\": %.6e, \"cutoff_pairs_per_s\": %.6e, \"bytes_lo_per_s\": %.6e, "
            "\"bytes_hi_per_s\": %.6e, \"flops_per_s\": %.6e, \"bw_frac_lo\": %.4f, "
            "\"fp32_frac\": %.4f, \"bw_best_gbs\": %.3f, \"fp32_best_gflops\": %.3f, "
            "\"flops_per_entry\": 8, \"flops_per_cutoff_pair\": 13, \"verify_rel_err\": %.3e}\n",
            g_common, name, nh, halo, rows, entries, within, repeats, warmup, ks.med, ks.min,
            ks.max, ent_s, pair_s, bw_lo, bw_hi, fl_s, bw_lo / bw_best, fl_s / fp_best,
            bw_best * 1e-9, fp_best * 1e-9, rel);
    fflush(jf);
}

/* ---- main -------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *atoms = "45000,360000,3000000", *json = NULL;
    int repeats = 50, warmup = 10, verify_atoms = 4000;
    uint64_t seed = 20261129;
    for (int a = 1; a < argc; a++) {
        const char *o = argv[a];
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            printf("pair_roofline_bench [--atoms N[,N...]] [--repeats R] [--warmup W] "
                   "[--json FILE] [--seed S] [--verify-atoms N]\n");
            return 0;
        }
        if (!v) {
            fprintf(stderr, "%s: missing value\n", o);
            return 2;
        }
        if (!strcmp(o, "--atoms") || !strcmp(o, "-n"))
            atoms = v;
        else if (!strcmp(o, "--repeats") || !strcmp(o, "-r"))
            repeats = atoi(v);
        else if (!strcmp(o, "--warmup") || !strcmp(o, "-w"))
            warmup = atoi(v);
        else if (!strcmp(o, "--json"))
            json = v;
        else if (!strcmp(o, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(o, "--verify-atoms"))
            verify_atoms = atoi(v);
        else {
            fprintf(stderr, "unknown option %s\n", o);
            return 2;
        }
        a++;
    }
    if (repeats < 20)
        repeats = 20;
    if (warmup < 1)
        warmup = 1;
    if (verify_atoms < 1000)
        verify_atoms = 1000; /* the box must exceed 2 rl for the minimum image */

    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        cudaGetLastError();
        printf("pair_roofline_bench: no GPU visible, skipped\n");
        return 77;
    }
    CK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int drv = 0, rt = 0;
    CK(cudaDriverGetVersion(&drv));
    CK(cudaRuntimeGetVersion(&rt));
    const char *commit = getenv("HALOX_COMMIT");
    char gpu[256], cm[128];
    json_safe(gpu, sizeof gpu, prop.name);
    json_safe(cm, sizeof cm, commit ? commit : "");
    snprintf(g_common, sizeof g_common,
             "\"bench\": \"pair_roofline\", \"gpu\": \"%s\", \"cc\": \"%d.%d\", \"sms\": %d, "
             "\"driver\": %d, \"runtime\": %d, \"commit\": \"%s\"",
             gpu, prop.major, prop.minor, prop.multiProcessorCount, drv, rt, cm);
    printf("pair_roofline_bench: %s (cc %d.%d, %d SMs, %.1f GiB), driver %d, runtime %d%s%s\n",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount,
           prop.totalGlobalMem / 1073741824.0, drv, rt, commit ? ", commit " : "",
           commit ? commit : "");
    printf("system: density %.1f, cut-off %.1f, skin %.1f, periodic (images as halo atoms); "
           "repeats %d, warm-up %d\n",
           DENSITY, CUTOFF, SKIN, repeats, warmup);
    FILE *jf = NULL;
    if (json && !(jf = fopen(json, "a"))) {
        perror(json);
        return 1;
    }
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    float *t = (float *)malloc(sizeof(float) * (size_t)repeats);

    /* 1. forces of both kernels against the CPU reference */
    double max_rel = 0, rel = prb_verify(verify_atoms, seed + 1, 0, st, &max_rel);
    double max_rel_cl = 0, rel_cl = prb_verify(verify_atoms, seed + 1, 1, st, &max_rel_cl);
    double max_rel_sh = 0, rel_sh = prb_verify(verify_atoms, seed + 1, 2, st, &max_rel_sh);
    double max_rel_su = 0, rel_su = prb_verify(verify_atoms, seed + 1, 3, st, &max_rel_su);
    printf("verify: %d atoms, GPU vs CPU double O(N^2): atom lists: relative error %.3e (largest "
           "atom error %.3e of the largest force); cluster lists: %.3e (%.3e); periodic-shift "
           "cluster list: %.3e (%.3e); its super-rows: %.3e (%.3e)\n",
           verify_atoms, rel, max_rel, rel_cl, max_rel_cl, rel_sh, max_rel_sh, rel_su, max_rel_su);
    if (!(rel_cl <= rel)) { /* report and judge the worst (NaN included) */
        rel = rel_cl;
        max_rel = max_rel_cl;
    }
    if (!(rel_sh <= rel)) {
        rel = rel_sh;
        max_rel = max_rel_sh;
    }
    int ok = rel < 1e-4;
    /* the experiment is judged alone: when it is wrong it is not timed, the rest still is */
    const int super_ok = rel_su < 1e-4;
    printf("verify: %s%s\n", ok ? "ok" : "FAILED",
           super_ok ? "" : " (super-rows FAILED: cl-super is not timed)");
    if (jf) {
        fprintf(jf,
                "{%s, \"kind\": \"verify\", \"atoms\": %d, \"rel_err\": %.6e, "
                "\"max_atom_rel_err\": %.6e, \"ok\": %s, \"super_rel_err\": %.6e, "
                "\"super_ok\": %s}\n",
                g_common, verify_atoms, rel == rel ? rel : -1.0,
                max_rel == max_rel ? max_rel : -1.0, ok ? "true" : "false",
                rel_su == rel_su ? rel_su : -1.0, super_ok ? "true" : "false");
        fflush(jf);
    }
    if (!ok) {
        fprintf(stderr, "verification failed (relative error %.3e >= 1e-4): no timings reported\n",
                rel);
        if (jf)
            fclose(jf);
        return 1;
    }

    /* 2. roofline: D2D copy bandwidth, FMA throughput */
    size_t fr = 0, tot = 0;
    CK(cudaMemGetInfo(&fr, &tot));
    size_t cb = (size_t)1 << 31;
    while (cb > ((size_t)64 << 20) && 2 * cb > fr / 2)
        cb /= 2;
    void *ba = NULL, *bb = NULL;
    CK(cudaMalloc(&ba, cb));
    CK(cudaMalloc(&bb, cb));
    CK(cudaMemset(ba, 1, cb));
    CK(cudaMemset(bb, 0, cb));
    for (int k = 0; k < 3; k++)
        CK(cudaMemcpyAsync(bb, ba, cb, cudaMemcpyDeviceToDevice, st));
    for (int r = 0; r < repeats; r++) {
        CK(cudaEventRecord(e0, st));
        CK(cudaMemcpyAsync(bb, ba, cb, cudaMemcpyDeviceToDevice, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        CK(cudaEventElapsedTime(&t[r], e0, e1));
    }
    prb_stats_t bs = stats(t, repeats);
    const double bw_best = 2.0 * cb / (bs.min * 1e-3), bw_med = 2.0 * cb / (bs.med * 1e-3);
    CK(cudaFree(ba));
    CK(cudaFree(bb));

    const int fma_threads = 256, fma_blocks = prop.multiProcessorCount * 8, fma_iters = 1 << 16;
    float *dummy = NULL;
    CK(cudaMalloc((void **)&dummy, sizeof(float) * (size_t)fma_threads * fma_blocks));
    for (int r = -2; r < repeats; r++) {
        CK(cudaEventRecord(e0, st));
        prb_fma_kernel<<<fma_blocks, fma_threads, 0, st>>>(dummy, fma_iters, 0.999999f, 1e-6f);
        CK(cudaGetLastError());
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        if (r >= 0)
            CK(cudaEventElapsedTime(&t[r], e0, e1));
    }
    CK(cudaFree(dummy));
    prb_stats_t fs = stats(t, repeats);
    const double fma_flops = 16.0 * fma_iters * (double)fma_threads * fma_blocks;
    const double fp_best = fma_flops / (fs.min * 1e-3), fp_med = fma_flops / (fs.med * 1e-3);
    printf("roofline: D2D copy %.1f GB/s best, %.1f GB/s median (%.0f MiB, read + write); "
           "fp32 FMA %.1f TFLOP/s best, %.1f median; ridge %.1f flop/B\n",
           bw_best * 1e-9, bw_med * 1e-9, cb / 1048576.0, fp_best * 1e-12, fp_med * 1e-12,
           fp_best / bw_best);
    if (jf) {
        fprintf(jf,
                "{%s, \"kind\": \"roofline\", \"copy_bytes\": %zu, \"bw_best_gbs\": %.3f, "
                "\"bw_median_gbs\": %.3f, \"fp32_best_gflops\": %.3f, "
                "\"fp32_median_gflops\": %.3f}\n",
                g_common, cb, bw_best * 1e-9, bw_med * 1e-9, fp_best * 1e-9, fp_med * 1e-9);
        fflush(jf);
    }

    /* 3. the force kernels */
    printf("\n%9s %-9s %9s %7s %7s %8s %8s %8s %8s %8s %13s %5s %8s %5s\n", "atoms", "kernel",
           "rows", "ent/row", "rc/row", "ms_med", "ms_min", "ms_max", "Gent/s", "Gpair/s",
           "GB/s lo-hi", "%BW", "GFLOP/s", "%FP");
    const float rc2 = (float)(CUTOFF * CUTOFF);
    unsigned long long *dcount = NULL;
    CK(cudaMalloc((void **)&dcount, sizeof *dcount));
    int rc_all = 0;
    for (const char *p = atoms; *p;) {
        char *end;
        long nl = strtol(p, &end, 10);
        if (end == p) {
            fprintf(stderr, "bad --atoms list: %s\n", atoms);
            return 2;
        }
        p = *end == ',' ? end + 1 : end;
        if (nl < 1000 || nl > 100000000) {
            printf("%9ld skipped: atoms must be in [1000, 1e8]\n", nl);
            continue;
        }
        const int nh = (int)nl;
        CK(cudaMemGetInfo(&fr, &tot));
        if (prb_estimate_bytes(nh) > fr * 0.9) {
            printf("%9d skipped: needs about %.1f GiB, %.1f GiB free\n", nh,
                   prb_estimate_bytes(nh) / 1073741824.0, fr / 1073741824.0);
            continue;
        }
        prb_sys_t s;
        if (prb_sys_build(&s, nh, seed, st) != 0) {
            printf("%9d skipped: not enough device memory for the lists\n", nh);
            continue;
        }
        {
            /* the periodic-shift list build (a one-rank rebuild on the device): median of 5 */
            const float plo[3] = {0, 0, 0}, pext[3] = {(float)s.L, (float)s.L, (float)s.L};
            float tb[5];
            for (int r = 0; r < 5; r++) {
                CK(cudaEventRecord(e0, st));
                CK(md__clusters_build(&s.shift, s.x, s.zone, nh, nh, plo, pext, DENSITY,
                                      (float)(CUTOFF + SKIN), 7, st));
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&tb[r], e0, e1));
            }
            prb_stats_t bst = stats(tb, 5);
            printf("%9d cl-shift build: %.3f ms median (%.3f-%.3f) of 5, with its host "
                   "synchronisations\n",
                   nh, bst.med, bst.min, bst.max);
        }
        double sum_e = 0, sum_w = 0, within_of[2] = {0, 0};
        prb_stats_t sum = {0, 0, 0};
        /* kk 0, 1: atom lists local, non-local; 2, 3: the engine's cluster lists with halo
         * copies; 4: the periodic-shift list of the home atoms (all pairs, one kernel) */
        for (int kk = 0; kk < 5; kk++) {
            const int clk = kk >= 2, nonloc = kk & 1, shift = kk == 4;
            md_clusters_t *cl = shift ? &s.shift : &s.cl;
            const int rows = shift ? s.shift.ncl_home
                             : clk ? (nonloc ? s.cl.ncl : s.cl.ncl_home)
                                   : (nonloc ? s.n : s.n_home);
            const int *nbr = nonloc ? s.nbr_nl : s.nbr_loc, *cnt = nonloc ? s.cnt_nl : s.cnt_loc;
            float *out_lo = nonloc ? s.fnl : s.f;
            static const char *names[] = {"local", "nonlocal", "cl-local", "cl-nonloc", "cl-shift"};
            const char *name = names[kk];
            if (kk == 2) {
                /* the atom-list kernels' sums */
                report(jf, "both", nh, s.n - nh, s.n_home + s.n, sum_e, sum_w, sum, repeats, warmup,
                       bw_best, fp_best, rel);
                sum_e = sum_w = 0;
                sum.med = sum.min = sum.max = 0;
            }
            /* list entries (pairs evaluated) and pairs within the cut-off (the same pairs in
             * both kinds of lists, counted on the atom lists) */
            if (kk == 4) {
                /* the copy-halo cluster kernels' sums: one engine step's pair work */
                report(jf, "cl-both", nh, s.n - nh, s.cl.ncl_home + s.cl.ncl, sum_e, sum_w, sum,
                       repeats, warmup, bw_best, fp_best, rel);
                sum_e = sum_w = 0;
                sum.med = sum.min = sum.max = 0;
            }
            /* the shift list holds every pair of the periodic system, as both halo lists do */
            double entries = 0, within = shift ? within_of[0] + within_of[1] : within_of[nonloc];
            if (clk) {
                /* prune once (the build armed it), then the gather decides: no motion, no
                 * prune; the timed kernels run over the inner lists */
                CK(md__clusters_lj(cl, nonloc, rc2, 0.0, NULL, st));
                CK(md__clusters_gather(cl, s.x, s.zone, 2, NULL, st));
                CK(md__clusters_clear_forces(cl, st));
                long long el = 0, en = 0, eli = 0, eni = 0;
                CK(md__clusters_entries(cl, &el, &en, &eli, &eni));
                entries = (double)(nonloc ? eni : eli) * MD_CLUSTER_SIZE * MD_CLUSTER_SIZE;
                printf("%9d %-9s outer %lld + %lld, inner %lld + %lld cluster pairs\n", nh, name,
                       el, en, eli, eni);
            } else {
                int *hc = (int *)malloc(sizeof(int) * (size_t)rows);
                CK(cudaMemcpy(hc, cnt, sizeof(int) * (size_t)rows, cudaMemcpyDeviceToHost));
                for (int i = 0; i < rows; i++)
                    entries += hc[i];
                free(hc);
                unsigned long long w = 0;
                CK(cudaMemsetAsync(dcount, 0, sizeof *dcount, st));
                CK(prb_atoms_count(s.x, nbr, cnt, rows, rc2, dcount, st));
                CK(cudaMemcpyAsync(&w, dcount, sizeof w, cudaMemcpyDeviceToHost, st));
                CK(cudaStreamSynchronize(st));
                within = within_of[nonloc] = (double)w;
            }
            for (int r = -warmup; r < repeats; r++) {
                CK(cudaEventRecord(e0, st));
                if (clk)
                    CK(md__clusters_lj(cl, nonloc, rc2, 0.0, NULL, st));
                else
                    CK(prb_atoms_lj(s.x, nbr, cnt, rows, s.n_home, rc2, 0.0, out_lo, s.f, NULL,
                                    st));
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                if (r >= 0)
                    CK(cudaEventElapsedTime(&t[r], e0, e1));
            }
            prb_stats_t ks = stats(t, repeats);
            report(jf, name, nh, s.n - nh, rows, entries, within, ks, repeats, warmup, bw_best,
                   fp_best, rel);
            sum_e += entries;
            sum_w += within;
            sum.med += ks.med;
            sum.min += ks.min;
            sum.max += ks.max;
        }
        if (super_ok) {
            /* super-rows of the shift list (pruned above): the merge once, then the kernel;
             * entries = the pairs it evaluates (64 per row cluster an entry's mask names) */
            md_clusters_super_t su;
            memset(&su, 0, sizeof su);
            CK(cudaEventRecord(e0, st));
            CK(md__clusters_super_build(&s.shift, &su, st));
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float tm = 0;
            CK(cudaEventElapsedTime(&tm, e0, e1));
            const size_t ne = (size_t)su.nrows * (size_t)su.max_row;
            int *hc = (int *)malloc(sizeof(int) * (size_t)su.nrows);
            uint8_t *hm = (uint8_t *)malloc(ne > 0 ? ne : 1);
            int *hj = (int *)malloc(sizeof(int) * (ne > 0 ? ne : 1));
            CK(cudaMemcpy(hc, su.cnt, sizeof(int) * (size_t)su.nrows, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hm, su.mask, ne, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(hj, su.jl, sizeof(int) * ne, cudaMemcpyDeviceToHost));
            /* evaluated: every entry, padding too (its pair terms are computed, masked) */
            double entries = 0, both = 0, merged = 0, pad = 0;
            for (int r = 0; r < su.nrows; r++)
                for (int k = 0; k < hc[r]; k++) {
                    const size_t at = (size_t)r * su.max_row + k;
                    const int b = hm[at];
                    entries +=
                        (double)(((b & 1) + (b >> 1 & 1)) * MD_CLUSTER_SIZE * MD_CLUSTER_SIZE);
                    if (hj[at] < 0) {
                        pad += 1;
                        continue;
                    }
                    both += b == 3;
                    merged += 1;
                }
            free(hc);
            free(hm);
            free(hj);
            printf("%9d cl-super  %d super-rows, %.0f entries (%.0f in both rows) + %.0f padding, "
                   "merge %.3f ms\n",
                   nh, su.nrows, merged, both, pad, tm);
            for (int r = -warmup; r < repeats; r++) {
                CK(cudaEventRecord(e0, st));
                CK(md__clusters_lj_super(&s.shift, &su, rc2, st));
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                if (r >= 0)
                    CK(cudaEventElapsedTime(&t[r], e0, e1));
            }
            prb_stats_t ks = stats(t, repeats);
            report(jf, "cl-super", nh, s.n - nh, su.nrows, entries, within_of[0] + within_of[1], ks,
                   repeats, warmup, bw_best, fp_best, rel);
            md__clusters_super_free(&su);
        }
        prb_sys_free(&s);
        rc_all++;
    }
    printf("\nentries: full-list entries (each pair on both rows; cl-: 64 per cluster entry, "
           "rows are clusters); Gpair/s: entries within the cut-off; bytes lo = 4 B/entry + 28 "
           "B/row, hi = lo + 12 B/entry (x_j uncached); cl-: 132 B per cluster entry + 256 B "
           "per row; "
           "flops = 8/entry + 13/entry within the cut-off; %%BW of the lo model against the D2D "
           "copy, %%FP against the FMA kernel\n");
    CK(cudaFree(dcount));
    free(t);
    if (jf)
        fclose(jf);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(st);
    return rc_all > 0 ? 0 : 1;
}
