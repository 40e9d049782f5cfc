/* The halo exchange's pulses on the GPU stream, once for the GPU transports: see pulse_gpu.h.
 * Needs the CUDA runtime only (no MPI). */
#include "transports/gpu/pulse_gpu.h"
#include "core/pack.h"

void halox__pulse_gpu_start(halox__pulse_gpu_cursor_t *c, int dir, int flags, char *slots)
{
    *c = (halox__pulse_gpu_cursor_t){.e = cudaSuccess, .dir = dir, .flags = flags, .slots = slots};
}

/* The transport's part `part` of pulse k. */
static int halox__pulse_gpu_part(halox__pulse_gpu_cursor_t *c, halox__pulse_gpu_part_t part, int k)
{
    c->part = part;
    c->k = k;
    return 1;
}

/* A launch of the walk failed: the transport reports it. */
static int halox__pulse_gpu_stop(halox__pulse_gpu_cursor_t *c, cudaError_t e, const char *what)
{
    c->e = e;
    c->what = what;
    return 0;
}

/* Pulse k's slot: NULL, the device plan's staging buffer. */
static void *halox__pulse_gpu_slot(const halox__pulse_gpu_cursor_t *c, const halox__gpu_t *g, int k)
{
    return c->slots ? c->slots + g->plan.buf_off[k] : NULL;
}

/* Pulse k's event, when the transport wants it: 0 after a failed record (*st_p). */
static int halox__pulse_gpu_event(halox_comm_t *comm, halox__gpu_t *g,
                                  const halox__pulse_gpu_cursor_t *c, int k, halox_status_t *st_p)
{
    if (!(c->flags & HALOX__PULSE_GPU_EVENTS))
        return 1;
    *st_p = halox__gpu_record(comm, g, c->dir, k);
    return *st_p == HALOX_OK;
}

/* Coordinates, pulses in order (c->i: the pulse now, c->j: how far its landings went). Each
 * pulse first lands the earlier host-received pulses whose atoms it forwards (stream-ordered
 * transports have no landings: their waits are earlier on the stream), then packs (into our own
 * halo for a self pulse) and is sent. */
static int halox__pulse_gpu_coords(halox_comm_t *comm, halox__gpu_t *g,
                                   halox__pulse_gpu_cursor_t *c, halox_status_t *st_p)
{
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    char *x = comm->x;
    cudaError_t e = cudaSuccess;
    for (;; c->i++, c->j = 0) {
        if (c->after) { /* the transport sent pulse c->i */
            c->after = 0;
            if (!halox__pulse_gpu_event(comm, g, c, c->i, st_p))
                return 0;
            continue;
        }
        const int k = c->i;
        /* after the last pulse (k == n): every pulse not landed yet */
        const uint32_t want = k < n ? dp->needs[k] : ~0u;
        while ((c->flags & HALOX__PULSE_GPU_LANDS) && c->j < k) {
            const int j = c->j++;
            if (!(want & (1u << j)) || (c->landed & (1u << j)))
                continue;
            c->landed |= 1u << j;
            return halox__pulse_gpu_part(c, HALOX__PULSE_GPU_LAND, j);
        }
        if (k == n)
            return 0;
        const halox_pulse_t *p = &plan->pulse[k];
        const int pack = !g->no_atoms && p->send_count > 0;
        if (halox__pulse_self(plan, k)) {
            /* a single rank in this dimension: pack straight into our own halo */
            if (pack && (e = halox__gpu_pack(dp, plan, k, comm->real, comm->stride,
                                             x + (size_t)p->recv_offset * esize, x, g->stream)) !=
                            cudaSuccess)
                return halox__pulse_gpu_stop(c, e, "pack kernel (local copy)");
            c->landed |= 1u << k;
            if (!halox__pulse_gpu_event(comm, g, c, k, st_p))
                return 0;
            continue;
        }
        if (pack &&
            (e = halox__gpu_pack(dp, plan, k, comm->real, comm->stride,
                                 halox__pulse_gpu_slot(c, g, k), x, g->stream)) != cudaSuccess)
            return halox__pulse_gpu_stop(c, e, "pack kernel");
        c->after = 1;
        return halox__pulse_gpu_part(c, HALOX__PULSE_GPU_SEND, k);
    }
}

/* Forces, pulses in reverse order (c->i: pulses walked so far): pulse k's halo forces go back
 * once the later pulses that forward its atoms added theirs (earlier on the stream), and the
 * returned forces are added in the reference's order. A self pulse adds its own halo's forces
 * straight from f. */
static int halox__pulse_gpu_forces(halox_comm_t *comm, halox__gpu_t *g,
                                   halox__pulse_gpu_cursor_t *c, halox_status_t *st_p)
{
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    char *f = comm->f;
    cudaError_t e = cudaSuccess;
    for (;; c->i++) {
        const int k = n - 1 - c->i;
        if (k < 0)
            return 0;
        const halox_pulse_t *p = &plan->pulse[k];
        const int add = !g->no_atoms && p->send_count > 0;
        if (c->after) { /* the transport swapped pulse k: its returned forces */
            c->after = 0;
            if (add &&
                (e = halox__gpu_add(dp, plan, k, comm->real, comm->stride, f,
                                    halox__pulse_gpu_slot(c, g, k), g->stream)) != cudaSuccess)
                return halox__pulse_gpu_stop(c, e, "force accumulation kernel");
        } else if (halox__pulse_self(plan, k)) {
            if (add &&
                (e = halox__gpu_add(dp, plan, k, comm->real, comm->stride, f,
                                    f + (size_t)p->recv_offset * esize, g->stream)) != cudaSuccess)
                return halox__pulse_gpu_stop(c, e, "force accumulation kernel (local)");
        } else {
            c->after = 1;
            return halox__pulse_gpu_part(c, HALOX__PULSE_GPU_SWAP, k);
        }
        if (!halox__pulse_gpu_event(comm, g, c, k, st_p))
            return 0;
    }
}

int halox__pulse_gpu_next(halox_comm_t *comm, halox__pulse_gpu_cursor_t *c, halox_status_t *st_p)
{
    halox__gpu_t *g = halox__gpu(comm);
    return c->dir == HALOX__GPU_COORDS ? halox__pulse_gpu_coords(comm, g, c, st_p)
                                       : halox__pulse_gpu_forces(comm, g, c, st_p);
}
