/* The halo exchange's pulses on the GPU stream, once for the GPU transports: see pulse_gpu.h.
 * Needs the CUDA runtime only (no MPI). */
#include "transports/gpu/pulse_gpu.h"
#include "core/pack.h"

static void *halox__pulse_gpu_slot(halox_comm_t *comm, const halox__pulse_gpu_leg_t *leg, int dir,
                                   int k)
{
    return leg->slot ? leg->slot(comm, dir, k) : NULL;
}

/* Coordinates, pulses in order. Each pulse first lands the earlier host-received pulses whose
 * atoms it forwards (stream-ordered legs have no land: their waits are earlier on the stream),
 * then packs (into our own halo for a self pulse) and sends. */
static halox_status_t halox__pulse_gpu_coords_loop(halox_comm_t *comm, halox__gpu_t *g,
                                                   const halox__pulse_gpu_leg_t *leg)
{
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    char *x = comm->x;
    halox_status_t st = HALOX_OK;
    cudaError_t e = cudaSuccess;
    uint32_t landed = 0; /* in our halo (or its copy there enqueued): landed, or a self pulse */
    for (int k = 0; k <= n && st == HALOX_OK; k++) {
        /* after the last pulse (k == n): every pulse not landed yet */
        const uint32_t want = k < n ? dp->needs[k] : ~0u;
        for (int j = 0; j < k && leg->land && st == HALOX_OK; j++) {
            if (!(want & (1u << j)) || (landed & (1u << j)))
                continue;
            st = leg->land(comm, j);
            landed |= 1u << j;
        }
        if (k == n || st != HALOX_OK)
            break;
        const halox_pulse_t *p = &plan->pulse[k];
        const int pack = !g->no_atoms && p->send_count > 0;
        if (halox__pulse_self(plan, k)) {
            /* a single rank in this dimension: pack straight into our own halo */
            if (pack && (e = halox__gpu_pack(dp, plan, k, comm->real, comm->stride,
                                             x + (size_t)p->recv_offset * esize, x, g->stream)) !=
                            cudaSuccess)
                return leg->fail(comm, e, "pack kernel (local copy)");
            landed |= 1u << k;
        } else {
            if (pack && (e = halox__gpu_pack(dp, plan, k, comm->real, comm->stride,
                                             halox__pulse_gpu_slot(comm, leg, HALOX__GPU_COORDS, k),
                                             x, g->stream)) != cudaSuccess)
                return leg->fail(comm, e, "pack kernel");
            st = leg->send(comm, k);
        }
        if (st == HALOX_OK && leg->events)
            st = halox__gpu_record(comm, g, HALOX__GPU_COORDS, k);
    }
    return st;
}

/* Forces, pulses in reverse order: pulse k's halo forces go back once the later pulses that
 * forward its atoms added theirs (earlier on the stream), and the returned forces are added in
 * the reference's order. A self pulse adds its own halo's forces straight from f. */
static halox_status_t halox__pulse_gpu_forces_loop(halox_comm_t *comm, halox__gpu_t *g,
                                                   const halox__pulse_gpu_leg_t *leg)
{
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    char *f = comm->f;
    halox_status_t st = HALOX_OK;
    cudaError_t e = cudaSuccess;
    for (int k = dp->n_pulses - 1; k >= 0 && st == HALOX_OK; k--) {
        const halox_pulse_t *p = &plan->pulse[k];
        const int add = !g->no_atoms && p->send_count > 0;
        if (halox__pulse_self(plan, k)) {
            if (add &&
                (e = halox__gpu_add(dp, plan, k, comm->real, comm->stride, f,
                                    f + (size_t)p->recv_offset * esize, g->stream)) != cudaSuccess)
                return leg->fail(comm, e, "force accumulation kernel (local)");
        } else {
            st = leg->swap(comm, k);
            if (st == HALOX_OK && add &&
                (e = halox__gpu_add(dp, plan, k, comm->real, comm->stride, f,
                                    halox__pulse_gpu_slot(comm, leg, HALOX__GPU_FORCES, k),
                                    g->stream)) != cudaSuccess)
                return leg->fail(comm, e, "force accumulation kernel");
        }
        if (st == HALOX_OK && leg->events)
            st = halox__gpu_record(comm, g, HALOX__GPU_FORCES, k);
    }
    return st;
}

static halox_status_t halox__pulse_gpu_run(halox_comm_t *comm, int dir)
{
    halox__gpu_t *g = halox__gpu(comm);
    const int coords = dir == HALOX__GPU_COORDS;
    halox_status_t st =
        halox__gpu_bound(comm, g, coords ? "coordinate exchange" : "force exchange");
    if (!g)
        return st;                              /* not created: refused above */
    const halox__pulse_gpu_leg_t *leg = g->leg; /* set by the transport's init */
    /* the previous step's exchanges are complete (bounded): the host runs at most one step
     * ahead, and a missing peer or a kernel that gave up is reported here. Not while a graph is
     * captured: the replays' waits are the caller's. */
    if (st == HALOX_OK && coords && leg->drain && !comm->graph_mode)
        st = leg->drain(comm, "before the next coordinate exchange");
    if (st == HALOX_OK && leg->open)
        st = leg->open(comm, dir);
    if (st == HALOX_OK)
        st = leg->pulses ? leg->pulses(comm, dir)
             : coords    ? halox__pulse_gpu_coords_loop(comm, g, leg)
                         : halox__pulse_gpu_forces_loop(comm, g, leg);
    return leg->close ? leg->close(comm, dir, st) : st;
}

halox_status_t halox__pulse_gpu_coords(halox_comm_t *comm)
{
    return halox__pulse_gpu_run(comm, HALOX__GPU_COORDS);
}

halox_status_t halox__pulse_gpu_forces(halox_comm_t *comm)
{
    return halox__pulse_gpu_run(comm, HALOX__GPU_FORCES);
}
