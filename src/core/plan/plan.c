/* The halo planner: pulse counts, per-pulse send maps, receive offsets, zones. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/bits.h"
#include "core/error.h"
#include "core/grow.h"
#include "core/pack.h"
#include "core/plan/plan_build.h"
#include "halox/plan.h"

static const char halox__dim_name[3] = {'x', 'y', 'z'};

halox_status_t halox_plan_check(const halox_plan_params_t *params, int pulses_per_dim_p[3])
{
    if (!params)
        return halox__error(HALOX_ERR_INVALID_ARG, "plan parameters are NULL");
    halox_status_t st = halox_box_check(&params->box);
    if (st != HALOX_OK)
        return st;
    if ((st = halox_grid_check(&params->grid)) != HALOX_OK)
        return st;
    if (!isfinite(params->cutoff) || params->cutoff <= 0)
        return halox__error(HALOX_ERR_INVALID_ARG, "cut-off is %g: it must be finite and > 0",
                            params->cutoff);
    if (!isfinite(params->buffer) || params->buffer < 0)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "pair-list buffer is %g: it must be finite and >= 0", params->buffer);
    if (params->periodic_shifts != 0 && params->periodic_shifts != 1)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "periodic_shifts is %d: use 0 (periodic images as copies) or 1 "
                            "(minimum-image shifts in the dimensions with one rank)",
                            params->periodic_shifts);
    if (params->full_shell != 0 && params->full_shell != 1)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "full_shell is %d: use 0 (half shell: atoms from the upper "
                            "neighbours) or 1 (full shell: from both neighbours)",
                            params->full_shell);
    double rh = params->cutoff + params->buffer;
    for (int d = 0; d < 3; d++) {
        double len = params->box.len[d];
        /* minimum image: each pair has at most one image within the cut-off */
        if (!(params->cutoff < 0.5 * len))
            return halox__error(HALOX_ERR_DECOMPOSITION,
                                "cut-off %g is not below half the box edge in %c (%g): use a "
                                "larger box or a smaller cut-off",
                                params->cutoff, halox__dim_name[d], len);
        /* the domain bounds are edge * coordinate / ranks (geometry.c): that product must be
         * finite, or the bounds and the owner of a position overflow */
        if (!isfinite(len * params->grid.n[d]))
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "box edge %c %g times %d ranks is beyond the double range: the "
                                "domain bounds would overflow; use a smaller box or fewer ranks",
                                halox__dim_name[d], len, params->grid.n[d]);
        if (params->periodic_shifts && params->grid.n[d] == 1) {
            /* no pulses: the caller takes the minimum image, which is the only image within
             * the list radius only when the edge exceeds twice that radius */
            if (!(len > 2.0 * rh))
                return halox__error(HALOX_ERR_DECOMPOSITION,
                                    "box edge %c %g is not above twice the list radius %g "
                                    "(cut-off %g + buffer %g), which periodic shifts need in a "
                                    "dimension with one rank (a pair would have two images within "
                                    "the radius): use periodic_shifts = 0 (periodic images as "
                                    "copies) or a larger box (edge above %g)",
                                    halox__dim_name[d], len, rh, params->cutoff, params->buffer,
                                    2.0 * rh);
            if (pulses_per_dim_p)
                pulses_per_dim_p[d] = 0;
            continue;
        }
        double w = len / params->grid.n[d];
        /* compared as doubles before any conversion: a huge buffer makes rh / w far beyond an
         * int (it wrapped to a negative count and passed) */
        double need = ceil(rh / w);
        if (!(need <= HALOX_MAX_PULSES_PER_DIM)) {
            /* the most ranks that need at most the maximum: fewer than grid.n[d] here */
            double fit = floor(len / rh * HALOX_MAX_PULSES_PER_DIM);
            if (fit > params->grid.n[d] - 1)
                fit = params->grid.n[d] - 1;
            if (!(fit >= 1))
                return halox__error(HALOX_ERR_DECOMPOSITION,
                                    "halo distance %g (cut-off %g + buffer %g) needs %.3g pulses "
                                    "in %c even with 1 rank there (box edge %g), at most %d are "
                                    "supported: use a smaller cut-off or buffer (halo distance "
                                    "at most %g)",
                                    rh, params->cutoff, params->buffer, ceil(rh / len),
                                    halox__dim_name[d], len, HALOX_MAX_PULSES_PER_DIM,
                                    len * HALOX_MAX_PULSES_PER_DIM);
            return halox__error(HALOX_ERR_DECOMPOSITION,
                                "halo distance %g (cut-off %g + buffer %g) needs %.3g pulses in "
                                "%c with %d ranks of width %g, at most %d are supported: use at "
                                "most %d ranks in %c, or a smaller cut-off or buffer",
                                rh, params->cutoff, params->buffer, need, halox__dim_name[d],
                                params->grid.n[d], w, HALOX_MAX_PULSES_PER_DIM, (int)fit,
                                halox__dim_name[d]);
        }
        int np = need < 1 ? 1 : (int)need;
        if (pulses_per_dim_p)
            pulses_per_dim_p[d] = np;
    }
    return HALOX_OK;
}

void halox_plan_init(halox_plan_t *plan) { memset(plan, 0, sizeof *plan); }

void halox_plan_free(halox_plan_t *plan)
{
    if (!plan)
        return;
    for (int k = 0; k < HALOX_MAX_PULSES; k++)
        free(plan->pulse[k].send_index);
    free(plan->zone);
    memset(plan, 0, sizeof *plan);
}

long long halox_plan_send_bytes(const halox_plan_t *plan, halox_real_t real, int stride)
{
    long long n = 0;
    for (int k = 0; k < plan->n_pulses; k++)
        n += plan->pulse[k].send_count;
    return n * (long long)stride * (long long)halox_real_size(real);
}

/* From atom i on, while the home atoms lie inside [lo, hi) in every dimension, append to
 * idx[d] those within rh of lo[d] (x - lo < rh, in double as always; branch-free: idx[d] has
 * room for one more). Returns the first atom outside, or n. Integer compares on the bits
 * (bits.h): lo_b, span and sel are halox__bits_ceil(lo), bits_ceil(hi) - lo_b and
 * halox__bits_below(lo, rh) per dimension. */
#define HALOX__PLAN_HOME(T, U, BITS, NAME)                                                         \
    static int NAME(const T *restrict x, size_t stride, int i, int n, const uint64_t lo_b[3],      \
                    const uint64_t span[3], const uint64_t sel[3], int *const idx[3], int cnt[3])  \
    {                                                                                              \
        const U l0 = (U)lo_b[0], l1 = (U)lo_b[1], l2 = (U)lo_b[2];                                 \
        const U w0 = (U)span[0], w1 = (U)span[1], w2 = (U)span[2];                                 \
        const U t0 = (U)sel[0], t1 = (U)sel[1], t2 = (U)sel[2];                                    \
        int *restrict s0 = idx[0], *restrict s1 = idx[1], *restrict s2 = idx[2];                   \
        int c0 = cnt[0], c1 = cnt[1], c2 = cnt[2];                                                 \
        for (; i < n; i++) {                                                                       \
            const T *p = x + (size_t)i * stride;                                                   \
            const U v0 = BITS(p), v1 = BITS(p + 1), v2 = BITS(p + 2);                              \
            if (!((v0 - l0 < w0) & (v1 - l1 < w1) & (v2 - l2 < w2)))                               \
                break;                                                                             \
            s0[c0] = i;                                                                            \
            c0 += v0 < t0;                                                                         \
            s1[c1] = i;                                                                            \
            c1 += v1 < t1;                                                                         \
            s2[c2] = i;                                                                            \
            c2 += v2 < t2;                                                                         \
        }                                                                                          \
        cnt[0] = c0;                                                                               \
        cnt[1] = c1;                                                                               \
        cnt[2] = c2;                                                                               \
        return i;                                                                                  \
    }
HALOX__PLAN_HOME(float, uint32_t, halox__fbits, halox__plan_home_float)
HALOX__PLAN_HOME(double, uint64_t, halox__dbits, halox__plan_home_double)

/* The images across the upper boundary are shifted by the box edge: a rank holds coordinates
 * up to the edge plus the halo distance, which must be finite in the atoms' precision (a single
 * precision box of 1e39 made every such image inf). */
static halox_status_t halox__plan_check_real(const halox_plan_params_t *params, halox_real_t real)
{
    const double top = real == HALOX_FLOAT ? FLT_MAX : DBL_MAX;
    for (int d = 0; d < 3; d++) {
        double far = params->box.len[d] + (params->cutoff + params->buffer);
        if (!(far <= top))
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "box edge %c %g plus the halo distance %g (cut-off + buffer) is "
                                "beyond the largest %s-precision number %g: halo coordinates "
                                "would be infinite; use a smaller box%s",
                                halox__dim_name[d], params->box.len[d],
                                params->cutoff + params->buffer,
                                real == HALOX_FLOAT ? "single" : "double", top,
                                real == HALOX_FLOAT ? " or double precision" : "");
    }
    return HALOX_OK;
}

halox_status_t halox__plan_geometry(halox_plan_t *plan, const halox_plan_params_t *params, int rank,
                                    halox_real_t real, int stride, int n_home, int capacity)
{
    int np[3];
    halox_status_t st = halox_plan_check(params, np);
    if (st != HALOX_OK)
        return st;
    if (halox_real_size(real) == 0 || (stride != 3 && stride != 4))
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "atoms not initialised: call halox_atoms_init() first");
    int nranks = halox_grid_size(&params->grid);
    if (rank < 0 || rank >= nranks)
        return halox__error(HALOX_ERR_INVALID_ARG, "rank %d is outside the grid of %d ranks", rank,
                            nranks);
    if (n_home < 0 || n_home > capacity)
        return halox__error(HALOX_ERR_INVALID_ARG, "rank %d: %d home atoms but capacity %d", rank,
                            n_home, capacity);
    if ((st = halox__plan_check_real(params, real)) != HALOX_OK)
        return st;

    plan->params = *params;
    plan->halo_dist = params->cutoff + params->buffer;
    plan->rank = rank;
    plan->nranks = nranks;
    halox_grid_coords(&params->grid, rank, plan->coord);
    halox_domain_bounds(&params->grid, &params->box, rank, plan->lo, plan->hi);
    plan->n_home = n_home;
    plan->n_total = n_home;
    /* Reset every pulse slot, not only the ones used now: stale entries from a plan with more
     * pulses must never survive (a pitfall of the field's reference implementation). */
    plan->n_pulses = 0;
    plan->shift_dims = 0;
    for (int k = 0; k < HALOX_MAX_PULSES; k++) {
        halox_pulse_t *p = &plan->pulse[k];
        int *keep = p->send_index;
        memset(p, 0, sizeof *p);
        p->send_index = keep;
    }
    const int dirs = params->full_shell ? 2 : 1;
    for (int d = 0; d < 3; d++) {
        plan->pulses_per_dim[d] = np[d];
        if (np[d] == 0)
            plan->shift_dims |= 1 << d; /* halox_plan_check: only a shift dimension has none */
        for (int q = 0; q < dirs * np[d]; q++) {
            halox_pulse_t *p = &plan->pulse[plan->n_pulses++];
            int down = q >= np[d]; /* full shell: from the lower neighbour, to the upper */
            p->dim = d;
            p->pulse_in_dim = down ? q - np[d] : q;
            p->from_lower = down;
            p->send_rank = halox_grid_neighbour(&params->grid, rank, d, down ? +1 : -1);
            p->recv_rank = halox_grid_neighbour(&params->grid, rank, d, down ? -1 : +1);
            /* the lower neighbour of the first domain is the last one, across the boundary;
             * the upper neighbour of the last domain the first one */
            if (!down)
                p->shift = plan->coord[d] == 0 ? params->box.len[d] : 0.0;
            else
                p->shift = plan->coord[d] == params->grid.n[d] - 1 ? -params->box.len[d] : 0.0;
        }
    }
    st = halox__grow((void **)&plan->zone, &plan->zone_capacity, n_home > 0 ? n_home : 1, 1);
    if (st != HALOX_OK)
        return st;
    memset(plan->zone, 0, (size_t)n_home);
    return HALOX_OK;
}

int halox__plan_first_pulse(const halox_plan_t *plan, int d)
{
    int first = 0;
    for (int e = 0; e < d; e++)
        first += plan->pulses_per_dim[e] * (plan->params.full_shell ? 2 : 1);
    return plan->pulses_per_dim[d] > 0 ? first : -1;
}

halox_status_t halox__plan_home_check(const halox_plan_t *plan, int i, int id, const double x[3])
{
    const halox_plan_params_t *params = &plan->params;
    for (int d = 0; d < 3; d++) {
        if (!isfinite(x[d]))
            return halox__error(HALOX_ERR_COORDINATE,
                                "rank %d: home atom %d (id %d) has a non-finite %c "
                                "coordinate: the system blew up or the input is broken",
                                plan->rank, i, id, halox__dim_name[d]);
        if (x[d] < 0 || x[d] >= params->box.len[d] ||
            halox_owner_coord(&params->grid, &params->box, d, x[d]) != plan->coord[d])
            return halox__error(HALOX_ERR_COORDINATE,
                                "rank %d: home atom %d (id %d) has %c = %.9g outside the "
                                "rank's domain [%.9g, %.9g): wrap positions into the box and "
                                "migrate atoms (halox_comm_migrate) before building the plan",
                                plan->rank, i, id, halox__dim_name[d], x[d], plan->lo[d],
                                plan->hi[d]);
    }
    return HALOX_OK;
}

halox_status_t halox__plan_begin(halox_plan_t *plan, const halox_plan_params_t *params, int rank,
                                 const halox_atoms_t *atoms)
{
    if (!atoms)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "atoms not initialised: call halox_atoms_init() first");
    halox_status_t st = halox__plan_geometry(plan, params, rank, atoms->real, atoms->stride,
                                             atoms->n_home, atoms->capacity);
    if (st != HALOX_OK)
        return st;
    const int *np = plan->pulses_per_dim;

    /* One pass over the home atoms checks them and picks, for the first pulse of every
     * dimension, the home atoms it sends: the part of its map before dep_offset, which
     * halox__plan_select completes with halo atoms. One read of the home coordinates instead
     * of four. */
    int *idx[3], first = 0;
    int sink[3] = {0, 0, 0}; /* a shift dimension has no pulse: its picks go nowhere (none) */
    for (int d = 0; d < 3; d++) {
        if (np[d] == 0) {
            idx[d] = &sink[d];
            continue;
        }
        st = halox__grow((void **)&plan->pulse[first].send_index, &plan->send_capacity[first],
                         atoms->n_home + 1, sizeof(int));
        if (st != HALOX_OK)
            return st;
        idx[d] = plan->pulse[first].send_index;
        first += np[d] * (params->full_shell ? 2 : 1);
    }
    const double *lo = plan->lo, rh = plan->halo_dist;
    uint64_t lo_b[3], span[3], sel[3];
    for (int d = 0; d < 3; d++) {
        lo_b[d] = halox__bits_ceil(atoms->real, plan->lo[d]);
        span[d] = halox__bits_ceil(atoms->real, plan->hi[d]) - lo_b[d];
        /* 0 selects nothing (v < 0 never holds): the sink keeps its single slot */
        sel[d] = np[d] > 0 ? halox__bits_below(atoms->real, plan->lo[d], rh) : 0;
    }
    int cnt[3] = {0, 0, 0};
    for (int i = 0; i < atoms->n_home; i++) {
        i = atoms->real == HALOX_FLOAT
                ? halox__plan_home_float(atoms->x, (size_t)atoms->stride, i, atoms->n_home, lo_b,
                                         span, sel, idx, cnt)
                : halox__plan_home_double(atoms->x, (size_t)atoms->stride, i, atoms->n_home, lo_b,
                                          span, sel, idx, cnt);
        if (i == atoms->n_home)
            break;
        /* atom i lies outside [lo, hi) somewhere: the full check, for its message */
        double x[3];
        for (int d = 0; d < 3; d++)
            x[d] = halox_atoms_get(atoms, i, d);
        if ((st = halox__plan_home_check(plan, i, atoms->id ? atoms->id[i] : -1, x)) != HALOX_OK)
            return st;
        /* passed (-0 does, where lo is 0): selected like the others */
        for (int d = 0; d < 3; d++) {
            idx[d][cnt[d]] = i;
            cnt[d] += np[d] > 0 && x[d] - lo[d] < rh;
        }
    }
    first = 0;
    for (int d = 0; d < 3; d++) {
        if (np[d] == 0)
            continue;
        plan->pulse[first].dep_offset = cnt[d];
        first += np[d] * (params->full_shell ? 2 : 1);
    }
    return HALOX_OK;
}

/* Append to idx the atoms of [begin, end) within rh of the domain's bound in dimension d; returns
 * how many. up (down 0: a pulse to the lower neighbour): x - lo < rh with bound = lo; down (a
 * pulse from the lower neighbour, full shell): hi - x <= rh with bound = hi, so that the atoms
 * land within rh below the receiver's lower bound. In double as always; branch-free: idx has
 * room for one more. */
static int halox__plan_scan(const halox_atoms_t *atoms, int d, int begin, int end, double bound,
                            double rh, int down, int *idx)
{
    const size_t s = (size_t)atoms->stride;
    int n = 0;
    if (atoms->real == HALOX_FLOAT) {
        const float *x = (const float *)atoms->x + d;
        for (int i = begin; i < end; i++) {
            const double v = (double)x[(size_t)i * s];
            idx[n] = i;
            n += down ? bound - v <= rh : v - bound < rh;
        }
    } else {
        const double *x = (const double *)atoms->x + d;
        for (int i = begin; i < end; i++) {
            const double v = x[(size_t)i * s];
            idx[n] = i;
            n += down ? bound - v <= rh : v - bound < rh;
        }
    }
    return n;
}

halox_status_t halox__plan_select(halox_plan_t *plan, int k, const halox_atoms_t *atoms)
{
    halox_pulse_t *p = &plan->pulse[k];
    int d = p->dim;
    int begin, end;
    if (p->pulse_in_dim == 0) {
        /* home atoms and everything received in earlier dimensions (the full shell's second
         * direction skips the first direction's atoms of its own dimension below) */
        begin = 0;
        end = plan->n_total;
    } else {
        /* forward what the previous pulse of this dimension and direction delivered */
        begin = plan->pulse[k - 1].recv_offset;
        end = begin + plan->pulse[k - 1].recv_count;
    }
    halox_status_t st =
        halox__grow((void **)&p->send_index, &plan->send_capacity[k], end - begin + 1, sizeof(int));
    if (st != HALOX_OK)
        return st;
    double lo = plan->lo[d];
    double rh = plan->halo_dist;
    /* [begin, end) is home atoms (the first pulse of a dimension only: halox__plan_begin
     * picked them, dep_offset of them), then the ranges of earlier pulses (contiguous, in pulse
     * order, covering [n_home, n_total)): scan those range by range, so the pulses the
     * selection depends on come per range instead of per atom */
    int n = 0, dep = 0;
    uint32_t mask = 0;
    if (p->pulse_in_dim == 0 && p->from_lower) /* its home atoms: not picked by plan_begin */
        n = dep = halox__plan_scan(atoms, d, 0, plan->n_home, plan->hi[d], rh, 1, p->send_index);
    else if (p->pulse_in_dim == 0)
        n = dep = p->dep_offset;
    for (int j = 0; j < k; j++) {
        const halox_pulse_t *q = &plan->pulse[j];
        if (p->pulse_in_dim == 0 && q->dim == d)
            continue; /* pulse 0 of the second direction: not the first direction's atoms */
        int b = q->recv_offset > begin ? q->recv_offset : begin;
        int e = q->recv_offset + q->recv_count < end ? q->recv_offset + q->recv_count : end;
        if (b >= e)
            continue;
        int got = halox__plan_scan(atoms, d, b, e, p->from_lower ? plan->hi[d] : lo, rh,
                                   p->from_lower, p->send_index + n);
        n += got;
        if (got)
            mask |= 1u << j;
    }
    p->send_count = n;
    p->dep_offset = dep;
    p->dep_mask = mask;
    return HALOX_OK;
}

halox_status_t halox__plan_room(const halox_plan_t *plan, int k, int count, int capacity,
                                const char *arrays, int *need)
{
    const long long want = (long long)plan->n_total + count;
    if (want <= capacity)
        return HALOX_OK;
    *need = want < HALOX_ATOMS_MAX ? (int)want : HALOX_ATOMS_MAX;
    return halox__error(HALOX_ERR_NO_MEMORY,
                        "rank %d: pulse %d brings %d halo atoms, %lld atoms in all, but the %s "
                        "hold %d: grow x, id and zone to at least %lld entries (with head-room: "
                        "later pulses may bring more) and build again",
                        plan->rank, k, count, want, arrays, capacity, want);
}

halox_status_t halox__plan_recv(halox_plan_t *plan, int k, halox_atoms_t *atoms, int recv_count)
{
    if (recv_count < 0)
        return halox__error(HALOX_ERR_COMM, "rank %d: negative receive count %d in pulse %d",
                            plan->rank, recv_count, k);
    halox_pulse_t *p = &plan->pulse[k];
    p->recv_count = recv_count;
    /* appended in pulse order: each pulse's atoms form one contiguous range */
    p->recv_offset = plan->n_total;
    long long need = (long long)plan->n_total + recv_count;
    if (need > HALOX_ATOMS_MAX)
        return halox__error(HALOX_ERR_NO_MEMORY,
                            "rank %d: pulse %d brings %d halo atoms, %lld local atoms in all, "
                            "above the %d one rank holds: use more ranks (a finer grid)",
                            plan->rank, k, recv_count, need, HALOX_ATOMS_MAX);
    halox_status_t st = halox_atoms_reserve(atoms, (int)need);
    if (st != HALOX_OK)
        return st;
    st = halox__grow((void **)&plan->zone, &plan->zone_capacity, (int)need, 1);
    if (st != HALOX_OK)
        return st;
    plan->n_total = (int)need;
    return HALOX_OK;
}

size_t halox__plan_setup_bytes_of(halox_real_t real, int stride, int count)
{
    return halox__atom_bytes(real, stride, count) + (size_t)count * sizeof(int32_t) + (size_t)count;
}

size_t halox__plan_setup_bytes(const halox_atoms_t *atoms, int count)
{
    return halox__plan_setup_bytes_of(atoms->real, atoms->stride, count);
}

void halox__plan_pack_setup(const halox_plan_t *plan, int k, const halox_atoms_t *atoms, void *buf)
{
    const halox_pulse_t *p = &plan->pulse[k];
    int n = p->send_count;
    char *b = buf;
    halox__pack_coords(atoms->real, atoms->stride, b, atoms->x, p->send_index, n, p->dim, p->shift);
    b += halox__atom_bytes(atoms->real, atoms->stride, n);
    int32_t *ids = (int32_t *)(void *)b;
    for (int i = 0; i < n; i++)
        ids[i] = atoms->id ? atoms->id[p->send_index[i]] : -1;
    b += (size_t)n * sizeof(int32_t);
    for (int i = 0; i < n; i++)
        b[i] = (char)plan->zone[p->send_index[i]];
}

void halox__plan_unpack_setup(halox_plan_t *plan, int k, halox_atoms_t *atoms, const void *buf)
{
    const halox_pulse_t *p = &plan->pulse[k];
    int n = p->recv_count, off = p->recv_offset;
    if (n == 0)
        return; /* an empty pulse: buf may be NULL, and memcpy wants pointers even for 0 bytes */
    const char *b = buf;
    size_t cb = halox__atom_bytes(atoms->real, atoms->stride, n);
    memcpy((char *)atoms->x + halox__atom_bytes(atoms->real, atoms->stride, off), b, cb);
    b += cb;
    memcpy(atoms->id + off, b, (size_t)n * sizeof(int32_t));
    b += (size_t)n * sizeof(int32_t);
    for (int i = 0; i < n; i++)
        plan->zone[off + i] = (uint8_t)((uint8_t)b[i] | halox__pulse_zone_bit(p));
}

void halox__plan_copy_setup(halox_plan_t *plan, int k, halox_atoms_t *atoms)
{
    const halox_pulse_t *p = &plan->pulse[k];
    int n = p->send_count, off = p->recv_offset;
    const int *idx = p->send_index;
    /* the sources lie below recv_offset: no overlap with the range written */
    halox__pack_coords(atoms->real, atoms->stride,
                       (char *)atoms->x + halox__atom_bytes(atoms->real, atoms->stride, off),
                       atoms->x, idx, n, p->dim, p->shift);
    int32_t *id = atoms->id + off;
    for (int i = 0; i < n; i++)
        id[i] = atoms->id ? atoms->id[idx[i]] : -1;
    uint8_t *zone = plan->zone + off;
    const uint8_t bit = halox__pulse_zone_bit(p);
    for (int i = 0; i < n; i++)
        zone[i] = (uint8_t)(plan->zone[idx[i]] | bit);
}

void halox__plan_end(halox_plan_t *plan, halox_atoms_t *atoms)
{
    atoms->n_total = plan->n_total;
    plan->generation++;
}
