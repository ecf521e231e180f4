"""The rules Driver Verifier holds a driver's kernel and KMDF calls to, one row per routine the
image may call: the highest IRQL its documentation allows, whether and how it can fail (what
the low-resources simulation makes it return), and the page that says so. The runner's
verifier (verifier.py) checks every import and every KMDF call against this table; an import
with no row is itself a finding (docs/verifier.md)."""

from __future__ import annotations

from dataclasses import dataclass

PASSIVE_LEVEL = 0
APC_LEVEL = 1
DISPATCH_LEVEL = 2
HIGH_LEVEL = 15
# The highest device IRQL (DIRQL) on x64: device interrupts lie below CLOCK_LEVEL (13).
DIRQL_MAX = 12
# Bug check 0xC4's Parameter 1 for an IRQL violation (the debugger's 0xC4 page): a kernel API
# called at the wrong IRQL; a nonpaged or paged allocation, or a free, above its IRQL.
VERIFIER_WRONG_IRQL = 0xE5
VERIFIER_NONPAGED_ALLOCATION_IRQL = 0x02
VERIFIER_PAGED_ALLOCATION_IRQL = 0x01
VERIFIER_FREE_IRQL = 0x11
IRQL_NAMES = {
    PASSIVE_LEVEL: "PASSIVE_LEVEL",
    APC_LEVEL: "APC_LEVEL",
    DISPATCH_LEVEL: "DISPATCH_LEVEL",
}

STATUS_INSUFFICIENT_RESOURCES = 0xC000009A
POOL_FLAG_PAGED = 0x100  # wdm.h: POOL_FLAG_PAGED (paged pool: IRQL <= APC_LEVEL)

DDI = "https://learn.microsoft.com/en-us/windows-hardware/drivers/ddi/"


def irql_name(irql: int) -> str:
    return IRQL_NAMES.get(irql, "HIGH_LEVEL" if irql >= HIGH_LEVEL else f"IRQL {irql}")


@dataclass(frozen=True)
class Rule:
    """`max_irql`: the highest IRQL a call is allowed at; `failure`: what a failed call
    returns ("status": STATUS_INSUFFICIENT_RESOURCES, "null": a NULL pointer; None: the
    routine cannot fail); `doc`: where both are documented; `verifier_code`: bug check 0xC4's
    Parameter 1 for a call above `max_irql`."""

    max_irql: int
    doc: str
    failure: str | None = None
    verifier_code: int = VERIFIER_WRONG_IRQL


# Imports (ntoskrnl.exe, HAL.dll, WDFLDR.SYS) and KMDF functions (called through the KMDF
# function table), by name.
RULES: dict[str, Rule] = {
    # ntoskrnl.exe
    "DbgPrintEx": Rule(DIRQL_MAX, DDI + "wdm/nf-wdm-dbgprintex"),
    "ExAllocatePool2": Rule(
        DISPATCH_LEVEL,
        DDI + "wdm/nf-wdm-exallocatepool2",
        "null",
        verifier_code=VERIFIER_NONPAGED_ALLOCATION_IRQL,
    ),
    "ExFreePool": Rule(
        DISPATCH_LEVEL, DDI + "wdm/nf-wdm-exfreepool", verifier_code=VERIFIER_FREE_IRQL
    ),
    "KeBugCheckEx": Rule(HIGH_LEVEL, DDI + "wdm/nf-wdm-kebugcheckex"),
    "KeGetCurrentProcessorNumberEx": Rule(
        HIGH_LEVEL, DDI + "wdm/nf-wdm-kegetcurrentprocessornumberex"
    ),
    "KeGetProcessorNumberFromIndex": Rule(
        HIGH_LEVEL, DDI + "wdm/nf-wdm-kegetprocessornumberfromindex"
    ),
    "KeQueryActiveProcessorCountEx": Rule(
        HIGH_LEVEL, DDI + "wdm/nf-wdm-kequeryactiveprocessorcountex"
    ),
    "KeQueryMaximumProcessorCountEx": Rule(
        HIGH_LEVEL, DDI + "wdm/nf-wdm-kequerymaximumprocessorcountex"
    ),
    "KeRevertToUserGroupAffinityThread": Rule(
        DISPATCH_LEVEL, DDI + "wdm/nf-wdm-kereverttousergroupaffinitythread"
    ),
    "KeSetSystemGroupAffinityThread": Rule(
        DISPATCH_LEVEL, DDI + "wdm/nf-wdm-kesetsystemgroupaffinitythread"
    ),
    "PoFxRegisterPluginEx": Rule(
        PASSIVE_LEVEL, DDI + "pepfx/nf-pepfx-pofxregisterpluginex", "status"
    ),
    "EtwRegister": Rule(PASSIVE_LEVEL, DDI + "wdm/nf-wdm-etwregister", "status"),
    "EtwUnregister": Rule(PASSIVE_LEVEL, DDI + "wdm/nf-wdm-etwunregister"),
    "EtwWriteTransfer": Rule(HIGH_LEVEL, DDI + "wdm/nf-wdm-etwwritetransfer"),
    "EtwSetInformation": Rule(PASSIVE_LEVEL, DDI + "wdm/nf-wdm-etwsetinformation"),
    "memcpy": Rule(HIGH_LEVEL, DDI + "wdm/nf-wdm-rtlcopymemory"),
    "memset": Rule(HIGH_LEVEL, DDI + "wdm/nf-wdm-rtlfillmemory"),
    "memmove": Rule(HIGH_LEVEL, DDI + "wdm/nf-wdm-rtlmovememory"),
    "memcmp": Rule(HIGH_LEVEL, DDI + "wdm/nf-wdm-rtlequalmemory"),
    # Not documented with an IRQL: the exception dispatcher calls it at the IRQL of the
    # exception; the image never calls it itself.
    "__C_specific_handler": Rule(
        HIGH_LEVEL, "https://learn.microsoft.com/windows/win32/devnotes/--c-specific-handler2"
    ),
    # HAL.dll
    "HalAllocateHardwareCounters": Rule(
        PASSIVE_LEVEL, DDI + "ntddk/nf-ntddk-halallocatehardwarecounters", "status"
    ),
    "HalFreeHardwareCounters": Rule(PASSIVE_LEVEL, DDI + "ntddk/nf-ntddk-halfreehardwarecounters"),
    "KeQueryPerformanceCounter": Rule(HIGH_LEVEL, DDI + "wdm/nf-wdm-kequeryperformancecounter"),
    "KeStallExecutionProcessor": Rule(HIGH_LEVEL, DDI + "wdm/nf-wdm-kestallexecutionprocessor"),
    # WDFLDR.SYS (called by the KMDF stub's FxDriverEntry, before DriverEntry). Undocumented:
    # fxldr.h places both in a pageable section (so at most APC_LEVEL) and the loader writes
    # the registry, so PASSIVE_LEVEL.
    "WdfVersionBind": Rule(
        PASSIVE_LEVEL,
        "https://github.com/microsoft/Windows-Driver-Frameworks"
        " src/framework/shared/inc/private/common/fxldr.h",
        "status",
    ),
    "WdfVersionUnbind": Rule(
        PASSIVE_LEVEL,
        "https://github.com/microsoft/Windows-Driver-Frameworks"
        " src/framework/shared/inc/private/common/fxldr.h",
    ),
    # KMDF
    "WdfDriverCreate": Rule(
        PASSIVE_LEVEL, DDI + "wdfdriver/nf-wdfdriver-wdfdrivercreate", "status"
    ),
    "WdfDriverOpenParametersRegistryKey": Rule(
        PASSIVE_LEVEL, DDI + "wdfdriver/nf-wdfdriver-wdfdriveropenparametersregistrykey", "status"
    ),
    "WdfDriverOpenPersistentStateRegistryKey": Rule(
        PASSIVE_LEVEL,
        DDI + "wdfdriver/nf-wdfdriver-wdfdriveropenpersistentstateregistrykey",
        "status",
    ),
    "WdfRegistryOpenKey": Rule(
        PASSIVE_LEVEL, DDI + "wdfregistry/nf-wdfregistry-wdfregistryopenkey", "status"
    ),
    "WdfRegistryCreateKey": Rule(
        PASSIVE_LEVEL, DDI + "wdfregistry/nf-wdfregistry-wdfregistrycreatekey", "status"
    ),
    "WdfRegistryQueryValue": Rule(
        PASSIVE_LEVEL, DDI + "wdfregistry/nf-wdfregistry-wdfregistryqueryvalue", "status"
    ),
    "WdfRegistryAssignULong": Rule(
        PASSIVE_LEVEL, DDI + "wdfregistry/nf-wdfregistry-wdfregistryassignulong", "status"
    ),
    "WdfRegistryAssignValue": Rule(
        PASSIVE_LEVEL, DDI + "wdfregistry/nf-wdfregistry-wdfregistryassignvalue", "status"
    ),
    "WdfRegistryClose": Rule(PASSIVE_LEVEL, DDI + "wdfregistry/nf-wdfregistry-wdfregistryclose"),
    "WdfDeviceCreate": Rule(
        PASSIVE_LEVEL, DDI + "wdfdevice/nf-wdfdevice-wdfdevicecreate", "status"
    ),
    "WdfDeviceSetStaticStopRemove": Rule(
        DISPATCH_LEVEL, DDI + "wdfdevice/nf-wdfdevice-wdfdevicesetstaticstopremove"
    ),
    "WdfDeviceSetDeviceState": Rule(
        DISPATCH_LEVEL, DDI + "wdfdevice/nf-wdfdevice-wdfdevicesetdevicestate"
    ),
}
