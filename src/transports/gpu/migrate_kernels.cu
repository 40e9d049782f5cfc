/* The migration's kernels (migrate_kernels.h). */
#include <cuda_runtime.h>

#include "halox/device/launch.cuh"
#include <math.h>
#include <stdint.h>

#include "halox/device/compact.cuh"
#include "halox/device/copy3.cuh"
#include "transports/gpu/migrate_kernels.h"

#define HALOX__MIG_THREADS 256

static unsigned halox__mig_grid(int n)
{
    int b = (n + HALOX__MIG_THREADS - 1) / HALOX__MIG_THREADS;
    return (unsigned)(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

/* geometry.c's halox_owner_coord, operation by operation */
__device__ static int halox__mig_owner_coord(int n, double len, double x)
{
    int c = (int)floor(__ddiv_rn(__dmul_rn(x, (double)n), len));
    if (c < 0)
        c = 0;
    if (c >= n)
        c = n - 1;
    while (c > 0 && x < __ddiv_rn(__dmul_rn(len, (double)c), (double)n))
        c--;
    while (c + 1 < n && x >= __ddiv_rn(__dmul_rn(len, (double)(c + 1)), (double)n))
        c++;
    return c;
}

/* One home atom: its components outside (0, len) wrapped into [0, len) in place, as core's
 * halox__wrap_store; its owner; *bad when a component is not finite. */
template <typename T>
__device__ static int halox__mig_scan_one(T *__restrict__ p, const halox_mig_geometry_t &g,
                                          int *bad)
{
    double v[3];
    for (int c = 0; c < 3; c++) {
        v[c] = (double)p[c];
        const double len = g.len[c];
        /* inside (0, len) the wrap is the identity: untouched, as on the host */
        if (v[c] > 0 && v[c] < len)
            continue;
        if (!isfinite(v[c])) {
            *bad = 1;
            return g.me;
        }
        /* geometry.c's halox_wrap, then migrate.c's store in the atoms' precision */
        double w = __dsub_rn(v[c], __dmul_rn(floor(__ddiv_rn(v[c], len)), len));
        if (w >= len || w < 0)
            w = 0.0;
        p[c] = (T)w;
        if ((double)p[c] >= len)
            p[c] = (T)0.0;
        v[c] = (double)p[c];
    }
    if (v[0] >= g.lo[0] && v[0] < g.hi[0] && v[1] >= g.lo[1] && v[1] < g.hi[1] && v[2] >= g.lo[2] &&
        v[2] < g.hi[2])
        return g.me;
    const int c0 = halox__mig_owner_coord(g.n[0], g.len[0], v[0]);
    const int c1 = halox__mig_owner_coord(g.n[1], g.len[1], v[1]);
    const int c2 = halox__mig_owner_coord(g.n[2], g.len[2], v[2]);
    return c0 + g.n[0] * (c1 + g.n[1] * c2);
}

/* The compaction's flag (compact.cuh): each atom scanned once, a leaver flagged with its owner
 * + 1, its owner written beside its index. */
template <typename T> struct halox__mig_leave {
    T *x;
    int stride;
    halox_mig_geometry_t g;
    int *first_bad, *owner;
    __device__ int operator()(int i) const
    {
        int bad = 0;
        const int r = halox__mig_scan_one(x + (size_t)i * stride, g, &bad);
        if (bad) {
            atomicMin(first_bad, i);
            return 0;
        }
        return r != g.me ? r + 1 : 0;
    }
    __device__ void keep(int pos, int, int v) const { owner[pos] = v - 1; }
    __device__ unsigned bit(int) const { return 0; }
};

extern "C" size_t halox_kernel_mig_scratch(int n) { return halox_cmp_scratch(n); }

extern "C" cudaError_t halox_kernel_mig_leavers(halox_real_t real, int stride, void *x, int n,
                                                const halox_mig_geometry_t *geo, int *first_bad,
                                                int *leave, int *owner, int *count, int *scratch,
                                                cudaStream_t stream)
{
    if (real == HALOX_FLOAT) {
        const halox__mig_leave<float> f = {(float *)x, stride, *geo, first_bad, owner};
        return halox_compact(f, 0, n, leave, count, NULL, scratch, stream);
    }
    const halox__mig_leave<double> f = {(double *)x, stride, *geo, first_bad, owner};
    return halox_compact(f, 0, n, leave, count, NULL, scratch, stream);
}

__device__ static void halox__mig_bytes(unsigned char *dst, const unsigned char *src, size_t n)
{
    for (size_t b = 0; b < n; b++)
        dst[b] = src[b];
}

/* Home atom i's place among the nl leavers (their indices ascending): how many are below i. */
__device__ static int halox__mig_below(const int *__restrict__ leave, int nl, int i)
{
    int lo = 0, hi = nl;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (leave[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

__global__ void halox__mig_split_kernel(halox_mig_cols_t src, int n, const int *__restrict__ leave,
                                        int nl, const int *__restrict__ slot, size_t rec,
                                        unsigned char *__restrict__ buf, halox_mig_cols_t out)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int b = halox__mig_below(leave, nl, i);
        const size_t a = (size_t)i;
        if (b < nl && leave[b] == i) { /* leaver b: its record in its slot */
            unsigned char *o = buf + (size_t)slot[b] * rec;
            for (int c = 0; c < src.n; c++) {
                halox__mig_bytes(o, (const unsigned char *)src.p[c] + a * src.b[c], src.b[c]);
                o += src.b[c];
            }
        } else { /* a stayer: after the i - b stayers before it */
            const size_t j = (size_t)(i - b);
            for (int c = 0; c < src.n; c++)
                halox__mig_bytes((unsigned char *)out.p[c] + j * src.b[c],
                                 (const unsigned char *)src.p[c] + a * src.b[c], src.b[c]);
        }
    }
}

extern "C" cudaError_t halox_kernel_mig_split(const halox_mig_cols_t *src, int n, const int *leave,
                                              int nl, const int *slot, size_t rec, void *buf,
                                              const halox_mig_cols_t *out, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    HALOX_LAUNCH(halox__mig_split_kernel, halox__mig_grid(n), HALOX__MIG_THREADS, stream)
    (*src, n, leave, nl, slot, rec, (unsigned char *)buf, *out);
    return cudaPeekAtLastError();
}

extern "C" cudaError_t halox_kernel_copy3(void *const dst[3], const void *const src[3],
                                          const size_t bytes[3], cudaStream_t stream)
{
    return halox_copy3(dst, src, bytes, stream);
}

__global__ void halox__mig_unpack_kernel(const unsigned char *__restrict__ buf, size_t rec, int n,
                                         halox_mig_cols_t dst)
{
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
        const unsigned char *o = buf + (size_t)j * rec;
        for (int c = 0; c < dst.n; c++) {
            halox__mig_bytes((unsigned char *)dst.p[c] + (size_t)j * dst.b[c], o, dst.b[c]);
            o += dst.b[c];
        }
    }
}

extern "C" cudaError_t halox_kernel_mig_unpack(const void *buf, size_t rec, int n,
                                               const halox_mig_cols_t *dst, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    HALOX_LAUNCH(halox__mig_unpack_kernel, halox__mig_grid(n), HALOX__MIG_THREADS, stream)
    ((const unsigned char *)buf, rec, n, *dst);
    return cudaPeekAtLastError();
}
