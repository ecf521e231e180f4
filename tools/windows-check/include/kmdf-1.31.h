/*
 * KMDF 1.31 declarations for the Windows-target check (scripts/check-windows-build.sh).
 *
 * Debian's mingw-w64 headers have no KMDF, and the WDK's may not be redistributed, so this file
 * declares the KMDF items the driver and the `wdk` crate use, written from their documentation
 * (learn.microsoft.com, wdfdriver.h / wdfdevice.h / wdfregistry.h / wdfsync.h / wdftimer.h /
 * wdfobject.h / wdfglobals.h reference pages): the handle types, the structures, the
 * function-pointer types the function table holds (PFN_WDF*), their table indices in
 * KMDF 1.31's _WDFFUNCENUM, and the globals. bindgen turns it into Rust exactly as it turns the
 * WDK's headers into `wdk-sys`'s bindings. The file name contains "wdf" on purpose: `wdk-sys`
 * sorts items into `wdf.rs` by that.
 */
#pragma once

#define WDF_DRIVER_GLOBALS_NAME_LEN (32)

/* Handles: DECLARE_HANDLE(WDFxxx) is `typedef struct WDFxxx__ *WDFxxx`. */
typedef HANDLE WDFOBJECT, *PWDFOBJECT;
typedef struct WDFDRIVER__ { int unused; } *WDFDRIVER;
typedef struct WDFDEVICE__ { int unused; } *WDFDEVICE;
typedef struct WDFKEY__ { int unused; } *WDFKEY;
typedef struct WDFSPINLOCK__ { int unused; } *WDFSPINLOCK;
typedef struct WDFTIMER__ { int unused; } *WDFTIMER;
typedef struct WDFDEVICE_INIT *PWDFDEVICE_INIT;

typedef enum _WDF_EXECUTION_LEVEL {
    WdfExecutionLevelInvalid = 0x00,
    WdfExecutionLevelInheritFromParent,
    WdfExecutionLevelPassive,
    WdfExecutionLevelDispatch,
} WDF_EXECUTION_LEVEL;

typedef enum _WDF_SYNCHRONIZATION_SCOPE {
    WdfSynchronizationScopeInvalid = 0x00,
    WdfSynchronizationScopeInheritFromParent,
    WdfSynchronizationScopeDevice,
    WdfSynchronizationScopeQueue,
    WdfSynchronizationScopeNone,
} WDF_SYNCHRONIZATION_SCOPE;

typedef VOID NTAPI EVT_WDF_OBJECT_CONTEXT_CLEANUP(WDFOBJECT Object);
typedef EVT_WDF_OBJECT_CONTEXT_CLEANUP *PFN_WDF_OBJECT_CONTEXT_CLEANUP;
typedef VOID NTAPI EVT_WDF_OBJECT_CONTEXT_DESTROY(WDFOBJECT Object);
typedef EVT_WDF_OBJECT_CONTEXT_DESTROY *PFN_WDF_OBJECT_CONTEXT_DESTROY;

typedef struct _WDF_OBJECT_CONTEXT_TYPE_INFO *PWDF_OBJECT_CONTEXT_TYPE_INFO;
typedef const struct _WDF_OBJECT_CONTEXT_TYPE_INFO *PCWDF_OBJECT_CONTEXT_TYPE_INFO;
typedef PCWDF_OBJECT_CONTEXT_TYPE_INFO (__cdecl *PFN_GET_UNIQUE_CONTEXT_TYPE)(VOID);
typedef struct _WDF_OBJECT_CONTEXT_TYPE_INFO {
    ULONG Size;
    LPCSTR ContextName;
    size_t ContextSize;
    PCWDF_OBJECT_CONTEXT_TYPE_INFO UniqueType;
    PFN_GET_UNIQUE_CONTEXT_TYPE EvtDriverGetUniqueContextType;
} WDF_OBJECT_CONTEXT_TYPE_INFO;

typedef struct _WDF_OBJECT_ATTRIBUTES {
    ULONG Size;
    PFN_WDF_OBJECT_CONTEXT_CLEANUP EvtCleanupCallback;
    PFN_WDF_OBJECT_CONTEXT_DESTROY EvtDestroyCallback;
    WDF_EXECUTION_LEVEL ExecutionLevel;
    WDF_SYNCHRONIZATION_SCOPE SynchronizationScope;
    WDFOBJECT ParentObject;
    size_t ContextSizeOverride;
    PCWDF_OBJECT_CONTEXT_TYPE_INFO ContextTypeInfo;
} WDF_OBJECT_ATTRIBUTES, *PWDF_OBJECT_ATTRIBUTES;

typedef NTSTATUS NTAPI EVT_WDF_DRIVER_DEVICE_ADD(WDFDRIVER Driver, PWDFDEVICE_INIT DeviceInit);
typedef EVT_WDF_DRIVER_DEVICE_ADD *PFN_WDF_DRIVER_DEVICE_ADD;
typedef VOID NTAPI EVT_WDF_DRIVER_UNLOAD(WDFDRIVER Driver);
typedef EVT_WDF_DRIVER_UNLOAD *PFN_WDF_DRIVER_UNLOAD;

typedef struct _WDF_DRIVER_CONFIG {
    ULONG Size;
    PFN_WDF_DRIVER_DEVICE_ADD EvtDriverDeviceAdd;
    PFN_WDF_DRIVER_UNLOAD EvtDriverUnload;
    ULONG DriverInitFlags;
    ULONG DriverPoolTag;
} WDF_DRIVER_CONFIG, *PWDF_DRIVER_CONFIG;

typedef struct _WDF_DRIVER_GLOBALS {
    WDFDRIVER Driver;
    ULONG DriverFlags;
    ULONG DriverTag;
    CHAR DriverName[WDF_DRIVER_GLOBALS_NAME_LEN];
    BOOLEAN DisplaceDriverUnload;
} WDF_DRIVER_GLOBALS, *PWDF_DRIVER_GLOBALS;

typedef enum _WDF_TRI_STATE {
    WdfFalse = FALSE,
    WdfTrue = TRUE,
    WdfUseDefault = 2,
} WDF_TRI_STATE, *PWDF_TRI_STATE;

typedef struct _WDF_DEVICE_STATE {
    ULONG Size;
    WDF_TRI_STATE Disabled;
    WDF_TRI_STATE DontDisplayInUI;
    WDF_TRI_STATE Failed;
    WDF_TRI_STATE NotDisableable;
    WDF_TRI_STATE Removed;
    WDF_TRI_STATE ResourcesChanged;
} WDF_DEVICE_STATE, *PWDF_DEVICE_STATE;

typedef VOID NTAPI EVT_WDF_TIMER(WDFTIMER Timer);
typedef EVT_WDF_TIMER *PFN_WDF_TIMER;

typedef struct _WDF_TIMER_CONFIG {
    ULONG Size;
    PFN_WDF_TIMER EvtTimerFunc;
    ULONG Period;
    BOOLEAN AutomaticSerialization;
    ULONG TolerableDelay;
    __declspec(align(8)) BOOLEAN UseHighResolutionTimer;
} WDF_TIMER_CONFIG, *PWDF_TIMER_CONFIG;

/* The function table and the globals the KMDF stub (WdfDriverEntry.lib) provides. */
typedef VOID (*WDFFUNC)(VOID);
extern const WDFFUNC *WdfFunctions_01031;
extern PWDF_DRIVER_GLOBALS WdfDriverGlobals;
extern ULONG WdfFunctionCount;

/* KMDF 1.31's function-table indices of the functions used here. */
typedef enum _WDFFUNCENUM {
    WdfDeviceSetDeviceStateTableIndex = 29,
    WdfDeviceCreateTableIndex = 75,
    WdfDeviceSetStaticStopRemoveTableIndex = 76,
    WdfDriverCreateTableIndex = 116,
    WdfDriverOpenParametersRegistryKeyTableIndex = 119,
    WdfRegistryOpenKeyTableIndex = 229,
    WdfRegistryCreateKeyTableIndex = 230,
    WdfRegistryCloseTableIndex = 231,
    WdfRegistryQueryValueTableIndex = 235,
    WdfRegistryAssignValueTableIndex = 241,
    WdfRegistryAssignULongTableIndex = 246,
    WdfSpinLockCreateTableIndex = 315,
    WdfSpinLockAcquireTableIndex = 316,
    WdfSpinLockReleaseTableIndex = 317,
    WdfTimerCreateTableIndex = 318,
    WdfTimerStartTableIndex = 319,
    WdfTimerStopTableIndex = 320,
    WdfDriverOpenPersistentStateRegistryKeyTableIndex = 451,
    WdfFunctionTableNumEntries = 458,
} WDFFUNCENUM;

/* The table entries' types (the first parameter of each is the driver's globals). */
typedef NTSTATUS (NTAPI *PFN_WDFDRIVERCREATE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    PDRIVER_OBJECT DriverObject, PCUNICODE_STRING RegistryPath,
    PWDF_OBJECT_ATTRIBUTES DriverAttributes, PWDF_DRIVER_CONFIG DriverConfig, WDFDRIVER *Driver);
typedef NTSTATUS (NTAPI *PFN_WDFDEVICECREATE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    PWDFDEVICE_INIT *DeviceInit, PWDF_OBJECT_ATTRIBUTES DeviceAttributes, WDFDEVICE *Device);
typedef VOID (NTAPI *PFN_WDFDEVICESETSTATICSTOPREMOVE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFDEVICE Device, BOOLEAN Stoppable);
typedef VOID (NTAPI *PFN_WDFDEVICESETDEVICESTATE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFDEVICE Device, PWDF_DEVICE_STATE DeviceState);
typedef NTSTATUS (NTAPI *PFN_WDFDRIVEROPENPARAMETERSREGISTRYKEY)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFDRIVER Driver, ACCESS_MASK DesiredAccess, PWDF_OBJECT_ATTRIBUTES KeyAttributes, WDFKEY *Key);
typedef NTSTATUS (NTAPI *PFN_WDFDRIVEROPENPERSISTENTSTATEREGISTRYKEY)(
    PWDF_DRIVER_GLOBALS DriverGlobals, WDFDRIVER Driver, ACCESS_MASK DesiredAccess,
    PWDF_OBJECT_ATTRIBUTES KeyAttributes, WDFKEY *Key);
typedef NTSTATUS (NTAPI *PFN_WDFREGISTRYOPENKEY)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFKEY ParentKey, PCUNICODE_STRING KeyName, ACCESS_MASK DesiredAccess,
    PWDF_OBJECT_ATTRIBUTES KeyAttributes, WDFKEY *Key);
typedef NTSTATUS (NTAPI *PFN_WDFREGISTRYCREATEKEY)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFKEY ParentKey, PCUNICODE_STRING KeyName, ACCESS_MASK DesiredAccess, ULONG CreateOptions,
    PULONG CreateDisposition, PWDF_OBJECT_ATTRIBUTES KeyAttributes, WDFKEY *Key);
typedef VOID (NTAPI *PFN_WDFREGISTRYCLOSE)(PWDF_DRIVER_GLOBALS DriverGlobals, WDFKEY Key);
typedef NTSTATUS (NTAPI *PFN_WDFREGISTRYQUERYVALUE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFKEY Key, PCUNICODE_STRING ValueName, ULONG ValueLength, PVOID Value,
    PULONG ValueLengthQueried, PULONG ValueType);
typedef NTSTATUS (NTAPI *PFN_WDFREGISTRYASSIGNVALUE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFKEY Key, PCUNICODE_STRING ValueName, ULONG ValueType, ULONG ValueLength, PVOID Value);
typedef NTSTATUS (NTAPI *PFN_WDFREGISTRYASSIGNULONG)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFKEY Key, PCUNICODE_STRING ValueName, ULONG Value);
typedef NTSTATUS (NTAPI *PFN_WDFSPINLOCKCREATE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    PWDF_OBJECT_ATTRIBUTES SpinLockAttributes, WDFSPINLOCK *SpinLock);
typedef VOID (NTAPI *PFN_WDFSPINLOCKACQUIRE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFSPINLOCK SpinLock);
typedef VOID (NTAPI *PFN_WDFSPINLOCKRELEASE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    WDFSPINLOCK SpinLock);
typedef NTSTATUS (NTAPI *PFN_WDFTIMERCREATE)(PWDF_DRIVER_GLOBALS DriverGlobals,
    PWDF_TIMER_CONFIG Config, PWDF_OBJECT_ATTRIBUTES Attributes, WDFTIMER *Timer);
typedef BOOLEAN (NTAPI *PFN_WDFTIMERSTART)(PWDF_DRIVER_GLOBALS DriverGlobals, WDFTIMER Timer,
    LONGLONG DueTime);
typedef BOOLEAN (NTAPI *PFN_WDFTIMERSTOP)(PWDF_DRIVER_GLOBALS DriverGlobals, WDFTIMER Timer,
    BOOLEAN Wait);
