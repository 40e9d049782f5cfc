/* GPU kernels against core's CPU pack/add functions, bit for bit; and the device plan.
 *
 *  1. halox_kernel_pack_coords() == halox__pack_coords() and halox_kernel_add_forces() ==
 *     halox__add_forces(), float and double, stride 3 and 4, shifts zero and nonzero (exact and
 *     rounding), signed zeros, empty and multi-block maps, every dimension. Outputs are poisoned
 *     first, so an element the kernel does not write fails the comparison.
 *  2. The device plan (src/transports/gpu/gpu_device.c): uploading a plan with more pulses, then
 *     with fewer, leaves no stale pulse (n_pulses, offsets past it zero, packing a pulse past it
 *     refused); packing every pulse and accumulating forces in reverse order on the device gives
 *     what the CPU functions give; a plan larger than the buffers regrows them.
 *  3. The scan of counts the cluster build and the inline view use (halox__kernel_scan): one
 *     block up to 16384 counts, above it one kernel of tiles that look back over the tiles before
 *     them (halox/device/scan.cuh), where tiles really start out of order: against a host loop,
 *     sizes on both sides and of many tiles, in place (count == cursor), one scratch for scans of
 *     every size one after another.
 *
 * Exit 77 (skipped) when no GPU is visible. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pack.h"
#include "halox/plan.h"
#include "harness.h"
#include "kernels/scan.h"
#include "mpi_common.h"
#include "platforms/cuda/md_kernels.h"
#include "test_gpu_common.h"
#include "transports/gpu/gpu.h"
#include "transports/gpu/halo_kernels.h"

/* n distinct indices in [0, N), in random order (as maps are after forwarding) */
static void random_map(uint64_t *s, int *index, int n, int N)
{
    int *perm = malloc(sizeof(int) * (size_t)N);
    for (int i = 0; i < N; i++)
        perm[i] = i;
    for (int i = 0; i < n; i++) {
        int j = i + (int)(tm_uniform(s) * (N - i));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        index[i] = perm[i];
    }
    free(perm);
}

static void fill(uint64_t *s, halox_real_t real, void *a, size_t count, double scale)
{
    for (size_t i = 0; i < count; i++) {
        double v = (tm_uniform(s) * 2 - 1) * scale;
        if (i % 97 == 5)
            v = -0.0; /* signed zeros must survive a zero shift */
        if (i % 89 == 7)
            v = 0.1 * (double)(i % 7); /* values whose sums round */
        if (real == HALOX_FLOAT)
            ((float *)a)[i] = (float)v;
        else
            ((double *)a)[i] = v;
    }
}

static void test_pack_add(halox_real_t real, int stride, int N, int n, int dim, double shift,
                          uint64_t seed)
{
    const size_t rs = halox_real_size(real), esize = rs * (size_t)stride;
    uint64_t s = seed;
    void *x = malloc(esize * (size_t)N), *f = malloc(esize * (size_t)N);
    void *src = malloc(esize * (size_t)(n + 1)), *want = malloc(esize * (size_t)(n + 1));
    void *got = malloc(esize * (size_t)(n + 1));
    void *fwant = malloc(esize * (size_t)N), *fgot = malloc(esize * (size_t)N);
    int *index = malloc(sizeof(int) * (size_t)(n + 1));
    fill(&s, real, x, (size_t)N * stride, 10.0);
    fill(&s, real, f, (size_t)N * stride, 100.0);
    fill(&s, real, src, (size_t)n * stride, 100.0);
    random_map(&s, index, n, N);

    void *d_x = NULL, *d_dst = NULL, *d_f = NULL, *d_src = NULL;
    int *d_index = NULL;
    TG_CUDA(cudaMalloc(&d_x, esize * (size_t)N));
    TG_CUDA(cudaMalloc(&d_f, esize * (size_t)N));
    TG_CUDA(cudaMalloc(&d_dst, esize * (size_t)(n + 1)));
    TG_CUDA(cudaMalloc(&d_src, esize * (size_t)(n + 1)));
    TG_CUDA(cudaMalloc((void **)&d_index, sizeof(int) * (size_t)(n + 1)));
    TG_CUDA(cudaMemcpy(d_x, x, esize * (size_t)N, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemcpy(d_f, f, esize * (size_t)N, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemcpy(d_src, src, esize * (size_t)n, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemcpy(d_index, index, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemset(d_dst, 0xff, esize * (size_t)(n + 1))); /* poison: NaNs */

    cudaStream_t stream;
    TG_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    TG_CUDA(halox_kernel_pack_coords(real, stride, d_dst, d_x, d_index, n, dim, shift, stream));
    TG_CUDA(halox_kernel_add_forces(real, stride, d_f, d_index, n, d_src, stream));
    TG_CUDA(cudaStreamSynchronize(stream));
    TG_CUDA(cudaMemcpy(got, d_dst, esize * (size_t)(n + 1), cudaMemcpyDeviceToHost));
    TG_CUDA(cudaMemcpy(fgot, d_f, esize * (size_t)N, cudaMemcpyDeviceToHost));

    memset(want, 0xff, esize * (size_t)(n + 1)); /* the poisoned tail must stay untouched */
    halox__pack_coords(real, stride, want, x, index, n, dim, shift);
    memcpy(fwant, f, esize * (size_t)N);
    halox__add_forces(real, stride, fwant, index, n, src);
    CHECK_MSG(memcmp(got, want, esize * (size_t)(n + 1)) == 0,
              "pack %s stride %d n %d dim %d shift %g differs from the CPU", test_real_name(real),
              stride, n, dim, shift);
    CHECK_MSG(memcmp(fgot, fwant, esize * (size_t)N) == 0,
              "add %s stride %d n %d differs from the CPU", test_real_name(real), stride, n);

    cudaStreamDestroy(stream);
    cudaFree(d_x);
    cudaFree(d_f);
    cudaFree(d_dst);
    cudaFree(d_src);
    cudaFree(d_index);
    free(x);
    free(f);
    free(src);
    free(want);
    free(got);
    free(fwant);
    free(fgot);
    free(index);
}

static void test_kernels(void)
{
    static const double shifts[] = {0.0, 9.0, -8.0, 0.1, -7.3, 1e-30};
    static const int sizes[] = {0, 1, 3, 257, 5000};
    int cases = 0;
    for (int r = 0; r < 2; r++)
        for (int stride = 3; stride <= 4; stride++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
                for (size_t sh = 0; sh < sizeof shifts / sizeof shifts[0]; sh++) {
                    int dim = (int)((si + sh) % 3);
                    test_pack_add(r ? HALOX_DOUBLE : HALOX_FLOAT, stride, 6000, sizes[si], dim,
                                  shifts[sh], 1234 + (uint64_t)cases);
                    cases++;
                }
    /* invalid arguments are refused, not launched */
    CHECK(halox_kernel_pack_coords(HALOX_FLOAT, 5, NULL, NULL, NULL, 1, 0, 0.0, 0) ==
          cudaErrorInvalidValue);
    CHECK(halox_kernel_add_forces(HALOX_FLOAT, 2, NULL, NULL, 1, NULL, 0) == cudaErrorInvalidValue);
    printf("kernels: %d pack/add cases bit-identical to the CPU\n", cases);
}

/* ---- device plan ------------------------------------------------------------------------- */

/* A one-rank plan (self-exchange in every dimension) or rank 0 of a grid, built by the
 * reference; atoms_p receives rank 0's atoms (home and halo). */
static int make_plan(halox_grid_t grid, double cutoff, double buffer, int natoms, halox_real_t real,
                     int stride, uint64_t seed, halox_plan_t *plan_p, halox_atoms_t *atoms_p)
{
    halox_box_t box = {{9.0, 8.0, 7.0}};
    halox_plan_params_t params = {grid, box, cutoff, buffer, 0, 0};
    int np[3];
    if (halox_plan_check(&params, np) != HALOX_OK)
        return -1;
    int P = halox_grid_size(&grid);
    halox_atoms_t *atoms = calloc((size_t)P, sizeof *atoms);
    halox_plan_t *plans = calloc((size_t)P, sizeof *plans);
    for (int r = 0; r < P; r++)
        halox_plan_init(&plans[r]);
    CHECK(tm_make_system(&grid, &box, real, stride, 0, natoms, seed, atoms) == 0);
    CHECK_OK(halox_reference_build(&params, atoms, plans));
    *plan_p = plans[0];
    *atoms_p = atoms[0];
    for (int r = 1; r < P; r++) {
        halox_plan_free(&plans[r]);
        halox_atoms_free(&atoms[r]);
    }
    free(plans);
    free(atoms);
    return 0;
}

/* Pack every pulse and accumulate every pulse's forces (reverse order) on the device through
 * the device plan, and compare with the CPU functions on the same data. */
static void check_device_plan(halox__gpu_plan_t *dp, const halox_plan_t *plan,
                              const halox_atoms_t *a, cudaStream_t stream, const char *ctx)
{
    const halox_real_t real = a->real;
    const int stride = a->stride;
    const size_t esize = halox_real_size(real) * (size_t)stride;
    const int nt = plan->n_total > 0 ? plan->n_total : 1;
    CHECK_MSG(dp->n_pulses == plan->n_pulses, "%s: n_pulses %d, plan %d", ctx, dp->n_pulses,
              plan->n_pulses);
    CHECK_MSG(dp->generation == plan->generation, "%s: generation", ctx);
    for (int k = plan->n_pulses; k < HALOX_MAX_PULSES; k++)
        CHECK_MSG(dp->index_off[k] == 0 && dp->buf_off[k] == 0 && dp->recv_off[k] == 0 &&
                      dp->needs[k] == 0,
                  "%s: stale metadata for pulse %d past the %d pulses", ctx, k, plan->n_pulses);
    CHECK_MSG(halox__gpu_pack(dp, plan, plan->n_pulses, real, stride, NULL, NULL, stream) ==
                  cudaErrorInvalidValue,
              "%s: a pulse past the plan was launched", ctx);

    void *d_x = NULL, *d_f = NULL;
    TG_CUDA(cudaMalloc(&d_x, esize * (size_t)nt));
    TG_CUDA(cudaMalloc(&d_f, esize * (size_t)nt));
    TG_CUDA(
        cudaMemcpyAsync(d_x, a->x, esize * (size_t)plan->n_total, cudaMemcpyHostToDevice, stream));
    size_t sb = dp->send_bytes ? dp->send_bytes : 1;
    char *got = malloc(sb), *want = malloc(sb);
    uint64_t s = 99;
    void *f = malloc(esize * (size_t)nt), *fgot = malloc(esize * (size_t)nt);
    fill(&s, real, f, (size_t)plan->n_total * stride, 50.0);
    fill(&s, real, want, sb / halox_real_size(real), 50.0); /* "received" forces */
    TG_CUDA(cudaMemcpyAsync(d_f, f, esize * (size_t)plan->n_total, cudaMemcpyHostToDevice, stream));

    /* coordinates: every pulse into the staging buffer */
    TG_CUDA(cudaMemsetAsync(dp->d_buf, 0xff, sb, stream));
    for (int k = 0; k < plan->n_pulses; k++)
        TG_CUDA(halox__gpu_pack(dp, plan, k, real, stride, NULL, d_x, stream));
    TG_CUDA(cudaMemcpyAsync(got, dp->d_buf, dp->send_bytes, cudaMemcpyDeviceToHost, stream));
    TG_CUDA(cudaStreamSynchronize(stream));
    char *cpu = malloc(sb);
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        halox__pack_coords(real, stride, cpu + dp->buf_off[k], a->x, p->send_index, p->send_count,
                           p->dim, p->shift);
    }
    CHECK_MSG(memcmp(got, cpu, dp->send_bytes) == 0, "%s: packed pulses differ from the CPU", ctx);

    /* forces: "received" forces per pulse, accumulated in reverse pulse order */
    TG_CUDA(cudaMemcpyAsync(dp->d_buf, want, dp->send_bytes, cudaMemcpyHostToDevice, stream));
    for (int k = plan->n_pulses - 1; k >= 0; k--)
        TG_CUDA(halox__gpu_add(dp, plan, k, real, stride, d_f, NULL, stream));
    TG_CUDA(
        cudaMemcpyAsync(fgot, d_f, esize * (size_t)plan->n_total, cudaMemcpyDeviceToHost, stream));
    TG_CUDA(cudaStreamSynchronize(stream));
    for (int k = plan->n_pulses - 1; k >= 0; k--) {
        const halox_pulse_t *p = &plan->pulse[k];
        halox__add_forces(real, stride, f, p->send_index, p->send_count, want + dp->buf_off[k]);
    }
    CHECK_MSG(memcmp(fgot, f, esize * (size_t)plan->n_total) == 0,
              "%s: accumulated forces differ from the CPU", ctx);
    free(cpu);
    free(got);
    free(want);
    free(f);
    free(fgot);
    cudaFree(d_x);
    cudaFree(d_f);
}

static void test_device_plan(halox_real_t real, int stride)
{
    cudaStream_t stream;
    TG_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    halox__gpu_plan_t dp;
    memset(&dp, 0, sizeof dp);
    /* many pulses (one rank: self-exchange, halo longer than half a domain), then fewer, then
     * a larger system (the buffers regrow), then a grid's rank 0 */
    struct {
        halox_grid_t grid;
        double cutoff, buffer;
        int natoms;
    } cases[] = {
        {{{2, 2, 2}}, 3.2, 1.5, 1500}, {{{1, 1, 1}}, 0.8, 0.2, 800}, {{{2, 1, 2}}, 2.0, 0.5, 6000},
        {{{1, 2, 1}}, 3.0, 0.4, 3000}, {{{1, 1, 1}}, 3.3, 0.1, 400},
    };
    int runs = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        halox_plan_t plan;
        halox_atoms_t a;
        if (make_plan(cases[c].grid, cases[c].cutoff, cases[c].buffer, cases[c].natoms, real,
                      stride, 555 + c, &plan, &a) != 0)
            continue;
        char ctx[128];
        snprintf(ctx, sizeof ctx, "device plan %dx%dx%d cutoff %g %s stride %d (%d pulses)",
                 cases[c].grid.n[0], cases[c].grid.n[1], cases[c].grid.n[2], cases[c].cutoff,
                 test_real_name(real), stride, plan.n_pulses);
        halox_status_t st = halox__gpu_plan_upload(&dp, &plan, real, stride, stream, "test");
        CHECK_MSG(st == HALOX_OK, "%s: upload: %s", ctx, halox_last_error());
        if (st == HALOX_OK)
            check_device_plan(&dp, &plan, &a, stream, ctx);
        runs++;
        halox_plan_free(&plan);
        halox_atoms_free(&a);
    }
    CHECK(runs >= 4);
    halox__gpu_plan_free(&dp);
    CHECK(dp.d_index == NULL && dp.d_buf == NULL && dp.n_pulses == 0);
    cudaStreamDestroy(stream);
}

static void test_scan(void)
{
    const int sizes[] = {1, 1000, 16384, 16385, 70001, 300000, 20000, 1025, 300000};
    const int most = 300000;
    const size_t sc = halox__kernel_scan_scratch(most);
    int *cnt = malloc(sizeof(int) * (size_t)most), *want = malloc(sizeof(int) * (size_t)(most + 1));
    int *start = malloc(sizeof(int) * (size_t)(most + 1)), *cur = malloc(sizeof(int) * most);
    int *d_cnt = NULL, *d_start = NULL, *d_cur = NULL, *d_scr = NULL;
    TG_CUDA(cudaMalloc((void **)&d_cnt, sizeof(int) * (size_t)most));
    TG_CUDA(cudaMalloc((void **)&d_start, sizeof(int) * (size_t)(most + 1)));
    TG_CUDA(cudaMalloc((void **)&d_cur, sizeof(int) * (size_t)most));
    TG_CUDA(cudaMalloc((void **)&d_scr, sizeof(int) * sc));
    TG_CUDA(cudaMemset(d_scr, 0, sizeof(int) * sc)); /* zero when new (md_kernels.h) */
    uint64_t s = 77;
    for (size_t q = 0; q < sizeof sizes / sizeof sizes[0]; q++) {
        const int m = sizes[q];
        want[0] = 0;
        for (int k = 0; k < m; k++) {
            cnt[k] = (int)(tm_uniform(&s) * 10);
            want[k + 1] = want[k] + cnt[k];
        }
        for (int inplace = 0; inplace < 2; inplace++) {
            int *in = inplace ? d_cur : d_cnt;
            TG_CUDA(cudaMemcpy(in, cnt, sizeof(int) * (size_t)m, cudaMemcpyHostToDevice));
            TG_CUDA(cudaMemset(d_start, 0xff, sizeof(int) * (size_t)(m + 1)));
            if (!inplace)
                TG_CUDA(cudaMemset(d_cur, 0xff, sizeof(int) * (size_t)m));
            TG_CUDA(halox__kernel_scan(in, m, d_start, d_cur, d_scr, 0));
            TG_CUDA(cudaDeviceSynchronize());
            TG_CUDA(
                cudaMemcpy(start, d_start, sizeof(int) * (size_t)(m + 1), cudaMemcpyDeviceToHost));
            TG_CUDA(cudaMemcpy(cur, d_cur, sizeof(int) * (size_t)m, cudaMemcpyDeviceToHost));
            int bad = -1;
            for (int k = 0; k <= m && bad < 0; k++)
                if (start[k] != want[k] || (k < m && cur[k] != want[k]))
                    bad = k;
            CHECK_MSG(bad < 0, "scan of %d counts%s: at %d start %d cursor %d, want %d", m,
                      inplace ? " in place" : "", bad, bad >= 0 ? start[bad] : 0,
                      bad >= 0 && bad < m ? cur[bad] : 0, bad >= 0 ? want[bad] : 0);
        }
    }
    cudaFree(d_cnt);
    cudaFree(d_start);
    cudaFree(d_cur);
    cudaFree(d_scr);
    free(cnt);
    free(want);
    free(start);
    free(cur);
    printf("scan: one block and tiles with a look-back, in place and not, checked\n");
}

int main(void)
{
    int ndev = tg_device_count();
    if (ndev == 0) {
        printf("no CUDA device visible: skipped\n");
        return HALOX_TEST_SKIP;
    }
    TG_CUDA(cudaSetDevice(0));
    test_kernels();
    for (int r = 0; r < 2; r++)
        for (int stride = 3; stride <= 4; stride++)
            test_device_plan(r ? HALOX_DOUBLE : HALOX_FLOAT, stride);
    printf("device plan: uploads, shrinking and growing plans checked\n");
    test_scan();
    TEST_DONE();
}
