<#
.SYNOPSIS
    Prepares a test VM for ppm-pep: test signing, the test certificate, crash dumps.

.DESCRIPTION
    Run once, elevated, on the test VM (Windows 10 2004 or later, Windows 11), then reboot.
      * Refuses to continue while Secure Boot is on (test signing is ignored under Secure Boot;
        on Hyper-V turn it off in the VM's Security settings).
      * bcdedit /set testsigning on.
      * Imports the package's test certificate (WDRLocalTestCert.cer, made by `cargo make`) into
        the local machine's Root and TrustedPublisher stores.
      * Configures a kernel memory dump (CrashDumpEnabled = 2) with automatic reboot, and keeps
        minidumps, so a bugcheck can be analysed with `!analyze -v`.
      * Optionally (-EnableInfoOutput) lets DbgPrintEx information lines of IHV drivers through
        the debug-print filter (they are filtered out by default; errors always show).

.PARAMETER CertificatePath
    The test certificate: the WDRLocalTestCert.cer in the driver package folder.

.PARAMETER SkipTestSigning
    Do not change the boot configuration.

.PARAMETER SkipCrashDump
    Do not change the crash-dump settings.

.PARAMETER EnableInfoOutput
    Set "Debug Print Filter\IHVDRIVER" to 0xF so ppm-pep's information lines reach a debugger.

.PARAMETER Reboot
    Restart without asking when done (not with -NoReboot).

.PARAMETER NoReboot
    Do not restart and do not ask (not with -Reboot).

.PARAMETER WhatIf
    Show every change (boot configuration, certificate stores, registry, restart) without making it.

.EXAMPLE
    .\Initialize-PpmPepTestVm.ps1 -CertificatePath C:\ppm_pep_package\WDRLocalTestCert.cer -Reboot
.EXAMPLE
    .\Initialize-PpmPepTestVm.ps1 -CertificatePath C:\ppm_pep_package\WDRLocalTestCert.cer -WhatIf
#>
#Requires -Version 5.1
#Requires -RunAsAdministrator
[CmdletBinding(SupportsShouldProcess, ConfirmImpact = 'Medium', DefaultParameterSetName = 'Ask')]
param(
    [Parameter(Mandatory)] [ValidateScript({ Test-Path -LiteralPath $_ -PathType Leaf })]
    [string] $CertificatePath,
    [switch] $SkipTestSigning,
    [switch] $SkipCrashDump,
    [switch] $EnableInfoOutput,
    [Parameter(Mandatory, ParameterSetName = 'Reboot')] [switch] $Reboot,
    [Parameter(Mandatory, ParameterSetName = 'NoReboot')] [switch] $NoReboot
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
. (Join-Path $PSScriptRoot 'PpmPep.Common.ps1')

$secureBoot = $false
try {
    $secureBoot = Confirm-SecureBootUEFI
} catch {
    # Legacy BIOS, or the cmdlet is unsupported: no Secure Boot.
    Write-Verbose "Confirm-SecureBootUEFI: $($_.Exception.Message)"
}
if ($secureBoot) {
    throw 'Secure Boot is on: test-signed drivers will not load. Turn it off (Hyper-V: VM Settings > Security) and run this script again.'
}

if (-not $SkipTestSigning -and $PSCmdlet.ShouldProcess('boot configuration {current}', 'bcdedit /set testsigning on')) {
    Write-Host 'Enabling test signing (bcdedit /set testsigning on)'
    Invoke-PpmPepNative -FilePath bcdedit.exe -ArgumentList @('/set', 'testsigning', 'on') | Out-Null
}

$certificate = (Resolve-Path -LiteralPath $CertificatePath).ProviderPath
foreach ($store in 'Root', 'TrustedPublisher') {
    if (-not $PSCmdlet.ShouldProcess("LocalMachine\$store", "import $certificate")) { continue }
    Write-Host "Importing $certificate into LocalMachine\$store"
    Invoke-PpmPepNative -FilePath certutil.exe -ArgumentList @('-f', '-addstore', $store, $certificate) -Quiet | Out-Null
}

if (-not $SkipCrashDump -and $PSCmdlet.ShouldProcess('HKLM\...\Control\CrashControl', 'kernel memory dump with automatic reboot')) {
    $crashControl = 'HKLM:\SYSTEM\CurrentControlSet\Control\CrashControl'
    Write-Host 'Configuring a kernel memory dump with automatic reboot'
    Set-ItemProperty -LiteralPath $crashControl -Name CrashDumpEnabled -Value 2 -Type DWord
    Set-ItemProperty -LiteralPath $crashControl -Name AutoReboot -Value 1 -Type DWord
    Set-ItemProperty -LiteralPath $crashControl -Name Overwrite -Value 1 -Type DWord
    Set-ItemProperty -LiteralPath $crashControl -Name DumpFile -Value '%SystemRoot%\MEMORY.DMP' -Type ExpandString
    Set-ItemProperty -LiteralPath $crashControl -Name MinidumpDir -Value '%SystemRoot%\Minidump' -Type ExpandString
}

if ($EnableInfoOutput -and $PSCmdlet.ShouldProcess('HKLM\...\Debug Print Filter', 'IHVDRIVER = 0xF')) {
    $filter = 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Debug Print Filter'
    if (-not (Test-Path -LiteralPath $filter)) {
        New-Item -Path $filter -Force | Out-Null
    }
    Write-Host 'Letting IHVDRIVER information lines through the debug-print filter'
    Set-ItemProperty -LiteralPath $filter -Name IHVDRIVER -Value 0xF -Type DWord
}

Write-Host 'The VM is prepared. For kernel debugging: kdnet.exe <host-ip> <port> on the VM, then windbg -k net:port=<port>,key=<key> on the host.'
Request-PpmPepReboot -Reason 'test signing and crash-dump settings take effect at boot.' -Reboot:$Reboot -NoReboot:$NoReboot
