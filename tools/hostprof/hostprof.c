/* halox-hostprof: where a process's host time goes, by NVTX range and by call. Loaded with
 *   LD_PRELOAD=libhalox-hostprof.so NVTX_INJECTION64_PATH=libhalox-hostprof.so
 * it takes the NVTX push/pop of the library's ranges (an NVTX injection: the ranges cost nothing
 * without it) and times every call into the CUDA runtime, MPI and the waits' back-off
 * (sched_yield, nanosleep) that the process makes, each counted in the innermost open range.
 * At exit it writes, per range name: occurrences, wall time (inclusive and without inner
 * ranges) and, per function called directly in it, calls and time per occurrence; what is left
 * of the range's own time is host work outside those calls. Written for the rebuild's host time,
 * nearly all of it calls of a few us each (docs/MD-DESIGN.md#rebuilds-on-the-device), where
 * Nsight Systems is not available.
 * HALOX_HOSTPROF: the report's file ("%r" the MPI rank from the launcher's environment, "%p" the
 * process id); unset or "-": stderr. A diagnostic: not part of libhalox. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include "tool_env.h"

/* ---- the functions timed ---------------------------------------------------------------- */

#define HP_FUNCS(X)                                                                                \
    X(__cudaLaunchKernel)                                                                          \
    X(cudaLaunchKernel)                                                                            \
    X(cudaLaunchKernelExC)                                                                         \
    X(cudaMemcpyAsync)                                                                             \
    X(cudaMemcpy2DAsync)                                                                           \
    X(cudaMemcpy)                                                                                  \
    X(cudaMemsetAsync)                                                                             \
    X(cudaMemset)                                                                                  \
    X(cudaEventRecord)                                                                             \
    X(cudaStreamWaitEvent)                                                                         \
    X(cudaEventQuery)                                                                              \
    X(cudaStreamQuery)                                                                             \
    X(cudaEventSynchronize)                                                                        \
    X(cudaStreamSynchronize)                                                                       \
    X(cudaDeviceSynchronize)                                                                       \
    X(cudaEventElapsedTime)                                                                        \
    X(cudaGraphLaunch)                                                                             \
    X(cudaGraphInstantiate)                                                                        \
    X(cudaGraphExecUpdate)                                                                         \
    X(cudaStreamBeginCapture)                                                                      \
    X(cudaStreamEndCapture)                                                                        \
    X(cudaMalloc)                                                                                  \
    X(cudaFree)                                                                                    \
    X(cudaMallocHost)                                                                              \
    X(cudaHostAlloc)                                                                               \
    X(cudaFreeHost)                                                                                \
    X(cudaSetDevice)                                                                               \
    X(MPI_Isend)                                                                                   \
    X(MPI_Irecv)                                                                                   \
    X(MPI_Test)                                                                                    \
    X(MPI_Testsome)                                                                                \
    X(MPI_Iprobe)                                                                                  \
    X(MPI_Iallgather)                                                                              \
    X(MPI_Ibarrier)                                                                                \
    X(MPI_Allreduce)                                                                               \
    X(MPI_Barrier)                                                                                 \
    X(sched_yield)                                                                                 \
    X(nanosleep)

#define HP_ENUM(f) HP_##f,
enum { HP_FUNCS(HP_ENUM) HP_NFUNCS };
#define HP_NAME(f) #f,
static const char *const hp_fname[HP_NFUNCS] = {HP_FUNCS(HP_NAME)};

/* ---- ranges --------------------------------------------------------------------------------- */

enum { HP_DEPTH = 32, HP_RANGES = 96 };

typedef struct hp_open {
    const char *name;
    int64_t t0, inner;     /* start; time in inner ranges */
    int64_t ns[HP_NFUNCS]; /* calls made directly in it */
    long n[HP_NFUNCS];
} hp_open_t;

typedef struct hp_range {
    char name[96];
    long seen; /* occurrences, those skipped included */
    long occ;
    int64_t incl, excl;
    int64_t ns[HP_NFUNCS];
    long n[HP_NFUNCS];
} hp_range_t;

static hp_range_t hp_ranges[HP_RANGES];
static long hp_skip; /* HALOX_HOSTPROF_SKIP: the first occurrences of each range not counted */
static int hp_nranges;
static pthread_mutex_t hp_lock = PTHREAD_MUTEX_INITIALIZER;

static __thread hp_open_t hp_stack[HP_DEPTH + 1]; /* [0]: outside every range */
static __thread int hp_top;
static __thread int hp_in_call; /* only the outermost call is timed (MPI may yield inside) */

static int64_t hp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* the range's totals into the table (by name) */
static void hp_fold(const hp_open_t *o, int64_t incl)
{
    const char *name = o->name ? o->name : "(outside every range)";
    pthread_mutex_lock(&hp_lock);
    hp_range_t *r = NULL;
    for (int i = 0; i < hp_nranges && !r; i++)
        if (!strncmp(hp_ranges[i].name, name, sizeof hp_ranges[i].name - 1))
            r = &hp_ranges[i];
    if (!r && hp_nranges < HP_RANGES) {
        r = &hp_ranges[hp_nranges++];
        snprintf(r->name, sizeof r->name, "%s", name);
    }
    if (r && r->seen++ < hp_skip && o->name)
        r = NULL; /* one of the first (HALOX_HOSTPROF_SKIP) */
    if (r) {
        r->occ++;
        r->incl += incl;
        r->excl += incl - o->inner;
        for (int f = 0; f < HP_NFUNCS; f++) {
            r->ns[f] += o->ns[f];
            r->n[f] += o->n[f];
        }
    }
    pthread_mutex_unlock(&hp_lock);
}

static int hp_push(const char *name)
{
    if (hp_top >= HP_DEPTH)
        return hp_top;
    hp_open_t *o = &hp_stack[++hp_top];
    memset(o, 0, sizeof *o);
    o->name = name;
    o->t0 = hp_now();
    return hp_top - 1;
}

static int hp_pop(void)
{
    if (hp_top <= 0)
        return -1;
    const hp_open_t *o = &hp_stack[hp_top];
    const int64_t incl = hp_now() - o->t0;
    hp_fold(o, incl);
    hp_top--;
    hp_stack[hp_top].inner += incl;
    return hp_top;
}

static void hp_count(int f, int64_t ns)
{
    hp_open_t *o = &hp_stack[hp_top];
    o->ns[f] += ns;
    o->n[f]++;
}

/* ---- the NVTX injection ---------------------------------------------------------------------- */

static int NVTX_API hp_nvtx_push(const char *name) { return hp_push(name); }
static int NVTX_API hp_nvtx_pop(void) { return hp_pop(); }

/* called by every copy of NVTX's loader in the process (each shared object has its own) */
int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    const char *skip = tool_env_string("HALOX_HOSTPROF_SKIP");
    hp_skip = skip && atol(skip) > 0 ? atol(skip) : 0;
    const NvtxExportTableCallbacks *cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
    NvtxFunctionTable t = NULL;
    unsigned int n = 0;
    if (!cb || !cb->GetModuleFunctionTable ||
        !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t ||
        n <= NVTX_CBID_CORE_RangePop)
        return 0;
    *t[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)hp_nvtx_push;
    *t[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)hp_nvtx_pop;
    return 1;
}

/* ---- the interposed calls -------------------------------------------------------------------- */

static void *hp_real(const char *name, void **slot)
{
    if (!*slot)
        *slot = dlsym(RTLD_NEXT, name);
    if (!*slot) {
        static const char msg[] = "halox-hostprof: a timed function is missing\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    return *slot;
}

/* RET NAME(PARAMS) { time the real NAME(ARGS) } */
#define HP_WRAP(ret, f, params, args)                                                              \
    ret f params                                                                                   \
    {                                                                                              \
        static void *hp_real_;                                                                     \
        typedef ret(*hp_fn_t) params;                                                              \
        hp_fn_t hp_fn_ = (hp_fn_t)hp_real(#f, &hp_real_);                                          \
        if (hp_in_call)                                                                            \
            return hp_fn_ args;                                                                    \
        hp_in_call = 1;                                                                            \
        const int64_t hp_t_ = hp_now();                                                            \
        ret hp_r_ = hp_fn_ args;                                                                   \
        hp_count(HP_##f, hp_now() - hp_t_);                                                        \
        hp_in_call = 0;                                                                            \
        return hp_r_;                                                                              \
    }

HP_WRAP(cudaError_t, cudaLaunchKernel,
        (const void *func, dim3 grid, dim3 block, void **a, size_t shm, cudaStream_t s),
        (func, grid, block, a, shm, s))
/* what nvcc's launch stubs (<<<...>>>) call since CUDA 13 */
HP_WRAP(cudaError_t, __cudaLaunchKernel,
        (cudaKernel_t k, dim3 grid, dim3 block, void **a, size_t shm, cudaStream_t s),
        (k, grid, block, a, shm, s))
HP_WRAP(cudaError_t, cudaLaunchKernelExC, (const cudaLaunchConfig_t *c, const void *func, void **a),
        (c, func, a))
HP_WRAP(cudaError_t, cudaMemcpyAsync,
        (void *d, const void *s_, size_t n, enum cudaMemcpyKind k, cudaStream_t s),
        (d, s_, n, k, s))
HP_WRAP(cudaError_t, cudaMemcpy2DAsync,
        (void *d, size_t dp, const void *s_, size_t sp, size_t w, size_t h, enum cudaMemcpyKind k,
         cudaStream_t s),
        (d, dp, s_, sp, w, h, k, s))
HP_WRAP(cudaError_t, cudaMemcpy, (void *d, const void *s_, size_t n, enum cudaMemcpyKind k),
        (d, s_, n, k))
HP_WRAP(cudaError_t, cudaMemsetAsync, (void *d, int v, size_t n, cudaStream_t s), (d, v, n, s))
HP_WRAP(cudaError_t, cudaMemset, (void *d, int v, size_t n), (d, v, n))
HP_WRAP(cudaError_t, cudaEventRecord, (cudaEvent_t e, cudaStream_t s), (e, s))
HP_WRAP(cudaError_t, cudaStreamWaitEvent, (cudaStream_t s, cudaEvent_t e, unsigned int fl),
        (s, e, fl))
HP_WRAP(cudaError_t, cudaEventQuery, (cudaEvent_t e), (e))
HP_WRAP(cudaError_t, cudaStreamQuery, (cudaStream_t s), (s))
HP_WRAP(cudaError_t, cudaEventSynchronize, (cudaEvent_t e), (e))
HP_WRAP(cudaError_t, cudaStreamSynchronize, (cudaStream_t s), (s))
HP_WRAP(cudaError_t, cudaDeviceSynchronize, (void), ())
HP_WRAP(cudaError_t, cudaEventElapsedTime, (float *ms, cudaEvent_t a, cudaEvent_t b), (ms, a, b))
HP_WRAP(cudaError_t, cudaGraphLaunch, (cudaGraphExec_t g, cudaStream_t s), (g, s))
HP_WRAP(cudaError_t, cudaGraphInstantiate,
        (cudaGraphExec_t * e, cudaGraph_t g, unsigned long long fl), (e, g, fl))
HP_WRAP(cudaError_t, cudaGraphExecUpdate,
        (cudaGraphExec_t e, cudaGraph_t g, cudaGraphExecUpdateResultInfo *info), (e, g, info))
HP_WRAP(cudaError_t, cudaStreamBeginCapture, (cudaStream_t s, enum cudaStreamCaptureMode m), (s, m))
HP_WRAP(cudaError_t, cudaStreamEndCapture, (cudaStream_t s, cudaGraph_t *g), (s, g))
HP_WRAP(cudaError_t, cudaMalloc, (void **p, size_t n), (p, n))
HP_WRAP(cudaError_t, cudaFree, (void *p), (p))
HP_WRAP(cudaError_t, cudaMallocHost, (void **p, size_t n), (p, n))
HP_WRAP(cudaError_t, cudaHostAlloc, (void **p, size_t n, unsigned int fl), (p, n, fl))
HP_WRAP(cudaError_t, cudaFreeHost, (void *p), (p))
HP_WRAP(cudaError_t, cudaSetDevice, (int d), (d))
HP_WRAP(int, MPI_Isend,
        (const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *r),
        (b, n, t, d, tag, c, r))
HP_WRAP(int, MPI_Irecv,
        (void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *r),
        (b, n, t, s, tag, c, r))
HP_WRAP(int, MPI_Test, (MPI_Request * r, int *fl, MPI_Status *st), (r, fl, st))
HP_WRAP(int, MPI_Testsome, (int n, MPI_Request r[], int *out, int idx[], MPI_Status st[]),
        (n, r, out, idx, st))
HP_WRAP(int, MPI_Iprobe, (int s, int tag, MPI_Comm c, int *fl, MPI_Status *st), (s, tag, c, fl, st))
HP_WRAP(int, MPI_Iallgather,
        (const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c,
         MPI_Request *r),
        (sb, sn, st, rb, rn, rt, c, r))
HP_WRAP(int, MPI_Ibarrier, (MPI_Comm c, MPI_Request *r), (c, r))
HP_WRAP(int, MPI_Allreduce,
        (const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c),
        (sb, rb, n, t, op, c))
HP_WRAP(int, MPI_Barrier, (MPI_Comm c), (c))
HP_WRAP(int, sched_yield, (void), ())
HP_WRAP(int, nanosleep, (const struct timespec *a, struct timespec *b), (a, b))

/* ---- the report ------------------------------------------------------------------------------ */

static FILE *hp_open_report(void)
{
    const char *pat = tool_env_string("HALOX_HOSTPROF");
    if (!pat || !strcmp(pat, "-"))
        return stderr;
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank)
        rank = getenv("PMI_RANK");
    if (!rank)
        rank = getenv("PMIX_RANK");
    char path[1024];
    size_t at = 0;
    for (const char *p = pat; *p && at + 24 < sizeof path; p++) {
        if (p[0] == '%' && (p[1] == 'r' || p[1] == 'p')) {
            at += (size_t)snprintf(path + at, sizeof path - at, "%s",
                                   p[1] == 'r' ? (rank ? rank : "0") : "");
            if (p[1] == 'p')
                at += (size_t)snprintf(path + at, sizeof path - at, "%ld", (long)getpid());
            p++;
        } else {
            path[at++] = *p;
        }
    }
    path[at] = 0;
    FILE *f = fopen(path, "w");
    return f ? f : stderr;
}

__attribute__((destructor)) static void hp_report(void)
{
    while (hp_top > 0) /* ranges left open (an exit inside one) */
        hp_pop();
    hp_fold(&hp_stack[0], 0); /* the calls outside every range */
    FILE *f = hp_open_report();
    fprintf(f,
            "# halox-hostprof, pid %ld: per range, per occurrence (the first %ld of each "
            "skipped): wall (inclusive, own), then the calls made directly in it (count, us) and "
            "the own time outside them\n",
            (long)getpid(), hp_skip);
    for (int i = 0; i < hp_nranges; i++) {
        const hp_range_t *r = &hp_ranges[i];
        if (r->occ == 0)
            continue;
        const double occ = (double)r->occ;
        int64_t calls = 0;
        for (int k = 0; k < HP_NFUNCS; k++)
            calls += r->ns[k];
        if (r->incl > 0)
            fprintf(f, "range \"%s\": %ld x, %.1f us, own %.1f us, own outside calls %.1f us\n",
                    r->name, r->occ, 1e-3 * (double)r->incl / occ, 1e-3 * (double)r->excl / occ,
                    1e-3 * (double)(r->excl - calls) / occ);
        else
            fprintf(f, "range \"%s\" (the calls outside every range, totals):\n", r->name);
        const double per = r->incl > 0 ? occ : 1.0;
        for (int k = 0; k < HP_NFUNCS; k++)
            if (r->n[k])
                fprintf(f, "    %-22s %8.2f calls %9.1f us (%.2f us each)\n", hp_fname[k],
                        (double)r->n[k] / per, 1e-3 * (double)r->ns[k] / per,
                        1e-3 * (double)r->ns[k] / (double)r->n[k]);
    }
    if (f != stderr)
        fclose(f);
}
