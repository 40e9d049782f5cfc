/* The per-atom field exchange of every GPU transport (ops->fields; halox/fields.h): the fields
 * are device arrays; pulse by pulse a kernel gathers the rows a pulse sends (the bound plan's
 * maps, already on the device) into device scratch, the rows cross through pinned host memory
 * and the transport's set-up sendrecv (each field's block 16-byte aligned: halox__fields_span),
 * and a copy (forward) or a typed add (reverse) lands them.
 * A self pulse (one rank in the dimension) stays on the device. The operations are core's
 * (halox__field_gather, halox__field_add), so the result is halox_reference_forward/_reverse's,
 * bit for bit. The host waits for the stream before each message, so the exchange cannot be
 * captured in a CUDA graph. */
#include <string.h>

#include "core/error.h"
#include "core/fields.h"
#include "transports/gpu/gpu.h"
#include "transports/gpu/halo_kernels.h"

/* Pack pulse k's rows of every field into d (the rows this rank sends: the map's atoms
 * forward, its received range reverse). */
static cudaError_t gf_pack(const halox__gpu_t *g, const halox_plan_t *plan, int k, int reverse,
                           int n, const halox_field_t *fields, char *d, size_t nrows)
{
    const halox_pulse_t *p = &plan->pulse[k];
    const int *map = g->plan.d_index + g->plan.index_off[k];
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < n && e == cudaSuccess; i++) {
        const size_t fr = halox__field_row(&fields[i]);
        e = reverse
                ? cudaMemcpyAsync(d, (const char *)fields[i].data + (size_t)p->recv_offset * fr,
                                  nrows * fr, cudaMemcpyDeviceToDevice, g->stream)
                : halox_kernel_field_gather(d, fields[i].data, map, p->send_count, fr, g->stream);
        d += halox__field_span(&fields[i], nrows);
    }
    return e;
}

/* Land the rows that came in (s, nrows of them) in every field. */
static cudaError_t gf_land(const halox__gpu_t *g, const halox_plan_t *plan, int k, int reverse,
                           int n, const halox_field_t *fields, const char *s, size_t nrows)
{
    const halox_pulse_t *p = &plan->pulse[k];
    const int *map = g->plan.d_index + g->plan.index_off[k];
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < n && e == cudaSuccess; i++) {
        const size_t fr = halox__field_row(&fields[i]);
        e = reverse ? halox_kernel_field_add(fields[i].type, fields[i].count, fields[i].data, map,
                                             p->send_count, s, g->stream)
                    : cudaMemcpyAsync((char *)fields[i].data + (size_t)p->recv_offset * fr, s,
                                      nrows * fr, cudaMemcpyDeviceToDevice, g->stream);
        s += halox__field_span(&fields[i], nrows);
    }
    return e;
}

halox_status_t halox__gpu_fields(halox_comm_t *comm, int reverse, int n,
                                 const halox_field_t *fields)
{
    halox__gpu_t *g = halox__gpu(comm);
    const char *what = reverse ? "reverse field exchange" : "forward field exchange";
    halox_status_t st = halox__gpu_usable(comm, g, what);
    if (st == HALOX_OK && comm->graph_mode)
        st = halox__error(HALOX_ERR_UNAVAILABLE,
                          "%s: rank %d: a %s waits for the stream between messages and cannot be "
                          "captured in a CUDA graph: exchange fields outside the captured step",
                          g->name, comm->rank, what);
    if (st == HALOX_OK)
        st = halox__gpu_set_device(comm, g);
    if (st != HALOX_OK)
        return st;
    const halox_plan_t *plan = comm->plan;
    size_t most = 0;
    for (int k = 0; k < plan->n_pulses; k++) {
        const size_t b = halox__fields_span(n, fields, (size_t)plan->pulse[k].send_count) +
                         halox__fields_span(n, fields, (size_t)plan->pulse[k].recv_count);
        most = b > most ? b : most;
    }
    /* the scratch may be in use by an earlier exchange's copies: wait before it can move */
    if (most > g->fd_cap || most > g->fh_cap)
        st = halox__gpu_drain(comm, g, what, "the stream before its buffers grow");
    if (st == HALOX_OK)
        st = halox__gpu_scratch(comm, g, &g->fd_buf, &g->fd_cap, most, 0, "field exchange");
    if (st == HALOX_OK)
        st = halox__gpu_scratch(comm, g, &g->fh_buf, &g->fh_cap, most, 1, "field exchange");
    for (int s = 0; s < plan->n_pulses && st == HALOX_OK; s++) {
        const int k = reverse ? plan->n_pulses - 1 - s : s;
        const halox_pulse_t *p = &plan->pulse[k];
        const size_t nmine = (size_t)(reverse ? p->recv_count : p->send_count);
        const size_t ntheirs = (size_t)(reverse ? p->send_count : p->recv_count);
        const size_t mbytes = halox__fields_span(n, fields, nmine);
        const size_t tbytes = halox__fields_span(n, fields, ntheirs);
        char *d_mine = g->fd_buf, *d_theirs = d_mine + mbytes;
        char *h_mine = g->fh_buf, *h_theirs = h_mine + mbytes;
        st =
            halox__gpu_check(comm, g, gf_pack(g, plan, k, reverse, n, fields, d_mine, nmine), what);
        if (st != HALOX_OK)
            break;
        if (p->send_rank == comm->rank) { /* a self pulse: the rows stay on the device */
            d_theirs = d_mine;
        } else {
            st = halox__gpu_check(
                comm, g, cudaMemcpyAsync(h_mine, d_mine, mbytes, cudaMemcpyDeviceToHost, g->stream),
                what);
            if (st == HALOX_OK)
                st = halox__gpu_drain(comm, g, what, "the rows to send");
            if (st == HALOX_OK)
                st = reverse ? comm->ops->sendrecv(comm, p->recv_rank, h_mine, mbytes, p->send_rank,
                                                   h_theirs, tbytes)
                             : comm->ops->sendrecv(comm, p->send_rank, h_mine, mbytes, p->recv_rank,
                                                   h_theirs, tbytes);
            if (st == HALOX_OK)
                st = halox__gpu_check(
                    comm, g,
                    cudaMemcpyAsync(d_theirs, h_theirs, tbytes, cudaMemcpyHostToDevice, g->stream),
                    what);
            comm->stats.bytes_sent += (long long)(mbytes);
        }
        if (st == HALOX_OK)
            st = halox__gpu_check(comm, g,
                                  gf_land(g, plan, k, reverse, n, fields, d_theirs, ntheirs), what);
    }
    return st;
}

void halox__gpu_fields_free(halox__gpu_t *g)
{
    if (g->fd_buf)
        cudaFree(g->fd_buf);
    if (g->fh_buf)
        cudaFreeHost(g->fh_buf);
    g->fd_buf = g->fh_buf = NULL;
    g->fd_cap = g->fh_cap = 0;
}
