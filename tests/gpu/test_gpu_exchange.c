/* The GPU transports against the serial reference, run by every rank under mpiexec.
 *
 * Every rank generates the same random system and runs the reference plan build and exchanges
 * for all ranks in-process (as test_mpi_exchange.c does), builds the plan through the GPU
 * endpoint (its set-up collectives), binds device arrays and compares, over several steps, the
 * halo coordinates and the accumulated forces that came back from the device with the reference,
 * bit for bit (a force exchange straight after bind first, then coordinates and forces per step):
 * float and double, stride 3 and 4, the grids the process count allows (2x2x1, 2x2x2, ...),
 * cut-offs giving 1 and 2 pulses per dimension, then a smaller plan on the same endpoint (no stale
 * pulses). The halo is poisoned before every exchange, so an atom that is not written fails.
 * The same with full-shell plans (pulses from both neighbours: a rank sends to its upper
 * neighbour and receives from its lower one in the second half of each dimension's pulses):
 * copies and shifts, 1 and 2 pulses per direction, float and double (--quick: the half shell in
 * float only).
 *
 * Transports: mpi-staged, nccl, mpi-cuda, the NVSHMEM ones and hybrid (each when compiled in;
 * variants with an environment variable: nvshmem-*+put, nvshmem-*+tma, and hybrid+all,
 * hybrid+0-1, hybrid+node:2 with HALOX_HYBRID_UNREACHABLE, so that on one node some or all pairs
 * go through MPI). A transport that refuses this machine (nccl with two ranks on one GPU,
 * mpi-cuda without CUDA-aware MPI) is reported and skipped, after checking that it refused with
 * HALOX_ERR_UNAVAILABLE on every rank and said why.
 *
 *   test_gpu_exchange [--transport NAME[+VARIANT]] [--quick] [--stream-ordered]
 *
 * Exit 77 (skipped) when no GPU is visible. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/route.h"
#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/gpu.h"
#include "halox/inline.h"
#include "halox/plan.h"
#include "halox/transport.h"
#include "harness.h"
#include "inline_kernels.h"
#include "mpi_common.h"
#include "test_gpu_common.h"

static int g_rank, g_quick;
static int
    g_ordered; /* --stream-ordered: halox_comm_set_stream_ordered(comm, 1) on every endpoint */

/* nvshmem-inline: `steps` more exchanges inside kernels of the caller (tests/gpu/inline_kernels.cu,
 * the public device API), alternately waiting inside the consumers and in a kernel before them,
 * against the reference bit for bit; then one exchange with the transport's own kernels again
 * (both ways share the signals). A rank whose maps forward atoms (or a precision or stride the
 * view does not serve) must be refused with a reason, and exchanges with the transport's own
 * kernels meanwhile: whether a rank forwards depends on its atoms (a pulse whose forwarded part
 * is empty forwards nothing), so ranks of one plan may differ, and the two ways must work
 * together pulse by pulse. */
static void run_inline(halox_comm_t *comm, const halox_plan_t *plan, tm_reference_t *t,
                       halox_atoms_t *ref, void *d_x, void *d_f, void *hx, void *hf, int steps,
                       uint64_t *s, const char *ctx)
{
    const int P = halox_comm_size(comm), me = halox_comm_rank(comm);
    const size_t esize = halox_real_size(ref[me].real) * (size_t)ref[me].stride;
    cudaStream_t stream = (cudaStream_t)halox_comm_stream(comm);
    int forwards = 0;
    for (int k = 0; k < plan->n_pulses; k++)
        forwards |= plan->pulse[k].dep_offset < plan->pulse[k].send_count;
    halox_inline_view_t v;
    halox_status_t st = halox_comm_inline_view(comm, &v);
    const int served = !forwards && ref[me].real == HALOX_FLOAT && ref[me].stride == 3;
    if (!served) {
        CHECK_MSG(st == HALOX_ERR_UNAVAILABLE && strstr(halox_last_error(), "view"),
                  "%s: inline view of a plan it cannot serve: %s", ctx,
                  st == HALOX_OK ? "granted" : halox_last_error());
    } else {
        CHECK_MSG(st == HALOX_OK, "%s: inline view: %s", ctx, halox_last_error());
        CHECK(v.n_pulses == plan->n_pulses && v.n_home == plan->n_home);
    }
    const int use_view = served && st == HALOX_OK;
    int with_view = 0;
    MPI_Allreduce(&use_view, &with_view, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (with_view == 0)
        return;
    st = HALOX_OK;
    const size_t halo_bytes = esize * (size_t)(plan->n_total - plan->n_home);
    for (int step = 0; step <= 2 * steps; step++) {
        /* the last step: own kernels everywhere; a rank without a view: always */
        const int inside = step % 2, own = step == 2 * steps || !use_view;
        tm_move_home(ref, P, s);
        tm_reference_coords(t);
        TG_CUDA(cudaMemcpyAsync(d_x, ref[me].x, esize * (size_t)plan->n_home,
                                cudaMemcpyHostToDevice, stream));
        if (halo_bytes)
            TG_CUDA(cudaMemsetAsync((char *)d_x + esize * (size_t)plan->n_home, 0xff, halo_bytes,
                                    stream));
        TG_CUDA(cudaStreamSynchronize(stream));
        MPI_Barrier(MPI_COMM_WORLD);
        if (own)
            st = halox_comm_coords(comm);
        else
            TG_CUDA(tk_inline_coords(&v, d_x, plan->n_home, inside, stream));
        CHECK_MSG(st == HALOX_OK, "%s: inline step %d coords: %s", ctx, step, halox_last_error());
        TG_CUDA(cudaStreamSynchronize(stream));
        TG_CUDA(cudaMemcpy(hx, d_x, esize * (size_t)plan->n_total, cudaMemcpyDeviceToHost));
        CHECK_MSG(memcmp(hx, ref[me].x, esize * (size_t)plan->n_total) == 0,
                  "%s: inline step %d (%s): halo coordinates differ from the reference", ctx, step,
                  own      ? "own kernels"
                  : inside ? "waits inside"
                           : "wait kernel");
        tm_random_forces(ref, t->fs, P, s);
        TG_CUDA(cudaMemcpyAsync(d_f, t->fs[me], esize * (size_t)plan->n_total,
                                cudaMemcpyHostToDevice, stream));
        TG_CUDA(cudaStreamSynchronize(stream));
        tm_reference_forces(t);
        if (own) {
            if (st == HALOX_OK)
                st = halox_comm_forces(comm);
        } else {
            TG_CUDA(tk_inline_forces(&v, d_f, plan->n_home, plan->n_total, inside, stream));
            st = halox_comm_inline_enqueued(comm, 1);
        }
        CHECK_MSG(st == HALOX_OK, "%s: inline step %d: %s", ctx, step, halox_last_error());
        TG_CUDA(cudaStreamSynchronize(stream));
        TG_CUDA(cudaMemcpy(hf, d_f, esize * (size_t)plan->n_total, cudaMemcpyDeviceToHost));
        CHECK_MSG(memcmp(hf, t->fs[me], esize * (size_t)plan->n_total) == 0,
                  "%s: inline step %d (%s): forces differ from the reference", ctx, step,
                  own      ? "own kernels"
                  : inside ? "waits inside"
                           : "wait kernel");
    }
    ROOT_PRINTF("  %s: %d exchanges inside test kernels on %d of %d ranks (the others: the "
                "transport's own kernels), then one with the transport's own, bit-identical\n",
                ctx, 2 * steps, with_view, P);
}

/* Plan build through the endpoint, then `steps` exchanges on device arrays. */
static void run_exchange(halox_comm_t *comm, const halox_plan_params_t *params, halox_atoms_t *ref,
                         halox_atoms_t *mine, int steps, uint64_t seed, const char *ctx)
{
    const int P = halox_comm_size(comm), me = halox_comm_rank(comm);
    const size_t esize = halox_real_size(mine->real) * (size_t)mine->stride;
    cudaStream_t stream = (cudaStream_t)halox_comm_stream(comm);
    tm_reference_t t;
    CHECK_OK(tm_reference_build(&t, params, ref, P));
    halox_plan_t plan;
    halox_plan_init(&plan);
    halox_status_t st = halox_comm_build_plan(comm, params, mine, &plan);
    CHECK_MSG(st == HALOX_OK, "%s: build_plan: %s", ctx, halox_last_error());
    if (st != HALOX_OK) {
        tm_reference_free(&t);
        return;
    }
    CHECK_MSG(plan.n_pulses == t.plans[me].n_pulses && plan.n_total == t.plans[me].n_total,
              "%s: plan differs from the reference", ctx);
    if (strcmp(halox_comm_transport(comm), "hybrid") == 0) {
        /* the legs each route takes when every GPU reaches every other (one node) */
        halox__unreach_t u;
        halox__route_t rt;
        int legs[2] = {0, 0}, all[2] = {0, 0};
        if (halox__unreach_from_env(P, &u) == HALOX_OK) {
            halox__route_local(&plan, &u, &rt);
            legs[0] = rt.n_direct;
            legs[1] = rt.n_staged;
        }
        MPI_Allreduce(legs, all, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        ROOT_PRINTF("  %s: %d direct and %d staged legs over all ranks\n", ctx, all[0], all[1]);
    }
    int same = mine->n_total == ref[me].n_total && plan.n_total == mine->n_total;
    CHECK_MSG(same, "%s: n_total %d vs %d", ctx, mine->n_total, ref[me].n_total);

    const int nt = plan.n_total > 0 ? plan.n_total : 1;
    void *d_x = NULL, *d_f = NULL;
    /* through the endpoint (collective): the NVSHMEM transports need symmetric memory */
    st = halox_comm_device_alloc(comm, esize * (size_t)nt, &d_x);
    if (st == HALOX_OK)
        st = halox_comm_device_alloc(comm, esize * (size_t)nt, &d_f);
    CHECK_MSG(st == HALOX_OK, "%s: device_alloc: %s", ctx, halox_last_error());
    if (st != HALOX_OK) { /* (an earlier case's failure refuses every later call: end here) */
        if (d_x)
            halox_comm_device_free(comm, d_x);
        halox_plan_free(&plan);
        tm_reference_free(&t);
        return;
    }
    void *hx = malloc(esize * (size_t)nt), *hf = malloc(esize * (size_t)nt);
    TG_CUDA(cudaMemcpyAsync(d_x, mine->x, esize * (size_t)plan.n_total, cudaMemcpyHostToDevice,
                            stream));
    st = halox_comm_bind(comm, &plan, d_x, d_f);
    CHECK_MSG(st == HALOX_OK, "%s: bind: %s", ctx, halox_last_error());
    uint64_t s = seed;
    if (st == HALOX_OK && same) {
        /* straight after a bind the halo is the plan build's: a force exchange may come first */
        tm_random_forces(ref, t.fs, P, &s);
        TG_CUDA(cudaMemcpyAsync(d_f, t.fs[me], esize * (size_t)plan.n_total, cudaMemcpyHostToDevice,
                                stream));
        TG_CUDA(cudaStreamSynchronize(stream));
        tm_reference_forces(&t);
        st = halox_comm_forces(comm);
        CHECK_MSG(st == HALOX_OK, "%s: forces after bind: %s", ctx, halox_last_error());
        TG_CUDA(cudaStreamSynchronize(stream));
        TG_CUDA(cudaMemcpy(hf, d_f, esize * (size_t)plan.n_total, cudaMemcpyDeviceToHost));
        CHECK_MSG(st != HALOX_OK || memcmp(hf, t.fs[me], esize * (size_t)plan.n_total) == 0,
                  "%s: forces straight after bind differ from the reference", ctx);
    }
    const size_t halo_bytes = esize * (size_t)(plan.n_total - plan.n_home);
    for (int step = 0; step < steps && st == HALOX_OK && same; step++) {
        tm_move_home(ref, P, &s);
        tm_reference_coords(&t);
        /* on the exchange stream: the endpoint orders its work after ours */
        TG_CUDA(cudaMemcpyAsync(d_x, ref[me].x, esize * (size_t)plan.n_home, cudaMemcpyHostToDevice,
                                stream));
        if (halo_bytes)
            TG_CUDA(cudaMemsetAsync((char *)d_x + esize * (size_t)plan.n_home, 0xff, halo_bytes,
                                    stream)); /* poison: every halo atom must be written */
        /* GPU-initiated transports store into this halo as soon as the peer's exchange starts:
         * the poison must be in place before any peer begins */
        TG_CUDA(cudaStreamSynchronize(stream));
        MPI_Barrier(MPI_COMM_WORLD);
        st = halox_comm_coords(comm);
        CHECK_MSG(st == HALOX_OK, "%s: coords step %d: %s", ctx, step, halox_last_error());
        if (st != HALOX_OK)
            break;
        TG_CUDA(cudaStreamSynchronize(stream));
        TG_CUDA(cudaMemcpy(hx, d_x, esize * (size_t)plan.n_total, cudaMemcpyDeviceToHost));
        CHECK_MSG(memcmp(hx, ref[me].x, esize * (size_t)plan.n_total) == 0,
                  "%s: step %d: halo coordinates differ from the reference", ctx, step);

        tm_random_forces(ref, t.fs, P, &s);
        TG_CUDA(cudaMemcpyAsync(d_f, t.fs[me], esize * (size_t)plan.n_total, cudaMemcpyHostToDevice,
                                stream));
        TG_CUDA(cudaStreamSynchronize(stream)); /* fs[me] is overwritten by the reference next */
        tm_reference_forces(&t);
        st = halox_comm_forces(comm);
        CHECK_MSG(st == HALOX_OK, "%s: forces step %d: %s", ctx, step, halox_last_error());
        if (st != HALOX_OK)
            break;
        TG_CUDA(cudaStreamSynchronize(stream));
        TG_CUDA(cudaMemcpy(hf, d_f, esize * (size_t)plan.n_total, cudaMemcpyDeviceToHost));
        CHECK_MSG(memcmp(hf, t.fs[me], esize * (size_t)plan.n_home) == 0,
                  "%s: step %d: home forces differ from the reference", ctx, step);
        CHECK_MSG(memcmp(hf, t.fs[me], esize * (size_t)plan.n_total) == 0,
                  "%s: step %d: halo forces differ from the reference", ctx, step);
    }
    if (st == HALOX_OK && same && strcmp(halox_comm_transport(comm), "nvshmem-inline") == 0)
        run_inline(comm, &plan, &t, ref, d_x, d_f, hx, hf, steps, &s, ctx);
    TG_CUDA(cudaStreamSynchronize(stream));
    halox_comm_device_free(comm, d_x);
    halox_comm_device_free(comm, d_f);
    free(hx);
    free(hf);
    halox_plan_free(&plan);
    tm_reference_free(&t);
}

/* one case in the box of every case; shifts: periodic images of one-rank dimensions by shifts
 * (no pulse there), else as copies; full: a full-shell plan (pulses from both neighbours) */
static int exchange_case(halox_comm_t *comm, halox_grid_t grid, double cutoff, double buffer,
                         int natoms, uint64_t seed, halox_real_t real, int stride, int shifts,
                         int full)
{
    halox_box_t box = {{9.0, 8.0, 7.0}};
    return tm_exchange_case_full(comm, run_exchange, halox_comm_transport(comm), grid, box, cutoff,
                                 buffer, natoms, seed, real, stride, shifts, full);
}

/* Create an endpoint; NULL with *refused set when the transport refuses this machine. */
static halox_comm_t *make_comm(const char *name, halox_real_t real, int stride, int variant,
                               cudaStream_t user_stream, int *refused)
{
    halox_comm_args_t args = {0};
    args.real = real;
    args.stride = stride;
    args.timeout_s = 30; /* a broken exchange fails the test instead of hanging it */
    if (variant == 1) {
        /* explicit device and the caller's stream */
        int ndev = tg_device_count();
        args.device = g_rank % (ndev > 0 ? ndev : 1);
        args.device_set = 1;
        args.stream = user_stream;
    }
    halox_comm_t *comm = NULL;
    halox_status_t st = halox_comm_create(name, &args, &comm);
    if (st == HALOX_OK && g_ordered) /* this test's kernels: on the endpoint's stream */
        CHECK_OK(halox_comm_set_stream_ordered(comm, 1));
    *refused = st == HALOX_ERR_UNAVAILABLE;
    int any = 0, all = 0, r = *refused;
    MPI_Allreduce(&r, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&r, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    CHECK_MSG(any == all, "%s: refused on some ranks only", name);
    if (*refused) {
        ROOT_PRINTF("%s: refused here (HALOX_ERR_UNAVAILABLE): %s\n", name, halox_last_error());
        CHECK(strstr(halox_last_error(), name) != NULL || strstr(halox_last_error(), "MPI") ||
              strstr(halox_last_error(), "NCCL"));
        return NULL;
    }
    CHECK_MSG(st == HALOX_OK, "%s: create: %s", name, halox_last_error());
    if (st == HALOX_OK) { /* the endpoint answers as its transport */
        halox_transport_caps_t mine, byname;
        CHECK_OK(halox_comm_caps(comm, &mine));
        CHECK_OK(halox_transport_caps(name, &byname));
        CHECK(memcmp(&mine, &byname, sizeof mine) == 0 && mine.on_gpu && mine.stream_ordered);
    }
    return st == HALOX_OK ? comm : NULL;
}

static void test_transport(const char *name, int P)
{
    if (!halox_transport_available(name)) {
        ROOT_PRINTF("%s: not compiled in\n", name);
        return;
    }
    CHECK(halox_transport_on_gpu(name));
    ROOT_PRINTF("%s on %d process(es): %s\n", name, P, halox_transport_description(name));
    static const struct {
        halox_real_t real;
        int stride;
    } kinds[] = {{HALOX_FLOAT, 3}, {HALOX_DOUBLE, 3}, {HALOX_FLOAT, 4}, {HALOX_DOUBLE, 4}};
    /* 1 pulse, 2 pulses in split dimensions, then 1 again (fewer pulses on the same endpoint) */
    static const double cb[][2] = {{2.0, 0.5}, {3.2, 1.5}, {0.8, 0.2}};
    halox_grid_t grids[4];
    int ng = tm_grids_for(P, 1, grids);
    /* --quick: the half shell in float, the full shell in float and double */
    int nk = g_quick ? 2 : (int)(sizeof kinds / sizeof kinds[0]);
    int ncb = g_quick ? 2 : (int)(sizeof cb / sizeof cb[0]);
    int cases = 0;
    cudaStream_t user_stream = NULL;
    for (int k = 0; k < nk; k++) {
        int variant = k == 1 ? 1 : 0;
        if (variant == 1) {
            int ndev = tg_device_count();
            TG_CUDA(cudaSetDevice(g_rank % ndev));
            TG_CUDA(cudaStreamCreateWithFlags(&user_stream, cudaStreamNonBlocking));
        }
        int refused = 0;
        halox_comm_t *comm =
            make_comm(name, kinds[k].real, kinds[k].stride, variant, user_stream, &refused);
        if (!comm) {
            if (user_stream)
                cudaStreamDestroy(user_stream);
            return;
        }
        CHECK(halox_comm_rank(comm) == g_rank && halox_comm_size(comm) == P);
        CHECK(halox_comm_stream(comm) != NULL);
        if (variant == 1)
            CHECK(halox_comm_stream(comm) == (void *)user_stream);
        if (k == 0) {
            /* the set-up collectives go through the inner CPU endpoint */
            double v[1] = {1.0 + g_rank};
            CHECK_OK(halox_comm_allreduce_sum(comm, v, 1));
            CHECK(v[0] == P * (P + 1) / 2.0);
            CHECK_OK(halox_comm_barrier(comm));
        }
        /* the half shell, then the full shell (pulses from the lower neighbours after those
         * from the upper ones, 2 pulses each way where the halo is deeper than a domain) */
        for (int full = 0; full <= 1; full++) {
            if (full == 0 && g_quick && k > 0)
                continue;
            for (int g = 0; g < ng; g++)
                for (int c = 0; c < ncb; c++)
                    cases += exchange_case(comm, grids[g], cb[c][0], cb[c][1], 1500,
                                           2000 + (uint64_t)(full * 1000 + k * 100 + g * 10 + c),
                                           kinds[k].real, kinds[k].stride, 0, full);
            /* periodic images by shifts (the GPU engine's plans): a one-rank dimension has no
             * pulse, so a 1-D decomposition forwards nothing */
            for (int g = 0; g < ng; g++)
                cases += exchange_case(comm, grids[g], 2.0, 0.5, 1500,
                                       2500 + (uint64_t)(full * 1000 + k * 10 + g), kinds[k].real,
                                       kinds[k].stride, 1, full);
        }
        if (k == 0) /* so few atoms that some pulses send none (they still signal) */
            for (int full = 0; full <= 1; full++)
                cases += exchange_case(comm, grids[0], 2.0, 0.5, 12, 2999 - full, kinds[k].real,
                                       kinds[k].stride, 0, full);
        halox_comm_destroy(comm);
        if (user_stream) {
            cudaStreamDestroy(user_stream);
            user_stream = NULL;
        }
    }
    ROOT_PRINTF("%s: %d cases bit-identical to the reference\n", name, cases);
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--transport") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            g_quick = 1;
        else if (strcmp(argv[i], "--stream-ordered") == 0)
            g_ordered = 1;
    }
    /* NVLink multicast stays off (it can take shared GPUs out of service), unless set already */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    int P;
    tm_mpi_init(&argc, &argv, &g_rank, &P);
    if (tg_min_device_count() == 0)
        return tm_mpi_skip("no CUDA device visible");
    ROOT_PRINTF("%d process(es), %d CUDA device(s) visible\n", P, tg_device_count());
    /* "+put": the same transport with HALOX_NVSHMEM_PUT=1 (put-with-signal to every peer, the
     * path of peers without load/store access, forced on this node); "+tma": HALOX_NVSHMEM_TMA=1
     * (coordinates to NVLink peers by bulk asynchronous copies from shared memory); hybrid: on
     * one node every pair is direct unless declared unreachable: "+all" sends every pair through
     * MPI, "+0-1" and "+node:2" some (with 4 and 8 ranks; with 2, 0-1 is every pair) */
    static const struct {
        const char *label, *transport, *var, *value;
        int min_ranks;
    } runs[] = {
        {"mpi-staged", "mpi-staged", NULL, NULL, 1},
        {"nccl", "nccl", NULL, NULL, 1},
        {"mpi-cuda", "mpi-cuda", NULL, NULL, 1},
        {"nvshmem-stream", "nvshmem-stream", NULL, NULL, 1},
        {"nvshmem-pulse", "nvshmem-pulse", NULL, NULL, 1},
        {"nvshmem-fused", "nvshmem-fused", NULL, NULL, 1},
        {"nvshmem-inline", "nvshmem-inline", NULL, NULL, 1},
        {"nvshmem-pulse+put", "nvshmem-pulse", "HALOX_NVSHMEM_PUT", "1", 1},
        {"nvshmem-fused+put", "nvshmem-fused", "HALOX_NVSHMEM_PUT", "1", 1},
        {"nvshmem-pulse+tma", "nvshmem-pulse", "HALOX_NVSHMEM_TMA", "1", 1},
        {"nvshmem-fused+tma", "nvshmem-fused", "HALOX_NVSHMEM_TMA", "1", 1},
        {"hybrid", "hybrid", NULL, NULL, 1},
        {"hybrid+all", "hybrid", "HALOX_HYBRID_UNREACHABLE", "all", 1},
        {"hybrid+0-1", "hybrid", "HALOX_HYBRID_UNREACHABLE", "0-1", 2},
        {"hybrid+node:2", "hybrid", "HALOX_HYBRID_UNREACHABLE", "node:2", 1},
    };
    for (size_t t = 0; t < sizeof runs / sizeof runs[0]; t++) {
        if (only && strcmp(only, runs[t].label) != 0)
            continue;
        if (P < runs[t].min_ranks) {
            ROOT_PRINTF("%s: needs %d ranks: skipped\n", runs[t].label, runs[t].min_ranks);
            continue;
        }
        if (runs[t].var) {
            ROOT_PRINTF("%s: %s=%s\n", runs[t].label, runs[t].var, runs[t].value);
            setenv(runs[t].var, runs[t].value, 1);
        }
        test_transport(runs[t].transport, P);
        if (runs[t].var)
            unsetenv(runs[t].var);
    }

    tm_mpi_finish();
    TEST_DONE();
}
