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
      20 (DDI compliance checking, additional) and 35 (DDI compliance checking, additional
      IRQL): a PEP runs its processor callbacks at up to HIGH_LEVEL, so IRQL and DDI rules matter
      most. Every class is one of Microsoft's "Driver Verifier options and rule classes" table
      (devtest/driver-verifier-options.md; class 35 is described in
      devtest/ddi-compliance-checking.md).
      -Isolation adds 33 (driver isolation checking) and 36 (DIF mode), which 33 requires.
      -StandardOnly uses `verifier /standard` instead. `resetonbootfail` turns Verifier off
      again if the boot fails, which matters for a boot-start driver: a Verifier bugcheck during
      boot would otherwise repeat on every boot. The settings take effect at the next boot.
    -Action Query: verifier /querysettings (configured) and verifier /query (active, with
      statistics) into the console.
    -Action Reset: verifier /reset.

.PARAMETER Action
    Enable, Query or Reset.

.PARAMETER RuleClasses
    Rule classes (decimal ids from the table) for -Action Enable. Only documented ids are
    accepted: 1-6, 8-12, 14-20, 24-26, 33-36.

.PARAMETER Isolation
    Also enable 33 (driver isolation checking) and 36 (DIF mode, required by 33).

.PARAMETER StandardOnly
    Use `verifier /standard` instead of -RuleClasses (not with -Isolation).

.PARAMETER BootMode
    The Driver Verifier boot mode: persistent, resetonbootfail (default),
    resetonunusualshutdown or oneboot.

.PARAMETER Reboot
    Restart without asking after Enable or Reset (not with -NoReboot).

.PARAMETER NoReboot
    Do not restart and do not ask (not with -Reboot).

.PARAMETER WhatIf
    Show the verifier commands and the restart without running them.

.EXAMPLE
    .\Set-PpmPepVerifier.ps1 -Reboot
.EXAMPLE
    .\Set-PpmPepVerifier.ps1 -Isolation -NoReboot
.EXAMPLE
    .\Set-PpmPepVerifier.ps1 -Action Query
#>
#Requires -Version 5.1
#Requires -RunAsAdministrator
[CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Medium', DefaultParameterSetName = 'Ask')]
param(
    [ValidateSet('Enable', 'Query', 'Reset')] [string] $Action = 'Enable',
    [ValidateSet(1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 14, 15, 16, 17, 18, 19, 20, 24, 25, 26, 33, 34, 35, 36)]
    [int[]] $RuleClasses = @(1, 2, 4, 5, 6, 8, 9, 12, 18, 34, 20, 35),
    [switch] $Isolation,
    [switch] $StandardOnly,
    [ValidateSet('persistent', 'resetonbootfail', 'resetonunusualshutdown', 'oneboot')]
    [string] $BootMode = 'resetonbootfail',
    [Parameter(Mandatory, ParameterSetName = 'Reboot')] [switch] $Reboot,
    [Parameter(Mandatory, ParameterSetName = 'NoReboot')] [switch] $NoReboot
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
. (Join-Path $PSScriptRoot 'PpmPep.Common.ps1')

# verifier.exe: 0 = done with no change needing a reboot, 2 = done, reboot required.
$ok = @(0, 2)

switch ($Action) {
    'Enable' {
        if ($StandardOnly -and $Isolation) {
            throw '-Isolation adds rule classes 33 and 36; -StandardOnly uses verifier /standard: pass one of them.'
        }
        $classes = @($RuleClasses)
        if ($Isolation) {
            $classes += @(33, 36)
        }
        $classes = @($classes | Sort-Object -Unique)
        if ($classes -contains 33 -and $classes -notcontains 36) {
            throw 'Rule class 33 (driver isolation checking) requires 36 (DIF mode): add 36, or use -Isolation.'
        }
        if ($StandardOnly) {
            $arguments = @('/standard', '/driver', $PpmPepDriverFile)
        } else {
            $arguments = @('/rc') + @($classes | ForEach-Object { "$_" }) + @('/driver', $PpmPepDriverFile)
        }
        if (-not $PSCmdlet.ShouldProcess($PpmPepDriverFile, "verifier $($arguments -join ' '); verifier /bootmode $BootMode")) {
            return
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
        if (-not $PSCmdlet.ShouldProcess('Driver Verifier', 'verifier /reset')) {
            return
        }
        Invoke-PpmPepNative -FilePath verifier.exe -ArgumentList @('/reset') -AllowedExitCodes $ok | Out-Null
        Request-PpmPepReboot -Reason 'Driver Verifier settings take effect at boot.' -Reboot:$Reboot -NoReboot:$NoReboot
    }
}
