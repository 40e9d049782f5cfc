/** @file
 * Kernel launches for halox's kernels and for the caller's own (header-only CUDA; the device
 * helpers of halox/device/ share it):
 *
 *   HALOX_LAUNCH(kernel, blocks, threads, stream)(arguments...)
 *       kernel<<<blocks, threads, 0, stream>>>(arguments...), through one macro so that the
 *       kernels that use it also compile for a host emulation that defines HALOX_LAUNCH before
 *       including this (halox's tests/emu: the kernels' logic checked in CI without a GPU).
 *   HALOX_LAUNCH_CHAINED(kernel, blocks, threads, stream)(arguments...)
 *       the same launch as a programmatic dependent launch: the GPU may prepare the kernel while
 *       the kernel before it in the stream finishes (its blocks all exited, its memory not yet
 *       flushed), which hides part of the gap between two kernels. The kernel must call
 *       halox_chained_wait() before it reads or writes anything the kernels before it use: that
 *       waits for the kernel before it to complete with its memory visible, so the order is the
 *       stream's as with HALOX_LAUNCH. Only a wait for peers' signals (which reads no memory of
 *       the kernels before) may come first: the poll then overlaps the end of the kernel before,
 *       and as every path still passes the chained wait before the kernel ends, a kernel after it
 *       still follows every kernel before (nvshmem-inline's await and take kernels).
 *   halox_chained_trigger()
 *       a kernel may let its chained successor's blocks become resident early, but only past its
 *       own last wait: what it still has to do then finishes whatever else runs, so the
 *       successor's waiting blocks never keep a place from a block that a wait depends on (the
 *       co-residency argument of spinning kernels holds, docs/NVSHMEM.md).
 *
 * Launch errors are the runtime's last error, as with <<<>>> (cudaGetLastError()). Launches are
 * stream-ordered and return at once; thread safety is CUDA's. */
#ifndef HALOX_DEVICE_LAUNCH_CUH
#define HALOX_DEVICE_LAUNCH_CUH

#ifdef HALOX_LAUNCH
/* the host emulation: launches run in stream order, one after the other */
#define HALOX_LAUNCH_CHAINED HALOX_LAUNCH
static inline void halox_chained_wait(void) {}
static inline void halox_chained_trigger(void) {}
#else
/** `kernel<<<blocks, threads, 0, stream>>>`, followed by the kernel's arguments in parentheses
 *  (the file comment). A host emulation may define it before including this header. */
#define HALOX_LAUNCH(kernel, blocks, threads, stream) kernel<<<(blocks), (threads), 0, (stream)>>>

/** The smallest of the architectures given (one: itself); compile time. */
static constexpr int halox_arch_min(int a) { return a; }
/** The smallest of the architectures given (a, b and the rest); compile time. */
template <typename... R> static constexpr int halox_arch_min(int a, int b, R... r)
{
    return halox_arch_min(a < b ? a : b, r...);
}
#ifdef __CUDA_ARCH_LIST__
/** 1 when HALOX_LAUNCH_CHAINED launches chained: every device target of the build (nvcc's
 *  `__CUDA_ARCH_LIST__`) is sm_90 or newer, where the kernels wait (griddepcontrol). 0 otherwise:
 *  a build for an older target (its PTX run through the JIT on a newer GPU) has kernels without
 *  the wait, and launches them plainly. */
#define HALOX_CHAINED_OK (halox_arch_min(__CUDA_ARCH_LIST__) >= 900)
#else
/** 0: a compiler that names no device targets (no `__CUDA_ARCH_LIST__`) launches plainly. */
#define HALOX_CHAINED_OK 0
#endif

/** A chained launch waiting for its arguments: what HALOX_LAUNCH_CHAINED returns, called with
 *  the kernel's arguments. Plain data, used at once; P are the kernel's parameter types. */
template <typename... P> struct halox_chained_launcher {
    unsigned blocks;      /**< blocks of the grid (one dimension) */
    unsigned threads;     /**< threads per block */
    cudaStream_t stream;  /**< the stream it is enqueued on */
    void (*kernel)(P...); /**< the kernel */
    /** Enqueue the kernel with these arguments, chained when HALOX_CHAINED_OK, else plainly; an
     *  error is the runtime's last error. The arguments convert to the kernel's own parameter
     *  types here, as with <<<>>> (NULL). */
    void operator()(P... args) const
    {
        if (!HALOX_CHAINED_OK) {
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
/** The launcher of `kernel` on `blocks` x `threads` on `stream` (HALOX_LAUNCH_CHAINED's body):
 *  nothing is enqueued until it is called with the kernel's arguments. */
template <typename... P>
static inline halox_chained_launcher<P...> halox_chained(void (*kernel)(P...), unsigned blocks,
                                                         unsigned threads, cudaStream_t stream)
{
    return halox_chained_launcher<P...>{blocks, threads, stream, kernel};
}
/** HALOX_LAUNCH as a programmatic dependent launch where HALOX_CHAINED_OK (the file comment):
 *  the kernel calls halox_chained_wait() before it touches what the kernels before it use. */
#define HALOX_LAUNCH_CHAINED(kernel, blocks, threads, stream)                                      \
    halox_chained((kernel), (unsigned)(blocks), (unsigned)(threads), (stream))

/** First in a kernel launched by HALOX_LAUNCH_CHAINED, every thread (the file comment): returns
 *  once the kernel before it in the stream completed with its memory visible. No-op below sm_90
 *  and in a plain launch. */
static __device__ __forceinline__ void halox_chained_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/** Early trigger: the kernel after this one (launched chained) may start its blocks once every
 * block of this one called this or exited; they then sit in halox_chained_wait until this
 * kernel completed. Call it only past a block's last wait: a block of the next kernel then never
 * holds a place that a block this kernel waits for (here or in a peer's kernel) still needs. */
static __device__ __forceinline__ void halox_chained_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
#endif

#endif
