/* emu_warp.c — warp shuffles and votes with lockstep exchange. A lane deposits its value and
 * waits; once the block is quiescent, each group of lanes named by a mask exchanges values if
 * every lane of the mask is waiting in the same operation with the same mask. Anything else
 * (a lane that exited, waits at a barrier, calls something else, does not exist, or a mask
 * without the caller) is a bad shuffle mask: on a GPU it hangs or reads garbage. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "test/emu/emu_rt.h"

static const char *op_name(int op) {
    switch (op) {
    case TANDEM_EMU_SHFL_IDX: return "__shfl_sync";
    case TANDEM_EMU_SHFL_XOR: return "__shfl_xor_sync";
    case TANDEM_EMU_SHFL_DOWN: return "__shfl_down_sync";
    case TANDEM_EMU_SHFL_UP: return "__shfl_up_sync";
    case TANDEM_EMU_OP_MMA: return "tandem_mma_bf16_16816";
    default: return "__ballot_sync/__any_sync/__all_sync";
    }
}

#define TID3(f) (f)->ctx.thread_idx.x, (f)->ctx.thread_idx.y, (f)->ctx.thread_idx.z

__attribute__((format(printf, 3, 4), noreturn)) static void
fail_in_fiber(tandem_emu_worker *w, tandem_emu_fiber *f, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tandem_emu_fail(w, f, "%s", msg);
    f->state = TANDEM_EMU_F_FAILED;
    tandem_emu_yield(w, f, 1);
    abort(); /* a failed fiber is never resumed */
}

static uint32_t warp_op(int op, unsigned mask, uint32_t v, int lane_arg) {
    tandem_emu_worker *w = tandem_emu_tl_worker;
    if (!w || !w->cur) {
        fprintf(stderr, "tandem emulator: %s used outside an emulated launch\n", op_name(op));
        abort();
    }
    tandem_emu_fiber *f = w->cur;
    unsigned lane = f->tid % TANDEM_WARP_SIZE;
    if (!((mask >> lane) & 1u))
        fail_in_fiber(w, f, "bad shuffle mask: %s with mask 0x%08x, which excludes the calling lane %u",
                      op_name(op), mask, lane);
    f->op = op;
    f->mask = mask;
    f->value = v;
    f->lane_arg = lane_arg;
    f->state = TANDEM_EMU_F_WARP;
    tandem_emu_yield(w, f, 0);
    return f->result;
}

uint32_t tandem_emu_shfl_u32(unsigned mask, uint32_t v, int mode, int lane_arg) {
    if (mode < TANDEM_EMU_SHFL_IDX || mode > TANDEM_EMU_SHFL_UP) {
        tandem_emu_worker *w = tandem_emu_tl_worker;
        if (w && w->cur) fail_in_fiber(w, w->cur, "shuffle with unknown mode %d", mode);
        abort();
    }
    return warp_op(mode, mask, v, lane_arg);
}

unsigned tandem_emu_ballot(unsigned mask, int pred) {
    return warp_op(TANDEM_EMU_OP_BALLOT, mask, pred != 0, 0);
}

/* mma.sync.aligned: the whole warp, so the mask is full (a partial warp fails in exchange). */
void tandem_emu_mma_bf16_16816(float *d, const uint32_t *a, const uint32_t *b, const float *c) {
    tandem_emu_worker *w = tandem_emu_tl_worker;
    const tandem_emu_mma_frag frag = {a, b, c, d};
    if (w && w->cur) w->cur->mma = &frag;
    (void)warp_op(TANDEM_EMU_OP_MMA, TANDEM_FULL_MASK, 0, 0);
}

static float bf16_half(uint32_t v, int hi) { return tandem_bf16_to_f32((tandem_bf16)(hi ? v >> 16 : v & 0xffffu)); }

/* D = A B + C from the 32 lanes' fragments (layout in kernels/dialect.h); sums in double,
 * so the result is at least as exact as the hardware's f32 sums in any order. */
static void mma_exchange(tandem_emu_fiber *fs) {
    float A[16][16], B[16][8], C[16][8];
    for (unsigned l = 0; l < TANDEM_WARP_SIZE; l++) {
        const tandem_emu_mma_frag *f = fs[l].mma;
        const int g = (int)l / 4, t = (int)l % 4;
        for (int e = 0; e < 2; e++) {
            A[g][2 * t + e] = bf16_half(f->a[0], e), A[g + 8][2 * t + e] = bf16_half(f->a[1], e);
            A[g][2 * t + 8 + e] = bf16_half(f->a[2], e), A[g + 8][2 * t + 8 + e] = bf16_half(f->a[3], e);
            B[2 * t + e][g] = bf16_half(f->b[0], e), B[2 * t + 8 + e][g] = bf16_half(f->b[1], e);
            C[g][2 * t + e] = f->c[e], C[g + 8][2 * t + e] = f->c[2 + e];
        }
    }
    for (unsigned l = 0; l < TANDEM_WARP_SIZE; l++) {
        const int g = (int)l / 4, t = (int)l % 4;
        for (int x = 0; x < 4; x++) {
            const int i = g + (x >= 2 ? 8 : 0), j = 2 * t + (x & 1);
            double acc = C[i][j];
            for (int k = 0; k < 16; k++) acc += (double)A[i][k] * (double)B[k][j];
            fs[l].mma->d[x] = (float)acc;
        }
    }
}

/* Source lane of a shuffle with width 32, or -1 when the lane keeps its own value (CUDA:
 * down/up/xor whose source falls outside the warp). */
static int source_lane(int op, unsigned lane, int lane_arg) {
    uint64_t a = (unsigned)lane_arg;
    switch (op) {
    case TANDEM_EMU_SHFL_IDX: return (int)(a % TANDEM_WARP_SIZE);
    case TANDEM_EMU_SHFL_XOR: return (lane ^ a) < TANDEM_WARP_SIZE ? (int)(lane ^ a) : -1;
    case TANDEM_EMU_SHFL_DOWN: return lane + a < TANDEM_WARP_SIZE ? (int)(lane + a) : -1;
    default: return a <= lane ? (int)(lane - a) : -1; /* up */
    }
}

/* Check and perform the operation of the group that lane `lead` (waiting) belongs to. */
static int exchange(tandem_emu_worker *w, tandem_emu_fiber *fs, unsigned lanes, tandem_emu_fiber *lead) {
    unsigned m = lead->mask;
    for (unsigned j = 0; j < TANDEM_WARP_SIZE; j++) {
        if (!((m >> j) & 1u)) continue;
        if (j >= lanes) {
            tandem_emu_fail(w, lead,
                            "bad shuffle mask: %s with mask 0x%08x names lane %u, but this warp "
                            "has only %u thread(s)",
                            op_name(lead->op), m, j, lanes);
            return -1;
        }
        const tandem_emu_fiber *o = &fs[j];
        if (o->state == TANDEM_EMU_F_EXITED) {
            tandem_emu_fail(w, lead,
                            "bad shuffle mask: %s with mask 0x%08x names lane %u (thread "
                            "(%u,%u,%u)), which has exited",
                            op_name(lead->op), m, j, TID3(o));
            return -1;
        }
        if (o->state == TANDEM_EMU_F_BARRIER) {
            tandem_emu_fail(w, lead,
                            "bad shuffle mask: %s with mask 0x%08x names lane %u (thread "
                            "(%u,%u,%u)), which waits at __syncthreads instead",
                            op_name(lead->op), m, j, TID3(o));
            return -1;
        }
        if (o->op != lead->op || o->mask != m) {
            tandem_emu_fail(w, lead,
                            "bad shuffle mask: %s with mask 0x%08x, but lane %u (thread (%u,%u,%u)) "
                            "named in it calls %s with mask 0x%08x",
                            op_name(lead->op), m, j, TID3(o), op_name(o->op), o->mask);
            return -1;
        }
    }
    if (lead->op == TANDEM_EMU_OP_MMA) {
        mma_exchange(fs);
    } else if (lead->op == TANDEM_EMU_OP_BALLOT) {
        uint32_t bits = 0;
        for (unsigned j = 0; j < TANDEM_WARP_SIZE; j++)
            if (((m >> j) & 1u) && fs[j].value) bits |= 1u << j;
        for (unsigned j = 0; j < TANDEM_WARP_SIZE; j++)
            if ((m >> j) & 1u) fs[j].result = bits;
    } else {
        for (unsigned j = 0; j < TANDEM_WARP_SIZE; j++) {
            if (!((m >> j) & 1u)) continue;
            int src = source_lane(lead->op, j, fs[j].lane_arg);
            if (src >= 0 && !((m >> src) & 1u)) {
                tandem_emu_fail(w, &fs[j],
                                "bad shuffle mask: %s reads lane %d, which is not in mask 0x%08x "
                                "(its value is undefined)",
                                op_name(lead->op), src, m);
                return -1;
            }
            fs[j].result = src < 0 ? fs[j].value : fs[src].value;
        }
    }
    for (unsigned j = 0; j < TANDEM_WARP_SIZE; j++)
        if ((m >> j) & 1u) fs[j].state = TANDEM_EMU_F_READY;
    return 0;
}

int tandem_emu_resolve_warps(tandem_emu_worker *w) {
    int resolved = 0;
    for (unsigned base = 0; base < w->nthreads; base += TANDEM_WARP_SIZE) {
        tandem_emu_fiber *fs = &w->fibers[base];
        unsigned lanes = w->nthreads - base < TANDEM_WARP_SIZE ? w->nthreads - base : TANDEM_WARP_SIZE;
        for (unsigned l = 0; l < lanes; l++) {
            if (fs[l].state != TANDEM_EMU_F_WARP) continue;
            if (exchange(w, fs, lanes, &fs[l]) != 0) return -1;
            resolved++;
        }
    }
    return resolved;
}
