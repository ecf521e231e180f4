/*
 * RDMSR and WRMSR under structured exception handling, for x64 kernel mode.
 *
 * A hypervisor can announce a feature in CPUID whose MSR it does not emulate; RDMSR/WRMSR of
 * such an MSR raises #GP, which the kernel turns into an exception that __try/__except catches
 * at PASSIVE_LEVEL. src/msr_guard.rs calls these only while DriverEntry proves which MSRs exist;
 * afterwards it touches only MSRs proven here, with plain RDMSR/WRMSR. Built by build.rs (cc,
 * MSVC) for the driver and by scripts/check-windows-build.sh (clang) for the check.
 */

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#define PPM_RDMSR(msr) __readmsr(msr)
#define PPM_WRMSR(msr, value) __writemsr((msr), (value))
#else
static unsigned long long ppm_rdmsr(unsigned int msr)
{
    unsigned int low, high;
    __asm__ volatile("rdmsr" : "=a"(low), "=d"(high) : "c"(msr));
    return ((unsigned long long)high << 32) | low;
}

static void ppm_wrmsr(unsigned int msr, unsigned long long value)
{
    __asm__ volatile("wrmsr" : : "c"(msr), "a"((unsigned int)value), "d"((unsigned int)(value >> 32)));
}
#define PPM_RDMSR(msr) ppm_rdmsr(msr)
#define PPM_WRMSR(msr, value) ppm_wrmsr((msr), (value))
#endif

/* Reads MSR `msr` into *value: 1, or 0 (and *value untouched) when RDMSR faulted. */
unsigned char ppm_msr_probe_read(unsigned int msr, unsigned long long *value)
{
    __try {
        *value = PPM_RDMSR(msr);
    } __except (1) {
        return 0;
    }
    return 1;
}

/* Writes `value` to MSR `msr`: 1, or 0 when WRMSR faulted. */
unsigned char ppm_msr_probe_write(unsigned int msr, unsigned long long value)
{
    __try {
        PPM_WRMSR(msr, value);
    } __except (1) {
        return 0;
    }
    return 1;
}
