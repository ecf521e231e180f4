/*
 * Kernel items the driver or the windows-drivers-rs crates use that Debian's mingw-w64 (10.x)
 * DDK headers lack, declared from their documentation for the Windows-target check.
 *
 * - ExAllocatePool2 and POOL_FLAGS (wdm.h, Windows 10 2004+): mingw-w64 10 predates them.
 */
#pragma once

typedef ULONG64 POOL_FLAGS;

NTKERNELAPI PVOID NTAPI ExAllocatePool2(POOL_FLAGS Flags, SIZE_T NumberOfBytes, ULONG Tag);
