<#
.SYNOPSIS
    Installs the ppm-pep driver package on a test VM (or a real platform) and asks for the
    reboot a PEP needs.

.DESCRIPTION
    1. Unless -SkipDeviceNode: creates a ROOT device node with hardware id Root\PpmPep (if none
       exists yet), with devgen.exe when it is available (-DevgenPath or PATH), else through
       SetupAPI (what devcon install does). The node persists across reboots. On a platform
       whose firmware declares the PEP's ACPI device, use -SkipDeviceNode.
    2. pnputil /add-driver <package>\ppm_pep.inf /install: stages the package in the driver
       store and installs it on the matching device.
    3. Before step 2 it creates the volatile key Parameters\InstallPending: pnputil starts the
       service at once, and that DriverEntry loads inert (Boot\RegistrationSkipped =
       install-pending) instead of registering with PoFx mid-session; the key is gone at the
       next boot. Then it asks for a reboot: a PEP registers with the power framework once, from
       DriverEntry, when the boot loader starts it. Installing or updating a PEP takes effect only after a reboot;
       an updated package replaces the old one on the next boot (the old image is never unloaded).

    The VM must be prepared first (Initialize-PpmPepTestVm.ps1: test signing, certificate).

    Take a VM checkpoint first (on the Hyper-V host: Checkpoint-VM -Name <vm> -SnapshotName
    before-ppm-pep). A boot-start PEP that fails at boot can leave the VM unbootable; the
    checkpoint is the quickest way back. Without one, see docs\windows.md, "Recovering a test VM
    that does not boot" (Parameters\SkipRegistration = 1, or Start = 4, set offline from WinRE).

.PARAMETER PackagePath
    The driver package folder (target\<triple>\<profile>\ppm_pep_package) copied to the VM.

.PARAMETER HardwareId
    The hardware id of the ROOT device node to create. Default Root\PpmPep (listed in the INF).

.PARAMETER SkipDeviceNode
    Do not create a ROOT device node (the platform has the ACPI device the INF matches).

.PARAMETER DevgenPath
    devgen.exe from the WDK (Tools\<version>\<arch>\devgen.exe), if copied to the VM.

.PARAMETER Reboot
    Restart without asking when done (not with -NoReboot).

.PARAMETER NoReboot
    Do not restart and do not ask (not with -Reboot). The runbook installs with -NoReboot, turns
    Driver Verifier on, then reboots once.

.PARAMETER WhatIf
    Show the device node, registry key, pnputil call and restart without making them.

.EXAMPLE
    .\Install-PpmPep.ps1 -PackagePath C:\ppm_pep_package -NoReboot
#>
#Requires -Version 5.1
#Requires -RunAsAdministrator
[CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Medium', DefaultParameterSetName = 'Ask')]
param(
    [Parameter(Mandatory)] [ValidateScript({ Test-Path -LiteralPath $_ -PathType Container })]
    [string] $PackagePath,
    [string] $HardwareId = 'Root\PpmPep',
    [switch] $SkipDeviceNode,
    [string] $DevgenPath,
    [Parameter(Mandatory, ParameterSetName = 'Reboot')] [switch] $Reboot,
    [Parameter(Mandatory, ParameterSetName = 'NoReboot')] [switch] $NoReboot
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
. (Join-Path $PSScriptRoot 'PpmPep.Common.ps1')

$package = (Resolve-Path -LiteralPath $PackagePath).ProviderPath
$inf = Join-Path $package $PpmPepInfName
foreach ($file in $inf, (Join-Path $package $PpmPepDriverFile), (Join-Path $package 'ppm_pep.cat')) {
    if (-not (Test-Path -LiteralPath $file -PathType Leaf)) {
        throw "$file is missing: pass the ppm_pep_package folder that cargo make produced."
    }
}

function New-RootDeviceNode {
    # Creates ROOT\System\NNNN with hardware id $Id (devgen, else SetupAPI).
    [CmdletBinding(SupportsShouldProcess)]
    param([string] $Id)
    if (-not $PSCmdlet.ShouldProcess("ROOT bus, hardware id $Id", 'create a device node')) {
        return
    }
    $devgen = $null
    if ($DevgenPath) {
        $devgen = (Resolve-Path -LiteralPath $DevgenPath).ProviderPath
    } elseif (Get-Command devgen.exe -ErrorAction SilentlyContinue) {
        $devgen = (Get-Command devgen.exe).Source
    }
    if ($devgen) {
        Write-Host "Creating a ROOT device node with devgen ($Id)"
        Invoke-PpmPepNative -FilePath $devgen -ArgumentList @('/add', '/bus', 'ROOT', '/hardwareid', $Id) | Out-Null
        return
    }
    Write-Host "Creating a ROOT device node through SetupAPI ($Id)"
    if (-not ('PpmPepSetupApi' -as [type])) {
        Add-Type -TypeDefinition @'
using System;
using System.ComponentModel;
using System.Runtime.InteropServices;
using System.Text;

public static class PpmPepSetupApi
{
    [StructLayout(LayoutKind.Sequential)]
    private struct SP_DEVINFO_DATA
    {
        public int cbSize;
        public Guid ClassGuid;
        public int DevInst;
        public IntPtr Reserved;
    }

    [DllImport("setupapi.dll", SetLastError = true)]
    private static extern IntPtr SetupDiCreateDeviceInfoList(ref Guid classGuid, IntPtr hwndParent);

    [DllImport("setupapi.dll", SetLastError = true, CharSet = CharSet.Unicode, EntryPoint = "SetupDiCreateDeviceInfoW")]
    private static extern bool SetupDiCreateDeviceInfo(IntPtr deviceInfoSet, string deviceName, ref Guid classGuid,
        string deviceDescription, IntPtr hwndParent, int creationFlags, ref SP_DEVINFO_DATA deviceInfoData);

    [DllImport("setupapi.dll", SetLastError = true, EntryPoint = "SetupDiSetDeviceRegistryPropertyW")]
    private static extern bool SetupDiSetDeviceRegistryProperty(IntPtr deviceInfoSet, ref SP_DEVINFO_DATA deviceInfoData,
        int property, byte[] propertyBuffer, int propertyBufferSize);

    [DllImport("setupapi.dll", SetLastError = true)]
    private static extern bool SetupDiCallClassInstaller(int installFunction, IntPtr deviceInfoSet,
        ref SP_DEVINFO_DATA deviceInfoData);

    [DllImport("setupapi.dll", SetLastError = true)]
    private static extern bool SetupDiDestroyDeviceInfoList(IntPtr deviceInfoSet);

    private const int DICD_GENERATE_ID = 0x1;
    private const int SPDRP_HARDWAREID = 0x1;
    private const int DIF_REGISTERDEVICE = 0x19;

    // Creates ROOT\<className>\NNNN with the given hardware id, as devcon install does.
    public static void CreateRootDevice(string className, Guid classGuid, string hardwareId, string description)
    {
        IntPtr set = SetupDiCreateDeviceInfoList(ref classGuid, IntPtr.Zero);
        if (set == new IntPtr(-1))
        {
            throw new Win32Exception(Marshal.GetLastWin32Error(), "SetupDiCreateDeviceInfoList");
        }
        try
        {
            SP_DEVINFO_DATA data = new SP_DEVINFO_DATA();
            data.cbSize = Marshal.SizeOf(typeof(SP_DEVINFO_DATA));
            if (!SetupDiCreateDeviceInfo(set, className, ref classGuid, description, IntPtr.Zero, DICD_GENERATE_ID, ref data))
            {
                throw new Win32Exception(Marshal.GetLastWin32Error(), "SetupDiCreateDeviceInfo");
            }
            byte[] ids = Encoding.Unicode.GetBytes(hardwareId + "\0\0");
            if (!SetupDiSetDeviceRegistryProperty(set, ref data, SPDRP_HARDWAREID, ids, ids.Length))
            {
                throw new Win32Exception(Marshal.GetLastWin32Error(), "SetupDiSetDeviceRegistryProperty");
            }
            if (!SetupDiCallClassInstaller(DIF_REGISTERDEVICE, set, ref data))
            {
                throw new Win32Exception(Marshal.GetLastWin32Error(), "SetupDiCallClassInstaller(DIF_REGISTERDEVICE)");
            }
        }
        finally
        {
            SetupDiDestroyDeviceInfoList(set);
        }
    }
}
'@
    }
    # Class System, {4D36E97D-E325-11CE-BFC1-08002BE10318}, as in the INF.
    [PpmPepSetupApi]::CreateRootDevice('System', [Guid]'4D36E97D-E325-11CE-BFC1-08002BE10318', $Id,
        'ppm-pep Processor Platform Extension')
}

Write-Warning ('ppm-pep is a boot-start driver: take a VM checkpoint before installing ' +
    '(Hyper-V host: Checkpoint-VM -Name <vm> -SnapshotName before-ppm-pep). If the VM then ' +
    'fails to boot, restore it, or follow docs\windows.md, "Recovering a test VM that does not boot".')

if (-not $SkipDeviceNode) {
    $existing = @(Get-PpmPepDevice -HardwareId $HardwareId)
    if ($existing.Count -gt 0) {
        Write-Host "A device node with hardware id $HardwareId exists: $($existing[0].InstanceId)"
    } else {
        New-RootDeviceNode -Id $HardwareId
    }
}

# pnputil starts the service at once, mid-session, and PoFxRegisterPluginEx is documented for
# boot only: a volatile Parameters\InstallPending key (gone at the next boot) makes this
# session's DriverEntry load inert; the PEP registers when the boot loader starts it.
$parametersPath = "SYSTEM\CurrentControlSet\Services\$PpmPepService\Parameters"
if (-not $PSCmdlet.ShouldProcess("HKLM\$parametersPath", 'create the volatile InstallPending key, then pnputil /add-driver /install')) {
    return
}
$parameters = [Microsoft.Win32.Registry]::LocalMachine.CreateSubKey($parametersPath)
try {
    $pending = $parameters.CreateSubKey('InstallPending',
        [Microsoft.Win32.RegistryKeyPermissionCheck]::ReadWriteSubTree,
        [Microsoft.Win32.RegistryOptions]::Volatile)
    $pending.Dispose()
} finally {
    $parameters.Dispose()
}
Write-Host "Marked HKLM\$parametersPath\InstallPending (volatile): the driver loads now without registering with PoFx; the PEP registers at the next boot."

Write-Host "Installing $inf (pnputil /add-driver /install)"
# 0: done; 3010: done, reboot required; 259: staged, no device needed an update.
$code = Invoke-PpmPepNative -FilePath pnputil.exe -ArgumentList @('/add-driver', $inf, '/install') -AllowedExitCodes @(0, 3010, 259)
if ($code -eq 259) {
    Write-Warning "The package is staged but no device took it (is a device with hardware id $HardwareId present?)."
}

$packages = @(Get-PpmPepDriverPackage)
Write-Host "Driver store: $((@($packages | ForEach-Object { "$($_.Driver) $($_.Version)" })) -join ', ')"
Request-PpmPepReboot -Reason 'a PEP registers with PoFx only when the boot loader starts it.' -Reboot:$Reboot -NoReboot:$NoReboot
