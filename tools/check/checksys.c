/* Checking library: see checksys.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksys.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#include "halox/geometry.h"

static uint64_t chk_next(uint64_t *s)
{
    /* splitmix64: small, good enough, identical everywhere */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double chk_uniform(uint64_t *s) { return (double)(chk_next(s) >> 11) * 0x1.0p-53; }
static double chk_gauss(uint64_t *s)
{
    double u = chk_uniform(s), v = chk_uniform(s);
    if (u < 1e-300)
        u = 1e-300;
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

int chk_system_make(chk_system_t *sys, const halox_box_t *box, int n, chk_dist_t dist,
                    uint64_t seed)
{
    sys->box = *box;
    sys->n = n;
    sys->x = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    if (!sys->x)
        return -1;
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 12345;
    double centre[4][3];
    for (int c = 0; c < 4; c++)
        for (int d = 0; d < 3; d++)
            centre[c][d] = chk_uniform(&s) * box->len[d];
    for (int i = 0; i < n; i++) {
        for (int d = 0; d < 3; d++) {
            double v;
            if (dist == CHK_CLUSTERED) {
                int c = (int)(chk_next(&s) % 4);
                v = centre[c][d] + 0.08 * box->len[d] * chk_gauss(&s);
            } else if (dist == CHK_SLAB && d == 0) {
                v = 0.5 * box->len[0] * chk_uniform(&s);
            } else {
                v = chk_uniform(&s) * box->len[d];
            }
            if (!isfinite(v)) /* a cluster's spread beyond a box near the double range */
                v = chk_uniform(&s) * box->len[d];
            sys->x[3 * i + d] = halox_wrap(v, box->len[d]);
        }
    }
    return 0;
}

const char *chk_dist_name(chk_dist_t dist)
{
    return dist == CHK_UNIFORM ? "uniform" : dist == CHK_CLUSTERED ? "clustered" : "slab";
}

void chk_system_free(chk_system_t *sys)
{
    free(sys->x);
    sys->x = NULL;
    sys->n = 0;
}

void chk_system_round(chk_system_t *sys, halox_real_t real)
{
    if (real != HALOX_FLOAT)
        return;
    for (int i = 0; i < 3 * sys->n; i++) {
        double len = sys->box.len[i % 3];
        float v = (float)sys->x[i];
        if ((double)v >= len || v < 0)
            v = 0.0f;
        sys->x[i] = v;
    }
}

halox_status_t chk_distribute(const chk_system_t *sys, const halox_grid_t *grid,
                              halox_atoms_t *atoms)
{
    int P = halox_grid_size(grid);
    int *count = calloc((size_t)P, sizeof(int));
    int *owner = malloc(sizeof(int) * (size_t)(sys->n > 0 ? sys->n : 1));
    if (!count || !owner) {
        free(count);
        free(owner);
        return HALOX_ERR_NO_MEMORY;
    }
    for (int i = 0; i < sys->n; i++) {
        owner[i] = halox_owner_rank(grid, &sys->box, &sys->x[3 * i]);
        count[owner[i]]++;
    }
    halox_status_t st = HALOX_OK;
    for (int r = 0; r < P && st == HALOX_OK; r++) {
        st = halox_atoms_reserve(&atoms[r], count[r] > 0 ? count[r] : 1);
        atoms[r].n_home = 0;
        atoms[r].n_total = 0;
    }
    for (int i = 0; i < sys->n && st == HALOX_OK; i++) {
        halox_atoms_t *a = &atoms[owner[i]];
        int k = a->n_home++;
        for (int d = 0; d < 3; d++)
            halox_atoms_set(a, k, d, sys->x[3 * i + d]);
        for (int d = 3; d < a->stride; d++)
            halox_atoms_set(a, k, d, (double)(i % 7)); /* spare component travels too */
        a->id[k] = i;
    }
    for (int r = 0; r < P; r++)
        atoms[r].n_total = atoms[r].n_home;
    free(count);
    free(owner);
    return st;
}

halox_plan_params_t chk_case_params(const chk_case_t *c, int periodic_shifts)
{
    halox_plan_params_t prm = {{{c->g[0], c->g[1], c->g[2]}},
                               {{c->L[0], c->L[1], c->L[2]}},
                               c->rc,
                               c->buf,
                               periodic_shifts,
                               0};
    return prm;
}

double chk_case_tol(const chk_case_t *c, halox_real_t real)
{
    double Lmax = fmax(c->L[0], fmax(c->L[1], c->L[2]));
    return (real == HALOX_FLOAT ? 4e-7 : 1e-14) * (Lmax + c->rc + c->buf) * 4;
}

void chk_pairs_free(chk_pairs_t *p)
{
    free(p->key);
    memset(p, 0, sizeof *p);
}

int chk_pairs_add(chk_pairs_t *p, uint64_t key)
{
    if (p->n == p->cap) {
        long long cap = p->cap ? 2 * p->cap : 1024;
        uint64_t *k = realloc(p->key, sizeof(uint64_t) * (size_t)cap);
        if (!k)
            return -1;
        p->key = k;
        p->cap = cap;
    }
    p->key[p->n++] = key;
    return 0;
}

static int chk_pairs_push(chk_pairs_t *p, int a, int b)
{
    uint32_t lo = (uint32_t)(a < b ? a : b), hi = (uint32_t)(a < b ? b : a);
    return chk_pairs_add(p, ((uint64_t)lo << 32) | hi);
}

static int chk_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void chk_pairs_sort(chk_pairs_t *p)
{
    if (p->n > 1) /* qsort(NULL, 0, ...) is undefined */
        qsort(p->key, (size_t)p->n, sizeof(uint64_t), chk_cmp_u64);
}

/* Cell grid over a set of points (no periodicity): cells of at least rc, at most 200 per
 * dimension and about 2n + 27 in all (a box of 1e30 with 10 atoms needs no 200^3 cells). Every
 * count is clamped as a double before it becomes an int, and a non-finite coordinate fails the
 * build: inf positions made a negative cell index (a crash). */
typedef struct {
    int nc[3];
    double lo[3], size[3];
    int *head, *next;
} chk_cells_t;

/* Cell of coordinate v in dimension d, inside [0, nc) for every input. */
static int chk_cell_coord(const chk_cells_t *c, int d, double v)
{
    double t = (v - c->lo[d]) / c->size[d];
    return !(t > 0) ? 0 : t >= c->nc[d] ? c->nc[d] - 1 : (int)t;
}

static int chk_cells_build(chk_cells_t *c, const double *x, int n, double rc)
{
    double hi[3];
    c->head = c->next = NULL;
    for (int d = 0; d < 3; d++) {
        c->lo[d] = HUGE_VAL;
        hi[d] = -HUGE_VAL;
    }
    for (int i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) {
            double v = x[3 * i + d];
            if (!isfinite(v))
                return -1;
            c->lo[d] = fmin(c->lo[d], v);
            hi[d] = fmax(hi[d], v);
        }
    if (!(rc > 0) || !isfinite(rc))
        return -1;
    const double cap = fmin(200, ceil(cbrt(2.0 * n + 27)));
    long long total = 1;
    for (int d = 0; d < 3; d++) {
        if (n == 0)
            c->lo[d] = hi[d] = 0;
        double ext = hi[d] - c->lo[d];
        if (!isfinite(ext))
            return -1;
        double k = floor(ext / rc);
        c->nc[d] = !(k >= 1) ? 1 : k > cap ? (int)cap : (int)k;
        c->size[d] = ext > 0 ? ext / c->nc[d] * (1 + 1e-12) : 1;
        total *= c->nc[d];
    }
    c->head = malloc(sizeof(int) * (size_t)total);
    c->next = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!c->head || !c->next)
        return -1;
    for (long long i = 0; i < total; i++)
        c->head[i] = -1;
    for (int i = n - 1; i >= 0; i--) {
        int k[3];
        for (int d = 0; d < 3; d++)
            k[d] = chk_cell_coord(c, d, x[3 * i + d]);
        long long cell = k[0] + (long long)c->nc[0] * (k[1] + (long long)c->nc[1] * k[2]);
        c->next[i] = c->head[cell];
        c->head[cell] = i;
    }
    return 0;
}

static void chk_cells_free(chk_cells_t *c)
{
    free(c->head);
    free(c->next);
}

/* Visit every unordered pair (i < j) closer than rc; cells are >= rc so 27 neighbours do. */
typedef void (*chk_pair_fn)(void *ctx, int i, int j, const double dx[3], double r2);
static int chk_cells_pairs(const double *x, int n, double rc, chk_pair_fn fn, void *ctx)
{
    chk_cells_t c;
    if (chk_cells_build(&c, x, n, rc) != 0) {
        chk_cells_free(&c);
        return -1;
    }
    double rc2 = rc * rc;
    for (int i = 0; i < n; i++) {
        int k[3];
        for (int d = 0; d < 3; d++)
            k[d] = chk_cell_coord(&c, d, x[3 * i + d]);
        for (int a = k[0] - 1; a <= k[0] + 1; a++)
            for (int b = k[1] - 1; b <= k[1] + 1; b++)
                for (int e = k[2] - 1; e <= k[2] + 1; e++) {
                    if (a < 0 || b < 0 || e < 0 || a >= c.nc[0] || b >= c.nc[1] || e >= c.nc[2])
                        continue;
                    long long cell = a + (long long)c.nc[0] * (b + (long long)c.nc[1] * e);
                    for (int j = c.head[cell]; j >= 0; j = c.next[j]) {
                        if (j <= i)
                            continue;
                        double dx[3], r2 = 0;
                        for (int d = 0; d < 3; d++) {
                            dx[d] = x[3 * i + d] - x[3 * j + d];
                            r2 += dx[d] * dx[d];
                        }
                        if (r2 < rc2)
                            fn(ctx, i, j, dx, r2);
                    }
                }
    }
    chk_cells_free(&c);
    return 0;
}

/* The plan's pair rule: the half shell's zone rule, or the full shell's (newton on). */
static int chk_pair_rule(const halox_plan_t *plan, int i, int j)
{
    return plan->params.full_shell ? halox_full_pair(plan->zone[i], plan->zone[j])
                                   : halox_zone_pair(plan->zone[i], plan->zone[j]);
}

static double *chk_local_x(const halox_atoms_t *atoms)
{
    double *x = malloc(sizeof(double) * 3 * (size_t)(atoms->n_total > 0 ? atoms->n_total : 1));
    if (!x)
        return NULL;
    for (int i = 0; i < atoms->n_total; i++)
        for (int d = 0; d < 3; d++)
            x[3 * i + d] = halox_atoms_get(atoms, i, d);
    return x;
}

typedef struct {
    const halox_plan_t *plan;
    const halox_atoms_t *atoms;
    chk_pairs_t *out;
    int fail;
} chk_rank_ctx_t;

static void chk_rank_pair_cb(void *vctx, int i, int j, const double dx[3], double r2)
{
    (void)dx;
    (void)r2;
    chk_rank_ctx_t *ctx = vctx;
    if (!chk_pair_rule(ctx->plan, i, j))
        return;
    if (chk_pairs_push(ctx->out, ctx->atoms->id[i], ctx->atoms->id[j]) != 0)
        ctx->fail = 1;
}

int chk_rank_pairs(const halox_plan_t *plan, const halox_atoms_t *atoms, double rc,
                   chk_pairs_t *out)
{
    double *x = chk_local_x(atoms);
    if (!x)
        return -1;
    chk_rank_ctx_t ctx = {plan, atoms, out, 0};
    int rv = chk_cells_pairs(x, atoms->n_total, rc, chk_rank_pair_cb, &ctx);
    free(x);
    return rv != 0 || ctx.fail ? -1 : 0;
}

/* The minimum-image vector x_i - x_j of the global system and its square. */
static double chk_min_image(const chk_system_t *sys, int i, int j, double dx[3])
{
    const double *L = sys->box.len;
    double r2 = 0;
    for (int d = 0; d < 3; d++) {
        dx[d] = sys->x[3 * i + d] - sys->x[3 * j + d];
        dx[d] -= L[d] * round(dx[d] / L[d]);
        r2 += dx[d] * dx[d];
    }
    return r2;
}

int chk_global_pairs(const chk_system_t *sys, double rc, long long brute_limit, chk_pairs_t *out)
{
    const double *L = sys->box.len;
    double rc2 = rc * rc, dx[3];
    if (sys->n <= brute_limit) {
        for (int i = 0; i < sys->n; i++)
            for (int j = i + 1; j < sys->n; j++)
                if (chk_min_image(sys, i, j, dx) < rc2 && chk_pairs_push(out, i, j) != 0)
                    return -1;
        return 0;
    }
    /* Large systems: a periodic cell grid, independent of the planner: cells of at least rc,
     * at most about 2n + 27 in all (counts clamped as doubles, then converted). */
    for (long long k = 0; k < 3LL * sys->n; k++)
        if (!isfinite(sys->x[k]))
            return -1;
    int nc[3];
    const double cap = fmax(3, floor(cbrt(2.0 * sys->n + 27)));
    for (int d = 0; d < 3; d++) {
        double k = floor(L[d] / rc);
        if (!(k >= 3))
            return chk_global_pairs(sys, rc, (long long)sys->n + 1, out);
        nc[d] = k > cap ? (int)cap : (int)k;
    }
    long long ncell = (long long)nc[0] * nc[1] * nc[2];
    int *head = malloc(sizeof(int) * (size_t)ncell), *next = malloc(sizeof(int) * (size_t)sys->n);
    if (!head || !next) {
        free(head);
        free(next);
        return -1;
    }
    for (long long c = 0; c < ncell; c++)
        head[c] = -1;
    int(*cellof)[3] = malloc(sizeof(int[3]) * (size_t)sys->n);
    if (!cellof) {
        free(head);
        free(next);
        return -1;
    }
    for (int i = sys->n - 1; i >= 0; i--) {
        for (int d = 0; d < 3; d++) {
            double t = sys->x[3 * i + d] / L[d] * nc[d];
            cellof[i][d] = !(t > 0) ? 0 : t >= nc[d] ? nc[d] - 1 : (int)t;
        }
        long long c =
            cellof[i][0] + (long long)nc[0] * (cellof[i][1] + (long long)nc[1] * cellof[i][2]);
        next[i] = head[c];
        head[c] = i;
    }
    int rv = 0;
    for (int i = 0; i < sys->n && rv == 0; i++) {
        for (int a = -1; a <= 1; a++)
            for (int b = -1; b <= 1; b++)
                for (int e = -1; e <= 1; e++) {
                    int k0 = (cellof[i][0] + a + nc[0]) % nc[0];
                    int k1 = (cellof[i][1] + b + nc[1]) % nc[1];
                    int k2 = (cellof[i][2] + e + nc[2]) % nc[2];
                    long long c = k0 + (long long)nc[0] * (k1 + (long long)nc[1] * k2);
                    for (int j = head[c]; j >= 0; j = next[j])
                        if (j > i && chk_min_image(sys, i, j, dx) < rc2 &&
                            chk_pairs_push(out, i, j) != 0)
                            rv = -1;
                }
    }
    free(head);
    free(next);
    free(cellof);
    /* with exactly 3 cells in a dimension the -1 and +1 neighbours differ; with fewer we fell
     * back to brute force above, so no pair is visited twice */
    return rv;
}

typedef struct {
    const halox_plan_t *plan;
    halox_real_t real;
    int stride;
    void *f;
    double rc2;
} chk_force_ctx_t;

static void chk_force_cb(void *vctx, int i, int j, const double dx[3], double r2)
{
    chk_force_ctx_t *ctx = vctx;
    if (!chk_pair_rule(ctx->plan, i, j))
        return;
    double s = 1 - r2 / ctx->rc2;
    s *= s;
    for (int d = 0; d < 3; d++) {
        double fd = s * dx[d];
        if (ctx->real == HALOX_FLOAT) {
            float *f = ctx->f;
            f[(size_t)i * ctx->stride + d] += (float)fd;
            f[(size_t)j * ctx->stride + d] -= (float)fd;
        } else {
            double *f = ctx->f;
            f[(size_t)i * ctx->stride + d] += fd;
            f[(size_t)j * ctx->stride + d] -= fd;
        }
    }
}

int chk_rank_forces(const halox_plan_t *plan, const halox_atoms_t *atoms, double rc, void *f)
{
    memset(f, 0, halox_real_size(atoms->real) * (size_t)atoms->stride * (size_t)atoms->n_total);
    double *x = chk_local_x(atoms);
    if (!x)
        return -1;
    chk_force_ctx_t ctx = {plan, atoms->real, atoms->stride, f, rc * rc};
    int rv = chk_cells_pairs(x, atoms->n_total, rc, chk_force_cb, &ctx);
    free(x);
    return rv;
}

halox_status_t chk_world_make(chk_world_t *w, const halox_plan_params_t *prm, int n,
                              chk_dist_t dist, uint64_t seed, halox_real_t real, int stride)
{
    memset(w, 0, sizeof *w);
    w->P = halox_grid_size(&prm->grid);
    if (chk_system_make(&w->sys, &prm->box, n, dist, seed) != 0)
        return HALOX_ERR_NO_MEMORY;
    chk_system_round(&w->sys, real);
    w->atoms = calloc((size_t)w->P, sizeof *w->atoms);
    w->plans = calloc((size_t)w->P, sizeof *w->plans);
    if (!w->atoms || !w->plans)
        return HALOX_ERR_NO_MEMORY;
    for (int r = 0; r < w->P; r++) {
        halox_status_t st = halox_atoms_init(&w->atoms[r], real, stride, 0);
        if (st != HALOX_OK)
            return st;
        halox_plan_init(&w->plans[r]);
    }
    return chk_distribute(&w->sys, &prm->grid, w->atoms);
}

void chk_world_free(chk_world_t *w)
{
    for (int r = 0; r < w->P && w->atoms && w->plans; r++) {
        halox_atoms_free(&w->atoms[r]);
        halox_plan_free(&w->plans[r]);
    }
    free(w->atoms);
    free(w->plans);
    chk_system_free(&w->sys);
    memset(w, 0, sizeof *w);
}

double chk_home_force_error(const halox_atoms_t *atoms, void *const *f, int P, halox_real_t real,
                            int stride, const double *fg, int n, double *fscale)
{
    double maxerr = 0, scale = 0;
    for (int i = 0; i < 3 * n; i++)
        scale = fmax(scale, fabs(fg[i]));
    for (int r = 0; r < P; r++)
        for (int i = 0; i < atoms[r].n_home; i++)
            for (int d = 0; d < 3; d++) {
                double v = real == HALOX_FLOAT ? ((const float *)f[r])[(size_t)i * stride + d]
                                               : ((const double *)f[r])[(size_t)i * stride + d];
                maxerr = fmax(maxerr, fabs(v - fg[3 * atoms[r].id[i] + d]));
            }
    *fscale = scale;
    return maxerr;
}

double chk_force_error(const chk_system_t *sys, double rc, const halox_atoms_t *atoms,
                       void *const *f, int P, halox_real_t real, int stride, double *fscale)
{
    *fscale = 0;
    double *fg = malloc(sizeof(double) * 3 * (size_t)(sys->n > 0 ? sys->n : 1));
    double err = fg && chk_global_forces(sys, rc, fg) == 0
                     ? chk_home_force_error(atoms, f, P, real, stride, fg, sys->n, fscale)
                     : -1;
    free(fg);
    return err;
}

int chk_global_forces(const chk_system_t *sys, double rc, double *f)
{
    chk_pairs_t p = {0};
    if (chk_global_pairs(sys, rc, 20000, &p) != 0) {
        chk_pairs_free(&p);
        return -1;
    }
    memset(f, 0, sizeof(double) * 3 * (size_t)sys->n);
    for (long long k = 0; k < p.n; k++) {
        int i = (int)(p.key[k] >> 32), j = (int)(p.key[k] & 0xffffffffu);
        double dx[3], r2 = chk_min_image(sys, i, j, dx);
        double s = 1 - r2 / (rc * rc);
        s *= s;
        for (int d = 0; d < 3; d++) {
            f[3 * i + d] += s * dx[d];
            f[3 * j + d] -= s * dx[d];
        }
    }
    chk_pairs_free(&p);
    return 0;
}

int chk_pairs_has(const chk_pairs_t *p, uint64_t key)
{
    long long lo = 0, hi = p->n;
    while (lo < hi) {
        long long mid = (lo + hi) / 2;
        if (p->key[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n && p->key[lo] == key;
}

long long chk_compare_pairs(const chk_pairs_t *got, const chk_pairs_t *strict,
                            const chk_pairs_t *loose, int report)
{
    long long bad = 0;
    for (long long k = 0; k + 1 < got->n; k++)
        if (got->key[k] == got->key[k + 1]) {
            if (bad++ < report)
                fprintf(stderr, "pair (%u, %u) computed more than once\n",
                        (unsigned)(got->key[k] >> 32), (unsigned)(got->key[k] & 0xffffffffu));
        }
    for (long long k = 0; k < strict->n; k++)
        if (!chk_pairs_has(got, strict->key[k])) {
            if (bad++ < report)
                fprintf(stderr, "pair (%u, %u) within the cut-off was never computed\n",
                        (unsigned)(strict->key[k] >> 32), (unsigned)(strict->key[k] & 0xffffffffu));
        }
    for (long long k = 0; k < got->n; k++)
        if (!chk_pairs_has(loose, got->key[k])) {
            if (bad++ < report)
                fprintf(stderr, "pair (%u, %u) computed but not within the cut-off\n",
                        (unsigned)(got->key[k] >> 32), (unsigned)(got->key[k] & 0xffffffffu));
        }
    return bad;
}

void chk_jiggle(const halox_plan_t *plan, halox_atoms_t *atoms, uint64_t seed, int step, double amp)
{
    for (int i = 0; i < atoms->n_home; i++) {
        uint64_t s = seed ^ ((uint64_t)(uint32_t)atoms->id[i] << 20) ^ ((uint64_t)step << 52);
        for (int d = 0; d < 3; d++) {
            double x = halox_atoms_get(atoms, i, d);
            double y = x + amp * (chk_uniform(&s) - 0.5);
            /* stay inside the domain: the plan's maps stay valid */
            if (y >= plan->lo[d] && y < plan->hi[d])
                halox_atoms_set(atoms, i, d, y);
        }
    }
}
