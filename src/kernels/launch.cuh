/* Internal to src/kernels: kernel launches through one macro, HALOX__LAUNCH(kernel, blocks,
 * threads, stream)(arguments...), so that the kernels that use it also compile for the host
 * emulation of tests/emu (which defines the macro first): CI checks their logic without a GPU.
 *
 * HALOX__LAUNCH_CHAINED is the same launch as a programmatic dependent launch: the GPU may
 * prepare the kernel while the kernel before it in the stream finishes (its blocks all exited,
 * its memory not yet flushed), which hides part of the gap between two kernels. The kernel must
 * call halox__chained_wait() before it reads or writes anything the kernels before it use: that
 * waits for the kernel before it to complete with its memory visible, so the order is the
 * stream's as with HALOX__LAUNCH. Only a wait for peers' signals (which reads no memory of the
 * kernels before) may come first: the poll then overlaps the end of the kernel before, and as
 * every path still passes the chained wait before the kernel ends, a kernel after it still
 * follows every kernel before (nvshmem-inline's await and take kernels). A kernel
 * may let its chained successor's blocks become resident early (halox__chained_trigger), but
 * only past its own last wait: what it still has to do then finishes whatever else runs, so
 * the successor's waiting blocks never keep a place from a block that a wait depends on (the
 * co-residency argument of spinning kernels holds, docs/NVSHMEM.md). */
#ifndef HALOX_KERNELS_LAUNCH_CUH
#define HALOX_KERNELS_LAUNCH_CUH

#ifdef HALOX__LAUNCH
/* the host emulation: launches run in stream order, one after the other */
#define HALOX__LAUNCH_CHAINED HALOX__LAUNCH
static inline void halox__chained_wait(void) {}
static inline void halox__chained_trigger(void) {}
#else
#define HALOX__LAUNCH(kernel, blocks, threads, stream) kernel<<<(blocks), (threads), 0, (stream)>>>

/* Chained launches only when every device target of this build is sm_90 or later, where the
 * kernels wait (griddepcontrol): a build for an older target (its PTX run through the JIT on a
 * newer GPU) would have kernels without the wait, and launches them plainly. */
static constexpr int halox__arch_min(int a) { return a; }
template <typename... R> static constexpr int halox__arch_min(int a, int b, R... r)
{
    return halox__arch_min(a < b ? a : b, r...);
}
#ifdef __CUDA_ARCH_LIST__
#define HALOX__CHAINED_OK (halox__arch_min(__CUDA_ARCH_LIST__) >= 900)
#else
#define HALOX__CHAINED_OK 0
#endif

template <typename... P> struct halox__chained_launcher {
    unsigned blocks, threads;
    cudaStream_t stream;
    void (*kernel)(P...);
    /* the kernel's own parameter types: the arguments convert here, as with <<<>>> (NULL) */
    void operator()(P... args) const
    {
        if (!HALOX__CHAINED_OK) {
            kernel<<<blocks, threads, 0, stream>>>(args...);
            return;
        }
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t c = {};
        c.gridDim = dim3(blocks);
        c.blockDim = dim3(threads);
        c.dynamicSmemBytes = 0;
        c.stream = stream;
        c.attrs = attr;
        c.numAttrs = 1;
        /* an error is also the runtime's last error, which the callers read */
        (void)cudaLaunchKernelEx(&c, kernel, args...);
    }
};
template <typename... P>
static inline halox__chained_launcher<P...> halox__chained(void (*kernel)(P...), unsigned blocks,
                                                           unsigned threads, cudaStream_t stream)
{
    return halox__chained_launcher<P...>{blocks, threads, stream, kernel};
}
#define HALOX__LAUNCH_CHAINED(kernel, blocks, threads, stream)                                     \
    halox__chained((kernel), (unsigned)(blocks), (unsigned)(threads), (stream))

/* First in a kernel launched by HALOX__LAUNCH_CHAINED (the comment above). */
static __device__ __forceinline__ void halox__chained_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Early trigger: the kernel after this one (launched chained) may start its blocks once every
 * block of this one called this or exited; they then sit in halox__chained_wait until this
 * kernel completed. Call it only past a block's last wait: a block of the next kernel then never
 * holds a place that a block this kernel waits for (here or in a peer's kernel) still needs. */
static __device__ __forceinline__ void halox__chained_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#endif

#endif
