/* halox_nvshmem_smoke: proves that NVSHMEM compiles and links here (relocatable device code,
 * the device library through the device linker, the host library). No halox code uses NVSHMEM
 * yet; the NVSHMEM transports build on what this target shows works.
 *
 *   halox_nvshmem_smoke          prints the NVSHMEM version it was built against (no GPU needed)
 *   halox_nvshmem_smoke --run    one PE (unique-ID bootstrap, no launcher): allocates a symmetric
 *                                buffer and a signal, runs a kernel that stores through
 *                                nvshmem_ptr() and signals with nvshmemx_signal_op(), checks the
 *                                result; exit 0 pass, 1 fail, 77 no GPU. */
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMOKE_N 1024

__global__ void halox__nvshmem_smoke_kernel(float *buf, uint64_t *sig, int pe, int *bad)
{
    /* a peer pointer when the PE is reachable by loads and stores (always for ourselves) */
    float *p = (float *)nvshmem_ptr(buf, pe);
    for (int i = threadIdx.x; i < SMOKE_N; i += blockDim.x)
        if (p)
            p[i] = (float)i * 0.5f;
        else
            *bad = 1;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        nvshmemx_signal_op(sig, 7, NVSHMEM_SIGNAL_SET, pe);
    }
}

#define SMOKE_CUDA(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "halox_nvshmem_smoke: %s failed: %s\n", #call,                         \
                    cudaGetErrorString(e_));                                                       \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    printf("halox_nvshmem_smoke: built against NVSHMEM %d.%d.%d\n", NVSHMEM_VENDOR_MAJOR_VERSION,
           NVSHMEM_VENDOR_MINOR_VERSION, NVSHMEM_VENDOR_PATCH_VERSION);
    if (argc < 2 || strcmp(argv[1], "--run") != 0)
        return 0;
    /* NVLink multicast stays off (it can take shared GPUs out of service), unless set already */
    setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("halox_nvshmem_smoke: no GPU, skipped\n");
        return 77;
    }
    SMOKE_CUDA(cudaSetDevice(0));
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (nvshmemx_get_uniqueid(&id) != 0 || nvshmemx_set_attr_uniqueid_args(0, 1, &id, &attr) != 0 ||
        nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        fprintf(stderr, "halox_nvshmem_smoke: NVSHMEM initialisation failed\n");
        return 1;
    }
    int rc = 1;
    float *buf = (float *)nvshmem_malloc(SMOKE_N * sizeof(float));
    uint64_t *sig = (uint64_t *)nvshmem_calloc(1, sizeof(uint64_t));
    int *bad = NULL;
    if (buf && sig && cudaMalloc(&bad, sizeof(int)) == cudaSuccess &&
        cudaMemset(bad, 0, sizeof(int)) == cudaSuccess) {
        halox__nvshmem_smoke_kernel<<<1, 256>>>(buf, sig, nvshmem_my_pe(), bad);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaDeviceSynchronize();
        float host[SMOKE_N];
        uint64_t s = 0;
        int b = 1;
        if (e == cudaSuccess &&
            cudaMemcpy(host, buf, sizeof host, cudaMemcpyDeviceToHost) == cudaSuccess &&
            cudaMemcpy(&s, sig, sizeof s, cudaMemcpyDeviceToHost) == cudaSuccess &&
            cudaMemcpy(&b, bad, sizeof b, cudaMemcpyDeviceToHost) == cudaSuccess) {
            rc = s == 7 && b == 0 ? 0 : 1;
            for (int i = 0; i < SMOKE_N; i++)
                if (host[i] != (float)i * 0.5f)
                    rc = 1;
        } else {
            fprintf(stderr, "halox_nvshmem_smoke: kernel or copy failed: %s\n",
                    cudaGetErrorString(e));
        }
    }
    if (bad)
        cudaFree(bad);
    if (sig)
        nvshmem_free(sig);
    if (buf)
        nvshmem_free(buf);
    nvshmem_finalize();
    printf("halox_nvshmem_smoke: %s\n", rc == 0 ? "put, signal and peer pointer work" : "FAILED");
    return rc;
}
