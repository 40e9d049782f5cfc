/* Atoms too close to start a run from (--read): a pair closer than MD_READ_MIN_DISTANCE in a
 * frame is refused by read_file.c, naming both atoms. The atoms are sorted by cells of at least
 * that width and the cells found through a hash table, not an array of every cell: a sparse box
 * would need far more cells than atoms. A cell then holds a bounded number of atoms unless two
 * of them are too close, and each is compared with its 27 neighbours (each cell once where an
 * edge has fewer than 3): O(N log N) for any box. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "halox/status.h"
#include "systems/read.h"

/* An atom and its cell, sorted by cell (z, y, x). */
typedef struct md__cell {
    long long c[3];
    long long i;
} md__cell_t;

static int md__cell_is(const md__cell_t *a, const long long c[3])
{
    return a->c[0] == c[0] && a->c[1] == c[1] && a->c[2] == c[2];
}

static int md__cell_cmp(const void *pa, const void *pb)
{
    const md__cell_t *a = pa, *b = pb;
    for (int d = 2; d >= 0; d--)
        if (a->c[d] != b->c[d])
            return a->c[d] < b->c[d] ? -1 : 1;
    return a->i < b->i ? -1 : a->i > b->i;
}

static size_t md__cell_hash(const long long c[3], size_t mask)
{
    uint64_t h = (uint64_t)c[0] * 0x9E3779B97F4A7C15ull ^ (uint64_t)c[1] * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)c[2] * 0x165667B19E3779F9ull;
    return (size_t)(h ^ h >> 29) & mask;
}

/* The first atom of cell c in the sorted array, or -1 when the cell is empty. */
static long long md__cell_find(const md__cell_t *a, const long long *tab, size_t mask,
                               const long long c[3])
{
    for (size_t h = md__cell_hash(c, mask);; h = (h + 1) & mask)
        if (tab[h] < 0 || md__cell_is(&a[tab[h]], c))
            return tab[h];
}

int md__read_overlap(const double *x, long long n, const double box[3], long long *a_p,
                     long long *b_p, double *r_p, halox_status_t *st_p)
{
    const double dmin = MD_READ_MIN_DISTANCE;
    long long m[3];
    for (int d = 0; d < 3; d++) { /* cells at least dmin wide, at most 2^40 per edge */
        const double c = floor(box[d] / dmin);
        m[d] = c < 1 ? 1 : c > 1099511627776.0 ? 1099511627776LL : (long long)c;
    }
    size_t size = 2;
    while (size < 2 * (size_t)n)
        size *= 2;
    const size_t mask = size - 1;
    *st_p = HALOX_OK;
    md__cell_t *a = malloc(sizeof *a * (size_t)n);
    long long *tab = malloc(sizeof *tab * size);
    int found = 0;
    if (!a || !tab) {
        *st_p =
            halox_set_error(HALOX_ERR_NO_MEMORY, "no memory to check %lld atoms for overlaps", n);
        goto out;
    }
    for (long long i = 0; i < n; i++) {
        a[i].i = i;
        for (int d = 0; d < 3; d++) { /* x in [0, box): wrapped on reading */
            const long long k = (long long)(x[3 * i + d] / box[d] * (double)m[d]);
            a[i].c[d] = k < 0 ? 0 : k >= m[d] ? m[d] - 1 : k;
        }
    }
    qsort(a, (size_t)n, sizeof *a, md__cell_cmp);
    for (size_t h = 0; h < size; h++)
        tab[h] = -1;
    for (long long s = 0; s < n; s++)
        if (s == 0 || !md__cell_is(&a[s], a[s - 1].c)) {
            size_t h = md__cell_hash(a[s].c, mask);
            while (tab[h] >= 0)
                h = (h + 1) & mask;
            tab[h] = s;
        }
    long long lo[3], hi[3];
    for (int d = 0; d < 3; d++) {
        lo[d] = m[d] >= 3 ? -1 : 0;
        hi[d] = m[d] >= 3 ? 1 : m[d] - 1;
    }
    for (long long s = 0, e; s < n && !found; s = e) {
        for (e = s + 1; e < n && md__cell_is(&a[e], a[s].c);)
            e++; /* [s, e): the atoms of one cell */
        for (long long kz = lo[2]; kz <= hi[2] && !found; kz++)
            for (long long ky = lo[1]; ky <= hi[1] && !found; ky++)
                for (long long kx = lo[0]; kx <= hi[0] && !found; kx++) {
                    const long long k[3] = {kx, ky, kz};
                    long long c[3];
                    for (int d = 0; d < 3; d++)
                        c[d] = m[d] >= 3 ? (a[s].c[d] + k[d] + m[d]) % m[d] : k[d];
                    long long q = md__cell_find(a, tab, mask, c);
                    for (; q >= 0 && q < n && !found && md__cell_is(&a[q], c); q++)
                        for (long long p = s; p < e; p++) {
                            /* each pair once: from the cell of its atom of the lower index */
                            const long long i = a[p].i, j = a[q].i;
                            if (j <= i)
                                continue;
                            double r2 = 0;
                            for (int d = 0; d < 3; d++) {
                                double dd = x[3 * i + d] - x[3 * j + d];
                                dd -= box[d] * nearbyint(dd / box[d]);
                                r2 += dd * dd;
                            }
                            if (r2 < dmin * dmin) {
                                found = 1;
                                *a_p = i;
                                *b_p = j;
                                *r_p = sqrt(r2);
                                break;
                            }
                        }
                }
    }
out:
    free(a);
    free(tab);
    return found;
}
