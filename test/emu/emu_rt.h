/* emu_rt.h — private to the emulator runtime (test/emu/emu_*.c): fibers, workers, guarded
 * memory. One launch runs on one or more workers (OS threads); a worker runs one block at a
 * time, each CUDA thread of the block as a fiber on its own guarded stack.
 *
 * Files: emu_launch.c (API, limits, workers, fault handler), emu_sched.c (one block: fibers,
 * barriers, fault attribution), emu_warp.c (shuffles, votes), emu_atomic.c, emu_mem.c
 * (guarded buffers), emu_fiber.c (context switch), emu_kernels.c (registry trampolines).
 *
 * AddressSanitizer: fiber switches are annotated with __sanitizer_start/finish_switch_fiber
 * (fibers, not a thread per CUDA thread); stacks of an abandoned block are unpoisoned.
 *
 * Not modelled: timing and true concurrency (threads of a block run one after another between
 * waits, alternating ascending and descending order, so a missing barrier shows up as wrong
 * data but a data race is not reported as such); memory coalescing, bank conflicts, warp
 * divergence cost; static __shared__ size limits (dynamic shared memory is bounds-checked);
 * reads past the end of shared memory declared statically; a kernel that spins waiting for
 * another thread without a barrier never finishes (the test runner's timeout catches it);
 * faults in memory that is not an emulator buffer (e.g. a host pointer) are only caught if
 * that memory is unmapped. A barrier inside an inline helper called from two places counts as
 * one barrier (barriers are told apart by source line). */
#ifndef TANDEM_TEST_EMU_RT_H
#define TANDEM_TEST_EMU_RT_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dialect.h"
#include "test/emu/emu_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define TANDEM_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TANDEM_EMU_ASAN 1
#endif
#endif

/* x86-64 gets a hand-written context switch (no signal-mask syscall per switch, unlike
 * glibc's swapcontext); other targets fall back to ucontext. */
#if defined(__x86_64__)
#define TANDEM_EMU_ASM_SWITCH 1
#else
#include <ucontext.h>
#endif

#define TANDEM_EMU_MAX_BLOCK_THREADS 1024u
#define TANDEM_EMU_MAX_WORKERS 16 /* each costs ~2 memory mappings per fiber stack */
#define TANDEM_EMU_ERR_MAX 1024

/* ---- guarded memory (emu_mem.c) ---------------------------------------------------------- */

/* [PROT_NONE page][front zone: canary bytes][data][PROT_NONE page]: data ends exactly at the
 * back guard page, so any access past the end faults; writes before the start damage the
 * canary, which is checked after every launch (and accesses further before hit the front
 * guard page). */
typedef struct tandem_emu_guarded {
    char *map;      /* whole mapping, guards included */
    size_t map_len;
    char *lo;       /* first byte after the front guard page */
    char *hi;       /* first byte of the back guard page */
    char *data;     /* = hi - bytes */
    size_t bytes;
} tandem_emu_guarded;

#define TANDEM_EMU_CANARY 0xA5
/* Map a region able to hold `cap` bytes behind at least 64 canary bytes; 0 on success. */
int tandem_emu_guarded_map(tandem_emu_guarded *g, size_t cap);
void tandem_emu_guarded_unmap(tandem_emu_guarded *g);
/* Place `bytes` (<= cap) of data against the back guard: canary before, 0xFF in the data. */
void tandem_emu_guarded_place(tandem_emu_guarded *g, size_t bytes);
/* Distance before g->data of the damaged canary byte farthest from it (1 = the byte just
 * before data), 0 if intact. Restores the canary when `repair` is set. */
size_t tandem_emu_guarded_damage(tandem_emu_guarded *g, int repair);

/* Describe addr relative to the nearest buffer (live, freed, or none) into buf. */
void tandem_emu_describe_addr(const void *addr, char *buf, size_t cap);
/* After a launch: check every live buffer's canary; on damage write a description of the
 * first damaged buffer to buf, repair all of them, return nonzero. */
int tandem_emu_check_buffers(char *buf, size_t cap);

/* ---- fibers (emu_fiber.c) ---------------------------------------------------------------- */

typedef struct tandem_emu_fctx {
#if TANDEM_EMU_ASM_SWITCH
    void *sp;
#else
    ucontext_t uc;
#endif
} tandem_emu_fctx;

/* Prepare c to start tandem_emu_fiber_entry() on [lo, lo + size). */
void tandem_emu_fctx_make(tandem_emu_fctx *c, char *lo, size_t size);
/* Save the current context into from and resume to. */
void tandem_emu_fctx_switch(tandem_emu_fctx *from, tandem_emu_fctx *to);
/* Where every fiber starts (emu_sched.c); never returns. */
void tandem_emu_fiber_entry(void);

/* ---- scheduling state ---------------------------------------------------------------------- */

typedef enum {
    TANDEM_EMU_F_READY,   /* runnable (not started, or released from a wait) */
    TANDEM_EMU_F_BARRIER, /* waiting in __syncthreads */
    TANDEM_EMU_F_WARP,    /* waiting in a shuffle or vote for its warp */
    TANDEM_EMU_F_EXITED,
    TANDEM_EMU_F_FAILED,  /* reported an error; the block is abandoned */
} tandem_emu_fstate;

/* Warp operations: the four shuffle modes (TANDEM_EMU_SHFL_*), the vote and the tensor-core
 * multiply-accumulate. */
#define TANDEM_EMU_OP_BALLOT 4
#define TANDEM_EMU_OP_MMA 5

/* A lane's operands of tandem_mma_bf16_16816 while it waits (they live on its stack). */
typedef struct tandem_emu_mma_frag {
    const uint32_t *a, *b;
    const float *c;
    float *d;
} tandem_emu_mma_frag;

typedef struct tandem_emu_fiber {
    tandem_emu_fctx fctx;
    tandem_emu_thread_ctx ctx;   /* threadIdx, blockIdx, blockDim, gridDim */
    unsigned tid;                /* linear thread id in the block; lane = tid % 32 */
    tandem_emu_fstate state;
    const char *site_file;       /* __syncthreads source location */
    int site_line;
    int op;                      /* pending warp op */
    unsigned mask;
    uint32_t value;
    int lane_arg;
    uint32_t result;
    const tandem_emu_mma_frag *mma; /* TANDEM_EMU_OP_MMA: the lane's fragments */
    void *asan_fake_stack;
    char *stack_lo;
    int started;
} tandem_emu_fiber;

struct tandem_emu_launch_state;

typedef struct tandem_emu_worker {
    struct tandem_emu_launch_state *launch;
    /* fibers: one per CUDA thread of the current block, stacks from one mapping */
    tandem_emu_fiber *fibers;
    unsigned fibers_ready;       /* fibers whose stack guard page is set up */
    char *stacks;                /* TANDEM_EMU_MAX_BLOCK_THREADS x (guard page + stack) */
    size_t stacks_len;
    unsigned nthreads;           /* threads in the current block */
    tandem_emu_fiber *cur;       /* running fiber, NULL in the scheduler */
    tandem_emu_fctx sched;
    tandem_emu_dim3 block_idx;
    tandem_emu_guarded shm;      /* dynamic shared memory of the current block */
    char *alt_stack;
    size_t alt_size;
    sigjmp_buf fault_jmp;
    volatile int in_block;
    /* set by the fault handler */
    void *fault_addr;
    int fault_sig, fault_write;
    tandem_emu_fiber *fault_fiber;
    /* AddressSanitizer fiber bookkeeping: the worker's OS stack */
    const void *os_stack_bottom;
    size_t os_stack_size;
    void *sched_fake_stack;
} tandem_emu_worker;

typedef struct tandem_emu_launch_state {
    const char *name;
    tandem_emu_tramp tramp;
    const void *args;
    tandem_launch_dims dims;
    uint64_t nblocks;
    unsigned nthreads;
    uint64_t next_block;         /* atomic */
    int failed;                  /* atomic */
    char err[TANDEM_EMU_ERR_MAX];
} tandem_emu_launch_state;

/* The worker running on this OS thread during a launch. */
extern _Thread_local tandem_emu_worker *tandem_emu_tl_worker;

size_t tandem_emu_page(void);
/* Allocate the worker's fiber array and stack mapping for up to n threads; 0 on success. */
int tandem_emu_worker_prepare(tandem_emu_worker *w, unsigned nthreads);
/* Run block number b of the worker's launch; 0 on success, else the launch failed. */
int tandem_emu_run_block(tandem_emu_worker *w, uint64_t b);
/* Record the launch's first error, prefixed with kernel, block and thread (f may be NULL). */
void tandem_emu_fail(tandem_emu_worker *w, const tandem_emu_fiber *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Set the calling thread's last error (outside a running launch); returns 1. */
int tandem_emu_launch_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* From inside a fiber: give control back to the scheduler (final: the fiber won't resume). */
void tandem_emu_yield(tandem_emu_worker *w, tandem_emu_fiber *f, int final);
/* Resolve pending warp ops once the block is quiescent: >0 resolved, 0 none pending,
 * <0 error reported (emu_warp.c). */
int tandem_emu_resolve_warps(tandem_emu_worker *w);

#endif
