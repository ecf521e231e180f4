<#
.SYNOPSIS
    Removes ppm-pep in two stages around a reboot: -Stage Devices (device nodes, service,
    Driver Verifier), reboot, then -Stage Package (the driver-store package).

.DESCRIPTION
    Why two stages: the device node refuses stop and remove (WdfDeviceSetStaticStopRemove
    FALSE: a registered PEP can never be unloaded), so pnputil /remove-device only schedules
    its removal for the next boot; and the package runs from the driver store (ServiceBinary
    %13%), which Windows refuses to force-delete while a device is installed with it ("Force
    removals aren't allowed for driver packages that have any files that are 'run from Driver
    Store'", run-from-driver-store.md, "Removing driver package"). So the package can go only
    after the reboot that removes the device.

    -Stage Devices
      1. removes every device node (present or not) whose hardware ids include -HardwareId
         (pnputil /remove-device: done now, or at the next boot);
      2. disables the ppm_pep service (Start = 4, so the boot loader does not load the image
         at the next boot) and deletes it (sc.exe delete: the key goes once the image is
         unloaded, i.e. at that boot);
      3. resets Driver Verifier (verifier /reset) if its settings name ppm_pep.sys, unless
         -KeepVerifier;
      4. lists the packages -Stage Package will delete, and asks for the reboot.
    -Stage Package (after that reboot)
      refuses while a device node with -HardwareId or the ppm_pep service remains (run
      -Stage Devices and reboot first); otherwise deletes every driver-store package whose
      original INF is ppm_pep.inf (pnputil /delete-driver oemNN.inf /uninstall, no /force).
      No reboot is needed.

    Each stage does only what is left to do, so rerunning it is safe: what is already gone is
    reported and skipped. -WhatIf runs the same checks and reports each change without making
    it (and, for -Stage Package, the same refusal a real run would give).

.PARAMETER Stage
    Devices (first) or Package (after the reboot that follows Devices).

.PARAMETER HardwareId
    The hardware id of the device nodes. Default Root\PpmPep.

.PARAMETER KeepVerifier
    -Stage Devices: leave Driver Verifier's settings alone.

.PARAMETER Reboot
    -Stage Devices: restart without asking when done (not with -NoReboot).

.PARAMETER NoReboot
    -Stage Devices: do not restart and do not ask (not with -Reboot).

.PARAMETER WhatIf
    Report what would be removed without removing it.

.EXAMPLE
    .\Uninstall-PpmPep.ps1 -Stage Devices -Reboot
    # after the reboot:
    .\Uninstall-PpmPep.ps1 -Stage Package
#>
#Requires -Version 5.1
#Requires -RunAsAdministrator
[CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Medium', DefaultParameterSetName = 'Ask')]
param(
    [Parameter(Mandatory)] [ValidateSet('Devices', 'Package')] [string] $Stage,
    [string] $HardwareId = 'Root\PpmPep',
    [switch] $KeepVerifier,
    [Parameter(Mandatory, ParameterSetName = 'Reboot')] [switch] $Reboot,
    [Parameter(Mandatory, ParameterSetName = 'NoReboot')] [switch] $NoReboot
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
. (Join-Path $PSScriptRoot 'PpmPep.Common.ps1')

$devices = @(Get-PpmPepDevice -HardwareId $HardwareId)
$serviceExists = Test-Path -LiteralPath $PpmPepServiceKey
$packages = @(Get-PpmPepDriverPackage)

if ($Stage -eq 'Devices') {
    if ($devices.Count -eq 0) {
        Write-Host "No device node with hardware id ${HardwareId}: nothing to remove"
    }
    foreach ($device in $devices) {
        if (-not $PSCmdlet.ShouldProcess($device.InstanceId, 'pnputil /remove-device')) { continue }
        Write-Host "Removing device node $($device.InstanceId)"
        # 0: removed; 3010: the device refused removal, which happens at the next boot.
        Invoke-PpmPepNative -FilePath pnputil.exe -ArgumentList @('/remove-device', $device.InstanceId) -AllowedExitCodes @(0, 3010) | Out-Null
    }

    if (-not $serviceExists) {
        Write-Host "No $PpmPepService service: nothing to delete"
    } elseif ($PSCmdlet.ShouldProcess($PpmPepService, 'sc.exe config start= disabled; sc.exe delete')) {
        Write-Host "Disabling and deleting service $PpmPepService"
        # 1072: already marked for deletion (ERROR_SERVICE_MARKED_FOR_DELETE), a rerun.
        Invoke-PpmPepNative -FilePath sc.exe -ArgumentList @('config', $PpmPepService, 'start=', 'disabled') -AllowedExitCodes @(0, 1072) | Out-Null
        Invoke-PpmPepNative -FilePath sc.exe -ArgumentList @('delete', $PpmPepService) -AllowedExitCodes @(0, 1072) | Out-Null
    }

    if ($KeepVerifier) {
        Write-Host 'Driver Verifier left as it is (-KeepVerifier)'
    } else {
        $ErrorActionPreference = 'Continue'
        $verifierSettings = (& verifier.exe /querysettings 2>&1 | Out-String)
        $ErrorActionPreference = 'Stop'
        if ($verifierSettings -notmatch [regex]::Escape($PpmPepDriverFile)) {
            Write-Host "Driver Verifier's settings do not name $($PpmPepDriverFile): nothing to reset"
        } elseif ($PSCmdlet.ShouldProcess('Driver Verifier', 'verifier /reset')) {
            Write-Host 'Resetting Driver Verifier'
            # 0: nothing to change; 2: settings changed, reboot required.
            Invoke-PpmPepNative -FilePath verifier.exe -ArgumentList @('/reset') -AllowedExitCodes @(0, 2) | Out-Null
        }
    }

    if ($packages.Count -gt 0) {
        $names = ($packages | ForEach-Object { "$($_.Driver) ($($_.OriginalFileName))" }) -join ', '
        Write-Host "After the reboot, .\Uninstall-PpmPep.ps1 -Stage Package deletes: $names"
    }
    Request-PpmPepReboot -Reason 'the device nodes go, and the registered PEP unloads, only at the next boot; then run -Stage Package.' -Reboot:$Reboot -NoReboot:$NoReboot
    return
}

# -Stage Package: only once no device is installed with the package (see .DESCRIPTION).
$remaining = @()
if ($devices.Count -gt 0) { $remaining += "device node(s) $(($devices | ForEach-Object { $_.InstanceId }) -join ', ')" }
if ($serviceExists) { $remaining += "the $PpmPepService service" }
if ($remaining.Count -gt 0) {
    throw "$($remaining -join ' and ') still present: run .\Uninstall-PpmPep.ps1 -Stage Devices, reboot, then -Stage Package."
}
if ($packages.Count -eq 0) {
    Write-Host "No driver package of $($PpmPepInfName): nothing to delete"
}
foreach ($package in $packages) {
    if (-not $PSCmdlet.ShouldProcess("$($package.Driver) ($($package.OriginalFileName))", 'pnputil /delete-driver /uninstall')) { continue }
    Write-Host "Deleting driver package $($package.Driver) ($($package.OriginalFileName))"
    Invoke-PpmPepNative -FilePath pnputil.exe -ArgumentList @('/delete-driver', $package.Driver, '/uninstall') -AllowedExitCodes @(0, 3010) | Out-Null
}
Write-Host 'ppm-pep is removed. If you suspended BitLocker: Resume-BitLocker -MountPoint C:'
