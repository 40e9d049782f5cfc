// Host cost of CUDA API calls (us per call, median of 5 rounds of N calls), one process; run
// two at once under MPS to see the shared-GPU cost.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <algorithm>
__global__ void empty_k(int *p) { if (p && threadIdx.x == 1234567) p[0] = 1; }
__global__ void small_k(int *p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] += 1; }
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    const char *tag = argc > 1 ? argv[1] : "";
    cudaStream_t s; int lo, hi; cudaDeviceGetStreamPriorityRange(&lo, &hi);
    cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, hi);
    int *d, *hp, *hpage; cudaMalloc(&d, 1 << 22); cudaMallocHost(&hp, 1 << 20); hpage = (int *)malloc(1 << 20);
    memset(hpage, 0, 1 << 20);
    cudaStreamSynchronize(s);
    const int N = 2000;
    const char *names[] = {"launch empty", "launch 45k-thread", "memset 4B", "D2H 4B pinned", "H2D 4B pinned", "D2D 4KB",
                           "H2D 1KB pageable", "D2H 40KB pageable", "D2H 40KB pinned", "sync idle stream", "query idle stream",
                           "launch+sync (round trip)", "D2H 4B pinned + sync"};
    const int K = sizeof names / sizeof names[0];
    for (int k = 0; k < K; k++) {
        double best[5];
        for (int rep = 0; rep < 5; rep++) {
            int n = (k >= 6 && k <= 8) || k >= 11 ? N / 10 : N;
            cudaStreamSynchronize(s);
            double t0 = now();
            for (int i = 0; i < n; i++) {
                switch (k) {
                case 0: empty_k<<<1, 32, 0, s>>>(d); break;
                case 1: small_k<<<176, 256, 0, s>>>(d, 45000); break;
                case 2: cudaMemsetAsync(d, 0, 4, s); break;
                case 3: cudaMemcpyAsync(hp, d, 4, cudaMemcpyDeviceToHost, s); break;
                case 4: cudaMemcpyAsync(d, hp, 4, cudaMemcpyHostToDevice, s); break;
                case 5: cudaMemcpyAsync(d + 4096, d, 4096, cudaMemcpyDeviceToDevice, s); break;
                case 6: cudaMemcpyAsync(d, hpage, 1024, cudaMemcpyHostToDevice, s); break;
                case 7: cudaMemcpyAsync(hpage, d, 40000, cudaMemcpyDeviceToHost, s); break;
                case 8: cudaMemcpyAsync(hp, d, 40000, cudaMemcpyDeviceToHost, s); break;
                case 9: cudaStreamSynchronize(s); break;
                case 10: cudaStreamQuery(s); break;
                case 11: empty_k<<<1, 32, 0, s>>>(d); cudaStreamSynchronize(s); break;
                case 12: cudaMemcpyAsync(hp, d, 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); break;
                }
            }
            double t1 = now();
            cudaStreamSynchronize(s);
            best[rep] = (t1 - t0) / n * 1e6;
        }
        std::sort(best, best + 5);
        printf("%s %-28s %8.2f us/call (min %.2f)\n", tag, names[k], best[2], best[0]);
    }
    cudaError_t e = cudaGetLastError();
    printf("%s status %s\n", tag, cudaGetErrorString(e));
    return 0;
}
