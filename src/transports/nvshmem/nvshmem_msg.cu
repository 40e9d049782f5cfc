/* The rebuild messages' kernels (protocol in nvshmem_halo.h, host side gpu_nvshmem_msg.c): a
 * message crosses between the GPUs without the host waiting for it or agreeing on it. The send
 * kernel's blocks wait (one thread each) until every receiver acknowledged the message two
 * before, copy their share of every block into the receivers' slots through load/store pointers,
 * fence at system scope and count themselves; the last one raises the receivers' arrival
 * signals. The receive kernel's blocks wait for the arrival signals of the blocks they copy out,
 * copy, fence and count themselves; the last one acknowledges to every rank. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "halox/device/launch.cuh"
#include "transports/nvshmem/nvshmem_halo.h"
#include "transports/nvshmem/shm_sync.cuh"

/* thread 0 waits for every block's signal or acknowledgement; 1 when all came */
static __device__ int shm_msg_wait(const halox__shm_msg_launch_t *M, int recv)
{
    __shared__ int ok;
    if (threadIdx.x == 0) {
        int good = 1;
        for (int i = 0; i < M->n && good; i++) {
            const halox__shm_msg_block_t *b = &M->b[i];
            if (b->bytes == 0)
                continue;
            if (recv)
                good = shm_wait_ge(&M->L, b->sig, M->seq + 1, 1, HALOX__SHM_DIR_MSG,
                                   HALOX__SHM_MSG_ARRIVAL, b->pe);
            else if (M->seq >= 2)
                good = shm_wait_ge(&M->L, b->ack, M->seq - 1, 1, HALOX__SHM_DIR_MSG,
                                   HALOX__SHM_MSG_ACK, b->pe);
        }
        ok = good;
    }
    __syncthreads();
    return ok;
}

/* every block's share copied; nonzero in the launch's last block (after a system-scope fence of
 * what this block wrote and read) */
static __device__ int shm_msg_copy_last(const halox__shm_msg_launch_t *M)
{
    const size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t step = (size_t)gridDim.x * blockDim.x;
    for (int i = 0; i < M->n; i++)
        shm_copy_bytes(M->b[i].dst, M->b[i].src, M->b[i].bytes, t, step);
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        last = atomicAdd(M->counter, 1u) + 1u == M->target;
        if (last)
            __threadfence_system(); /* the other blocks' copies before the signals */
    }
    __syncthreads();
    return last;
}

__global__ void halox__shm_msg_send_kernel(halox__shm_msg_launch_t M)
{
    if (!shm_msg_wait(&M, 0) || !shm_msg_copy_last(&M) || threadIdx.x != 0)
        return;
    for (int i = 0; i < M.n; i++)
        if (M.b[i].bytes > 0)
            *(volatile unsigned long long *)M.b[i].sig = M.seq + 1;
}

__global__ void halox__shm_msg_recv_kernel(halox__shm_msg_launch_t M)
{
    if (!shm_msg_wait(&M, 1) || !shm_msg_copy_last(&M) || threadIdx.x != 0)
        return;
    for (int r = 0; r < M.n_ack; r++)
        *(volatile unsigned long long *)M.ack_peer[r] = M.seq + 1;
}

extern "C" cudaError_t halox__shm_msg_send(const halox__shm_msg_launch_t *l, int blocks,
                                           cudaStream_t stream)
{
    HALOX_LAUNCH(halox__shm_msg_send_kernel, blocks, 256, stream)(*l);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__shm_msg_recv(const halox__shm_msg_launch_t *l, int blocks,
                                           cudaStream_t stream)
{
    HALOX_LAUNCH(halox__shm_msg_recv_kernel, blocks, 256, stream)(*l);
    return cudaGetLastError();
}
