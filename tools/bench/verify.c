/* Correctness before timing: what every rank's arrays must hold after one coordinate and one
 * force exchange (the serial reference), the bound arrays (host or device), the check. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "tool_env.h"

static void *dup_bytes(const void *src, size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p && bytes)
        memcpy(p, src, bytes);
    return p;
}

int bench_expect_make(const halox_plan_t *plans, int nranks, halox_real_t real, int stride,
                      void *const *x_home, uint64_t seed, bench_expect_t *e)
{
    memset(e, 0, sizeof *e);
    e->nranks = nranks;
    e->esize = halox_real_size(real) * (size_t)stride;
    e->n_home = calloc((size_t)nranks, sizeof *e->n_home);
    e->n_total = calloc((size_t)nranks, sizeof *e->n_total);
    e->x = calloc((size_t)nranks, sizeof *e->x);
    e->f_in = calloc((size_t)nranks, sizeof *e->f_in);
    e->f_out = calloc((size_t)nranks, sizeof *e->f_out);
    if (!e->n_home || !e->n_total || !e->x || !e->f_in || !e->f_out)
        return -1;
    uint64_t s = seed ^ 0xf00d;
    for (int r = 0; r < nranks; r++) {
        e->n_home[r] = plans[r].n_home;
        e->n_total[r] = plans[r].n_total;
        const size_t bytes = e->esize * (size_t)plans[r].n_total;
        e->x[r] = dup_bytes(x_home[r], bytes);
        e->f_in[r] = malloc(bytes ? bytes : 1);
        if (!e->x[r] || !e->f_in[r])
            return -1;
        for (size_t i = 0; i < (size_t)plans[r].n_total * (size_t)stride; i++) {
            double v = bench_uniform(&s) * 20 - 10;
            if (real == HALOX_FLOAT)
                ((float *)e->f_in[r])[i] = (float)v;
            else
                ((double *)e->f_in[r])[i] = v;
        }
        if (!(e->f_out[r] = dup_bytes(e->f_in[r], bytes)))
            return -1;
    }
    halox_reference_coords(plans, nranks, real, stride, e->x);
    halox_reference_forces(plans, nranks, real, stride, e->f_out);
    /* test hook: a spoilt reference stands for a wrong exchange, so the tests can prove that a
     * wrong result fails the benchmark */
    const char *spoil = tool_env_string("HALOX_BENCH_SPOIL_REFERENCE");
    if (spoil && !strcmp(spoil, "1"))
        ((unsigned char *)e->f_out[0])[0] ^= 0x10;
    return 0;
}

void bench_expect_free(bench_expect_t *e)
{
    for (int r = 0; r < e->nranks; r++) {
        if (e->x)
            free(e->x[r]);
        if (e->f_in)
            free(e->f_in[r]);
        if (e->f_out)
            free(e->f_out[r]);
    }
    free(e->x);
    free(e->f_in);
    free(e->f_out);
    free(e->n_home);
    free(e->n_total);
    memset(e, 0, sizeof *e);
}

halox_status_t bench_arrays_alloc(halox_comm_t *comm, size_t bytes, bench_arrays_t *a)
{
    memset(a, 0, sizeof *a);
    a->comm = comm;
    a->bytes = bytes ? bytes : 1;
    a->on_gpu = halox_transport_on_gpu(halox_comm_transport(comm));
    if (!a->on_gpu) {
        a->x = calloc(1, a->bytes);
        a->f = calloc(1, a->bytes);
        return a->x && a->f ? HALOX_OK : HALOX_ERR_NO_MEMORY;
    }
    /* through the endpoint: the NVSHMEM transports need symmetric memory */
    a->stream = halox_comm_stream(comm);
    halox_status_t st = halox_comm_device_alloc(comm, a->bytes, &a->x);
    if (st == HALOX_OK)
        st = halox_comm_device_alloc(comm, a->bytes, &a->f);
    return st;
}

void bench_arrays_free(bench_arrays_t *a)
{
    if (a->on_gpu) {
        /* collective, in the same order on every rank */
        if (a->x)
            halox_comm_device_free(a->comm, a->x);
        if (a->f)
            halox_comm_device_free(a->comm, a->f);
    } else {
        free(a->x);
        free(a->f);
    }
    a->x = a->f = NULL;
}

/* Home coordinates in, halo poisoned (NaN bytes), input forces in. */
static int load(bench_arrays_t *a, const bench_expect_t *e, int me)
{
    const size_t home = e->esize * (size_t)e->n_home[me];
    const size_t total = e->esize * (size_t)e->n_total[me];
    if (!a->on_gpu) {
        memcpy(a->x, e->x[me], home);
        memset((char *)a->x + home, 0xff, total - home);
        memcpy(a->f, e->f_in[me], total);
        return 0;
    }
    return bench_gpu_put(a->x, e->x[me], home, a->stream) ||
           bench_gpu_fill((char *)a->x + home, 0xff, total - home, a->stream) ||
           bench_gpu_put(a->f, e->f_in[me], total, a->stream) || bench_gpu_sync(a->stream);
}

static int compare(bench_arrays_t *a, const bench_expect_t *e, int me, int *match_p)
{
    const size_t total = e->esize * (size_t)e->n_total[me];
    void *hx = a->x, *hf = a->f;
    if (a->on_gpu) {
        hx = malloc(total ? total : 1);
        hf = malloc(total ? total : 1);
        if (!hx || !hf || bench_gpu_get(hx, a->x, total, a->stream) ||
            bench_gpu_get(hf, a->f, total, a->stream)) {
            free(hx);
            free(hf);
            return -1;
        }
    }
    *match_p = memcmp(hx, e->x[me], total) == 0 && memcmp(hf, e->f_out[me], total) == 0;
    if (a->on_gpu) {
        free(hx);
        free(hf);
    }
    return 0;
}

halox_status_t bench_exchange_host(halox_comm_t *comm, void *ctx)
{
    (void)ctx;
    halox_status_t st = halox_comm_coords(comm);
    return st == HALOX_OK ? halox_comm_forces(comm) : st;
}

halox_status_t bench_verify(bench_arrays_t *a, const bench_expect_t *e, int me,
                            bench_exchange_fn run, void *ctx, int *ok_p)
{
    *ok_p = 0;
    if (load(a, e, me))
        return HALOX_ERR_INTERNAL;
    /* GPU-initiated transports store into this halo as soon as a peer starts */
    halox_status_t st = halox_comm_barrier(a->comm);
    if (st == HALOX_OK)
        st = run(a->comm, ctx);
    if (st != HALOX_OK)
        return st;
    int match = 0;
    if (compare(a, e, me, &match))
        return HALOX_ERR_INTERNAL;
    double bad = match ? 0.0 : 1.0;
    st = halox_comm_allreduce_max(a->comm, &bad, 1);
    *ok_p = st == HALOX_OK && bad == 0.0;
    return st;
}
