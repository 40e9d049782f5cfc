/* Test kernels over the public device API of the in-kernel exchange (inline_kernels.h). Each
 * uses the protocol as halox/inline_device.cuh describes it, with small blocks so that several
 * blocks take part even in small systems. */
#include <cuda_runtime.h>

#include "halox/device/launch.cuh" /* launches that the host emulation (tests/emu) runs too */
#include "halox/inline_device.cuh"
#include "inline_kernels.h"

#define TK_THREADS 64

static int tk_blocks(int n)
{
    const int b = (n + TK_THREADS - 1) / TK_THREADS;
    return b < 1 ? 1 : b;
}

static __global__ void tk_put_x(halox_inline_view_t v, const float *x, int n_home)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a < n_home)
        halox_inline_put_x(&v, a, x[3 * a], x[3 * a + 1], x[3 * a + 2]);
    halox_inline_block_signal(&v, 0); /* every block its share (the forces: the last block) */
}

static __global__ void tk_put_f(halox_inline_view_t v, const float *f, int n_home, int n_total)
{
    const int j = n_home + blockIdx.x * blockDim.x + threadIdx.x;
    if (j < n_total)
        halox_inline_put_f(&v, j, f[3 * j], f[3 * j + 1], f[3 * j + 2]);
    if (halox_inline_last_block(&v.ticket[2]) && threadIdx.x == 0)
        halox_inline_signal(&v, 1);
}

/* a consumer of direction dir whose blocks each wait; the last completes the exchange; the
 * forces' consumer adds the returned forces of its home atoms */
static __global__ void tk_take(halox_inline_view_t v, int dir, float *f, int n_home)
{
    unsigned long long e = 0;
    const int ok = halox_inline_block_wait(&v, dir, &e);
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (ok && f && a < n_home) {
        float t[3] = {f[3 * a], f[3 * a + 1], f[3 * a + 2]};
        halox_inline_add_f(&v, a, &t[0], &t[1], &t[2]);
        f[3 * a] = t[0], f[3 * a + 1] = t[1], f[3 * a + 2] = t[2];
    }
    if (halox_inline_last_block(&v.ticket[dir ? 3 : 1]) && threadIdx.x == 0 && ok)
        halox_inline_complete(&v, dir, e);
}

/* one thread waits and completes; the consumer after it reads without waiting */
static __global__ void tk_wait(halox_inline_view_t v, int dir)
{
    unsigned long long e = 0;
    if (halox_inline_wait(&v, dir, &e))
        halox_inline_complete(&v, dir, e);
}

static __global__ void tk_add(halox_inline_view_t v, float *f, int n_home)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= n_home)
        return;
    float t[3] = {f[3 * a], f[3 * a + 1], f[3 * a + 2]};
    halox_inline_add_f(&v, a, &t[0], &t[1], &t[2]);
    f[3 * a] = t[0], f[3 * a + 1] = t[1], f[3 * a + 2] = t[2];
}

/* the consumer's grid: at most spin_blocks when its blocks wait */
static int tk_consumer_blocks(const halox_inline_view_t *v, int n)
{
    const int b = tk_blocks(n);
    return b < v->spin_blocks ? b : v->spin_blocks;
}

extern "C" cudaError_t tk_inline_coords(const halox_inline_view_t *v, const float *x, int n_home,
                                        int wait_inside, cudaStream_t stream)
{
    HALOX_LAUNCH(tk_put_x, tk_blocks(n_home), TK_THREADS, stream)(*v, x, n_home);
    if (wait_inside)
        HALOX_LAUNCH(tk_take, tk_consumer_blocks(v, 4 * TK_THREADS), TK_THREADS, stream)
    (*v, 0, NULL, 0);
    else HALOX_LAUNCH(tk_wait, 1, 1, stream)(*v, 0);
    return cudaGetLastError();
}

extern "C" cudaError_t tk_inline_forces(const halox_inline_view_t *v, float *f, int n_home,
                                        int n_total, int wait_inside, cudaStream_t stream)
{
    HALOX_LAUNCH(tk_put_f, tk_blocks(n_total - n_home), TK_THREADS, stream)
    (*v, f, n_home, n_total);
    if (wait_inside) {
        /* every home atom within the grid: the test's systems are small */
        const int b = tk_blocks(n_home);
        if (b > v->spin_blocks)
            return cudaErrorInvalidValue;
        HALOX_LAUNCH(tk_take, b, TK_THREADS, stream)(*v, 1, f, n_home);
    } else {
        HALOX_LAUNCH(tk_wait, 1, 1, stream)(*v, 1);
        HALOX_LAUNCH(tk_add, tk_blocks(n_home), TK_THREADS, stream)(*v, f, n_home);
    }
    return cudaGetLastError();
}
