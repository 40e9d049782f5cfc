/* The host emulation's kernel launches (halox_emu.h): a launch runs its blocks one after the
 * other, each block's threads as fibres of the launching thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <deque>
#include <functional>
#include <vector>

#include "cuda_runtime.h"

thread_local halox_emu_dim threadIdx, blockIdx;
halox_emu_dim blockDim, gridDim;
halox_emu_block *halox_emu_cur;

static long g_launches;
extern "C" long halox_emu_launches(void) { return __atomic_load_n(&g_launches, __ATOMIC_SEQ_CST); }

/* Fibres. A block's threads run as fibres on the thread that launched it: a fibre runs until
 * it reaches a barrier or spins (halox_emu_idle), then hands the core to the scheduler, which
 * resumes the next fibre of the block round the ring. One core runs a whole block without a
 * context switch of the kernel's, so a warp's shuffle costs two passes round its lanes instead
 * of two barrier waits of 32 threads. The switch saves what the x86-64 System V ABI has the
 * callee keep (rbx, rbp, r12-r15, the stack pointer, MXCSR and the x87 control word); other
 * targets use ucontext. Under AddressSanitizer every switch says which stack comes next. */
#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#ifdef EMU_ASAN
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                               size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                                size_t *size_old);
#endif

#if defined(__x86_64__)
extern "C" void emu_ctx_switch(void **save_sp, void *load_sp);
__asm__(".text\n"
        ".globl emu_ctx_switch\n"
        ".type emu_ctx_switch,@function\n"
        "emu_ctx_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n"
        "  stmxcsr (%rsp)\n"
        "  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n"
        "  fldcw 4(%rsp)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size emu_ctx_switch,.-emu_ctx_switch\n"
        ".section .note.GNU-stack,\"\",@progbits\n"
        ".text\n");
#else
#include <ucontext.h>
#endif

static const size_t k_fibre_stack = 256 * 1024;

struct emu_fibre {
    char *stack = nullptr; /* k_fibre_stack bytes above a guard page */
#if defined(__x86_64__)
    void *sp = nullptr;
#else
    ucontext_t ctx;
#endif
    unsigned t = 0;
    bool done = false;
    void *asan_fake = nullptr;
};

/* The scheduler's side, per launching thread (the rank threads of a team launch one at a time,
 * g_launch below, but each from its own thread). */
struct emu_sched {
#if defined(__x86_64__)
    void *sp = nullptr;
#else
    ucontext_t ctx;
#endif
    emu_fibre *cur = nullptr; /* the fibre running (nullptr: the scheduler) */
    const void *stack_bottom = nullptr;
    size_t stack_size = 0;
    void *asan_fake = nullptr;
};
static thread_local emu_sched g_sched;

/* A barrier counted in arrivals and released by generation: the last fibre to arrive opens it,
 * the others yield until they see the generation move. */
struct emu_gate {
    unsigned mask;
    int arrived;
    unsigned long gen;
};

/* A warp's gates: the whole warp's, and one per partial mask in use (disjoint groups of a partial
 * mask wait apart). A deque: a gate new to one group never moves the gates others wait at. */
struct emu_warp {
    unsigned present = 0; /* the lanes this warp has */
    emu_gate full{0, 0, 0};
    std::deque<emu_gate> groups;
};

/* the block that runs: its gates and its fibres' count */
struct emu_block_state {
    emu_gate block{0, 0, 0};
    int threads = 0;
    std::vector<emu_warp> warps;
};
static emu_block_state *g_block;

static void emu_fibre_yield(void);

static void emu_gate_wait(emu_gate *g, int want)
{
    const unsigned long gen = g->gen;
    if (++g->arrived == want) {
        g->arrived = 0;
        g->gen++;
        return;
    }
    while (g->gen == gen)
        emu_fibre_yield();
}

void halox_emu_block_sync(void) { emu_gate_wait(&g_block->block, g_block->threads); }

void halox_emu_warp_sync(unsigned mask)
{
    emu_warp *w = &g_block->warps[threadIdx.x >> 5];
    mask &= w->present;
    if (mask == w->present) {
        emu_gate_wait(&w->full, __builtin_popcount(w->present));
        return;
    }
    size_t k = 0;
    while (k < w->groups.size() && w->groups[k].mask != mask)
        k++;
    if (k == w->groups.size())
        w->groups.push_back({mask, 0, 0});
    emu_gate_wait(&w->groups[k], __builtin_popcount(mask));
}

/* the switches: scheduler -> fibre, fibre -> scheduler */
static void emu_to_fibre(emu_fibre *f)
{
    g_sched.cur = f;
    threadIdx = {f->t, 0, 0};
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(&g_sched.asan_fake, f->stack, k_fibre_stack);
#endif
#if defined(__x86_64__)
    emu_ctx_switch(&g_sched.sp, f->sp);
#else
    swapcontext(&g_sched.ctx, &f->ctx);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(g_sched.asan_fake, nullptr, nullptr);
#endif
    g_sched.cur = nullptr;
}

static void emu_to_sched(emu_fibre *f)
{
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(f->done ? nullptr : &f->asan_fake, g_sched.stack_bottom,
                                   g_sched.stack_size);
#endif
#if defined(__x86_64__)
    emu_ctx_switch(&f->sp, g_sched.sp);
#else
    swapcontext(&f->ctx, &g_sched.ctx);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(f->asan_fake, nullptr, nullptr);
#endif
}

static void emu_fibre_yield(void)
{
    emu_fibre *f = g_sched.cur;
    if (f)
        emu_to_sched(f);
}

void halox_emu_fibre_yield(void) { emu_fibre_yield(); }

static const std::function<void()> *g_run_fn;

/* a fibre's first frame: the kernel, then back to the scheduler for good */
static void emu_fibre_main(void)
{
    emu_fibre *f = g_sched.cur;
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &g_sched.stack_bottom, &g_sched.stack_size);
#endif
    (*g_run_fn)();
    f->done = true;
    emu_to_sched(f);
    abort(); /* a finished fibre is never resumed */
}

/* the fibre's stack made ready to enter emu_fibre_main on its first switch */
static void emu_fibre_start(emu_fibre *f)
{
    f->done = false;
    f->asan_fake = nullptr;
#if defined(__x86_64__)
    uintptr_t top = ((uintptr_t)f->stack + k_fibre_stack) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = nullptr;                 /* emu_fibre_main's return address: never used */
    *--sp = (void *)&emu_fibre_main; /* popped by the switch's ret */
    for (int r = 0; r < 6; r++)      /* rbp, rbx, r12-r15 */
        *--sp = nullptr;
    uint32_t csr[2];
    __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(csr[0]), "=m"(csr[1]));
    *--sp = nullptr;
    memcpy(sp, csr, sizeof csr);
    f->sp = sp;
#else
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = k_fibre_stack;
    f->ctx.uc_link = nullptr;
    makecontext(&f->ctx, emu_fibre_main, 0);
#endif
}

/* One launch at a time (the rank threads of a team launch at once): the grid's dimensions and
 * the current block are the emulation's globals. The fibres' stacks are kept between blocks and
 * launches (never freed: they outlive main with the process). */
static pthread_mutex_t g_launch = PTHREAD_MUTEX_INITIALIZER;
static std::vector<emu_fibre *> &g_fibres = *new std::vector<emu_fibre *>;

/* the order of the fibres' passes: a xorshift, seeded alike in every process and run */
static unsigned emu_order_next(void)
{
    static thread_local unsigned long long s = 0x9e3779b97f4a7c15ull;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (unsigned)(s >> 32);
}

static emu_fibre *emu_fibre_new(unsigned t)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *m = static_cast<char *>(mmap(nullptr, k_fibre_stack + page, PROT_READ | PROT_WRITE,
                                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (m == MAP_FAILED || mprotect(m, page, PROT_NONE) != 0) {
        fprintf(stderr, "emulation: cannot map the stack of thread %u\n", t);
        abort();
    }
    emu_fibre *f = new emu_fibre;
    f->stack = m + page;
    f->t = t;
    return f;
}

/* HALOX_EMU_JITTER_US=N: each launch starts after a pause of 0 to N us (a xorshift of the
 * process id), so that the processes of a multi-rank test interleave in other orders and a wait
 * that is missing shows up as a wrong result */
static void emu_jitter(void)
{
    static long max_us = -1;
    static unsigned long long s;
    if (max_us < 0) {
        const char *v = getenv("HALOX_EMU_JITTER_US");
        max_us = v && *v ? atol(v) : 0;
        s = 0x9e3779b97f4a7c15ull ^ (unsigned long long)getpid();
    }
    if (max_us <= 0)
        return;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    usleep((useconds_t)(s % (unsigned long long)(max_us + 1)));
}

void halox_emu_run(unsigned blocks, unsigned threads, const std::function<void()> &fn)
{
    __atomic_fetch_add(&g_launches, 1, __ATOMIC_SEQ_CST);
    emu_jitter();
    pthread_mutex_lock(&g_launch);
    blockDim = {threads, 1, 1};
    gridDim = {blocks, 1, 1};
    const unsigned warps = (threads + 31) / 32;
    while (g_fibres.size() < threads)
        g_fibres.push_back(emu_fibre_new((unsigned)g_fibres.size()));
    const std::function<void()> *outer = g_run_fn;
    g_run_fn = &fn;
    for (unsigned b = 0; b < blocks; b++) {
        emu_block_state st;
        st.threads = (int)threads;
        st.warps.resize(warps);
        for (unsigned w = 0; w < warps; w++) /* a last warp may be short (a block of 1 thread) */
            st.warps[w].present = threads - 32 * w >= 32 ? ~0u : (1u << (threads - 32 * w)) - 1;
        halox_emu_block blk;
        blk.slot.assign(32 * (size_t)warps, 0);
        halox_emu_cur = &blk;
        g_block = &st;
        blockIdx = {b, 0, 0};
        for (unsigned t = 0; t < threads; t++)
            emu_fibre_start(g_fibres[t]);
        /* each pass round the fibres from another start, every other pass backwards: which
         * thread runs first between two barriers varies, as on a GPU, so a missing barrier
         * shows as a wrong result whichever side of it the writer is */
        for (unsigned left = threads, pass = 0; left > 0; pass++) {
            left = 0;
            const unsigned first = emu_order_next() % threads;
            for (unsigned k = 0; k < threads; k++) {
                const unsigned t =
                    pass & 1 ? (first + threads - k) % threads : (first + k) % threads;
                emu_fibre *f = g_fibres[t];
                if (f->done)
                    continue;
                emu_to_fibre(f);
                left += !f->done;
            }
        }
        g_block = nullptr;
    }
    g_run_fn = outer;
    threadIdx = {0, 0, 0};
    blockIdx = {0, 0, 0};
    pthread_mutex_unlock(&g_launch);
}
