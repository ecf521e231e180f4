/*
 * The KMDF stub of the Linux-linked test image (scripts/build-driver-image.sh): the project's
 * own stand-in for the WDK's WdfDriverEntry.lib, which cannot be had on Linux. It is linked
 * into target/driver-image/<arch>/ppm_pep.sys only; the Windows build (cargo make) links the
 * WDK's real stub instead.
 *
 * What it provides is what the WDK's stub provides to a KMDF 1.31 client:
 *   - WdfFunctions_01031: the framework's function table, filled in by WdfVersionBind through
 *     WDF_BIND_INFO.FuncTable;
 *   - WdfDriverGlobals: the client's globals, the WDF_COMPONENT_GLOBALS WdfVersionBind returns;
 *   - WdfFunctionCount: how many entries of the table the client knows (KMDF 1.31);
 *   - FxDriverEntry, the image's entry point: binds to the framework, calls DriverEntry,
 *     unbinds if DriverEntry fails, and on success, if the driver has an unload routine,
 *     interposes on DRIVER_OBJECT.DriverUnload so that the framework is unbound after it.
 * Layouts: WDF_BIND_INFO, WDF_VERSION and WdfVersionBind/WdfVersionUnbind as the public KMDF
 * source declares them (microsoft/Windows-Driver-Frameworks,
 * src/framework/shared/inc/private/common/fxldr.h); DRIVER_OBJECT up to DriverUnload as
 * wdm.h documents it. Not implemented (the driver uses none): class-extension binding
 * (WdfVersionBindClass) and the KMDF type-init sections.
 *
 * PPM_WDF_FUNCTION_COUNT: WdfFunctionTableNumEntries for KMDF 1.31, passed by the build script
 * from tools/windows-check/include/kmdf-1.31.h (the value the bindings use).
 */

#ifndef PPM_WDF_FUNCTION_COUNT
#error "PPM_WDF_FUNCTION_COUNT (WdfFunctionTableNumEntries of KMDF 1.31) must be defined"
#endif

typedef long NTSTATUS;
typedef unsigned long ULONG;
typedef unsigned short USHORT;
typedef unsigned short WCHAR;
typedef void VOID;

typedef struct _UNICODE_STRING {
    USHORT Length;
    USHORT MaximumLength;
    WCHAR *Buffer;
} UNICODE_STRING;

struct _DRIVER_OBJECT;
typedef VOID DRIVER_UNLOAD(struct _DRIVER_OBJECT *DriverObject);

/* wdm.h's DRIVER_OBJECT, up to DriverUnload (the only member the stub touches). */
typedef struct _DRIVER_OBJECT {
    short Type;
    short Size;
    void *DeviceObject;
    ULONG Flags;
    void *DriverStart;
    ULONG DriverSize;
    void *DriverSection;
    void *DriverExtension;
    UNICODE_STRING DriverName;
    UNICODE_STRING *HardwareDatabase;
    void *FastIoDispatch;
    void *DriverInit;
    void *DriverStartIo;
    DRIVER_UNLOAD *DriverUnload;
} DRIVER_OBJECT;

/* LLP64 (x64 and ARM64): DriverUnload at 0x68, as wdm.h lays it out. */
_Static_assert(__builtin_offsetof(DRIVER_OBJECT, DriverUnload) == 0x68, "DRIVER_OBJECT.DriverUnload");

typedef VOID (*WDFFUNC)(VOID);

/* fxldr.h */
typedef struct _WDF_VERSION {
    ULONG Major;
    ULONG Minor;
    ULONG Build;
} WDF_VERSION;

typedef struct _WDF_BIND_INFO {
    ULONG Size;
    WCHAR *Component;
    WDF_VERSION Version;
    ULONG FuncCount;
    WDFFUNC *FuncTable;
    void *Module;
} WDF_BIND_INFO;

_Static_assert(__builtin_offsetof(WDF_BIND_INFO, Component) == 8, "WDF_BIND_INFO.Component");
_Static_assert(__builtin_offsetof(WDF_BIND_INFO, Version) == 16, "WDF_BIND_INFO.Version");
_Static_assert(__builtin_offsetof(WDF_BIND_INFO, FuncCount) == 28, "WDF_BIND_INFO.FuncCount");
_Static_assert(__builtin_offsetof(WDF_BIND_INFO, FuncTable) == 32, "WDF_BIND_INFO.FuncTable");
_Static_assert(sizeof(WDF_BIND_INFO) == 48, "sizeof(WDF_BIND_INFO)");

typedef void *PWDF_COMPONENT_GLOBALS;

/* WDFLDR.SYS exports (fxldr.h). */
NTSTATUS WdfVersionBind(DRIVER_OBJECT *DriverObject, UNICODE_STRING *RegistryPath,
                        WDF_BIND_INFO *BindInfo, PWDF_COMPONENT_GLOBALS *ComponentGlobals);
NTSTATUS WdfVersionUnbind(UNICODE_STRING *RegistryPath, WDF_BIND_INFO *BindInfo,
                          PWDF_COMPONENT_GLOBALS ComponentGlobals);

/* The driver's DriverEntry (src/driver.rs). */
NTSTATUS DriverEntry(DRIVER_OBJECT *DriverObject, UNICODE_STRING *RegistryPath);

/* What wdk-sys declares as extern statics (KMDF 1.31). */
const WDFFUNC *WdfFunctions_01031;
void *WdfDriverGlobals;
ULONG WdfFunctionCount = PPM_WDF_FUNCTION_COUNT;

static WCHAR component_name[] = {'K', 'm', 'd', 'f', 'L', 'i', 'b', 'r', 'a', 'r', 'y', 0};

static WDF_BIND_INFO bind_info = {
    sizeof(WDF_BIND_INFO),
    component_name,
    {1, 31, 0},
    PPM_WDF_FUNCTION_COUNT,
    (WDFFUNC *)&WdfFunctions_01031,
    0,
};

/*
 * A copy of the service's registry path for the unbind at unload: the kernel's string is valid
 * only during DriverEntry. Limit: REGISTRY_PATH_CHARACTERS characters; a longer path fails
 * FxDriverEntry with STATUS_NAME_TOO_LONG before anything is bound.
 */
#define REGISTRY_PATH_CHARACTERS 512
#define STATUS_NAME_TOO_LONG ((NTSTATUS)0xC0000106L)
static WCHAR registry_path_buffer[REGISTRY_PATH_CHARACTERS];
static UNICODE_STRING registry_path_copy = {0, sizeof(registry_path_buffer), registry_path_buffer};
static DRIVER_UNLOAD *displaced_driver_unload;

static VOID stub_driver_unload(DRIVER_OBJECT *DriverObject)
{
    displaced_driver_unload(DriverObject);
    (void)WdfVersionUnbind(&registry_path_copy, &bind_info, WdfDriverGlobals);
}

NTSTATUS FxDriverEntry(DRIVER_OBJECT *DriverObject, UNICODE_STRING *RegistryPath)
{
    NTSTATUS status;
    USHORT index;

    if (RegistryPath->Length > sizeof(registry_path_buffer)) {
        return STATUS_NAME_TOO_LONG;
    }
    for (index = 0; index < RegistryPath->Length / sizeof(WCHAR); index++) {
        registry_path_buffer[index] = RegistryPath->Buffer[index];
    }
    registry_path_copy.Length = RegistryPath->Length;

    status = WdfVersionBind(DriverObject, &registry_path_copy, &bind_info, &WdfDriverGlobals);
    if (status < 0) {
        return status;
    }
    status = DriverEntry(DriverObject, RegistryPath);
    if (status < 0) {
        (void)WdfVersionUnbind(&registry_path_copy, &bind_info, WdfDriverGlobals);
        return status;
    }
    /* A driver without an unload routine stays loaded, as with the WDK's stub. */
    if (DriverObject->DriverUnload) {
        displaced_driver_unload = DriverObject->DriverUnload;
        DriverObject->DriverUnload = stub_driver_unload;
    }
    return status;
}
