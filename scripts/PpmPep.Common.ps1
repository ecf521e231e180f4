<#
.SYNOPSIS
    Shared helpers of the ppm-pep test-VM scripts (dot-sourced; not run on its own).

.DESCRIPTION
    Names shared by every script (service, driver file, hardware id, registry keys) and small
    helpers: running a native command and checking its exit code, finding the ppm-pep device
    nodes and driver packages, and asking for a reboot.
#>

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'

# The service and driver names the INF installs (inf\ppm_pep.inx).
$script:PpmPepService = 'ppm_pep'
# The service's display name (the INF's PpmPep.ServiceDesc): SCM event 7000 names a service by
# its display name, 7026 by its service name.
$script:PpmPepServiceDisplayName = 'ppm-pep Processor Platform Extension'
$script:PpmPepDriverFile = 'ppm_pep.sys'
$script:PpmPepInfName = 'ppm_pep.inf'
$script:PpmPepTestHardwareId = 'Root\PpmPep'
$script:PpmPepServiceKey = "HKLM:\SYSTEM\CurrentControlSet\Services\$script:PpmPepService"
$script:PpmPepParametersKey = "$script:PpmPepServiceKey\Parameters"
# The driver writes its volatile state key `Boot` under its persistent-state key
# (WdfDriverOpenPersistentStateRegistryKey), whose place in the registry Microsoft does not
# document; Get-PpmPepStateKey finds it under the service key.

function Get-PpmPepStateKey {
    <#
    .SYNOPSIS
        The registry path of the driver's volatile state key (a subkey `Boot` holding
        `Registered`) under the service key, or $null when DriverEntry wrote none this boot.
    #>
    if (-not (Test-Path -LiteralPath $script:PpmPepServiceKey)) { return $null }
    $candidates = @(Get-ChildItem -LiteralPath $script:PpmPepServiceKey -Recurse -ErrorAction SilentlyContinue |
            Where-Object { $_.PSChildName -eq 'Boot' -and $null -ne $_.GetValue('Registered') })
    if ($candidates.Count -eq 0) { return $null }
    return $candidates[0].PSPath
}

function Invoke-PpmPepNative {
    <#
    .SYNOPSIS
        Runs a native command, echoes its output, and throws unless its exit code is allowed.
    .OUTPUTS
        The exit code (one of AllowedExitCodes).
    #>
    [CmdletBinding()]
    param(
        [Parameter(Mandatory)] [string] $FilePath,
        [string[]] $ArgumentList = @(),
        [int[]] $AllowedExitCodes = @(0),
        [switch] $Quiet
    )
    Write-Verbose "> $FilePath $($ArgumentList -join ' ')"
    # Windows PowerShell 5.1 turns redirected stderr lines into errors, which 'Stop' would make
    # terminating: judge the tool by its exit code instead.
    $ErrorActionPreference = 'Continue'
    $output = & $FilePath @ArgumentList 2>&1
    $code = $LASTEXITCODE
    if (-not $Quiet) {
        $output | ForEach-Object { Write-Host "  $_" }
    }
    if ($AllowedExitCodes -notcontains $code) {
        throw "'$FilePath $($ArgumentList -join ' ')' failed with exit code $code."
    }
    return $code
}

function Get-PpmPepDevice {
    <#
    .SYNOPSIS
        The device nodes (present or not) whose hardware ids include HardwareId.
    #>
    [CmdletBinding()]
    param([string] $HardwareId = $script:PpmPepTestHardwareId)
    @(Get-PnpDevice -ErrorAction SilentlyContinue |
        Where-Object { $null -ne $_.HardwareID -and ($_.HardwareID -contains $HardwareId) })
}

function Get-PpmPepDriverPackage {
    <#
    .SYNOPSIS
        The driver-store packages (oemNN.inf) whose original INF is ppm_pep.inf.
    #>
    [CmdletBinding()]
    param()
    @(Get-WindowsDriver -Online -ErrorAction Stop |
        Where-Object { [System.IO.Path]::GetFileName($_.OriginalFileName) -ieq $script:PpmPepInfName })
}

function Request-PpmPepReboot {
    <#
    .SYNOPSIS
        Restarts now (-Reboot), never (-NoReboot), or asks (interactive sessions only). The
        restart honours -WhatIf and -Confirm (ShouldProcess).
    #>
    [CmdletBinding(SupportsShouldProcess)]
    param([string] $Reason, [switch] $Reboot, [switch] $NoReboot)
    Write-Warning "A reboot is required: $Reason"
    if ($NoReboot) { return }
    # -WhatIf reports the restart here and neither asks nor restarts.
    if (-not $PSCmdlet.ShouldProcess($env:COMPUTERNAME, 'Restart-Computer -Force')) { return }
    if (-not $Reboot) {
        if (-not [Environment]::UserInteractive) { return }
        $answer = Read-Host 'Reboot now? [y/N]'
        if ($answer -notmatch '^(y|yes)$') { return }
    }
    Restart-Computer -Force
}
