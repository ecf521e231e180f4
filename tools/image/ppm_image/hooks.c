/*
 * The runner's code hooks in C (native.py builds them with the host's C compiler into the
 * virtual environment's directory and adds them through Unicorn's C API): a Python hook costs
 * a microsecond and more per call, these cost a call. Also the comparison of a served page with
 * its bytes now, and the doorbell of a spinning handoff.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

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

/* Whether the 32 bytes at `before` and `after` agree. */
static int ppm_same_32(const uint8_t *before, const uint8_t *after)
{
    uint64_t old_words[4], new_words[4];
    memcpy(old_words, before, 32);
    memcpy(new_words, after, 32);
    return ((old_words[0] ^ new_words[0]) | (old_words[1] ^ new_words[1]) |
            (old_words[2] ^ new_words[2]) | (old_words[3] ^ new_words[3])) == 0;
}

/* The runs of bytes that differ between `before` and `after`, `length` bytes each, maximal and
 * in order, as [start, end) pairs in `runs` (room for `capacity` pairs): how many there are
 * (all are stored when that is at most `capacity`). Blocks of 32 bytes that agree are skipped
 * whole. */
size_t ppm_changed_runs(const uint8_t *before, const uint8_t *after, size_t length,
                        uint32_t *runs, size_t capacity)
{
    size_t count = 0;
    size_t at = 0;
    while (at < length) {
        if (length - at >= 32 && ppm_same_32(before + at, after + at)) {
            at += 32;
            continue;
        }
        if (before[at] == after[at]) {
            ++at;
            continue;
        }
        size_t start = at;
        while (at < length && before[at] != after[at])
            ++at;
        if (count < capacity) {
            runs[2 * count] = (uint32_t)start;
            runs[2 * count + 1] = (uint32_t)at;
        }
        ++count;
    }
    return count;
}

/* The doorbell of a spinning handoff (native.py's Doorbell; ppm-sim's
 * sim/src/image/doorbell.rs, whose layout this is): after a whole message, its writer adds one
 * to its counter. */
void ppm_doorbell_ring(uint64_t *counter)
{
    __atomic_fetch_add(counter, 1, __ATOMIC_RELEASE);
}

/* A pause between two looks at a counter another processor will change. */
static inline void ppm_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t ppm_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* Spins until `*counter` passes `received` or `limit_ns` have passed, the clock read every 64
 * looks; whether it passed. */
int ppm_doorbell_wait(const uint64_t *counter, uint64_t received, uint64_t limit_ns)
{
    uint64_t start = ppm_now_ns();
    for (;;) {
        for (int look = 0; look < 64; ++look) {
            if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) > received)
                return 1;
            ppm_pause();
        }
        if (ppm_now_ns() - start >= limit_ns)
            return 0;
    }
}
