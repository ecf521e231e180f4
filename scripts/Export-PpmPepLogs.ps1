<#
.SYNOPSIS
    Collects everything needed to diagnose ppm-pep on a test VM into one folder and a zip.

.DESCRIPTION
    Gathers, into -OutputDirectory (and <OutputDirectory>.zip):
      * registry exports of the service key (with Parameters and the driver's volatile state key);
      * setupapi.dev.log (driver installation log);
      * minidumps (%SystemRoot%\Minidump) and, with -IncludeMemoryDump, %SystemRoot%\MEMORY.DMP;
      * verifier /querysettings and verifier /query;
      * the System event log (System.evtx) and the Service Control Manager / bugcheck events
        as text;
      * pnputil /enum-drivers and /enum-devices for the ppm-pep hardware id, driverquery,
        bcdedit /enum, systeminfo;
      * -TestResultsDirectory (the output of Test-PpmPep.ps1), if given;
      * the PpmPep ETW boot trace: -StopBootTrace stops the running one into
        ppm-pep-boot.etl, -BootTrace copies one saved before.
    Every step is best effort: a missing file or failing tool is noted in collect.log, never
    fatal.

.PARAMETER OutputDirectory
    The folder to create. Default: .\ppm-pep-logs-<timestamp>.

.PARAMETER HardwareId
    The hardware id of the ppm-pep device node. Default Root\PpmPep.

.PARAMETER IncludeMemoryDump
    Also copy MEMORY.DMP (can be several GB).

.PARAMETER TestResultsDirectory
    A Test-PpmPep.ps1 output folder to include.

.PARAMETER NoZip
    Do not create the zip.

.PARAMETER BootTrace
    A boot-trace ETL to include (wpr -boottrace -stopboot <file>; docs/windows.md, "Tracing"),
    or -StopBootTrace to stop the running boot trace into the output folder.

.PARAMETER StopBootTrace
    Stop the boot trace started with `wpr -boottrace -addboot` and save it as
    ppm-pep-boot.etl in the output folder.

.EXAMPLE
    .\Export-PpmPepLogs.ps1 -TestResultsDirectory .\ppm-pep-test-20250101-120000
.EXAMPLE
    .\Export-PpmPepLogs.ps1 -StopBootTrace
#>
#Requires -Version 5.1
#Requires -RunAsAdministrator
[CmdletBinding()]
param(
    [string] $OutputDirectory = (Join-Path (Get-Location) ("ppm-pep-logs-{0:yyyyMMdd-HHmmss}" -f (Get-Date))),
    [string] $HardwareId = 'Root\PpmPep',
    [switch] $IncludeMemoryDump,
    [string] $TestResultsDirectory,
    [ValidateScript({ Test-Path -LiteralPath $_ -PathType Leaf })]
    [string] $BootTrace,
    [switch] $StopBootTrace,
    [switch] $NoZip
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
. (Join-Path $PSScriptRoot 'PpmPep.Common.ps1')

New-Item -ItemType Directory -Path $OutputDirectory -Force | Out-Null
$output = (Resolve-Path -LiteralPath $OutputDirectory).ProviderPath
$log = Join-Path $output 'collect.log'

function Write-CollectLog {
    param([string] $Message)
    Write-Host $Message
    Add-Content -LiteralPath $log -Value ("{0:s} {1}" -f (Get-Date), $Message)
}

function Invoke-Step {
    # Runs one collection step; a failure is logged and collection continues.
    param([string] $Name, [scriptblock] $Body)
    try {
        & $Body
        Write-CollectLog "ok    $Name"
    } catch {
        Write-CollectLog "FAIL  $Name : $($_.Exception.Message)"
    }
}

function Save-NativeOutput {
    # Runs a native tool and saves its output (and exit code) to a text file.
    param([string] $FileName, [string] $FilePath, [string[]] $ArgumentList)
    # Redirected stderr must not become a terminating error (Windows PowerShell 5.1).
    $ErrorActionPreference = 'Continue'
    $text = & $FilePath @ArgumentList 2>&1 | Out-String
    $text += "`r`n(exit code $LASTEXITCODE)`r`n"
    Set-Content -LiteralPath (Join-Path $output $FileName) -Value $text -Encoding UTF8
}

Invoke-Step 'registry: service key' {
    Save-NativeOutput 'service-key.reg.txt' reg.exe @('query', "HKLM\SYSTEM\CurrentControlSet\Services\$PpmPepService", '/s')
    & reg.exe export "HKLM\SYSTEM\CurrentControlSet\Services\$PpmPepService" (Join-Path $output 'service-key.reg') /y | Out-Null
    if ($LASTEXITCODE -ne 0) { throw "reg export failed with exit code $LASTEXITCODE" }
}

Invoke-Step 'setupapi.dev.log' {
    Copy-Item -LiteralPath (Join-Path $env:SystemRoot 'INF\setupapi.dev.log') -Destination $output
}

Invoke-Step 'minidumps' {
    $minidumps = Join-Path $env:SystemRoot 'Minidump'
    if (Test-Path -LiteralPath $minidumps) {
        $target = Join-Path $output 'Minidump'
        New-Item -ItemType Directory -Path $target -Force | Out-Null
        Get-ChildItem -LiteralPath $minidumps -Filter '*.dmp' | Copy-Item -Destination $target
    }
}

if ($IncludeMemoryDump) {
    Invoke-Step 'MEMORY.DMP' {
        $dump = Join-Path $env:SystemRoot 'MEMORY.DMP'
        if (Test-Path -LiteralPath $dump) { Copy-Item -LiteralPath $dump -Destination $output }
    }
}

Invoke-Step 'verifier' {
    Save-NativeOutput 'verifier-querysettings.txt' verifier.exe @('/querysettings')
    Save-NativeOutput 'verifier-query.txt' verifier.exe @('/query')
}

Invoke-Step 'System event log' {
    & wevtutil.exe epl System (Join-Path $output 'System.evtx') /ow:true
    if ($LASTEXITCODE -ne 0) { throw "wevtutil failed with exit code $LASTEXITCODE" }
    $events = Get-WinEvent -FilterHashtable @{ LogName = 'System'; Id = 1001, 7000, 7001, 7026, 41 } -MaxEvents 200 -ErrorAction SilentlyContinue
    $events | Format-List TimeCreated, Id, ProviderName, Message | Out-String -Width 200 |
        Set-Content -LiteralPath (Join-Path $output 'system-events.txt') -Encoding UTF8
}

Invoke-Step 'devices and drivers' {
    Save-NativeOutput 'pnputil-enum-drivers.txt' pnputil.exe @('/enum-drivers')
    Get-PpmPepDevice -HardwareId $HardwareId | Format-List * | Out-String -Width 200 |
        Set-Content -LiteralPath (Join-Path $output 'devices.txt') -Encoding UTF8
    foreach ($device in @(Get-PpmPepDevice -HardwareId $HardwareId)) {
        Save-NativeOutput ("pnputil-device-{0}.txt" -f ($device.InstanceId -replace '[\\/:*?"<>|]', '_')) pnputil.exe @('/enum-devices', '/instanceid', $device.InstanceId, '/drivers')
    }
    Save-NativeOutput 'driverquery.txt' driverquery.exe @('/v', '/fo', 'list')
}

Invoke-Step 'system' {
    Save-NativeOutput 'bcdedit.txt' bcdedit.exe @('/enum')
    Save-NativeOutput 'systeminfo.txt' systeminfo.exe @()
}

if ($StopBootTrace) {
    Invoke-Step 'boot trace (wpr -boottrace -stopboot)' {
        Save-NativeOutput 'wpr-stopboot.txt' wpr.exe @('-boottrace', '-stopboot', (Join-Path $output 'ppm-pep-boot.etl'))
        if (-not (Test-Path -LiteralPath (Join-Path $output 'ppm-pep-boot.etl'))) { throw 'wpr wrote no ETL (see wpr-stopboot.txt)' }
    }
}
if ($BootTrace) {
    Invoke-Step 'boot trace (copy)' {
        Copy-Item -LiteralPath $BootTrace -Destination (Join-Path $output 'ppm-pep-boot.etl')
    }
}

if ($TestResultsDirectory) {
    Invoke-Step 'test results' {
        Copy-Item -LiteralPath $TestResultsDirectory -Destination (Join-Path $output 'test-results') -Recurse
    }
}

if (-not $NoZip) {
    $zip = "$output.zip"
    Invoke-Step "zip $zip" {
        Compress-Archive -Path (Join-Path $output '*') -DestinationPath $zip -Force
    }
}
Write-Host "Collected into $output"
