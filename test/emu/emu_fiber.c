/* emu_fiber.c — the context switch between the block scheduler and the fibers that run CUDA
 * threads. On x86-64 a hand-written switch saves only the callee-saved registers (and the
 * MXCSR / x87 control words, which the ABI also makes callee-saved); elsewhere ucontext. */
#include <stdint.h>
#include <string.h>

#include "test/emu/emu_rt.h"

#if TANDEM_EMU_ASM_SWITCH

/* void tandem_emu_asm_switch(void **save_sp, void *load_sp)
 * Saved frame, from the saved sp upwards: mxcsr, x87 cw | r15 r14 r13 r12 rbx rbp | return. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl tandem_emu_asm_switch\n"
        ".hidden tandem_emu_asm_switch\n"
        ".type tandem_emu_asm_switch,@function\n"
        "tandem_emu_asm_switch:\n"
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
        ".size tandem_emu_asm_switch, .-tandem_emu_asm_switch\n"
        /* A new fiber 'returns' here with rsp 16-byte aligned; the call makes the ABI's
         * entry alignment. rbp = 0 ends the frame chain for debuggers. */
        ".p2align 4\n"
        ".globl tandem_emu_asm_fiber_start\n"
        ".hidden tandem_emu_asm_fiber_start\n"
        ".type tandem_emu_asm_fiber_start,@function\n"
        "tandem_emu_asm_fiber_start:\n"
        "  xorl %ebp, %ebp\n"
        "  call tandem_emu_fiber_entry\n"
        "  ud2\n"
        ".size tandem_emu_asm_fiber_start, .-tandem_emu_asm_fiber_start\n");

void tandem_emu_asm_switch(void **save_sp, void *load_sp);
void tandem_emu_asm_fiber_start(void);

void tandem_emu_fctx_make(tandem_emu_fctx *c, char *lo, size_t size) {
    uintptr_t top = ((uintptr_t)lo + size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top;
    *--sp = (uint64_t)(uintptr_t)tandem_emu_asm_fiber_start; /* return address: after it, rsp = top */
    for (int i = 0; i < 6; i++) *--sp = 0;                    /* rbp rbx r12 r13 r14 r15 */
    /* Fibers start with the scheduler's floating-point control state. */
    uint32_t ctl[2] = {0, 0};
    uint16_t cw = 0;
    __asm__ volatile("stmxcsr %0" : "=m"(ctl[0]));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    ctl[1] = cw;
    --sp;
    memcpy(sp, ctl, sizeof ctl);
    c->sp = sp;
}

void tandem_emu_fctx_switch(tandem_emu_fctx *from, tandem_emu_fctx *to) {
    tandem_emu_asm_switch(&from->sp, to->sp);
}

#else /* ucontext */

void tandem_emu_fctx_make(tandem_emu_fctx *c, char *lo, size_t size) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = lo;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = NULL;
    makecontext(&c->uc, tandem_emu_fiber_entry, 0);
}

void tandem_emu_fctx_switch(tandem_emu_fctx *from, tandem_emu_fctx *to) {
    swapcontext(&from->uc, &to->uc);
}

#endif
