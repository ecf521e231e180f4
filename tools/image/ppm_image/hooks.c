/*
 * The runner's code hooks in C (native.py builds them with the host's C compiler into the
 * virtual environment's directory and adds them through Unicorn's C API): a Python hook costs
 * a microsecond and more per call, these cost a call.
 */
#include <stdint.h>

/* The instruction counter (instruction_counter.py): adds one to the 64-bit counter its user
 * data points to. */
void ppm_count_instruction(void *engine, uint64_t address, uint32_t size, void *counter)
{
    (void)engine;
    (void)address;
    (void)size;
    ++*(uint64_t *)counter;
}

/* Unicorn's uc_emu_stop. */
typedef int (*ppm_emu_stop)(void *engine);

/* The stop at a command's return address (runner.py): calls uc_emu_stop, whose address is the
 * user data (a function pointer carried as a data pointer, as dlsym returns it), before the
 * instruction there runs. */
void ppm_stop_emulation(void *engine, uint64_t address, uint32_t size, void *emu_stop)
{
    (void)address;
    (void)size;
    ((ppm_emu_stop)emu_stop)(engine);
}
