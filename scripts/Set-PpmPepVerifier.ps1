<#
.SYNOPSIS
    Enables, queries or resets Driver Verifier for ppm_pep.sys.

.DESCRIPTION
    -Action Enable (default):
        verifier /rc <rule classes> /driver ppm_pep.sys
        verifier /bootmode resetonbootfail
      The default rule classes are the standard set (1 special pool, 2 force IRQL checking,
      4 pool tracking, 5 I/O verification, 6 deadlock detection, 8 DMA checking, 9 security
      checks, 12 miscellaneous checks, 18 DDI compliance checking, 34 WDF verification) plus
      20 (DDI compliance checking, additional): a PEP runs its processor callbacks at up to
      HIGH_LEVEL, so IRQL and DDI rules matter most. Only classes from Microsoft's "Driver
      Verifier options and rule classes" table are used (verifier rejects others, and 35 is not
      one: the kernel reserves it).
      -StandardOnly uses `verifier /standard` instead. `resetonbootfail` turns Verifier off
      again if the boot fails, which matters for a boot-start driver: a Verifier bugcheck during
      boot would otherwise repeat on every boot. The settings take effect at the next boot.
    -Action Query: verifier /querysettings (configured) and verifier /query (active, with
      statistics) into the console.
    -Action Reset: verifier /reset.

.PARAMETER Action
    Enable, Query or Reset.

.PARAMETER RuleClasses
    Rule classes (decimal ids) for -Action Enable.

.PARAMETER StandardOnly
    Use `verifier /standard` instead of -RuleClasses.

.PARAMETER BootMode
    The Driver Verifier boot mode: persistent, resetonbootfail (default),
    resetonunusualshutdown or oneboot.

.PARAMETER Reboot
    Restart without asking after Enable or Reset.

.PARAMETER NoReboot
    Do not restart and do not ask.

.EXAMPLE
    .\Set-PpmPepVerifier.ps1 -Reboot
.EXAMPLE
    .\Set-PpmPepVerifier.ps1 -Action Query
#>
#Requires -Version 5.1
#Requires -RunAsAdministrator
[CmdletBinding()]
param(
    [ValidateSet('Enable', 'Query', 'Reset')] [string] $Action = 'Enable',
    [int[]] $RuleClasses = @(1, 2, 4, 5, 6, 8, 9, 12, 18, 34, 20),
    [switch] $StandardOnly,
    [ValidateSet('persistent', 'resetonbootfail', 'resetonunusualshutdown', 'oneboot')]
    [string] $BootMode = 'resetonbootfail',
    [switch] $Reboot,
    [switch] $NoReboot
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
. (Join-Path $PSScriptRoot 'PpmPep.Common.ps1')

# verifier.exe: 0 = done with no change needing a reboot, 2 = done, reboot required.
$ok = @(0, 2)

switch ($Action) {
    'Enable' {
        if ($StandardOnly) {
            $arguments = @('/standard', '/driver', $PpmPepDriverFile)
        } else {
            $arguments = @('/rc') + @($RuleClasses | ForEach-Object { "$_" }) + @('/driver', $PpmPepDriverFile)
        }
        Write-Host "verifier $($arguments -join ' ')"
        Invoke-PpmPepNative -FilePath verifier.exe -ArgumentList $arguments -AllowedExitCodes $ok | Out-Null
        Write-Host "verifier /bootmode $BootMode"
        Invoke-PpmPepNative -FilePath verifier.exe -ArgumentList @('/bootmode', $BootMode) -AllowedExitCodes $ok | Out-Null
        Invoke-PpmPepNative -FilePath verifier.exe -ArgumentList @('/querysettings') -AllowedExitCodes $ok | Out-Null
        Request-PpmPepReboot -Reason 'Driver Verifier settings take effect at boot.' -Reboot:$Reboot -NoReboot:$NoReboot
    }
    'Query' {
        Write-Host '== verifier /querysettings'
        Invoke-PpmPepNative -FilePath verifier.exe -ArgumentList @('/querysettings') -AllowedExitCodes $ok | Out-Null
        Write-Host '== verifier /query'
        Invoke-PpmPepNative -FilePath verifier.exe -ArgumentList @('/query') -AllowedExitCodes $ok | Out-Null
    }
    'Reset' {
        Invoke-PpmPepNative -FilePath verifier.exe -ArgumentList @('/reset') -AllowedExitCodes $ok | Out-Null
        Request-PpmPepReboot -Reason 'Driver Verifier settings take effect at boot.' -Reboot:$Reboot -NoReboot:$NoReboot
    }
}
