<#
.SYNOPSIS
    Validates ppm-pep after a boot: service, driver, device node, registration, counters,
    Driver Verifier, and what Windows reports for processor performance. PASS/FAIL summary and
    exit code.

.DESCRIPTION
    Run elevated after the reboot that follows Install-PpmPep.ps1 (and Set-PpmPepVerifier.ps1).
    Checks:
      service         HKLM\...\Services\ppm_pep exists: kernel driver, boot start, group
                      "Core Platform Extensions".
      driver          Win32_SystemDriver ppm_pep is Running.
      device          a present device node with -HardwareId, status OK.
      registration    the volatile state key Boot (under the service key; written by DriverEntry
                      this boot) says
                      Registered = 1; if 0, FailedStep and FailureStatus say why. The key is
                      volatile, so a missing key means DriverEntry did not run this boot.
      counters        FeedbackCounterCount >= 1 (a WARN without -ExpectCounters: a VM without
                      APERF/MPERF legitimately reports 0, with NoCountersReason).
      perf            Lowest >= 1 and Lowest <= LowestNonlinear <= Nominal <= Highest.
      configuration   ConfigurationIssues = 0 (values ignored by the driver; see the debugger
                      output or docs\registry.md, "Registry configuration").
      verifier        ppm_pep.sys among the drivers Driver Verifier verifies this boot (a FAIL
                      only with -RequireVerifier).
      events          no Service Control Manager load failure (7000/7026) for ppm_pep since boot,
                      no bugcheck reported at this boot.
      perf-counters   typeperf samples \Processor Information(*)\% Processor Performance and
                      \Processor Information(*)\Processor Frequency into a CSV (English counter
                      names; pass -CounterPaths on a localized Windows).
    Results go to -OutputDirectory: results.csv, state.json, counters.csv.

.PARAMETER OutputDirectory
    Where to write the results. Default: .\ppm-pep-test-<timestamp>.

.PARAMETER HardwareId
    The device node's hardware id: Root\PpmPep on a test VM, the ACPI id on a real platform.

.PARAMETER Samples
    Performance-counter samples to take (one per -IntervalSeconds). 0 skips sampling.

.PARAMETER IntervalSeconds
    Seconds between samples.

.PARAMETER CounterPaths
    The performance counters to sample.

.PARAMETER ExpectCounters
    Fail (instead of warn) when the PEP reports no feedback counters.

.PARAMETER RequireVerifier
    Fail when Driver Verifier is not verifying ppm_pep.sys.

.EXAMPLE
    .\Test-PpmPep.ps1 -ExpectCounters -RequireVerifier -Samples 60
#>
#Requires -Version 5.1
#Requires -RunAsAdministrator
[CmdletBinding()]
param(
    [string] $OutputDirectory = (Join-Path (Get-Location) ("ppm-pep-test-{0:yyyyMMdd-HHmmss}" -f (Get-Date))),
    [string] $HardwareId = 'Root\PpmPep',
    [ValidateRange(0, 86400)] [int] $Samples = 30,
    [ValidateRange(1, 3600)] [int] $IntervalSeconds = 1,
    [string[]] $CounterPaths = @(
        '\Processor Information(*)\% Processor Performance',
        '\Processor Information(*)\Processor Frequency'
    ),
    [switch] $ExpectCounters,
    [switch] $RequireVerifier
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
. (Join-Path $PSScriptRoot 'PpmPep.Common.ps1')

New-Item -ItemType Directory -Path $OutputDirectory -Force | Out-Null
$results = New-Object System.Collections.Generic.List[object]

function Add-Result {
    param([string] $Check, [ValidateSet('PASS', 'FAIL', 'WARN', 'INFO')] [string] $Result, [string] $Detail)
    $results.Add([pscustomobject]@{ Check = $Check; Result = $Result; Detail = $Detail })
}

function Get-RegistryValue {
    param([string] $Path, [string] $Name)
    $item = Get-ItemProperty -LiteralPath $Path -ErrorAction SilentlyContinue
    if ($null -eq $item) { return $null }
    $property = $item.PSObject.Properties[$Name]
    if ($null -eq $property) { return $null }
    return $property.Value
}

function ConvertTo-UInt32 {
    # A REG_DWORD reads back as Int32; reinterpret its bits (0xC0000001 is negative as Int32).
    param($Value)
    if ($null -eq $Value) { return [uint32]0 }
    return [BitConverter]::ToUInt32([BitConverter]::GetBytes([int32]$Value), 0)
}

$bootTime = (Get-CimInstance Win32_OperatingSystem).LastBootUpTime

# --- service -----------------------------------------------------------------------------
if (Test-Path -LiteralPath $PpmPepServiceKey) {
    $type = Get-RegistryValue $PpmPepServiceKey 'Type'
    $start = Get-RegistryValue $PpmPepServiceKey 'Start'
    $group = Get-RegistryValue $PpmPepServiceKey 'Group'
    $detail = "Type=$type Start=$start Group='$group' ImagePath=$(Get-RegistryValue $PpmPepServiceKey 'ImagePath')"
    if ($type -eq 1 -and $start -eq 0 -and $group -eq 'Core Platform Extensions') {
        Add-Result 'service' 'PASS' $detail
    } else {
        Add-Result 'service' 'FAIL' "expected Type=1 Start=0 Group='Core Platform Extensions': $detail"
    }
} else {
    Add-Result 'service' 'FAIL' "$PpmPepServiceKey does not exist: the driver is not installed"
}

# --- driver --------------------------------------------------------------------------------
$driver = Get-CimInstance Win32_SystemDriver -Filter "Name='$PpmPepService'" -ErrorAction SilentlyContinue
if ($null -ne $driver -and $driver.State -eq 'Running') {
    Add-Result 'driver' 'PASS' "$($driver.PathName) is running"
} else {
    $state = if ($null -eq $driver) { 'not found' } else { $driver.State }
    Add-Result 'driver' 'FAIL' "Win32_SystemDriver $PpmPepService is $state"
}

# --- device node ---------------------------------------------------------------------------
$devices = @(Get-PpmPepDevice -HardwareId $HardwareId | Where-Object { $_.Present })
if ($devices.Count -eq 0) {
    Add-Result 'device' 'FAIL' "no present device node with hardware id $HardwareId"
} elseif (@($devices | Where-Object { $_.Status -eq 'OK' }).Count -gt 0) {
    Add-Result 'device' 'PASS' (($devices | ForEach-Object { "$($_.InstanceId) $($_.Status)" }) -join '; ')
} else {
    $problems = ($devices | ForEach-Object {
            $property = Get-PnpDeviceProperty -InstanceId $_.InstanceId -KeyName 'DEVPKEY_Device_ProblemCode' -ErrorAction SilentlyContinue
            $code = if ($null -ne $property) { $property.Data } else { '?' }
            "$($_.InstanceId) $($_.Status) problem code $code"
        }) -join '; '
    Add-Result 'device' 'FAIL' $problems
}

# --- registration (volatile State key) ------------------------------------------------------
$state = [ordered]@{}
$stateKey = Get-PpmPepStateKey
if ($null -ne $stateKey) {
    $item = Get-ItemProperty -LiteralPath $stateKey
    foreach ($property in $item.PSObject.Properties) {
        if ($property.Name -notlike 'PS*') { $state[$property.Name] = $property.Value }
    }
}
$state | ConvertTo-Json | Set-Content -LiteralPath (Join-Path $OutputDirectory 'state.json') -Encoding UTF8

if ($state.Count -eq 0) {
    Add-Result 'registration' 'FAIL' 'no volatile state key (Boot) under the service key: DriverEntry did not run this boot'
} elseif ($state['Registered'] -eq 1) {
    Add-Result 'registration' 'PASS' "PoFxRegisterPluginEx succeeded ($($state['Architecture']))"
} elseif ($state.Contains('RegistrationSkipped')) {
    $why = switch ($state['RegistrationSkipped']) {
        'install-pending' { 'installed in this session: reboot, and the PEP registers at boot' }
        'skip-registration' { 'Parameters\SkipRegistration is set (boot safety): clear it and reboot' }
        default { $state['RegistrationSkipped'] }
    }
    Add-Result 'registration' 'FAIL' "not registered on purpose: $why"
} else {
    Add-Result 'registration' 'FAIL' ("not registered: {0} failed with 0x{1:X8}" -f $state['FailedStep'], (ConvertTo-UInt32 $state['FailureStatus']))
}

if ($state['Registered'] -eq 1) {
    $count = [int]$state['FeedbackCounterCount']
    $counterDetail = "FeedbackCounterCount=$count CounterSource=$($state['CounterSource']) NoCountersReason=$($state['NoCountersReason']) NominalMhz=$($state['NominalMhz']) ($($state['NominalRateSource'])) CalibratedMhz=$($state['CalibratedMhz']) PmuReservation=$($state['PmuReservation'])"
    if ($count -ge 1) {
        Add-Result 'counters' 'PASS' $counterDetail
    } elseif ($ExpectCounters) {
        Add-Result 'counters' 'FAIL' $counterDetail
    } else {
        Add-Result 'counters' 'WARN' $counterDetail
    }

    $highest = (ConvertTo-UInt32 $state['HighestPerformance'])
    $nominal = (ConvertTo-UInt32 $state['NominalPerformance'])
    $lowestNonlinear = (ConvertTo-UInt32 $state['LowestNonlinearPerformance'])
    $lowest = (ConvertTo-UInt32 $state['LowestPerformance'])
    $perfDetail = "Highest=$highest Nominal=$nominal LowestNonlinear=$lowestNonlinear Lowest=$lowest ($($state['PerfSource']))"
    if ($lowest -ge 1 -and $lowest -le $lowestNonlinear -and $lowestNonlinear -le $nominal -and $nominal -le $highest) {
        Add-Result 'perf' 'PASS' $perfDetail
    } else {
        Add-Result 'perf' 'FAIL' "not ordered: $perfDetail"
    }

    $issues = [int]$state['ConfigurationIssues']
    if ($issues -eq 0) {
        Add-Result 'configuration' 'PASS' "$($state['DeviceIdPatternCount']) device-id pattern(s), no ignored value, table capacity $($state['ProcessorTableCapacity'])"
    } else {
        Add-Result 'configuration' 'WARN' "$issues Parameters value(s) ignored (see the DbgPrintEx output)"
    }
}

# --- Driver Verifier --------------------------------------------------------------------------
$ErrorActionPreference = 'Continue'
$verifierOutput = (& verifier.exe /query 2>&1 | Out-String)
$ErrorActionPreference = 'Stop'
$verifierOutput | Set-Content -LiteralPath (Join-Path $OutputDirectory 'verifier-query.txt') -Encoding UTF8
if ($verifierOutput -match [regex]::Escape($PpmPepDriverFile)) {
    Add-Result 'verifier' 'PASS' "Driver Verifier is verifying $PpmPepDriverFile this boot"
} elseif ($RequireVerifier) {
    Add-Result 'verifier' 'FAIL' "Driver Verifier is not verifying $PpmPepDriverFile (Set-PpmPepVerifier.ps1, then reboot)"
} else {
    Add-Result 'verifier' 'INFO' "Driver Verifier is not verifying $PpmPepDriverFile"
}

# --- events since boot ----------------------------------------------------------------------
$scmEvents = @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; ProviderName = 'Service Control Manager'; Id = 7000, 7026; StartTime = $bootTime } -ErrorAction SilentlyContinue |
        Where-Object { $_.Message -match [regex]::Escape($PpmPepService) -or $_.Message -match [regex]::Escape($PpmPepServiceDisplayName) })
$bugchecks = @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; Id = 1001; StartTime = $bootTime } -ErrorAction SilentlyContinue |
        Where-Object { $_.ProviderName -eq 'Microsoft-Windows-WER-SystemErrorReporting' })
if ($scmEvents.Count -gt 0) {
    Add-Result 'events' 'FAIL' ((@($scmEvents | Select-Object -First 3) | ForEach-Object { "SCM $($_.Id): $($_.Message)" }) -join ' | ')
} elseif ($bugchecks.Count -gt 0) {
    Add-Result 'events' 'WARN' "the system reported a bugcheck at this boot: $($bugchecks[0].Message)"
} else {
    Add-Result 'events' 'PASS' 'no load failure or bugcheck reported since boot'
}

# --- performance counters -------------------------------------------------------------------
if ($Samples -gt 0) {
    $csv = Join-Path $OutputDirectory 'counters.csv'
    Write-Host "Sampling $($CounterPaths -join ', ') ($Samples x $IntervalSeconds s) into $csv"
    $arguments = @($CounterPaths) + @('-si', "$IntervalSeconds", '-sc', "$Samples", '-f', 'CSV', '-o', $csv, '-y')
    $ErrorActionPreference = 'Continue'
    & typeperf.exe @arguments 2>&1 | Out-Null
    $ErrorActionPreference = 'Stop'
    if ($LASTEXITCODE -ne 0 -or -not (Test-Path -LiteralPath $csv)) {
        Add-Result 'perf-counters' 'FAIL' "typeperf failed with exit code $LASTEXITCODE (localized counter names? pass -CounterPaths)"
    } else {
        $rows = @(Import-Csv -LiteralPath $csv)
        $columns = @($rows | Select-Object -First 1 | ForEach-Object { $_.PSObject.Properties.Name })
        $summary = foreach ($column in $columns | Where-Object { $_ -match '\(_Total\)' }) {
            $values = @($rows | ForEach-Object { $_.$column } | Where-Object { $_ -match '^\s*[0-9.]+\s*$' } | ForEach-Object { [double]$_ })
            if ($values.Count -gt 0) {
                $average = ($values | Measure-Object -Average).Average
                '{0} avg {1:N1} over {2} samples' -f ($column -replace '^.*\\', ''), $average, $values.Count
            }
        }
        if ($rows.Count -gt 0 -and @($summary).Count -gt 0) {
            Add-Result 'perf-counters' 'PASS' (@($summary) -join '; ')
        } else {
            Add-Result 'perf-counters' 'FAIL' "no usable samples in $csv"
        }
    }
}

# --- summary --------------------------------------------------------------------------------
$results | Export-Csv -LiteralPath (Join-Path $OutputDirectory 'results.csv') -NoTypeInformation -Encoding UTF8
$results | Format-Table -AutoSize -Wrap | Out-String -Width 200 | Write-Host
$failed = @($results | Where-Object { $_.Result -eq 'FAIL' })
if ($failed.Count -eq 0) {
    Write-Host "PASS ($($results.Count) checks; results in $OutputDirectory)"
    exit 0
}
Write-Host "FAIL: $(($failed | ForEach-Object { $_.Check }) -join ', ') (results in $OutputDirectory)"
exit 1
