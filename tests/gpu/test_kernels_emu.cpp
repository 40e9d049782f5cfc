/* The device-data rebuild's kernels (src/transports/gpu/plan_select.cu, migrate_kernels.cu and
 * their stable compaction, halox/device/compact.cuh) run on the CPU through the host emulation of
 * tests/emu, against host references, in every build (no GPU, no CUDA needed): so their logic (the
 * tiles' counts, the look-back over the tiles before, the scatter in index order, the warp
 * reductions of the masks, the wrap and owner arithmetic) is checked in CI, and the GPU runs
 * (test_gpu_plan_device, test_gpu_migrate_device) check the same code on the device.
 *   - selection: (double)x - lo < rh over [begin, end), and hi - (double)x <= rh (a full shell's
 *     pulses from the lower neighbour, with atoms on both ends), float and double, strides 3 and 4,
 * every dimension, sizes around the tile (1024) boundaries, the mask of the ranges that hold a
 *     selected atom; the same scratch used again after a compaction of another size; a selection
 *     captured into a graph and replayed (the launch's tickets and epoch in device memory);
 *   - the look-back over tiles that published only their counts (the emulation runs tiles one
 *     after another, so a compaction never meets that);
 *   - the home check's first atom outside [lo, hi), NaN included, alone and inside a selection;
 *   - the migration's leavers: components wrapped exactly as core's halox_wrap and the store in
 *     the atoms' precision (-0, 0, the edge, far outside, NaN), owners as halox_owner_rank, the
 *     leavers ascending with their owners;
 *   - pack, unpack of records, the ids and zones of the set-up messages;
 *   - the one-kernel scan of counts (halox/device/scan.cuh) the cluster build and the inline
 *     view use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "halox/device/scan.cuh"
#include "transports/gpu/halo_pack.cu"
#include "transports/gpu/migrate_kernels.cu"
#include "transports/gpu/plan_select.cu"

#include "halox/geometry.h"

static int g_fail;
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (g_fail++ < 20) {                                                                   \
                fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                    \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fprintf(stderr, "\n");                                                             \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static uint64_t g_s = 2026;
static double uni()
{
    uint64_t z = (g_s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

static double get(const void *x, halox_real_t real, int stride, int i, int c)
{
    const size_t k = (size_t)i * (size_t)stride + (size_t)c;
    return real == HALOX_FLOAT ? (double)((const float *)x)[k] : ((const double *)x)[k];
}

static void put(void *x, halox_real_t real, int stride, int i, int c, double v)
{
    const size_t k = (size_t)i * (size_t)stride + (size_t)c;
    if (real == HALOX_FLOAT)
        ((float *)x)[k] = (float)v;
    else
        ((double *)x)[k] = v;
}

/* a selection of [0, n) by component dim within rh above lo (the ranges, the home check: none) */
static halox_plan_select_args_t sel_args(const void *x, halox_real_t real, int stride, int dim,
                                         double lo, double rh, int n)
{
    halox_plan_select_args_t a;
    memset(&a, 0, sizeof a);
    a.x = x;
    a.real = real;
    a.stride = stride;
    a.dim = dim;
    a.bound = lo;
    a.rh = rh;
    a.end = n;
    return a;
}

/* core's test (plan.c's halox__plan_scan): within rh above the lower bound, or (down: a pulse
 * from the lower neighbour) within rh below the upper one, in double */
static int host_selects(const halox_plan_select_args_t *a, double v)
{
    return a->down ? a->bound - v <= a->rh : v - a->bound < a->rh;
}

/* the selection against host loops; down: by the upper bound (a full shell's second direction),
 * with atoms exactly at both ends of the window, where the two tests differ (< and <=) */
static void test_select(halox_real_t real, int stride, int n, int dim, int down)
{
    const size_t es = halox_real_size(real) * (size_t)stride;
    std::vector<unsigned char> x(es * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++)
        for (int c = 0; c < stride; c++)
            put(x.data(), real, stride, i, c, uni() * 10.0);
    halox_plan_select_args_t a = sel_args(x.data(), real, stride, dim, 2.5, 3.0, n); /* ~half */
    a.begin = n / 7;
    if (down) {
        a.bound = 5.5;
        a.down = 1;
    }
    for (int i = a.begin; i < a.begin + 4 && i < n; i++)
        put(x.data(), real, stride, i, dim, i % 2 ? 5.5 : 2.5);
    /* three ranges of "pulses" 0, 2 and 5 over [begin, end) */
    const int len = a.end - a.begin;
    a.n_ranges = 3;
    const int cut[4] = {a.begin, a.begin + len / 3, a.begin + len / 2, a.end};
    const int pulse[3] = {0, 2, 5};
    for (int j = 0; j < 3; j++) {
        a.range_lo[j] = cut[j];
        a.range_hi[j] = cut[j + 1];
        a.range_pulse[j] = pulse[j];
    }
    std::vector<int> want;
    unsigned want_mask = 0;
    for (int i = a.begin; i < a.end; i++)
        if (host_selects(&a, get(x.data(), real, stride, i, dim))) {
            want.push_back(i);
            for (int j = 0; j < 3; j++)
                if (i >= cut[j] && i < cut[j + 1])
                    want_mask |= 1u << pulse[j];
        }
    std::vector<int> out((size_t)n + 1, -7), scratch(halox_kernel_plan_select_scratch(len) + 1);
    int count = -1;
    unsigned mask = 0;
    EXPECT(halox_kernel_plan_select(&a, out.data(), &count, &mask, scratch.data(), nullptr) ==
               cudaSuccess,
           "launch");
    EXPECT(count == (int)want.size(), "select n %d down %d: count %d, want %zu", n, down, count,
           want.size());
    EXPECT(count != (int)want.size() || std::equal(want.begin(), want.end(), out.begin()),
           "select n %d down %d: indices differ", n, down);
    EXPECT(mask == want_mask, "select n %d down %d: mask %#x, want %#x", n, down, mask, want_mask);
    /* the same scratch again (the tiles' words and the ticket left ready by the last launch),
     * after a compaction of another size over it */
    if (len > 0) {
        halox_plan_select_args_t half = a;
        half.end = a.begin + len / 2;
        std::vector<int> o2((size_t)n + 1, -7);
        int c2 = -1;
        EXPECT(halox_kernel_plan_select(&half, o2.data(), &c2, &mask, scratch.data(), nullptr) ==
                   cudaSuccess,
               "launch");
        int c3 = -1;
        EXPECT(halox_kernel_plan_select(&a, o2.data(), &c3, &mask, scratch.data(), nullptr) ==
                   cudaSuccess,
               "launch");
        EXPECT(c3 == (int)want.size() && std::equal(want.begin(), want.end(), o2.begin()),
               "select n %d again on the same scratch: %d of %zu", n, c3, want.size());
    }
}

static void test_check_home(halox_real_t real, int n)
{
    const int stride = 3;
    const double lo[3] = {1, 2, 3}, hi[3] = {4, 5, 6};
    std::vector<unsigned char> x(halox_real_size(real) * 3 * (size_t)n);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            put(x.data(), real, stride, i, c, lo[c] + uni() * (hi[c] - lo[c]) * 0.999);
    for (int round = 0; round < 3; round++) {
        int bad = n;
        if (round == 1 && n > 10) {
            put(x.data(), real, stride, n - 3, 1, 5.0); /* on hi: outside */
            put(x.data(), real, stride, n / 2, 2, NAN);
            bad = n / 2;
        } else if (round == 2 && n > 10) {
            put(x.data(), real, stride, 3, 0, 0.999999); /* just below lo */
            bad = 3;
        }
        int first = 0x7f7f7f7f;
        std::vector<uint8_t> zone((size_t)n + 1, 0x5a);
        EXPECT(halox_kernel_plan_check_home(real, stride, x.data(), n, lo, hi, &first,
                                            round == 2 ? nullptr : zone.data(),
                                            nullptr) == cudaSuccess,
               "launch");
        EXPECT((bad == n && first == 0x7f7f7f7f) || first == bad,
               "check home n %d round %d: first %d, want %d", n, round, first, bad);
        int zoned = 0; /* zeroed below n (none without the array), untouched at n */
        for (int i = 0; i < n; i++)
            zoned += zone[(size_t)i] == (round == 2 ? 0x5a : 0);
        EXPECT(zoned == n && zone[(size_t)n] == 0x5a, "check home n %d round %d: %d zones right", n,
               round, zoned);
        /* the same check inside a selection over the home atoms (the plan build's first), which
         * still selects as without it */
        halox_plan_select_args_t a =
            sel_args(x.data(), real, stride, round, lo[round], 0.4 * (hi[round] - lo[round]), n);
        for (int d = 0; d < 3; d++) {
            a.home_lo[d] = lo[d];
            a.home_hi[d] = hi[d];
        }
        int first2 = 0x7f7f7f7f, count = -1;
        unsigned mask = 0;
        a.first_bad = &first2;
        std::vector<uint8_t> zone2((size_t)n + 1, 0x5a);
        a.zone = round == 2 ? nullptr : zone2.data();
        std::vector<int> out((size_t)n + 1, -7), scratch(halox_kernel_plan_select_scratch(n) + 1);
        EXPECT(halox_kernel_plan_select(&a, out.data(), &count, &mask, scratch.data(), nullptr) ==
                   cudaSuccess,
               "launch");
        std::vector<int> want;
        for (int i = 0; i < n; i++)
            if (host_selects(&a, get(x.data(), real, stride, i, round)))
                want.push_back(i);
        EXPECT(first2 == first && zone2 == zone && count == (int)want.size() &&
                   std::equal(want.begin(), want.end(), out.begin()),
               "check home in the selection, n %d round %d: first %d (%d), count %d (%zu)", n,
               round, first2, first, count, want.size());
    }
}

/* core's wrap and store (migrate.c's halox__wrap_store), then the owner */
static int host_scan(halox_real_t real, int stride, void *x, int i, const halox_grid_t *g,
                     const halox_box_t *box, int me, int *bad)
{
    double lo[3], hi[3], v[3];
    halox_domain_bounds(g, box, me, lo, hi);
    for (int c = 0; c < 3; c++) {
        v[c] = get(x, real, stride, i, c);
        if (v[c] > 0 && v[c] < box->len[c])
            continue;
        if (!isfinite(v[c])) {
            *bad = 1;
            return me;
        }
        put(x, real, stride, i, c, halox_wrap(v[c], box->len[c]));
        if (get(x, real, stride, i, c) >= box->len[c])
            put(x, real, stride, i, c, 0.0);
        v[c] = get(x, real, stride, i, c);
    }
    if (v[0] >= lo[0] && v[0] < hi[0] && v[1] >= lo[1] && v[1] < hi[1] && v[2] >= lo[2] &&
        v[2] < hi[2])
        return me;
    return halox_owner_rank(g, box, v);
}

static void test_mig_leavers(halox_real_t real, int stride, int n)
{
    const halox_grid_t g = {{3, 2, 2}};
    const halox_box_t box = {{9.3, 7.1, 5.0}};
    const int me = 7;
    const size_t es = halox_real_size(real) * (size_t)stride;
    std::vector<unsigned char> x(es * (size_t)n), y;
    for (int i = 0; i < n; i++)
        for (int c = 0; c < stride; c++) {
            const double L = c < 3 ? box.len[c] : 1.0, u = uni();
            double v = u < 0.6    ? uni() * L
                       : u < 0.8  ? (uni() - 0.5) * 4.4 * L
                       : u < 0.85 ? -0.0
                       : u < 0.9  ? L
                       : u < 0.93 ? -L * 1e-17
                       : u < 0.96 ? 0.0
                                  : L * (1 - 1e-16);
            put(x.data(), real, stride, i, c, v);
        }
    if (n > 5)
        put(x.data(), real, stride, n - 2, 1, NAN);
    y = x;
    int want_bad = n;
    std::vector<int> want(n);
    for (int i = 0; i < n; i++) {
        int bad = 0;
        want[(size_t)i] = host_scan(real, stride, y.data(), i, &g, &box, me, &bad);
        if (bad && want_bad == n)
            want_bad = i;
    }
    halox_mig_geometry_t geo;
    memset(&geo, 0, sizeof geo);
    halox_domain_bounds(&g, &box, me, geo.lo, geo.hi);
    for (int d = 0; d < 3; d++) {
        geo.len[d] = box.len[d];
        geo.n[d] = g.n[d];
    }
    geo.me = me;
    /* the leavers, ascending, with their owners (a non-finite atom stays: the caller stops) */
    std::vector<int> want_leave, want_owner;
    for (int i = 0; i < n; i++)
        if (i != want_bad && want[(size_t)i] != me) {
            want_leave.push_back(i);
            want_owner.push_back(want[(size_t)i]);
        }
    std::vector<int> leave((size_t)n + 1, -7), owner((size_t)n + 1, -7);
    std::vector<int> scratch(halox_kernel_mig_scratch(n) + 1);
    int first = 0x7f7f7f7f, count = -1;
    EXPECT(halox_kernel_mig_leavers(real, stride, x.data(), n, &geo, &first, leave.data(),
                                    owner.data(), &count, scratch.data(), nullptr) == cudaSuccess,
           "launch");
    EXPECT(memcmp(x.data(), y.data(), x.size()) == 0,
           "mig leavers n %d: positions not wrapped as the host wraps them", n);
    EXPECT(count == (int)want_leave.size() &&
               std::equal(want_leave.begin(), want_leave.end(), leave.begin()) &&
               std::equal(want_owner.begin(), want_owner.end(), owner.begin()),
           "mig leavers n %d: %d leavers (want %zu) or their order or owners differ", n, count,
           want_leave.size());
    EXPECT(want_bad == n ? first == 0x7f7f7f7f : first == want_bad, "mig leavers: first bad %d, %d",
           first, want_bad);
}

static void test_records(void)
{
    const int n = 700, m = 300;
    const size_t xb = 12, eb = 24, rec = xb + 4 + eb;
    std::vector<float> x(3 * (size_t)n);
    std::vector<int32_t> id((size_t)n);
    std::vector<unsigned char> ex(eb * (size_t)n);
    std::vector<uint8_t> zone((size_t)n);
    for (int i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++)
            x[3 * (size_t)i + (size_t)c] = (float)uni();
        id[(size_t)i] = 1000 + i;
        zone[(size_t)i] = (uint8_t)(i % 7);
        for (size_t b = 0; b < eb; b++)
            ex[eb * (size_t)i + b] = (unsigned char)(i * 3 + (int)b);
    }
    /* m leavers (ascending, as the leavers' compaction gives them), slots reversed */
    std::vector<int> index((size_t)m), slot((size_t)m);
    std::vector<char> leaves((size_t)n, 0);
    for (int j = 0, i = 0; j < m; i++)
        if ((i * 37) % 7 < 3 || n - i == m - j) {
            index[(size_t)j++] = i;
            leaves[(size_t)i] = 1;
        }
    for (int j = 0; j < m; j++)
        slot[(size_t)j] = m - 1 - j;
    const int keep = n - m;
    std::vector<unsigned char> buf(rec * (size_t)m);
    std::vector<float> xs(3 * (size_t)keep);
    std::vector<int32_t> ids((size_t)keep);
    std::vector<unsigned char> exs(eb * (size_t)keep);
    /* columns as the device store gives them: coordinates, ids, extra bytes */
    halox_mig_cols_t src = {}, out = {};
    src.n = out.n = 3;
    src.p[0] = x.data(), src.p[1] = id.data(), src.p[2] = ex.data();
    out.p[0] = xs.data(), out.p[1] = ids.data(), out.p[2] = exs.data();
    src.b[0] = out.b[0] = xb, src.b[1] = out.b[1] = 4, src.b[2] = out.b[2] = eb;
    EXPECT(halox_kernel_mig_split(&src, n, index.data(), m, slot.data(), rec, buf.data(), &out,
                                  nullptr) == cudaSuccess,
           "launch");
    int wrong = 0;
    for (int j = 0; j < m; j++) {
        const unsigned char *o = buf.data() + rec * (size_t)slot[(size_t)j];
        const int i = index[(size_t)j];
        wrong += memcmp(o, &x[3 * (size_t)i], xb) != 0 || memcmp(o + xb, &id[(size_t)i], 4) != 0 ||
                 memcmp(o + xb + 4, &ex[eb * (size_t)i], eb) != 0;
    }
    EXPECT(wrong == 0, "split: %d leavers' records wrong", wrong);
    wrong = 0;
    for (int i = 0, j = 0; i < n; i++) {
        if (leaves[(size_t)i])
            continue;
        wrong += memcmp(&xs[3 * (size_t)j], &x[3 * (size_t)i], xb) != 0 ||
                 ids[(size_t)j] != id[(size_t)i] ||
                 memcmp(&exs[eb * (size_t)j], &ex[eb * (size_t)i], eb) != 0;
        j++;
    }
    EXPECT(wrong == 0, "split: %d stayers wrong or out of order", wrong);
    /* the stayers back to the front of the arrays, in one launch */
    std::vector<float> xb2(x);
    std::vector<int32_t> idb(id);
    std::vector<unsigned char> exb(ex);
    void *const to[3] = {xb2.data(), idb.data(), exb.data()};
    const void *const from[3] = {xs.data(), ids.data(), exs.data()};
    const size_t bytes[3] = {xb * (size_t)keep, 4 * (size_t)keep, eb * (size_t)keep};
    EXPECT(halox_kernel_copy3(to, from, bytes, nullptr) == cudaSuccess, "launch");
    EXPECT(memcmp(xb2.data(), xs.data(), bytes[0]) == 0 &&
               memcmp(idb.data(), ids.data(), bytes[1]) == 0 &&
               memcmp(exb.data(), exs.data(), bytes[2]) == 0 &&
               memcmp(&xb2[3 * (size_t)keep], &x[3 * (size_t)keep], xb * (size_t)m) == 0 &&
               idb[(size_t)keep] == id[(size_t)keep],
           "copy3: the stayers not in front, or more than their bytes written");
    /* bytes that are not whole words, at odd addresses */
    std::vector<unsigned char> c1(37), c2(37, 0);
    for (size_t b = 0; b < c1.size(); b++)
        c1[b] = (unsigned char)(b * 11 + 3);
    void *const to1[3] = {c2.data() + 1, nullptr, nullptr};
    const void *const from1[3] = {c1.data() + 3, nullptr, nullptr};
    const size_t bytes1[3] = {33, 0, 0};
    EXPECT(halox_kernel_copy3(to1, from1, bytes1, nullptr) == cudaSuccess, "launch");
    EXPECT(memcmp(c2.data() + 1, c1.data() + 3, 33) == 0 && c2[0] == 0 && c2[34] == 0,
           "copy3 by bytes");
    /* unpack: the records in slot order, leaver m - 1 - j at slot j */
    std::vector<float> x2(3 * (size_t)m);
    std::vector<int32_t> id2((size_t)m);
    std::vector<unsigned char> ex2(eb * (size_t)m);
    halox_mig_cols_t dst = src;
    dst.p[0] = x2.data(), dst.p[1] = id2.data(), dst.p[2] = ex2.data();
    EXPECT(halox_kernel_mig_unpack(buf.data(), rec, m, &dst, nullptr) == cudaSuccess, "launch");
    wrong = 0;
    for (int j = 0; j < m; j++) {
        const int i = index[(size_t)(m - 1 - j)];
        wrong += memcmp(&x2[3 * (size_t)j], &x[3 * (size_t)i], xb) != 0 ||
                 id2[(size_t)j] != id[(size_t)i] ||
                 memcmp(&ex2[eb * (size_t)j], &ex[eb * (size_t)i], eb) != 0;
    }
    EXPECT(wrong == 0, "unpack: %d records wrong", wrong);
    /* a set-up message's pack: coordinates (shifted in dimension 1), ids, zones in one launch */
    std::vector<int32_t> ido((size_t)m);
    std::vector<uint8_t> zo((size_t)m);
    std::vector<float> xo(3 * (size_t)m);
    EXPECT(halox_kernel_pack_setup(HALOX_FLOAT, 3, xo.data(), x.data(), id.data(), zone.data(),
                                   index.data(), m, 1, 2.5, 4, ido.data(), zo.data(),
                                   nullptr) == cudaSuccess,
           "launch");
    EXPECT(halox_kernel_pack_setup(HALOX_FLOAT, 3, xo.data(), x.data(), nullptr, zone.data(),
                                   index.data(), m, 1, 2.5, 4, ido.data(), zo.data(),
                                   nullptr) == cudaErrorInvalidValue,
           "pack_setup without ids accepted");
    wrong = 0;
    for (int j = 0; j < m; j++) {
        const int i = index[(size_t)j];
        const float *a = &x[3 * (size_t)i], *o = &xo[3 * (size_t)j];
        wrong += ido[(size_t)j] != id[(size_t)i] ||
                 zo[(size_t)j] != (uint8_t)(zone[(size_t)i] | 4) || o[0] != a[0] ||
                 o[1] != a[1] + 2.5f || o[2] != a[2];
    }
    /* a set-up message (coordinates, ids, zones) into place, at a word boundary and not */
    for (size_t off = 0; off < 2; off++) {
        const size_t es = 12;
        std::vector<unsigned char> msg(off + (es + 5) * (size_t)m);
        memcpy(msg.data() + off, x.data(), es * (size_t)m);
        memcpy(msg.data() + off + es * (size_t)m, ido.data(), 4 * (size_t)m);
        memcpy(msg.data() + off + (es + 4) * (size_t)m, zo.data(), (size_t)m);
        std::vector<float> xp(3 * (size_t)m + 3, -1.0f);
        std::vector<int32_t> idp((size_t)m + 1, -1);
        std::vector<uint8_t> zp((size_t)m + 1, 0xee);
        EXPECT(halox_kernel_plan_place(msg.data() + off, m, es, 2, xp.data(), idp.data(), zp.data(),
                                       nullptr) == cudaSuccess,
               "launch");
        for (int j = 0; j < m; j++)
            wrong += memcmp(&xp[3 * (size_t)j], &x[3 * (size_t)j], es) != 0 ||
                     idp[(size_t)j] != ido[(size_t)j] ||
                     zp[(size_t)j] != (uint8_t)(zo[(size_t)j] | 2);
        wrong += xp[3 * (size_t)m] != -1.0f || idp[(size_t)m] != -1 || zp[(size_t)m] != 0xee;
    }
    EXPECT(wrong == 0, "set-up ids and zones: %d wrong", wrong);
}

/* halox_cmp_look_back as a warp runs it (one launch of 32 threads) */
static __global__ void lb_kernel(unsigned long long *w, int tile, int total, unsigned e, int *out)
{
    const int b = halox_cmp_look_back(w, tile, total, e);
    if (threadIdx.x == 0)
        *out = b;
}

static int look_back(unsigned long long *w, int tile, int total, unsigned e)
{
    int out = -1;
    HALOX_LAUNCH(lb_kernel, 1, 32, nullptr)(w, tile, total, e, &out);
    return out;
}

/* A selection captured into a graph (the emulation records it) and replayed on new positions:
 * every replay a launch of its own (the tickets and the epoch are in the scratch, device memory:
 * tickets back at 0, the epoch one up per launch), each replay's indices the host loop's. */
static void test_select_graph(int n)
{
    std::vector<float> x(3 * (size_t)n);
    halox_plan_select_args_t a = sel_args(x.data(), HALOX_FLOAT, 3, 1, 2.5, 3.0, n);
    std::vector<int> out((size_t)n + 1, -7), scratch(halox_kernel_plan_select_scratch(n) + 1, 0);
    int count = -1;
    unsigned mask = 0;
    cudaStream_t s = nullptr;
    cudaGraph_t g = nullptr;
    cudaGraphExec_t e = nullptr;
    EXPECT(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
               cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess,
           "capture");
    const long before = halox_emu_launches();
    EXPECT(halox_kernel_plan_select(&a, out.data(), &count, &mask, scratch.data(), s) ==
               cudaSuccess,
           "launch");
    EXPECT(cudaStreamEndCapture(s, &g) == cudaSuccess &&
               cudaGraphInstantiate(&e, g, 0) == cudaSuccess,
           "instantiate");
    EXPECT(halox_emu_launches() == before && count == -1, "the capture ran the selection");
    for (int rep = 1; rep <= 3; rep++) {
        for (size_t k = 0; k < x.size(); k++)
            x[k] = (float)(uni() * 10.0);
        std::vector<int> want;
        for (int i = 0; i < n; i++)
            if (host_selects(&a, (double)x[3 * (size_t)i + 1]))
                want.push_back(i);
        count = -1;
        EXPECT(cudaGraphLaunch(e, s) == cudaSuccess, "replay");
        EXPECT(count == (int)want.size() && std::equal(want.begin(), want.end(), out.begin()),
               "replay %d of a captured selection of %d: %d indices, want %zu", rep, n, count,
               want.size());
        unsigned long long st = 0;
        memcpy(&st, scratch.data(), sizeof st);
        EXPECT((unsigned)st == 0 && (st >> 32) == (unsigned long long)rep,
               "after replay %d: tickets %u, epoch %llu", rep, (unsigned)st, st >> 32);
    }
    cudaGraphDestroy(g);
    cudaGraphExecDestroy(e);
    cudaStreamDestroy(s);
}

/* The one-kernel scan (scan.cuh) against a host loop: random counts, sizes around its tiles
 * (1024 counts) and many tiles, start[m] the total, count aliasing cursor, one scratch for scans
 * of every size one after another (its state first: the rule of md_kernels.h), and a scratch one
 * int off its 8-byte alignment. */
static void test_scan(void)
{
    for (int off : {0, 1}) {
        std::vector<int> scratch(halox_scan_scratch(300000) + 1, 0);
        for (int m : {1, 5, 1023, 1024, 1025, 4097, 70001, 3000, 300000, 2}) {
            std::vector<int> cnt((size_t)m), start((size_t)m + 1, -1), cur((size_t)m, -1);
            std::vector<int> want((size_t)m + 1, 0);
            for (int k = 0; k < m; k++) {
                cnt[(size_t)k] = (int)(uni() * 10);
                want[(size_t)k + 1] = want[(size_t)k] + cnt[(size_t)k];
            }
            EXPECT(halox_scan_tiles(cnt.data(), m, start.data(), cur.data(), scratch.data() + off,
                                    nullptr) == cudaSuccess,
                   "scan of %d", m);
            EXPECT(std::equal(want.begin(), want.end(), start.begin()) &&
                       std::equal(cur.begin(), cur.end(), want.begin()),
                   "scan of %d counts (scratch %d int(s) off): start[m] %d, want %d", m, off,
                   start[(size_t)m], want[(size_t)m]);
            std::vector<int> in = cnt; /* count == cursor, as the cluster sort calls it */
            EXPECT(halox_scan_tiles(in.data(), m, start.data(), in.data(), scratch.data() + off,
                                    nullptr) == cudaSuccess,
                   "scan of %d in place", m);
            EXPECT(std::equal(in.begin(), in.end(), want.begin()) &&
                       std::equal(want.begin(), want.end(), start.begin()),
                   "scan of %d counts in place", m);
        }
    }
}

int main()
{
    test_scan();
    /* sizes around one block of the compaction (1024 indices) and a few blocks */
    const int sizes[] = {0, 1, 31, 1023, 1024, 1025, 3000, 5000};
    int which = 0;
    for (int n : sizes) {
        test_select(HALOX_FLOAT, 3, n, which % 3, 0);
        test_select(HALOX_FLOAT, 3, n, which++ % 3, 1);
        if (n == 1025 || n == 5000) {
            test_select(HALOX_DOUBLE, 3, n, 1, 0);
            test_select(HALOX_DOUBLE, 3, n, 1, 1);
            test_select(HALOX_FLOAT, 4, n, 2, 1);
        }
    }
    test_select_graph(3000);
    /* the look-back of one tile over tiles that have published only their counts (A) or their
     * prefixes (P), 32 at a time: here the tiles run one after another, so a compaction's
     * predecessors always have their prefixes; on a GPU they may not */
    {
        const unsigned e = 77;
        std::vector<unsigned long long> w(80);
        std::vector<int> cnt(80);
        for (int t = 0; t < 80; t++)
            cnt[(size_t)t] = (int)(uni() * 1025);
        w[0] = halox_cmp_word(e, HALOX_CMP_P, cnt[0]);
        for (int t = 1; t < 80; t++)
            w[(size_t)t] = halox_cmp_word(e, HALOX_CMP_A, cnt[(size_t)t]);
        for (int tile : {1, 6, 32, 33, 64, 70}) {
            int want = 0; /* the counts before it, back to tile 0's prefix */
            for (int t = 0; t < tile; t++)
                want += cnt[(size_t)t];
            std::vector<unsigned long long> v = w;
            const int got = look_back(v.data(), tile, cnt[(size_t)tile], e);
            EXPECT(got == want &&
                       v[(size_t)tile] == halox_cmp_word(e, HALOX_CMP_P, want + cnt[(size_t)tile]),
                   "look-back of tile %d over counts: %d, want %d", tile, got, want);
        }
        /* a prefix stops the walk (the counts before it are not read again) */
        w[40] = halox_cmp_word(e, HALOX_CMP_P, 5000);
        w[0] = halox_cmp_word(e, HALOX_CMP_A, 1 << 20);
        for (int tile : {41, 45, 72, 73}) {
            int want = 5000;
            for (int t = 41; t < tile; t++)
                want += cnt[(size_t)t];
            const int got = look_back(w.data(), tile, cnt[(size_t)tile], e);
            EXPECT(got == want, "look-back of tile %d to the prefix of tile 40: %d, want %d", tile,
                   got, want);
        }
        std::vector<unsigned long long> z(2, 0);
        const int got = look_back(z.data(), 0, 9, e);
        EXPECT(got == 0 && z[0] == halox_cmp_word(e, HALOX_CMP_P, 9), "tile 0: %d", got);
    }
    for (int n : {1, 40, 3000}) {
        test_check_home(HALOX_FLOAT, n);
        test_check_home(HALOX_DOUBLE, n);
        test_mig_leavers(HALOX_FLOAT, 3, n);
        test_mig_leavers(HALOX_DOUBLE, 3, n);
        test_mig_leavers(HALOX_FLOAT, 4, n);
    }
    test_records();
    if (g_fail)
        printf("%d check(s) failed\n", g_fail);
    else
        printf("all checks passed\n");
    return g_fail ? 1 : 0;
}
