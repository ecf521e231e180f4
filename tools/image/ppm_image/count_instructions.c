/*
 * The runner's instruction counter (instruction_counter.py): a Unicorn code hook that adds one
 * to the 64-bit counter its user data points to. In C because a Python hook costs a
 * microsecond per instruction; this one costs a call. Built by the runner with the host's C
 * compiler into its virtual environment's directory.
 */
#include <stdint.h>

void ppm_count_instruction(void *engine, uint64_t address, uint32_t size, void *counter)
{
    (void)engine;
    (void)address;
    (void)size;
    ++*(uint64_t *)counter;
}
