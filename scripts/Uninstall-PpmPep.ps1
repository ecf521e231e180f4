<#
.SYNOPSIS
    Removes ppm-pep: its device nodes, its driver packages, optionally its service and Driver
    Verifier settings, then asks for a reboot.

.DESCRIPTION
    A registered PEP can never be unloaded: the running image stays until the next boot.
    This script
      1. removes every device node whose hardware ids include -HardwareId
         (pnputil /remove-device), unless -KeepDeviceNodes;
      2. deletes every driver-store package whose original INF is ppm_pep.inf
         (pnputil /delete-driver oemNN.inf /uninstall /force);
      3. with -RemoveService, deletes the ppm_pep service (sc.exe delete; effective at reboot);
      4. with -ResetVerifier, turns Driver Verifier off (verifier /reset);
      5. asks for the reboot that unloads the image.

.PARAMETER HardwareId
    The hardware id of the device nodes to remove. Default Root\PpmPep.

.PARAMETER KeepDeviceNodes
    Leave the device nodes (for example to reinstall a new package on them).

.PARAMETER RemoveService
    Also delete the service entry (HKLM\SYSTEM\CurrentControlSet\Services\ppm_pep).

.PARAMETER ResetVerifier
    Also run `verifier /reset`.

.PARAMETER Reboot
    Restart without asking when done (not with -NoReboot).

.PARAMETER NoReboot
    Do not restart and do not ask (not with -Reboot).

.PARAMETER WhatIf
    List what would be removed without removing it.

.EXAMPLE
    .\Uninstall-PpmPep.ps1 -RemoveService -ResetVerifier -Reboot
#>
#Requires -Version 5.1
#Requires -RunAsAdministrator
[CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Medium', DefaultParameterSetName = 'Ask')]
param(
    [string] $HardwareId = 'Root\PpmPep',
    [switch] $KeepDeviceNodes,
    [switch] $RemoveService,
    [switch] $ResetVerifier,
    [Parameter(Mandatory, ParameterSetName = 'Reboot')] [switch] $Reboot,
    [Parameter(Mandatory, ParameterSetName = 'NoReboot')] [switch] $NoReboot
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
. (Join-Path $PSScriptRoot 'PpmPep.Common.ps1')

if (-not $KeepDeviceNodes) {
    foreach ($device in @(Get-PpmPepDevice -HardwareId $HardwareId)) {
        if (-not $PSCmdlet.ShouldProcess($device.InstanceId, 'pnputil /remove-device')) { continue }
        Write-Host "Removing device node $($device.InstanceId)"
        # 0: removed; 3010: removed, reboot required.
        Invoke-PpmPepNative -FilePath pnputil.exe -ArgumentList @('/remove-device', $device.InstanceId) -AllowedExitCodes @(0, 3010) | Out-Null
    }
}

foreach ($package in @(Get-PpmPepDriverPackage)) {
    if (-not $PSCmdlet.ShouldProcess("$($package.Driver) ($($package.OriginalFileName))", 'pnputil /delete-driver /uninstall /force')) { continue }
    Write-Host "Deleting driver package $($package.Driver) ($($package.OriginalFileName))"
    Invoke-PpmPepNative -FilePath pnputil.exe -ArgumentList @('/delete-driver', $package.Driver, '/uninstall', '/force') -AllowedExitCodes @(0, 3010) | Out-Null
}

if ($RemoveService -and (Test-Path -LiteralPath $PpmPepServiceKey) -and $PSCmdlet.ShouldProcess($PpmPepService, 'sc.exe delete')) {
    Write-Host "Deleting service $PpmPepService"
    # 0: deleted; 1072: already marked for deletion (ERROR_SERVICE_MARKED_FOR_DELETE).
    Invoke-PpmPepNative -FilePath sc.exe -ArgumentList @('delete', $PpmPepService) -AllowedExitCodes @(0, 1072) | Out-Null
}

if ($ResetVerifier -and $PSCmdlet.ShouldProcess('Driver Verifier', 'verifier /reset')) {
    Write-Host 'Resetting Driver Verifier'
    # 0: nothing to change; 2: settings changed, reboot required.
    Invoke-PpmPepNative -FilePath verifier.exe -ArgumentList @('/reset') -AllowedExitCodes @(0, 2) | Out-Null
}

Request-PpmPepReboot -Reason 'the registered PEP stays loaded until the next boot.' -Reboot:$Reboot -NoReboot:$NoReboot
