/* Per-atom fields over the bound plan (halox/fields.h): the reference exchanges, and the exchange
 * through an endpoint. On the CPU transports core walks the pulses itself with the transport's
 * sendrecv (the fields are host memory there); a GPU transport gives its own walk (ops->fields).
 * The packing and the adds are the reference's functions, so every walk is bit for bit it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/fields.h"
#include "core/transport.h"
#include "halox/fields.h"

size_t halox_type_size(halox_type_t type)
{
    switch (type) {
    case HALOX_TYPE_FLOAT:
    case HALOX_TYPE_INT32:
        return 4;
    case HALOX_TYPE_DOUBLE:
    case HALOX_TYPE_INT64:
        return 8;
    case HALOX_TYPE_BYTE:
        return 1;
    }
    return 0;
}

size_t halox__field_row(const halox_field_t *f)
{
    return halox_type_size(f->type) * (size_t)f->count;
}

size_t halox__fields_span(int n, const halox_field_t *fields, size_t rows)
{
    size_t bytes = 0;
    for (int i = 0; i < n; i++)
        bytes += halox__field_span(&fields[i], rows);
    return bytes;
}

void halox__field_gather(const halox_field_t *f, void *dst, const int *index, int n)
{
    size_t row = halox__field_row(f);
    const char *src = f->data;
    for (int i = 0; i < n; i++)
        memcpy((char *)dst + (size_t)i * row, src + (size_t)index[i] * row, row);
}

void halox__field_add(const halox_field_t *f, const int *index, int n, const void *src)
{
    const int c = f->count;
    switch (f->type) {
    case HALOX_TYPE_FLOAT: {
        float *o = f->data;
        const float *s = src;
        for (int i = 0; i < n; i++)
            for (int e = 0; e < c; e++)
                o[(size_t)index[i] * c + e] += s[(size_t)i * c + e];
        break;
    }
    case HALOX_TYPE_DOUBLE: {
        double *o = f->data;
        const double *s = src;
        for (int i = 0; i < n; i++)
            for (int e = 0; e < c; e++)
                o[(size_t)index[i] * c + e] += s[(size_t)i * c + e];
        break;
    }
    case HALOX_TYPE_INT32: {
        /* unsigned: integer sums wrap instead of overflowing into undefined behaviour */
        uint32_t *o = f->data;
        const uint32_t *s = src;
        for (int i = 0; i < n; i++)
            for (int e = 0; e < c; e++)
                o[(size_t)index[i] * c + e] += s[(size_t)i * c + e];
        break;
    }
    case HALOX_TYPE_INT64: {
        uint64_t *o = f->data;
        const uint64_t *s = src;
        for (int i = 0; i < n; i++)
            for (int e = 0; e < c; e++)
                o[(size_t)index[i] * c + e] += s[(size_t)i * c + e];
        break;
    }
    case HALOX_TYPE_BYTE:
        break;
    }
}

/* ---- the reference ----------------------------------------------------------------------------
 */

void halox_reference_forward(const halox_plan_t *plans, int nranks, const halox_field_t *field)
{
    if (!plans || !field || nranks < 1)
        return;
    /* pulse order: forwarded rows were delivered by earlier pulses; a receiver's range for
     * pulse k is never read by pulse k's senders, so gathering straight into it is safe */
    for (int k = 0; k < plans[0].n_pulses; k++)
        for (int r = 0; r < nranks; r++) {
            const halox_pulse_t *p = &plans[r].pulse[k];
            const halox_pulse_t *q = &plans[p->send_rank].pulse[k];
            const halox_field_t *to = &field[p->send_rank];
            halox__field_gather(&field[r],
                                (char *)to->data + (size_t)q->recv_offset * halox__field_row(to),
                                p->send_index, p->send_count);
        }
}

void halox_reference_reverse(const halox_plan_t *plans, int nranks, const halox_field_t *field)
{
    if (!plans || !field || nranks < 1 || field[0].type == HALOX_TYPE_BYTE)
        return;
    /* reverse pulse order: a receive range is complete once the later pulses have added theirs */
    for (int k = plans[0].n_pulses - 1; k >= 0; k--)
        for (int r = 0; r < nranks; r++) {
            const halox_pulse_t *p = &plans[r].pulse[k];
            const halox_pulse_t *q = &plans[p->send_rank].pulse[k];
            const halox_field_t *from = &field[p->send_rank];
            halox__field_add(&field[r], p->send_index, p->send_count,
                             (const char *)from->data +
                                 (size_t)q->recv_offset * halox__field_row(from));
        }
}

/* ---- checks -----------------------------------------------------------------------------------
 */

halox_status_t halox__fields_check(const halox_comm_t *comm, const char *op, int n,
                                   const halox_field_t *fields, int reverse)
{
    if (n < 0 || n > HALOX_MAX_FIELDS || (n > 0 && !fields))
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "rank %d: %s: %d fields%s: give 0 to %d fields in an array", comm->rank,
                            op, n, n > 0 && !fields ? " but fields is NULL" : "", HALOX_MAX_FIELDS);
    int need = comm->plan ? comm->plan->n_total : 0;
    for (int i = 0; i < n; i++) {
        const halox_field_t *f = &fields[i];
        if (halox_type_size(f->type) == 0)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d: %s: field %d has the unknown type %d: use a "
                                "HALOX_TYPE_ value",
                                comm->rank, op, i, (int)f->type);
        if (f->count < 1)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d: %s: field %d has %d elements per atom: give at least 1",
                                comm->rank, op, i, f->count);
        if (reverse && f->type == HALOX_TYPE_BYTE)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d: %s: field %d is HALOX_TYPE_BYTE, which has no sum: a "
                                "reverse exchange needs a number type (float, double, int32, "
                                "int64)",
                                comm->rank, op, i);
        if (!f->data && f->capacity > 0)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d: %s: field %d has capacity %d but data is NULL",
                                comm->rank, op, i, f->capacity);
        if (f->capacity < need)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d: %s: field %d holds %d rows but the bound plan has %d "
                                "atoms (home and halo): grow it to at least %d rows (and bind "
                                "the fields again if they are bound)",
                                comm->rank, op, i, f->capacity, need, need);
    }
    return HALOX_OK;
}

/* Agree on the status and on the shapes: every rank's n, and type and count per field, must be
 * rank 0's. One allgather. */
static halox_status_t halox__fields_agree(halox_comm_t *comm, halox_status_t st, const char *op,
                                          int nf, const halox_field_t *ff, int nr,
                                          const halox_field_t *fr, int *in_kernel_p)
{
    enum { W = 4 + 2 * HALOX_MAX_FIELDS };
    long long msg[W] = {0};
    long long *all = malloc(sizeof(long long) * W * (size_t)comm->size);
    if (!all)
        st = halox__error(HALOX_ERR_NO_MEMORY, "rank %d: %s: no memory", comm->rank, op);
    if (st == HALOX_OK) {
        msg[1] = nf;
        msg[2] = nr;
        for (int i = 0; i < nf; i++)
            msg[3 + i] = (long long)ff[i].type << 32 | (long long)ff[i].count;
        for (int i = 0; i < nr; i++)
            msg[3 + HALOX_MAX_FIELDS + i] = (long long)fr[i].type << 32 | (long long)fr[i].count;
        msg[W - 1] = in_kernel_p ? *in_kernel_p : 0;
    }
    if (!all) /* the same message size as every rank's: agree_gather finds its own room */
        return halox__agree_gather(comm, st, op, msg, W, NULL);
    st = halox__agree_gather(comm, st, op, msg, W, all);
    for (int r = 1; st == HALOX_OK && r < comm->size; r++) {
        const long long *a = all, *b = all + (size_t)r * W;
        for (int j = 1; j < W - 1 && st == HALOX_OK; j++)
            if (a[j] != b[j]) {
                const char *what = j == 1                     ? "forward fields"
                                   : j == 2                   ? "reverse fields"
                                   : j < 3 + HALOX_MAX_FIELDS ? "a forward field's type or count"
                                                              : "a reverse field's type or count";
                st = halox__error(HALOX_ERR_INVALID_ARG,
                                  "rank %d: %s: ranks 0 and %d differ in %s (%lld against %lld, "
                                  "entry %d): every rank passes the same fields",
                                  comm->rank, op, r, what, a[j], b[j], j);
            }
    }
    /* each direction's fields go inside the transport's kernels only where every rank's can (bit
     * 0: forward, bit 1: reverse) */
    for (int r = 0; in_kernel_p && r < comm->size; r++)
        *in_kernel_p = st == HALOX_OK ? *in_kernel_p & (int)all[(size_t)r * W + W - 1] : 0;
    free(all);
    return st;
}

/* ---- the exchange through an endpoint ------------------------------------------------------- */

/* The CPU transports' walk: pulse by pulse (reverse: backwards) through the transport's
 * sendrecv, the rows of every field packed one field's block after another
 * (halox__fields_span). */
static halox_status_t halox__fields_walk(halox_comm_t *comm, int reverse, int n,
                                         const halox_field_t *fields)
{
    const halox_plan_t *plan = comm->plan;
    size_t most = 0;
    for (int k = 0; k < plan->n_pulses; k++) {
        size_t b = halox__fields_span(n, fields, (size_t)plan->pulse[k].send_count) +
                   halox__fields_span(n, fields, (size_t)plan->pulse[k].recv_count);
        most = b > most ? b : most;
    }
    if (most > comm->field_cap) {
        void *buf = realloc(comm->field_buf, most);
        if (!buf)
            return halox__error(HALOX_ERR_NO_MEMORY,
                                "rank %d: field exchange: no memory for %zu bytes of messages",
                                comm->rank, most);
        comm->field_buf = buf;
        comm->field_cap = most;
    }
    halox_status_t st = HALOX_OK;
    for (int s = 0; s < plan->n_pulses && st == HALOX_OK; s++) {
        const int k = reverse ? plan->n_pulses - 1 - s : s;
        const halox_pulse_t *p = &plan->pulse[k];
        char *mine = comm->field_buf; /* the rows we send */
        size_t nmine = (size_t)(reverse ? p->recv_count : p->send_count);
        size_t ntheirs = (size_t)(reverse ? p->send_count : p->recv_count);
        const size_t mbytes = halox__fields_span(n, fields, nmine);
        const size_t tbytes = halox__fields_span(n, fields, ntheirs);
        char *theirs = mine + mbytes;
        char *o = mine;
        for (int i = 0; i < n; i++) {
            const halox_field_t *f = &fields[i];
            size_t fr = halox__field_row(f);
            if (reverse)
                memcpy(o, (const char *)f->data + (size_t)p->recv_offset * fr, nmine * fr);
            else
                halox__field_gather(f, o, p->send_index, p->send_count);
            o += halox__field_span(f, nmine);
        }
        if (p->send_rank == comm->rank) /* a self pulse: one rank in this dimension */
            theirs = mine;
        else if (reverse)
            st =
                comm->ops->sendrecv(comm, p->recv_rank, mine, mbytes, p->send_rank, theirs, tbytes);
        else
            st =
                comm->ops->sendrecv(comm, p->send_rank, mine, mbytes, p->recv_rank, theirs, tbytes);
        if (st != HALOX_OK)
            break;
        const char *in = theirs;
        for (int i = 0; i < n; i++) {
            const halox_field_t *f = &fields[i];
            size_t fr = halox__field_row(f);
            if (reverse)
                halox__field_add(f, p->send_index, p->send_count, in);
            else
                memcpy((char *)f->data + (size_t)p->recv_offset * fr, in, ntheirs * fr);
            in += halox__field_span(f, ntheirs);
        }
        comm->stats.bytes_sent += (long long)mbytes;
    }
    return st;
}

halox_status_t halox__fields_exchange(halox_comm_t *comm, int reverse, int n,
                                      const halox_field_t *fields)
{
    if (n == 0)
        return HALOX_OK;
    if (reverse ? comm->rev_in_kernel && fields == comm->bound_rev
                : comm->fwd_in_kernel && fields == comm->bound_fwd) {
        /* stored with the atoms (forces) by the exchange's own kernels */
        const halox_plan_t *plan = comm->plan;
        size_t row = 0;
        long long sent = 0;
        for (int i = 0; i < n; i++)
            row += halox__field_row(&fields[i]);
        for (int k = 0; k < plan->n_pulses; k++)
            if (plan->pulse[k].send_rank != comm->rank)
                sent += reverse ? plan->pulse[k].recv_count : plan->pulse[k].send_count;
        comm->stats.field_exchanges++;
        comm->stats.fields_in_kernel++;
        comm->stats.bytes_sent += sent * (long long)row;
        return HALOX_OK;
    }
    double t0 = halox__now();
    halox_status_t st = comm->ops->fields ? comm->ops->fields(comm, reverse, n, fields)
                                          : halox__fields_walk(comm, reverse, n, fields);
    comm->stats.field_exchanges++;
    comm->stats.field_seconds += halox__now() - t0;
    return st;
}

static halox_status_t halox__fields_usable(const halox_comm_t *comm, const char *op)
{
    if (comm->ops->on_gpu && !comm->ops->fields)
        return halox__error(HALOX_ERR_UNAVAILABLE,
                            "rank %d: %s: transport '%s' does not exchange fields yet: use "
                            "threads or mpi",
                            comm->rank, op, comm->ops->name);
    if (!comm->plan)
        return halox__error(HALOX_ERR_STATE,
                            "rank %d: %s: no plan bound: call halox_comm_bind() after every plan "
                            "build",
                            comm->rank, op);
    return HALOX_OK;
}

static halox_status_t halox__fields_call(halox_comm_t *comm, int reverse, int n,
                                         const halox_field_t *fields)
{
    const char *op = reverse ? "reverse" : "forward";
    if (!comm)
        return halox__error(HALOX_ERR_INVALID_ARG, "%s: comm is NULL", op);
    halox_status_t st = halox__fields_usable(comm, op);
    if (st == HALOX_OK)
        st = halox__fields_check(comm, op, n, fields, reverse);
    st = reverse ? halox__fields_agree(comm, st, op, 0, NULL, st == HALOX_OK ? n : 0, fields, NULL)
                 : halox__fields_agree(comm, st, op, st == HALOX_OK ? n : 0, fields, 0, NULL, NULL);
    if (st != HALOX_OK)
        return st;
    return halox__fields_exchange(comm, reverse, n, fields);
}

halox_status_t halox_comm_forward(halox_comm_t *comm, int n, const halox_field_t *fields)
{
    return halox__fields_call(comm, 0, n, fields);
}

halox_status_t halox_comm_reverse(halox_comm_t *comm, int n, const halox_field_t *fields)
{
    return halox__fields_call(comm, 1, n, fields);
}

halox_status_t halox_comm_bind_fields(halox_comm_t *comm, int n_forward,
                                      const halox_field_t *forward, int n_reverse,
                                      const halox_field_t *reverse)
{
    const char *op = "bind_fields";
    if (!comm)
        return halox__error(HALOX_ERR_INVALID_ARG, "%s: comm is NULL", op);
    halox_status_t st = n_forward || n_reverse ? halox__fields_usable(comm, op) : HALOX_OK;
    if (st == HALOX_OK)
        st = halox__fields_check(comm, op, n_forward, forward, 0);
    if (st == HALOX_OK)
        st = halox__fields_check(comm, op, n_reverse, reverse, 1);
    int ok = st == HALOX_OK;
    int (*can)(const halox_comm_t *, int, int, const halox_field_t *) = comm->ops->fields_in_kernel;
    int in_kernel = ok && can ? (n_forward > 0 && can(comm, 0, n_forward, forward)) |
                                    (n_reverse > 0 && can(comm, 1, n_reverse, reverse)) << 1
                              : 0;
    st = halox__fields_agree(comm, st, op, ok ? n_forward : 0, forward, ok ? n_reverse : 0, reverse,
                             &in_kernel);
    /* a failure unbinds every field, on every rank alike */
    comm->n_bound_fwd = st == HALOX_OK ? n_forward : 0;
    comm->n_bound_rev = st == HALOX_OK ? n_reverse : 0;
    comm->fwd_in_kernel = st == HALOX_OK && (in_kernel & 1);
    comm->rev_in_kernel = st == HALOX_OK && (in_kernel & 2);
    if (comm->n_bound_fwd)
        memcpy(comm->bound_fwd, forward, sizeof *forward * (size_t)n_forward);
    if (comm->n_bound_rev)
        memcpy(comm->bound_rev, reverse, sizeof *reverse * (size_t)n_reverse);
    /* the transport's tables follow (a failure here is its device's, which fails the endpoint) */
    halox_status_t bst = comm->ops->fields_bound ? comm->ops->fields_bound(comm) : HALOX_OK;
    return st != HALOX_OK ? st : bst;
}
