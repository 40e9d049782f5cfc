/* Internal to the NVSHMEM transports: the element loops of the NVSHMEM kernels (nvshmem_halo.cu and
 * nvshmem-inline's, inline_halo.cu): a pulse's coordinates gathered through its map (shifted
 * across the periodic boundary), forces copied, returned forces added through the map, each with
 * SHM_UNROLL loads in flight per thread; per-atom fields' rows gathered, copied and summed. Every
 * thread t0 of nthreads calls them. */
#ifndef HALOX_KERNELS_SHM_MOVE_CUH
#define HALOX_KERNELS_SHM_MOVE_CUH

#include <stdint.h>

#include "halox/fields.h"

/* Element loops issue SHM_UNROLL independent loads before their stores: a thread's loads would
 * otherwise wait one by one behind its stores (the arrays may alias), and a pulse of millions
 * of elements then runs at the latency of one gather per thread
 * (docs/NVSHMEM.md#the-fused-kernels). */
#define SHM_UNROLL 4

/* dst[t] = get(t) for t in [t0 + lo, end), SHM_UNROLL loads in flight per thread */
template <typename T, typename G>
static __device__ __forceinline__ void shm_move(T *dst, const G &get, long long lo, long long end,
                                                int t0, int nthreads)
{
    for (long long t = lo + t0; t < end; t += (long long)nthreads * SHM_UNROLL) {
        T v[SHM_UNROLL];
#pragma unroll
        for (int u = 0; u < SHM_UNROLL; u++) {
            const long long tu = t + (long long)u * nthreads;
            if (tu < end)
                v[u] = get(tu);
        }
#pragma unroll
        for (int u = 0; u < SHM_UNROLL; u++) {
            const long long tu = t + (long long)u * nthreads;
            if (tu < end)
                dst[tu] = v[u];
        }
    }
}

/* element t of a pulse's coordinates: component t % stride of its atom map[t / stride], shifted
 * by a box edge along dim when the pulse crosses the periodic boundary */
template <typename T> struct shm_gather {
    const T *x;
    const int *map;
    int stride, dim, add;
    T shift;
    __device__ T operator()(long long t) const
    {
        const long long i = t / stride;
        const int c = (int)(t - i * stride);
        T v = x[(long long)map[i] * stride + c];
        return add && c == dim ? v + shift : v;
    }
};

/* element t of a contiguous buffer (the forces of a pulse's halo atoms) */
template <typename T> struct shm_linear {
    const T *src;
    __device__ T operator()(long long t) const { return src[t]; }
};

/* dst[t] for the atoms [lo, hi) of a pulse's map */
template <typename T>
static __device__ __forceinline__ void shm_pack(T *dst, const T *x, const int *map, int lo, int hi,
                                                int stride, int dim, T shift, int add, int t0,
                                                int nthreads)
{
    const shm_gather<T> get = {x, map, stride, dim, add, shift};
    shm_move<T>(dst, get, (long long)lo * stride, (long long)hi * stride, t0, nthreads);
}

/* dst[t] = src[t] for t < end (the forces of a pulse's halo atoms to the peer) */
template <typename T>
static __device__ __forceinline__ void shm_copy(T *dst, const T *src, long long end, int t0,
                                                int nthreads)
{
    const shm_linear<T> get = {src};
    shm_move<T>(dst, get, 0, end, t0, nthreads);
}

/* The rows of a per-atom field for the atoms [0, n) of a pulse's map: dst's row i = src's row
 * map[i], rows of `row` bytes (4-byte words where a row is whole words, else bytes). */
static __device__ __forceinline__ void shm_field_rows(char *dst, const char *src, const int *map,
                                                      int n, unsigned row, int t0, int nthreads)
{
    if (row % 4 == 0) {
        const long long w = row / 4, total = (long long)n * w;
        for (long long t = t0; t < total; t += nthreads) {
            const long long i = t / w;
            ((int *)dst)[t] = ((const int *)src)[(long long)map[i] * w + (t - i * w)];
        }
    } else {
        const long long total = (long long)n * row;
        for (long long t = t0; t < total; t += nthreads) {
            const long long i = t / row;
            dst[t] = src[(long long)map[i] * row + (t - i * row)];
        }
    }
}

/* f[map[i]] += src[i] for the n atoms of a pulse (3 components; src has the exchange stride).
 * A pulse sends each atom once, so no two threads add to the same element. */
template <typename T>
static __device__ __forceinline__ void shm_accumulate(T *f, const T *src, const int *map, int n,
                                                      int stride, int t0, int nthreads)
{
    const long long end = (long long)n * 3;
    for (long long t = t0; t < end; t += (long long)nthreads * SHM_UNROLL) {
        T v[SHM_UNROLL], a[SHM_UNROLL];
        long long at[SHM_UNROLL];
#pragma unroll
        for (int u = 0; u < SHM_UNROLL; u++) {
            const long long tu = t + (long long)u * nthreads;
            if (tu < end) {
                const long long i = tu / 3;
                const int c = (int)(tu - i * 3);
                at[u] = (long long)map[i] * stride + c;
                v[u] = src[i * stride + c];
                a[u] = f[at[u]];
            }
        }
#pragma unroll
        for (int u = 0; u < SHM_UNROLL; u++) {
            const long long tu = t + (long long)u * nthreads;
            if (tu < end)
                f[at[u]] = a[u] + v[u];
        }
    }
}

/* Contiguous bytes [0, bytes) from src to dst (4-byte words where both allow). */
static __device__ __forceinline__ void shm_copy_bytes(char *dst, const char *src, long long bytes,
                                                      int t0, int nthreads)
{
    if (bytes % 4 == 0 && ((uintptr_t)dst | (uintptr_t)src) % 4 == 0) {
        for (long long t = t0; t < bytes / 4; t += nthreads)
            ((int *)dst)[t] = ((const int *)src)[t];
    } else {
        for (long long t = t0; t < bytes; t += nthreads)
            dst[t] = src[t];
    }
}

/* Row map[i] of data += row i of src for the n atoms of a pulse, `count` elements of T per row.
 * A pulse sends each atom once, so no two threads add to the same element. */
template <typename T>
static __device__ __forceinline__ void shm_field_add_rows(T *data, const T *src, const int *map,
                                                          int n, int count, int t0, int nthreads)
{
    const long long total = (long long)n * count;
    for (long long t = t0; t < total; t += nthreads) {
        const long long i = t / count;
        T *d = &data[(long long)map[i] * count + (t - i * count)];
        *d = *d + src[t];
    }
}

/* A reverse field's returned rows summed into their owners, as core adds them (halox/fields.h:
 * floating point in its own type, integers wrapping as unsigned). */
static __device__ __forceinline__ void shm_field_add(void *data, const void *src, const int *map,
                                                     int n, int type, int count, int t0,
                                                     int nthreads)
{
    switch (type) {
    case HALOX_TYPE_FLOAT:
        shm_field_add_rows((float *)data, (const float *)src, map, n, count, t0, nthreads);
        break;
    case HALOX_TYPE_DOUBLE:
        shm_field_add_rows((double *)data, (const double *)src, map, n, count, t0, nthreads);
        break;
    case HALOX_TYPE_INT32:
        shm_field_add_rows((unsigned *)data, (const unsigned *)src, map, n, count, t0, nthreads);
        break;
    case HALOX_TYPE_INT64:
        shm_field_add_rows((unsigned long long *)data, (const unsigned long long *)src, map, n,
                           count, t0, nthreads);
        break;
    default: /* bytes: no sum (refused before any exchange) */
        break;
    }
}

#endif
