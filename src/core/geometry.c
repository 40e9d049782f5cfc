/* Box, rank grid, domains and ownership. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "halox/geometry.h"

static const char halox__dim_name[3] = {'x', 'y', 'z'};

halox_status_t halox_box_check(const halox_box_t *box)
{
    if (!box)
        return halox__error(HALOX_ERR_INVALID_ARG, "box is NULL");
    for (int d = 0; d < 3; d++)
        if (!isfinite(box->len[d]) || box->len[d] <= 0)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "box length in %c is %g: every box edge must be finite and > 0",
                                halox__dim_name[d], box->len[d]);
    return HALOX_OK;
}

halox_status_t halox_grid_check(const halox_grid_t *grid)
{
    if (!grid)
        return halox__error(HALOX_ERR_INVALID_ARG, "grid is NULL");
    for (int d = 0; d < 3; d++)
        if (grid->n[d] < 1)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "grid has %d ranks in %c: every dimension needs at least 1 rank "
                                "(use e.g. --grid 2x2x1)",
                                grid->n[d], halox__dim_name[d]);
    if (halox_grid_size(grid) < 0)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "grid %dx%dx%d has %.0f ranks: a grid has at most 2^31-1 = %d ranks",
                            grid->n[0], grid->n[1], grid->n[2],
                            (double)grid->n[0] * grid->n[1] * grid->n[2], INT_MAX);
    return HALOX_OK;
}

halox_status_t halox_grid_parse(const char *text, halox_grid_t *grid_p)
{
    if (!text || !grid_p)
        return halox__error(HALOX_ERR_INVALID_ARG, "grid text is NULL");
    long v[3];
    const char *p = text;
    char sep = 0; /* 'x' (or 'X') or ',', the same between all three counts */
    for (int d = 0; d < 3; d++) {
        char *end = NULL;
        v[d] = strtol(p, &end, 10);
        const char s = *end == 'X' ? 'x' : *end;
        const int bad_sep = d < 2 && ((s != 'x' && s != ',') || (sep && s != sep));
        if (end == p || bad_sep)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "cannot read grid '%s': expected NXxNYxNZ (or NX,NY,NZ), three "
                                "counts of ranks such as 2x2x1",
                                text);
        p = end;
        if (d < 2) {
            sep = s;
            p++;
        }
    }
    if (*p)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "cannot read grid '%s': trailing characters after NXxNYxNZ (or "
                            "NX,NY,NZ), such as 2x2x1",
                            text);
    for (int d = 0; d < 3; d++) {
        if (v[d] < 1)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "grid '%s' has %ld ranks in %c: every dimension needs at least "
                                "1 rank",
                                text, v[d], halox__dim_name[d]);
        if (v[d] > INT_MAX) /* strtol saturates at LONG_MAX: that is above too */
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "grid '%s' has more than 2^31-1 ranks in %c: a grid has at most "
                                "2^31-1 = %d ranks",
                                text, halox__dim_name[d], INT_MAX);
        grid_p->n[d] = (int)v[d];
    }
    return halox_grid_check(grid_p);
}

int halox_grid_size(const halox_grid_t *grid)
{
    /* in long long: a grid nobody checked (a file's, a caller's) must not overflow an int */
    long long total = 1;
    for (int d = 0; d < 3; d++) {
        if (grid->n[d] < 1)
            return -1;
        total *= grid->n[d];
        if (total > INT_MAX)
            return -1;
    }
    return (int)total;
}

void halox_grid_default(int P, halox_grid_t *grid_p)
{
    /* the divisors of P in ascending order, found up to sqrt(P) (an int has at most 1600): the
     * pairs of them are few for any P, where a loop over every a <= P would spin for minutes on
     * a launcher's count near 1e9 */
    enum { MAX_DIVISORS = 1600 };
    int low[MAX_DIVISORS], high[MAX_DIVISORS], nd = 0, nh = 0;
    for (int k = 1; P > 0 && k <= P / k; k++)
        if (P % k == 0) {
            low[nd++] = k;
            if (k != P / k)
                high[nh++] = P / k;
        }
    while (nh > 0)
        low[nd++] = high[--nh];
    int best[3] = {P > 0 ? P : 1, 1, 1};
    long long best_cost = -1;
    /* x >= y >= z (x is cut first), the smallest halo surface; the first of equal ones */
    for (int i = 0; i < nd; i++)
        for (int j = 0; j <= i; j++) {
            const long long a = low[i], b = low[j];
            if (P % (a * b))
                continue;
            const long long c = P / (a * b);
            if (b < c)
                continue;
            const long long cost = a * b + b * c + a * c;
            if (best_cost < 0 || cost < best_cost) {
                best_cost = cost;
                best[0] = (int)a;
                best[1] = (int)b;
                best[2] = (int)c;
            }
        }
    for (int d = 0; d < 3; d++)
        grid_p->n[d] = best[d];
}

void halox_grid_coords(const halox_grid_t *grid, int rank, int coord_p[3])
{
    coord_p[0] = rank % grid->n[0];
    coord_p[1] = (rank / grid->n[0]) % grid->n[1];
    coord_p[2] = rank / (grid->n[0] * grid->n[1]);
}

int halox_grid_rank(const halox_grid_t *grid, const int coord[3])
{
    int c[3];
    for (int d = 0; d < 3; d++)
        c[d] = ((coord[d] % grid->n[d]) + grid->n[d]) % grid->n[d];
    return c[0] + grid->n[0] * (c[1] + grid->n[1] * c[2]);
}

int halox_grid_neighbour(const halox_grid_t *grid, int rank, int dim, int direction)
{
    int c[3];
    halox_grid_coords(grid, rank, c);
    c[dim] += direction;
    return halox_grid_rank(grid, c);
}

void halox_domain_bounds(const halox_grid_t *grid, const halox_box_t *box, int rank, double lo_p[3],
                         double hi_p[3])
{
    int c[3];
    halox_grid_coords(grid, rank, c);
    for (int d = 0; d < 3; d++) {
        lo_p[d] = box->len[d] * c[d] / grid->n[d];
        hi_p[d] = c[d] + 1 == grid->n[d] ? box->len[d] : box->len[d] * (c[d] + 1) / grid->n[d];
    }
}

int halox_owner_coord(const halox_grid_t *grid, const halox_box_t *box, int dim, double x)
{
    int n = grid->n[dim];
    int c = (int)floor(x * n / box->len[dim]);
    /* The floor above and the bounds of halox_domain_bounds may disagree by one ulp at a
     * boundary; settle it against the bounds so the two definitions agree exactly. */
    if (c < 0)
        c = 0;
    if (c >= n)
        c = n - 1;
    while (c > 0 && x < box->len[dim] * c / n)
        c--;
    while (c + 1 < n && x >= box->len[dim] * (c + 1) / n)
        c++;
    return c;
}

int halox_owner_rank(const halox_grid_t *grid, const halox_box_t *box, const double x[3])
{
    int c[3];
    for (int d = 0; d < 3; d++)
        c[d] = halox_owner_coord(grid, box, d, x[d]);
    return c[0] + grid->n[0] * (c[1] + grid->n[1] * c[2]);
}

double halox_wrap(double x, double len)
{
    double w = x - floor(x / len) * len;
    /* rounding can land exactly on len (e.g. x = -1e-18) */
    if (w >= len || w < 0)
        w = 0.0;
    return w;
}
