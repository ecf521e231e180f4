/*
 * src/msr_probe.c's MSVC branch (__readmsr/__writemsr from <intrin.h> under __try/__except),
 * compiled by clang for the Linux-linked test image (scripts/build-driver-image.sh).
 *
 * The shim selects its MSVC branch with `_MSC_VER && !__clang__`; clang targeting
 * *-windows-msvc defines both, so __clang__ is undefined here, before anything is included,
 * to compile the branch the WDK build ships.
 *
 * MSVC's __try covers every instruction of its block, so an inline RDMSR that faults is
 * caught. clang's C __try covers calls only (even with -fasync-exceptions, clang 14): the
 * RDMSR that clang's <intrin.h> inlines would lie outside every scope of the
 * __C_specific_handler table (the image check finds exactly that when PPM_INLINE_READMSR is
 * defined, the self-test's broken variant). So __readmsr is routed to an out-of-line leaf
 * function holding the one RDMSR, called inside the __try block: a fault in the leaf unwinds
 * to the call, which the scope covers. <intrin.h> only declares __writemsr: it is defined
 * below the same way.
 */
#pragma clang diagnostic ignored "-Wbuiltin-macro-redefined"
#undef __clang__

#include <intrin.h>

#ifndef PPM_INLINE_READMSR
unsigned __int64 ppm_image_readmsr(unsigned long msr);
#define __readmsr ppm_image_readmsr
#endif

#include "../../../src/msr_probe.c"

#ifndef PPM_INLINE_READMSR
__declspec(noinline) unsigned __int64 ppm_image_readmsr(unsigned long msr)
{
    unsigned int low, high;
    __asm__ volatile("rdmsr" : "=a"(low), "=d"(high) : "c"(msr));
    return ((unsigned __int64)high << 32) | low;
}
#endif

__declspec(noinline) void __writemsr(unsigned long msr, unsigned __int64 value)
{
    __asm__ volatile("wrmsr" : : "c"(msr), "a"((unsigned int)value), "d"((unsigned int)(value >> 32)));
}
