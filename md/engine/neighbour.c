/* Neighbour search: spatial sort of home atoms, cell list and half Verlet list.
 *
 * The list covers the rank's local atoms (home + halo; the halo holds every image within the
 * halo distance cutoff + skin of the domain in the dimensions with pulses, see plan.h) and
 * keeps a pair (i, j) when
 *   - the plan's zone rule allows it on this rank: (zone_i & zone_j) == 0, so every pair of the
 *     periodic system is listed by exactly one rank, and
 *   - |x_i - x_j| < cutoff + skin at build time, with the minimum image in the plan's shift
 *     dimensions (plan.shift_dims: one rank there and no halo, periodic_shifts) and the plain
 *     difference in the others,
 * each pair once (half list). Cells are at least (cutoff + skin) / 2 wide; a half stencil of
 * forward cells (offsets up to 2, pruned by distance) plus the later atoms of the same cell
 * lists every pair exactly once. In the dimensions with a halo the cells cover the bounding box
 * of the local atoms, which is not periodic (the halo provides the images). In a shift
 * dimension they tile the box edge exactly and the stencil wraps around it: a wrapped cell is
 * the neighbour's image, one box edge away. Each (pair, image) is then one offset of the
 * unrolled periodic grid, reached once, and an edge above twice the list radius (the planner
 * checks it) leaves at most one image of a pair within the radius, so a pair is listed at most
 * once even when a shift dimension has only one to four cells (offsets +2 and -2, or +1 and -1,
 * reach the same cell as different images). The list stores the image per segment, not per
 * pair: atom i's neighbours are grouped by image (the unshifted first), and each shifted group
 * is one segment (md_nlist_t) over which the kernels take x_i minus the shift; the inner loops
 * are those without shifts, and with copies (no shift dimension) nothing changes at all. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/status.h"

void md__nlist_free(md_nlist_t *nl)
{
    free(nl->start);
    free(nl->list);
    free(nl->cell_of);
    free(nl->cell_start);
    free(nl->cell_atoms);
    free(nl->pos_in_cell);
    free(nl->scratch);
    free(nl->seg_first);
    free(nl->seg_at);
    free(nl->seg_code);
    memset(nl, 0, sizeof *nl);
}

static halox_status_t md__grow_int(int **p, int *cap, int n)
{
    if (n <= *cap)
        return HALOX_OK;
    int want = *cap > 0 ? *cap : 1024;
    while (want < n)
        want = want > 0x3fffffff ? 0x7fffffff : 2 * want;
    int *q = realloc(*p, sizeof(int) * (size_t)want);
    if (!q)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "neighbour search: no memory for %d entries",
                               want);
    *p = q;
    *cap = want;
    return HALOX_OK;
}

static halox_status_t md__atom_scratch(md_nlist_t *nl, int n)
{
    if (n + 1 <= nl->atom_cap)
        return HALOX_OK;
    int want = nl->atom_cap > 0 ? nl->atom_cap : 1024;
    while (want < n + 1)
        want *= 2;
    int *a = realloc(nl->cell_of, sizeof(int) * (size_t)want);
    if (a)
        nl->cell_of = a;
    int *b = realloc(nl->cell_atoms, sizeof(int) * (size_t)want);
    if (b)
        nl->cell_atoms = b;
    int *c = realloc(nl->pos_in_cell, sizeof(int) * (size_t)want);
    if (c)
        nl->pos_in_cell = c;
    if (!a || !b || !c)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "neighbour search: no memory for %d atoms", n);
    nl->atom_cap = want;
    return HALOX_OK;
}

/* Cell grid over [lo, hi] with cells at least w_min wide and at most about 2 n + 64 cells (and
 * never more than 2^30, so counts and cell indices fit an int). Refuses a bounding box that is
 * not finite: its cells never got few enough (floor(inf / w) stays inf), the loop never ended. */
static halox_status_t md__cell_grid(const double lo[3], const double hi[3], double w_min, int n,
                                    int m_p[3], double inv_w_p[3], double w_p[3])
{
    for (int d = 0; d < 3; d++)
        if (!(isfinite(lo[d]) && isfinite(hi[d]) && isfinite(hi[d] - lo[d])))
            return halox_set_error(
                HALOX_ERR_COORDINATE,
                "neighbour search: the local atoms span %g to %g in %c, not a "
                "finite range: a coordinate is not finite or beyond the box (the "
                "system blew up or the input is broken)",
                lo[d], hi[d], "xyz"[d]);
    const double most = fmin(2.0 * n + 64, 1073741824.0);
    double w = w_min > 0 && isfinite(w_min) ? w_min : 1.0;
    /* w grows by 1.25 a round; from any w > 0 it passes the largest finite extent within about
     * 3200 rounds; an infinite w (one cell per dimension) always fits, so the loop ends */
    for (int round = 0;; round++) {
        double cells = 1;
        for (int d = 0; d < 3; d++) {
            double m = floor((hi[d] - lo[d]) / w);
            cells *= m < 1 ? 1 : m;
        }
        if (cells <= most)
            break;
        w = round < 8192 && isfinite(w * 1.25) ? w * 1.25 : HUGE_VAL;
    }
    for (int d = 0; d < 3; d++) {
        double ext = hi[d] - lo[d];
        double mf = floor(ext / w);
        /* mf <= most after the loop; the clamp keeps the conversion defined regardless */
        int m = !(mf >= 1) ? 1 : mf > most ? (int)most : (int)mf;
        m_p[d] = m;
        inv_w_p[d] = ext > 0 ? m / ext : 0.0;
        w_p[d] = ext > 0 ? ext / m : HUGE_VAL;
    }
    return HALOX_OK;
}

/* The cell of coordinate x: clamped into [0, m) before the conversion, so that no value (a
 * rounding just past hi, or anything else) makes an index outside the grid. */
static inline int md__cell_coord(double x, double lo, double inv_w, int m)
{
    double t = (x - lo) * inv_w;
    return !(t > 0) ? 0 : t >= m ? m - 1 : (int)t;
}

/* Bounding box of atoms [0, n) (as doubles, as halox_atoms_get gives them). A NaN or inf
 * coordinate makes that dimension's bounds NaN (v - v is 0 only for finite v), for
 * md__cell_grid to refuse: comparisons alone would skip a NaN. */
#define MD_DEFINE_BOUNDS(T, NAME)                                                                  \
    static void NAME(const T *restrict x, int n, double lo[3], double hi[3])                       \
    {                                                                                              \
        double bad[3] = {0, 0, 0};                                                                 \
        for (int i = 0; i < n; i++)                                                                \
            for (int d = 0; d < 3; d++) {                                                          \
                double v = (double)x[3 * (size_t)i + (size_t)d];                                   \
                lo[d] = v < lo[d] ? v : lo[d];                                                     \
                hi[d] = v > hi[d] ? v : hi[d];                                                     \
                bad[d] += v - v;                                                                   \
            }                                                                                      \
        for (int d = 0; d < 3; d++)                                                                \
            if (bad[d] != 0)                                                                       \
                lo[d] = hi[d] = NAN;                                                               \
    }

/* Cell of every atom into cell_of, its rank within the cell (index order) into pos_in_cell,
 * and the count of every cell into count[cell]. */
#define MD_DEFINE_CELLS(T, NAME)                                                                   \
    static void NAME(const T *restrict x, int n, const double lo[3], const double inv_w[3],        \
                     const int m[3], int *restrict cell_of, int *restrict pos_in_cell,             \
                     int *restrict count)                                                          \
    {                                                                                              \
        for (int i = 0; i < n; i++) {                                                              \
            const T *a = x + 3 * (size_t)i;                                                        \
            int c0 = md__cell_coord((double)a[0], lo[0], inv_w[0], m[0]);                          \
            int c1 = md__cell_coord((double)a[1], lo[1], inv_w[1], m[1]);                          \
            int c2 = md__cell_coord((double)a[2], lo[2], inv_w[2], m[2]);                          \
            int cell = c0 + m[0] * (c1 + m[1] * c2);                                               \
            cell_of[i] = cell;                                                                     \
            pos_in_cell[i] = count[cell]++;                                                        \
        }                                                                                          \
    }

MD_DEFINE_BOUNDS(float, md__bounds_float)
MD_DEFINE_BOUNDS(double, md__bounds_double)
MD_DEFINE_CELLS(float, md__cells_float)
MD_DEFINE_CELLS(double, md__cells_double)

/* Counting sort of atoms [0, n) by cell into nl->cell_start / cell_atoms / pos_in_cell
 * (stable: atoms of a cell keep their index order). Positions have stride 3. In the dimensions
 * of `periodic` the grid spans [0, len[d]) exactly (cells tile the box edge), elsewhere the
 * bounding box of the atoms. */
static halox_status_t md__bin(md_nlist_t *nl, const halox_atoms_t *a, int n, double w_min,
                              int periodic, const double len[3], int m_p[3], double w_p[3])
{
    halox_status_t st = md__atom_scratch(nl, n);
    if (st != HALOX_OK)
        return st;
    double lo[3] = {HUGE_VAL, HUGE_VAL, HUGE_VAL}, hi[3] = {-HUGE_VAL, -HUGE_VAL, -HUGE_VAL};
    if (a->real == HALOX_FLOAT)
        md__bounds_float(a->x, n, lo, hi);
    else
        md__bounds_double(a->x, n, lo, hi);
    if (n == 0)
        for (int d = 0; d < 3; d++)
            lo[d] = hi[d] = 0;
    for (int d = 0; d < 3; d++)
        if (periodic >> d & 1) {
            /* a bad coordinate still makes the range NaN for md__cell_grid to refuse */
            int bad = !(lo[d] == lo[d] && hi[d] == hi[d]);
            lo[d] = bad ? NAN : 0.0;
            hi[d] = bad ? NAN : len[d];
        }
    double inv_w[3];
    if ((st = md__cell_grid(lo, hi, w_min, n, m_p, inv_w, w_p)) != HALOX_OK)
        return st;
    int ncell = m_p[0] * m_p[1] * m_p[2];
    if ((st = md__grow_int(&nl->cell_start, &nl->cell_cap, ncell + 1)) != HALOX_OK)
        return st;
    /* counts land in cell_start[cell + 1]; each atom's rank within its cell is the count
     * before it, so the scatter below needs no cursors */
    memset(nl->cell_start, 0, sizeof(int) * (size_t)(ncell + 1));
    if (a->real == HALOX_FLOAT)
        md__cells_float(a->x, n, lo, inv_w, m_p, nl->cell_of, nl->pos_in_cell, nl->cell_start + 1);
    else
        md__cells_double(a->x, n, lo, inv_w, m_p, nl->cell_of, nl->pos_in_cell, nl->cell_start + 1);
    for (int c = 0; c < ncell; c++)
        nl->cell_start[c + 1] += nl->cell_start[c];
    for (int i = 0; i < n; i++)
        nl->cell_atoms[nl->cell_start[nl->cell_of[i]] + nl->pos_in_cell[i]] = i;
    return HALOX_OK;
}

/* dst[k] = src[order[k]] for records of b bytes; the common sizes with a constant size, so
 * the copy is a move, not a call. */
static void md__gather(void *restrict dst, const void *restrict src, const int *order, int n,
                       size_t b)
{
    char *o = dst;
    const char *s = src;
#define MD_GATHER(B)                                                                               \
    for (int k = 0; k < n; k++)                                                                    \
        memcpy(o + (size_t)k * (B), s + (size_t)order[k] * (B), (B));                              \
    return
    switch (b) {
    case 4:
        MD_GATHER(4);
    case 12:
        MD_GATHER(12);
    case 24:
        MD_GATHER(24);
    default:
        MD_GATHER(b);
    }
#undef MD_GATHER
}

halox_status_t md__sort_home(halox_md_t *md)
{
    halox_atoms_t *a = &md->atoms;
    md_nlist_t *nl = &md->nl;
    int n = a->n_home;
    if (n < 2)
        return HALOX_OK;
    int m[3];
    double w[3];
    halox_status_t st =
        md__bin(nl, a, n, 0.5 * (md->prm.cutoff + md->prm.buffer), 0, md->box.len, m, w);
    if (st != HALOX_OK)
        return st;
    size_t xb = md__rs(md) * 3, eb = a->extra_bytes;
    size_t need = (size_t)n * (xb > eb ? xb : eb);
    if (need < (size_t)n * sizeof(int32_t))
        need = (size_t)n * sizeof(int32_t);
    if (need > nl->scratch_bytes) {
        void *q = realloc(nl->scratch, need);
        if (!q)
            return halox_set_error(HALOX_ERR_NO_MEMORY, "sort: no memory for %zu bytes", need);
        nl->scratch = q;
        nl->scratch_bytes = need;
    }
    const int *order = nl->cell_atoms; /* new position k holds old atom order[k] */
    md__gather(nl->scratch, a->x, order, n, xb);
    memcpy(a->x, nl->scratch, (size_t)n * xb);
    if (eb) {
        md__gather(nl->scratch, a->extra, order, n, eb);
        memcpy(a->extra, nl->scratch, (size_t)n * eb);
    }
    md__gather(nl->scratch, a->id, order, n, sizeof(int32_t));
    memcpy(a->id, nl->scratch, sizeof(int32_t) * (size_t)n);
    return HALOX_OK;
}

/* Half stencil for cells at least rl/2 wide: the lexicographically positive offsets within
 * +-2 cells whose closest points are nearer than rl (at most 62; the same cell is scanned
 * separately, from the atom after i on). Half-width cells cut the candidates per atom by about
 * 1.8 against cells rl wide (27 rl^3 -> 15.6 rl^3 of volume). */
typedef struct md_stencil {
    int n;
    int off[62][3];
} md_stencil_t;

static void md__make_stencil(const double w[3], double rl, md_stencil_t *st)
{
    int r[3];
    for (int d = 0; d < 3; d++) {
        r[d] = w[d] >= rl ? 1 : 2;
    }
    st->n = 0;
    for (int dz = -r[2]; dz <= r[2]; dz++)
        for (int dy = -r[1]; dy <= r[1]; dy++)
            for (int dx = -r[0]; dx <= r[0]; dx++) {
                if (!(dz > 0 || (dz == 0 && dy > 0) || (dz == 0 && dy == 0 && dx > 0)))
                    continue;
                const int o[3] = {dx, dy, dz};
                double gap2 = 0;
                for (int d = 0; d < 3; d++) {
                    int k = o[d] < 0 ? -o[d] : o[d];
                    double g = k > 1 ? (k - 1) * w[d] : 0.0;
                    gap2 += g * g;
                }
                if (gap2 >= rl * rl)
                    continue;
                for (int d = 0; d < 3; d++)
                    st->off[st->n][d] = o[d];
                st->n++;
            }
}

/* Room for the segments of one more atom (at most 26 shifted ones). */
static halox_status_t md__seg_room(md_nlist_t *nl)
{
    if (nl->nseg + 26 <= nl->seg_cap)
        return HALOX_OK;
    if (nl->seg_cap > 0x3fffffff - 26)
        return halox_set_error(HALOX_ERR_NO_MEMORY,
                               "pair list: more than %d image segments (up to 26 per atom) on one "
                               "rank: use more ranks (a finer --grid)",
                               0x3fffffff - 26);
    int want = nl->seg_cap > 0 ? 2 * nl->seg_cap : 1024;
    int *a = realloc(nl->seg_at, sizeof(int) * (size_t)want);
    if (a)
        nl->seg_at = a;
    uint8_t *c = realloc(nl->seg_code, (size_t)want);
    if (c)
        nl->seg_code = c;
    if (!a || !c)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "pair list: no memory for %d image segments",
                               want);
    nl->seg_cap = want;
    return HALOX_OK;
}

/* The scan reads positions and zones copied into cell order, so that the candidates of a cell
 * are contiguous in memory, and appends without a branch (the acceptance test is a coin flip for
 * the branch predictor: about a fifth of the candidates are kept). A stencil cell past the grid
 * in a periodic dimension (periodic: bit d) wraps to the other side, as the image one edge away
 * (code: image +1 -> 1, -1 -> 2, times 3^d); the ranges of an atom are scanned grouped by image,
 * the unshifted first, each shifted group a segment (md_nlist_t). */
#define MD_DEFINE_NLIST_SCAN(T, NAME)                                                              \
    static halox_status_t NAME(md_nlist_t *nl, const T *restrict x, const uint8_t *restrict zone,  \
                               int n, const int m[3], int periodic, const md_stencil_t *sten,      \
                               double rl2_d)                                                       \
    {                                                                                              \
        size_t need = (size_t)n * (3 * sizeof(T) + 1) + 64;                                        \
        if (need > nl->scratch_bytes) {                                                            \
            void *q = realloc(nl->scratch, need);                                                  \
            if (!q)                                                                                \
                return halox_set_error(HALOX_ERR_NO_MEMORY, "pair list: no memory");               \
            nl->scratch = q;                                                                       \
            nl->scratch_bytes = need;                                                              \
        }                                                                                          \
        T *restrict xs = nl->scratch;                                                              \
        uint8_t *restrict zs = (uint8_t *)(xs + 3 * (size_t)n);                                    \
        for (int k = 0; k < n; k++) {                                                              \
            const size_t j = (size_t)nl->cell_atoms[k];                                            \
            xs[3 * (size_t)k] = x[3 * j];                                                          \
            xs[3 * (size_t)k + 1] = x[3 * j + 1];                                                  \
            xs[3 * (size_t)k + 2] = x[3 * j + 2];                                                  \
            zs[k] = zone[j];                                                                       \
        }                                                                                          \
        T sh[27][3];                                                                               \
        for (int c = 0; c < 27; c++)                                                               \
            for (int d = 0; d < 3; d++)                                                            \
                sh[c][d] = (T)nl->shift[c][d];                                                     \
        const T rl2 = (T)rl2_d;                                                                    \
        const int *restrict cell_atoms = nl->cell_atoms;                                           \
        size_t np = 0;                                                                             \
        nl->nseg = 0;                                                                              \
        for (int i = 0; i < n; i++) {                                                              \
            int ci = nl->cell_of[i];                                                               \
            int cz = ci / (m[0] * m[1]), cy = (ci / m[0]) % m[1], cx = ci % m[0];                  \
            const T xi = x[3 * (size_t)i], yi = x[3 * (size_t)i + 1], zi = x[3 * (size_t)i + 2];   \
            const uint8_t zni = zone[i];                                                           \
            int ranges[63][3], nr = 0, mixed = 0;                                                  \
            size_t worst = 0;                                                                      \
            ranges[nr][0] = nl->cell_start[ci] + nl->pos_in_cell[i] + 1;                           \
            ranges[nr][1] = nl->cell_start[ci + 1];                                                \
            ranges[nr][2] = 0;                                                                     \
            worst += (size_t)(ranges[nr][1] - ranges[nr][0]);                                      \
            nr++;                                                                                  \
            for (int s = 0; s < sten->n; s++) {                                                    \
                int o[3] = {cx + sten->off[s][0], cy + sten->off[s][1], cz + sten->off[s][2]};     \
                int code = 0, out_of_grid = 0;                                                     \
                for (int d = 0, p3 = 1; d < 3; d++, p3 *= 3) {                                     \
                    /* one wrap is enough: offsets of 2 only with cells below rl, and then a       \
                     * periodic edge above 2 rl holds at least 3 cells */                          \
                    if (o[d] < 0) {                                                                \
                        o[d] += m[d];                                                              \
                        code += 2 * p3;                                                            \
                        out_of_grid |= !(periodic >> d & 1);                                       \
                    } else if (o[d] >= m[d]) {                                                     \
                        o[d] -= m[d];                                                              \
                        code += p3;                                                                \
                        out_of_grid |= !(periodic >> d & 1);                                       \
                    }                                                                              \
                }                                                                                  \
                if (out_of_grid)                                                                   \
                    continue;                                                                      \
                int oc = o[0] + m[0] * (o[1] + m[1] * o[2]);                                       \
                ranges[nr][0] = nl->cell_start[oc];                                                \
                ranges[nr][1] = nl->cell_start[oc + 1];                                            \
                ranges[nr][2] = code;                                                              \
                mixed |= code;                                                                     \
                worst += (size_t)(ranges[nr][1] - ranges[nr][0]);                                  \
                nr++;                                                                              \
            }                                                                                      \
            if (mixed) {                                                                           \
                /* group by image, stable: insertion sort of at most 63 ranges */                  \
                for (int r = 1; r < nr; r++) {                                                     \
                    int t0 = ranges[r][0], t1 = ranges[r][1], t2 = ranges[r][2], q = r;            \
                    for (; q > 0 && ranges[q - 1][2] > t2; q--) {                                  \
                        ranges[q][0] = ranges[q - 1][0];                                           \
                        ranges[q][1] = ranges[q - 1][1];                                           \
                        ranges[q][2] = ranges[q - 1][2];                                           \
                    }                                                                              \
                    ranges[q][0] = t0;                                                             \
                    ranges[q][1] = t1;                                                             \
                    ranges[q][2] = t2;                                                             \
                }                                                                                  \
                halox_status_t sst = md__seg_room(nl);                                             \
                if (sst != HALOX_OK)                                                               \
                    return sst;                                                                    \
            }                                                                                      \
            if (np + worst > 0x7fffffffu)                                                          \
                return halox_set_error(HALOX_ERR_NO_MEMORY,                                        \
                                       "pair list of more than 2^31 pairs on one rank: use more "  \
                                       "ranks");                                                   \
            if (np + worst > nl->list_cap) {                                                       \
                size_t want = nl->list_cap ? nl->list_cap : 4096;                                  \
                while (want < np + worst)                                                          \
                    want *= 2;                                                                     \
                int32_t *q = realloc(nl->list, sizeof(int32_t) * want);                            \
                if (!q)                                                                            \
                    return halox_set_error(HALOX_ERR_NO_MEMORY,                                    \
                                           "pair list: no memory for %zu pairs", want);            \
                nl->list = q;                                                                      \
                nl->list_cap = want;                                                               \
            }                                                                                      \
            int32_t *restrict out = nl->list;                                                      \
            nl->start[i] = (int)np;                                                                \
            nl->seg_first[i] = nl->nseg;                                                           \
            int cur = 0; /* the image of the open group */                                         \
            T xa = xi, ya = yi, za = zi;                                                           \
            for (int r = 0; r < nr; r++) {                                                         \
                if (ranges[r][2] != cur) {                                                         \
                    /* a new image: drop the previous segment if it kept nothing */                \
                    if (cur != 0 && nl->seg_at[nl->nseg - 1] == (int)np)                           \
                        nl->nseg--;                                                                \
                    cur = ranges[r][2];                                                            \
                    nl->seg_at[nl->nseg] = (int)np;                                                \
                    nl->seg_code[nl->nseg] = (uint8_t)cur;                                         \
                    nl->nseg++;                                                                    \
                    xa = xi - sh[cur][0];                                                          \
                    ya = yi - sh[cur][1];                                                          \
                    za = zi - sh[cur][2];                                                          \
                }                                                                                  \
                const int k1 = ranges[r][1];                                                       \
                for (int k = ranges[r][0]; k < k1; k++) {                                          \
                    const T dx = xa - xs[3 * (size_t)k], dy = ya - xs[3 * (size_t)k + 1],          \
                            dz = za - xs[3 * (size_t)k + 2];                                       \
                    const int keep = (dx * dx + dy * dy + dz * dz < rl2) & ((zni & zs[k]) == 0);   \
                    out[np] = cell_atoms[k];                                                       \
                    np += (size_t)keep;                                                            \
                }                                                                                  \
            }                                                                                      \
            if (cur != 0 && nl->seg_at[nl->nseg - 1] == (int)np)                                   \
                nl->nseg--;                                                                        \
        }                                                                                          \
        nl->start[n] = (int)np;                                                                    \
        nl->seg_first[n] = nl->nseg;                                                               \
        nl->npairs = np;                                                                           \
        return HALOX_OK;                                                                           \
    }

MD_DEFINE_NLIST_SCAN(float, md__nlist_scan_float)
MD_DEFINE_NLIST_SCAN(double, md__nlist_scan_double)

halox_status_t md__nlist_build(halox_md_t *md, double rl)
{
    md_nlist_t *nl = &md->nl;
    const halox_atoms_t *a = &md->atoms;
    int n = a->n_total;
    int m[3];
    double w[3];
    const int periodic = md->plan.shift_dims;
    halox_status_t st = md__bin(nl, a, n, 0.5 * rl, periodic, md->box.len, m, w);
    if (st != HALOX_OK)
        return st;
    if ((st = md__grow_int(&nl->start, &nl->start_cap, n + 1)) != HALOX_OK)
        return st;
    if ((st = md__grow_int(&nl->seg_first, &nl->seg_first_cap, n + 1)) != HALOX_OK)
        return st;
    nl->n = n;
    /* the image one edge up in d (code 1) is x_j + L_d: the kernels take x_i - L_d instead */
    for (int c = 0; c < 27; c++)
        for (int d = 0, q = c; d < 3; d++, q /= 3) {
            int img = q % 3 == 2 ? -1 : q % 3;
            nl->shift[c][d] = img * md->box.len[d];
        }
    md_stencil_t sten;
    md__make_stencil(w, rl, &sten);
    if (a->real == HALOX_FLOAT)
        return md__nlist_scan_float(nl, a->x, md->plan.zone, n, m, periodic, &sten, rl * rl);
    return md__nlist_scan_double(nl, a->x, md->plan.zone, n, m, periodic, &sten, rl * rl);
}
