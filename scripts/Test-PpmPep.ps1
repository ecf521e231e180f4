<#
.SYNOPSIS
    Validates ppm-pep after a boot: every check names what it looks at, and a FAIL says what to
    do. PASS is reserved for what the PEP (its driver, INF or logic) can get wrong; a
    prerequisite that holds, or a fact the PEP cannot influence, is INFO. Exit code 0 only if no
    check failed.

.DESCRIPTION
    Run elevated after the reboot that follows Install-PpmPep.ps1 (and Set-PpmPepVerifier.ps1).
    Checks (see docs/windows.md, "Validate", for what each can catch):
      test-signing    the kernel enforces test signing this boot (CODEINTEGRITY_OPTION_TESTSIGN of
                      SystemCodeIntegrityInformation), and bcdedit's setting (prerequisite:
                      INFO/FAIL; configured-but-inactive says reboot).
      hvci            Memory integrity (Win32_DeviceGuard): PASS when it is running and the
                      driver loaded under it (the image is HVCI-compatible), FAIL when it is
                      running and the driver did not load, INFO when it is off.
      service         the INF's service: kernel driver, boot start, "Core Platform Extensions".
      driver          Win32_SystemDriver ppm_pep is Running.
      driver-image    the image file has not changed since boot (else the running image is an
                      older one: reboot), and with -PackagePath it is the package's ppm_pep.sys
                      (SHA-256). Prerequisite: INFO/FAIL.
      image-identity  Boot\ImageTimeDateStamp (the PE header TimeDateStamp of the image that
                      ran DriverEntry this boot) equals that of the package's ppm_pep.sys
                      (-PackagePath) and of the file ImagePath names: a stale image, still
                      loaded after an update without its reboot, fails it although the files
                      match.
      device          a present device node with -HardwareId, status OK.
      registration    the volatile state key Boot (under the service key; written by DriverEntry
                      this boot): Registered = 1; if 0, FailedStep and FailureStatus say why.
      counters        FeedbackCounterCount >= 1 (a WARN without -ExpectCounters: a VM without
                      APERF/MPERF legitimately reports 0, with NoCountersReason).
      perf            Lowest >= 1 and Lowest <= LowestNonlinear <= Nominal <= Highest.
      configuration   ConfigurationIssues = 0 (values the driver ignored; see docs\registry.md).
      nominal-rate    where NominalRate came from (NominalRateSource). FAIL on ARM64 when it was
                      calibrated: the AMU's constant counter runs at the system counter's rate,
                      so the PEP measured the boot processor's clock at boot, which boost or
                      firmware may have set anywhere (set Parameters\NominalMhz).
      verifier        ppm_pep.sys among the drivers Driver Verifier verifies this boot
                      (prerequisite: INFO, or FAIL with -RequireVerifier).
      events          no Service Control Manager load failure (7000/7026) for ppm_pep since
                      boot, no bugcheck reported at this boot.
      perf-feedback   with feedback counters: the sampled \Processor Information(_Total)\%
                      Processor Performance is above 0 and at most 110 % of Highest/Nominal.
                      Windows computes that counter with or without a PEP, so a reading in range
                      proves nothing about the PEP's counts: INFO. Out of range (frozen or
                      runaway counts) is a FAIL, whose action is the comparison with a
                      SkipRegistration boot that tells the PEP's share.
      idle-states     deep C-state residency: \Processor Information(*)\% C2 Time and % C3 Time
                      (with % C1 Time) per processor over the sampling. The PEP owns the
                      processors and reports no idle states (IdleStateCount 0); whether Windows
                      still enters their ACPI _CST states is not documented. PASS when some
                      processor entered C2 or C3; with none, FAIL when -ExpectDeepCStates says
                      the machine offers them, else WARN (VMs usually offer only C1).
      perf-counters   the typeperf samples themselves (INFO: those counters exist with or
                      without the PEP).
    Results go to -OutputDirectory: results.csv, state.json, counters.csv, verifier-query.txt.

.PARAMETER OutputDirectory
    Where to write the results. Default: .\ppm-pep-test-<timestamp>.

.PARAMETER HardwareId
    The device node's hardware id: Root\PpmPep on a test VM, the ACPI id on a real platform.

.PARAMETER PackagePath
    The driver package folder that was installed: the running image must be its ppm_pep.sys.

.PARAMETER Samples
    Performance-counter samples to take (one per -IntervalSeconds), 0 to 86400. 0 skips
    sampling (and perf-feedback).

.PARAMETER IntervalSeconds
    Seconds between samples, 1 to 3600.

.PARAMETER CounterPaths
    The performance counters to sample (English names; pass the localized names on a localized
    Windows). The first must be the % Processor Performance counter for perf-feedback.

.PARAMETER IdleCounterPaths
    The C-state residency counters for idle-states, sampled with -CounterPaths (English names;
    pass the localized names on a localized Windows): % C1 Time, % C2 Time, % C3 Time of
    \Processor Information(*), in that order.

.PARAMETER ExpectCounters
    Fail (instead of warn) when the PEP reports no feedback counters.

.PARAMETER ExpectDeepCStates
    The machine offers C-states deeper than C1 (its firmware's _CST lists C2 or C3: seen as
    non-zero % C2/C3 Time in a boot with Parameters\SkipRegistration = 1, when the PEP owns no
    processor). idle-states then fails when no processor enters them.

.PARAMETER RequireVerifier
    Fail when Driver Verifier is not verifying ppm_pep.sys.

.EXAMPLE
    .\Test-PpmPep.ps1 -ExpectCounters -RequireVerifier -Samples 60 -PackagePath C:\ppm_pep_package
#>
#Requires -Version 5.1
#Requires -RunAsAdministrator
[CmdletBinding()]
param(
    [string] $OutputDirectory = (Join-Path (Get-Location) ("ppm-pep-test-{0:yyyyMMdd-HHmmss}" -f (Get-Date))),
    [string] $HardwareId = 'Root\PpmPep',
    [ValidateScript({ Test-Path -LiteralPath $_ -PathType Container })]
    [string] $PackagePath,
    [ValidateRange(0, 86400)] [int] $Samples = 30,
    [ValidateRange(1, 3600)] [int] $IntervalSeconds = 1,
    [ValidateCount(1, 16)]
    [string[]] $CounterPaths = @(
        '\Processor Information(*)\% Processor Performance',
        '\Processor Information(*)\Processor Frequency'
    ),
    [ValidateCount(3, 3)]
    [string[]] $IdleCounterPaths = @(
        '\Processor Information(*)\% C1 Time',
        '\Processor Information(*)\% C2 Time',
        '\Processor Information(*)\% C3 Time'
    ),
    [switch] $ExpectCounters,
    [switch] $ExpectDeepCStates,
    [switch] $RequireVerifier
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
. (Join-Path $PSScriptRoot 'PpmPep.Common.ps1')

New-Item -ItemType Directory -Path $OutputDirectory -Force | Out-Null
$results = New-Object System.Collections.Generic.List[object]

function Write-Result {
    # One check's outcome. A FAIL must say what to do (-Action).
    param(
        [string] $Check,
        [ValidateSet('PASS', 'FAIL', 'WARN', 'INFO')] [string] $Result,
        [string] $Detail,
        [string] $Action = ''
    )
    if ($Result -eq 'FAIL' -and -not $Action) { throw "check $Check failed without saying what to do" }
    $results.Add([pscustomobject]@{ Check = $Check; Result = $Result; Detail = $Detail; Action = $Action })
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

function Get-PeTimeDateStamp {
    # The COFF file header's TimeDateStamp of a PE image: the DWORD 8 bytes after the "PE\0\0"
    # signature, whose offset is the DWORD at 0x3C (e_lfanew). $null if the file is no PE image.
    param([string] $Path)
    $bytes = [System.IO.File]::ReadAllBytes($Path)
    if ($bytes.Length -lt 0x40 -or $bytes[0] -ne 0x4D -or $bytes[1] -ne 0x5A) { return $null }
    $peOffset = [BitConverter]::ToUInt32($bytes, 0x3C)
    if ($peOffset + 12 -gt $bytes.Length) { return $null }
    if ([BitConverter]::ToUInt32($bytes, [int]$peOffset) -ne 0x00004550) { return $null }
    return [BitConverter]::ToUInt32($bytes, [int]$peOffset + 8)
}

$bootTime = (Get-CimInstance Win32_OperatingSystem).LastBootUpTime

# --- test signing (prerequisite) -----------------------------------------------------------
# What the kernel enforces this boot (NtQuerySystemInformation(SystemCodeIntegrityInformation),
# CODEINTEGRITY_OPTION_TESTSIGN = 0x2), and what the boot configuration says for the next boot.
if (-not ('PpmPepCodeIntegrity' -as [type])) {
    Add-Type -TypeDefinition @'
using System;
using System.ComponentModel;
using System.Runtime.InteropServices;

public static class PpmPepCodeIntegrity
{
    [StructLayout(LayoutKind.Sequential)]
    private struct SYSTEM_CODEINTEGRITY_INFORMATION
    {
        public uint Length;
        public uint CodeIntegrityOptions;
    }

    [DllImport("ntdll.dll")]
    private static extern int NtQuerySystemInformation(int systemInformationClass,
        ref SYSTEM_CODEINTEGRITY_INFORMATION systemInformation, int length, out int returnLength);

    private const int SystemCodeIntegrityInformation = 103;

    public static uint Options()
    {
        SYSTEM_CODEINTEGRITY_INFORMATION information = new SYSTEM_CODEINTEGRITY_INFORMATION();
        information.Length = (uint)Marshal.SizeOf(typeof(SYSTEM_CODEINTEGRITY_INFORMATION));
        int returned;
        int status = NtQuerySystemInformation(SystemCodeIntegrityInformation, ref information,
            (int)information.Length, out returned);
        if (status != 0)
        {
            throw new Win32Exception(string.Format("NtQuerySystemInformation(SystemCodeIntegrityInformation) failed with 0x{0:X8}", status));
        }
        return information.CodeIntegrityOptions;
    }
}
'@
}
$ErrorActionPreference = 'Continue'
$bcd = (& bcdedit.exe /enum '{current}' 2>&1 | Out-String)
$ErrorActionPreference = 'Stop'
$configured = $bcd -match '(?m)^testsigning\s+Yes'
try {
    $ciOptions = [PpmPepCodeIntegrity]::Options()
    $active = ($ciOptions -band 0x2) -ne 0
    $ciDetail = 'CodeIntegrityOptions 0x{0:X}, bcdedit testsigning {1}' -f $ciOptions, $(if ($configured) { 'Yes' } else { 'No' })
} catch {
    $active = $configured
    $ciDetail = "code-integrity options unreadable ($($_.Exception.Message)); bcdedit testsigning $(if ($configured) { 'Yes' } else { 'No' })"
}
if ($active) {
    Write-Result 'test-signing' 'INFO' "test signing is active this boot ($ciDetail)"
} elseif ($configured) {
    Write-Result 'test-signing' 'FAIL' "test signing is configured but not active this boot ($ciDetail)" 'reboot (the boot configuration takes effect at boot)'
} else {
    Write-Result 'test-signing' 'FAIL' "test signing is off: a test-signed ppm_pep.sys does not load ($ciDetail)" `
        'run .\scripts\Initialize-PpmPepTestVm.ps1 (Secure Boot off first), then reboot'
}

# --- service -----------------------------------------------------------------------------
if (Test-Path -LiteralPath $PpmPepServiceKey) {
    $type = Get-RegistryValue $PpmPepServiceKey 'Type'
    $start = Get-RegistryValue $PpmPepServiceKey 'Start'
    $group = Get-RegistryValue $PpmPepServiceKey 'Group'
    $detail = "Type=$type Start=$start Group='$group' ImagePath=$(Get-RegistryValue $PpmPepServiceKey 'ImagePath')"
    if ($type -eq 1 -and $start -eq 0 -and $group -eq 'Core Platform Extensions') {
        Write-Result 'service' 'PASS' $detail
    } else {
        Write-Result 'service' 'FAIL' "expected Type=1 Start=0 Group='Core Platform Extensions': $detail" `
            'reinstall the package (Install-PpmPep.ps1); if it persists, the INF''s service section is wrong'
    }
} else {
    Write-Result 'service' 'FAIL' "$PpmPepServiceKey does not exist: the driver is not installed" `
        'run .\scripts\Install-PpmPep.ps1 -PackagePath <package> -NoReboot, then reboot'
}

# --- driver --------------------------------------------------------------------------------
$driver = Get-CimInstance Win32_SystemDriver -Filter "Name='$PpmPepService'" -ErrorAction SilentlyContinue
if ($null -ne $driver -and $driver.State -eq 'Running') {
    Write-Result 'driver' 'PASS' "$($driver.PathName) is running"
} else {
    $state = if ($null -eq $driver) { 'not found' } else { $driver.State }
    Write-Result 'driver' 'FAIL' "Win32_SystemDriver $PpmPepService is $state" `
        'see the events check and the PpmPep ETW trace (docs/windows.md, "Tracing"); Export-PpmPepLogs.ps1 for a report'
}

# --- driver image (prerequisite) --------------------------------------------------------------
$imagePath = $null
$pathName = if ($null -ne $driver) { [string]$driver.PathName } else { '' }
if ($pathName) {
    $imagePath = $pathName -replace '^\\\?\?\\', '' -replace '^\\SystemRoot', $env:SystemRoot -replace '^System32', (Join-Path $env:SystemRoot 'System32')
}
if ($null -eq $imagePath -or -not (Test-Path -LiteralPath $imagePath -PathType Leaf)) {
    Write-Result 'driver-image' 'FAIL' "cannot find the image file of $PpmPepService ('$pathName')" 'reinstall the package and reboot'
} else {
    $image = Get-Item -LiteralPath $imagePath
    $imageHash = (Get-FileHash -LiteralPath $imagePath -Algorithm SHA256).Hash
    $imageDetail = "$imagePath written $($image.LastWriteTime.ToString('s')), SHA-256 $imageHash"
    if ($image.LastWriteTime -gt $bootTime) {
        Write-Result 'driver-image' 'FAIL' "the image file changed after boot ($($bootTime.ToString('s'))): the running image is an older one. $imageDetail" `
            'reboot: a registered PEP is never unloaded, a new image loads at the next boot'
    } elseif ($PackagePath) {
        $packageImage = Join-Path $PackagePath $PpmPepDriverFile
        $packageHash = if (Test-Path -LiteralPath $packageImage) { (Get-FileHash -LiteralPath $packageImage -Algorithm SHA256).Hash } else { 'missing' }
        if ($packageHash -eq $imageHash) {
            Write-Result 'driver-image' 'INFO' "the running image is the package's $PpmPepDriverFile. $imageDetail"
        } else {
            Write-Result 'driver-image' 'FAIL' "the running image is not $packageImage (SHA-256 $packageHash). $imageDetail" `
                'install this package (Install-PpmPep.ps1 -PackagePath ...), reboot, and test again'
        }
    } else {
        Write-Result 'driver-image' 'INFO' "$imageDetail (pass -PackagePath to compare with the package)"
    }
}

# --- memory integrity (HVCI) ------------------------------------------------------------------
$deviceGuard = Get-CimInstance -Namespace 'root\Microsoft\Windows\DeviceGuard' -ClassName Win32_DeviceGuard -ErrorAction SilentlyContinue
# SecurityServicesRunning: 2 = hypervisor-enforced code integrity (Memory integrity).
$hvciRunning = $null -ne $deviceGuard -and (@($deviceGuard.SecurityServicesRunning) -contains 2)
$driverRunning = $null -ne $driver -and $driver.State -eq 'Running'
if (-not $hvciRunning) {
    Write-Result 'hvci' 'INFO' 'Memory integrity (HVCI) is not running: the image was not checked against it'
} elseif ($driverRunning) {
    Write-Result 'hvci' 'PASS' "$PpmPepDriverFile loaded with Memory integrity on: the image passed HVCI's code-integrity checks"
} else {
    Write-Result 'hvci' 'FAIL' "Memory integrity is on and $PpmPepDriverFile is not running" `
        'look for Microsoft-Windows-CodeIntegrity/Operational events 3087/3089 naming ppm_pep.sys; turning Memory integrity off tells an HVCI refusal from a DriverEntry failure'
}

# --- device node ---------------------------------------------------------------------------
$devices = @(Get-PpmPepDevice -HardwareId $HardwareId | Where-Object { $_.Present })
if ($devices.Count -eq 0) {
    Write-Result 'device' 'FAIL' "no present device node with hardware id $HardwareId" `
        'run Install-PpmPep.ps1 (it creates Root\PpmPep), or pass the ACPI id with -HardwareId'
} elseif (@($devices | Where-Object { $_.Status -eq 'OK' }).Count -gt 0) {
    Write-Result 'device' 'PASS' (($devices | ForEach-Object { "$($_.InstanceId) $($_.Status)" }) -join '; ')
} else {
    $problems = ($devices | ForEach-Object {
            $property = Get-PnpDeviceProperty -InstanceId $_.InstanceId -KeyName 'DEVPKEY_Device_ProblemCode' -ErrorAction SilentlyContinue
            $code = if ($null -ne $property) { $property.Data } else { '?' }
            "$($_.InstanceId) $($_.Status) problem code $code"
        }) -join '; '
    Write-Result 'device' 'FAIL' $problems 'look the problem code up (Device Manager error codes); setupapi.dev.log via Export-PpmPepLogs.ps1'
}

# --- registration (volatile Boot key) ------------------------------------------------------
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
    Write-Result 'registration' 'FAIL' 'no volatile state key (Boot) under the service key: DriverEntry did not run this boot' `
        'check the driver and events checks; capture a boot trace (docs/windows.md, "Tracing")'
} elseif ($state['Registered'] -eq 1) {
    Write-Result 'registration' 'PASS' "PoFxRegisterPluginEx succeeded ($($state['Architecture']))"
} elseif ($state.Contains('RegistrationSkipped')) {
    $why = switch ($state['RegistrationSkipped']) {
        'install-pending' { 'installed in this session: reboot, and the PEP registers at boot' }
        'skip-registration' { 'Parameters\SkipRegistration is set (boot safety): clear it and reboot' }
        default { $state['RegistrationSkipped'] }
    }
    Write-Result 'registration' 'FAIL' "not registered on purpose: $why" 'reboot (install-pending) or clear Parameters\SkipRegistration and reboot'
} else {
    Write-Result 'registration' 'FAIL' ("not registered: {0} failed with 0x{1:X8}" -f $state['FailedStep'], (ConvertTo-UInt32 $state['FailureStatus'])) `
        'look the step up in docs/windows.md ("Validate"), and read the DriverEntryError events of the boot trace'
}

if ($state['Registered'] -eq 1) {
    $count = [int]$state['FeedbackCounterCount']
    $counterDetail = "FeedbackCounterCount=$count CounterSource=$($state['CounterSource']) NoCountersReason=$($state['NoCountersReason']) NominalMhz=$($state['NominalMhz']) ($($state['NominalRateSource'])) CalibratedMhz=$($state['CalibratedMhz']) PmuReservation=$($state['PmuReservation'])"
    if ($count -ge 1) {
        Write-Result 'counters' 'PASS' $counterDetail
    } elseif ($ExpectCounters) {
        Write-Result 'counters' 'FAIL' $counterDetail 'NoCountersReason says why; set Parameters\CounterSource or run without -ExpectCounters on a VM without APERF/MPERF'
    } else {
        Write-Result 'counters' 'WARN' $counterDetail
    }

    $highest = (ConvertTo-UInt32 $state['HighestPerformance'])
    $nominal = (ConvertTo-UInt32 $state['NominalPerformance'])
    $lowestNonlinear = (ConvertTo-UInt32 $state['LowestNonlinearPerformance'])
    $lowest = (ConvertTo-UInt32 $state['LowestPerformance'])
    $perfDetail = "Highest=$highest Nominal=$nominal LowestNonlinear=$lowestNonlinear Lowest=$lowest ($($state['PerfSource']))"
    if ($lowest -ge 1 -and $lowest -le $lowestNonlinear -and $lowestNonlinear -le $nominal -and $nominal -le $highest) {
        Write-Result 'perf' 'PASS' $perfDetail
    } else {
        Write-Result 'perf' 'FAIL' "not ordered: $perfDetail" 'a PEP bug or a bad override: check the four Parameters\*Performance values, then report with Export-PpmPepLogs.ps1'
    }

    $issues = [int]$state['ConfigurationIssues']
    if ($issues -eq 0) {
        Write-Result 'configuration' 'PASS' "$($state['DeviceIdPatternCount']) device-id pattern(s), no ignored value, table capacity $($state['ProcessorTableCapacity'])"
    } else {
        Write-Result 'configuration' 'WARN' "$issues Parameters value(s) ignored (see the DbgPrintEx output)"
    }

    # The AMU's constant counter runs at the system counter's rate (CNTFRQ_EL0), not at the
    # processor's nominal rate: without NominalMhz the PEP measures the boot processor's clock
    # during DriverEntry, which depends on what firmware or boost set at that moment.
    $nominalDetail = "NominalMhz=$($state['NominalMhz']) from $($state['NominalRateSource']), CalibratedMhz=$($state['CalibratedMhz']), $($state['Architecture'])"
    if ($state['Architecture'] -eq 'arm64' -and $state['NominalRateSource'] -eq 'calibrated') {
        Write-Result 'nominal-rate' 'FAIL' "the nominal rate is the boot processor's clock at boot, not the SoC's nominal frequency: % Processor Performance changes from boot to boot. $nominalDetail" `
            'set Parameters\NominalMhz (REG_DWORD) to the SoC''s nominal, non-boost frequency in MHz (vendor documentation, or the Nominal Frequency of the processors'' ACPI _CPC), reboot, test again'
    } else {
        Write-Result 'nominal-rate' 'INFO' $nominalDetail
    }
}

# --- image identity --------------------------------------------------------------------------
# Driver-store copies keep the package's timestamps and ImagePath already names the new file
# after an update, so the files cannot show that an older image is still running: the running
# image's own PE TimeDateStamp, written by DriverEntry, can.
if ($state.Count -gt 0) {
    if (-not $state.Contains('ImageTimeDateStamp') -and $state['Registered'] -ne 1) {
        Write-Result 'image-identity' 'INFO' 'the Boot key of this unregistered boot has no ImageTimeDateStamp: compare after a boot that registers the PEP'
    } elseif (-not $state.Contains('ImageTimeDateStamp')) {
        Write-Result 'image-identity' 'FAIL' 'the Boot key has no ImageTimeDateStamp: the running image predates it, i.e. it is older than this package' `
            'install this package (Install-PpmPep.ps1 -PackagePath ...), reboot, and test again'
    } else {
        $running = ConvertTo-UInt32 $state['ImageTimeDateStamp']
        $compared = [ordered]@{}
        if ($PackagePath) {
            $packageImage = Join-Path $PackagePath $PpmPepDriverFile
            if (Test-Path -LiteralPath $packageImage -PathType Leaf) { $compared[$packageImage] = Get-PeTimeDateStamp $packageImage }
        }
        if ($null -ne $imagePath -and (Test-Path -LiteralPath $imagePath -PathType Leaf)) { $compared[$imagePath] = Get-PeTimeDateStamp $imagePath }
        $parts = @($compared.Keys | ForEach-Object {
                $stamp = $compared[$_]
                if ($null -eq $stamp) { "$_ is no PE image" } else { '{0} 0x{1:X8}' -f $_, $stamp }
            })
        $identityDetail = 'running image 0x{0:X8}; {1}' -f $running, $(if ($parts.Count -gt 0) { $parts -join '; ' } else { 'no file to compare with (pass -PackagePath)' })
        $stale = @($compared.Keys | Where-Object { $compared[$_] -ne $running })
        if ($compared.Count -eq 0) {
            Write-Result 'image-identity' 'INFO' $identityDetail
        } elseif ($stale.Count -eq 0) {
            Write-Result 'image-identity' 'PASS' $identityDetail
        } else {
            Write-Result 'image-identity' 'FAIL' "the running image is not $($stale -join ' or '): $identityDetail" `
                'reboot: a registered PEP is never unloaded, the installed image loads at the next boot (if it persists, reinstall the package)'
        }
    }
}

# --- Driver Verifier --------------------------------------------------------------------------
$ErrorActionPreference = 'Continue'
$verifierOutput = (& verifier.exe /query 2>&1 | Out-String)
$ErrorActionPreference = 'Stop'
$verifierOutput | Set-Content -LiteralPath (Join-Path $OutputDirectory 'verifier-query.txt') -Encoding UTF8
if ($verifierOutput -match [regex]::Escape($PpmPepDriverFile)) {
    Write-Result 'verifier' 'INFO' "Driver Verifier is verifying $PpmPepDriverFile this boot"
} elseif ($RequireVerifier) {
    Write-Result 'verifier' 'FAIL' "Driver Verifier is not verifying $PpmPepDriverFile" 'run .\scripts\Set-PpmPepVerifier.ps1 -Reboot (or it turned itself off after a failed boot: see events)'
} else {
    Write-Result 'verifier' 'INFO' "Driver Verifier is not verifying $PpmPepDriverFile"
}

# --- events since boot ----------------------------------------------------------------------
$scmEvents = @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; ProviderName = 'Service Control Manager'; Id = 7000, 7026; StartTime = $bootTime } -ErrorAction SilentlyContinue |
        Where-Object { $_.Message -match [regex]::Escape($PpmPepService) -or $_.Message -match [regex]::Escape($PpmPepServiceDisplayName) })
$bugchecks = @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; Id = 1001; StartTime = $bootTime } -ErrorAction SilentlyContinue |
        Where-Object { $_.ProviderName -eq 'Microsoft-Windows-WER-SystemErrorReporting' })
if ($scmEvents.Count -gt 0) {
    Write-Result 'events' 'FAIL' ((@($scmEvents | Select-Object -First 3) | ForEach-Object { "SCM $($_.Id): $($_.Message)" }) -join ' | ') `
        'the status in the message says why the load failed (test signing? HVCI? a DriverEntry failure: see the boot trace)'
} elseif ($bugchecks.Count -gt 0) {
    Write-Result 'events' 'WARN' "the system reported a bugcheck at this boot: $($bugchecks[0].Message)"
} else {
    Write-Result 'events' 'PASS' 'no load failure or bugcheck reported since boot'
}

# --- performance counters -------------------------------------------------------------------
if ($Samples -gt 0) {
    $csv = Join-Path $OutputDirectory 'counters.csv'
    Write-Host "Sampling $(@($CounterPaths) + @($IdleCounterPaths) -join ', ') ($Samples x $IntervalSeconds s) into $csv; leave the machine idle meanwhile"
    $arguments = @($CounterPaths) + @($IdleCounterPaths) + @('-si', "$IntervalSeconds", '-sc', "$Samples", '-f', 'CSV', '-o', $csv, '-y')
    $ErrorActionPreference = 'Continue'
    & typeperf.exe @arguments 2>&1 | Out-Null
    $ErrorActionPreference = 'Stop'
    if ($LASTEXITCODE -ne 0 -or -not (Test-Path -LiteralPath $csv)) {
        Write-Result 'perf-counters' 'FAIL' "typeperf failed with exit code $LASTEXITCODE" 'on a localized Windows pass the localized names with -CounterPaths'
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
            # The counters exist with or without the PEP: what they show is information.
            Write-Result 'perf-counters' 'INFO' (@($summary) -join '; ')
        } else {
            Write-Result 'perf-counters' 'FAIL' "no usable samples in $csv" 'check the counter names (-CounterPaths) with typeperf -q "\Processor Information"'
        }
        # Windows derives % Processor Performance from the feedback counters the PEP serves:
        # frozen counts read as 0 %, runaway counts far above Highest/Nominal.
        $performanceColumn = @($columns | Where-Object { $_ -match '\(_Total\)' } | Select-Object -First 1)
        $feedbackCount = if ($state.Contains('FeedbackCounterCount')) { [int]$state['FeedbackCounterCount'] } else { 0 }
        if ($feedbackCount -lt 1) {
            Write-Result 'perf-feedback' 'INFO' 'the PEP serves no feedback counters: nothing to compare'
        } elseif ($performanceColumn.Count -eq 0) {
            Write-Result 'perf-feedback' 'FAIL' "no _Total column in $csv" 'pass the % Processor Performance counter first in -CounterPaths'
        } else {
            $column = $performanceColumn[0]
            $values = @($rows | ForEach-Object { $_.$column } | Where-Object { $_ -match '^\s*[0-9.]+\s*$' } | ForEach-Object { [double]$_ })
            $nominalPerf = [double](ConvertTo-UInt32 $state['NominalPerformance'])
            $highestPerf = [double](ConvertTo-UInt32 $state['HighestPerformance'])
            $ceiling = if ($nominalPerf -gt 0) { 110.0 * $highestPerf / $nominalPerf } else { 0 }
            $average = if ($values.Count -gt 0) { ($values | Measure-Object -Average).Average } else { 0 }
            $maximum = if ($values.Count -gt 0) { ($values | Measure-Object -Maximum).Maximum } else { 0 }
            $feedbackDetail = '{0}: avg {1:N1} %, max {2:N1} % over {3} samples; ceiling {4:N1} % (110 % of Highest/Nominal)' -f $column, $average, $maximum, $values.Count, $ceiling
            if ($values.Count -gt 0 -and $average -gt 0 -and $maximum -le $ceiling) {
                # Windows computes the counter with or without the PEP (its processor driver reads
                # the hardware itself), so a plausible value does not show the PEP's counts are used.
                Write-Result 'perf-feedback' 'INFO' "$feedbackDetail; in range, which Windows also shows without this PEP"
            } else {
                Write-Result 'perf-feedback' 'FAIL' $feedbackDetail 'reboot once with Parameters\SkipRegistration = 1 and sample again: a normal reading then means the counts this PEP serves are frozen or runaway (take a kernel debugger, !ppmperf, and report with Export-PpmPepLogs.ps1)'
            }
        }

        # Deep C-state residency of every processor instance (not the _Total aggregates).
        $residency = foreach ($path in $IdleCounterPaths) {
            $leaf = ($path -split '\\')[-1]
            $perInstance = @($columns | Where-Object { ($_ -split '\\')[-1] -eq $leaf -and $_ -notmatch '_Total' } | ForEach-Object {
                    $column = $_
                    $values = @($rows | ForEach-Object { $_.$column } | Where-Object { $_ -match '^\s*[0-9.]+\s*$' } | ForEach-Object { [double]$_ })
                    if ($values.Count -gt 0) { ($values | Measure-Object -Average).Average } else { 0.0 }
                })
            , $perInstance
        }
        $c1 = @($residency[0]); $c2 = @($residency[1]); $c3 = @($residency[2])
        if ($c2.Count -eq 0 -or $c2.Count -ne $c3.Count) {
            Write-Result 'idle-states' 'FAIL' "no per-processor C-state columns in $csv" 'on a localized Windows pass the localized % C1/C2/C3 Time names with -IdleCounterPaths'
        } else {
            $deep = 0..($c2.Count - 1) | ForEach-Object { $c2[$_] + $c3[$_] }
            $entered = @($deep | Where-Object { $_ -gt 0 }).Count
            $mean = { param($list) if (@($list).Count -gt 0) { (@($list) | Measure-Object -Average).Average } else { 0.0 } }
            $idleDetail = 'over {0} processors: C1 {1:N2} %, C2 {2:N2} %, C3 {3:N2} % of the time on average; {4} entered C2 or C3' -f $c2.Count, (& $mean $c1), (& $mean $c2), (& $mean $c3), $entered
            if ($entered -gt 0) {
                Write-Result 'idle-states' 'PASS' $idleDetail
            } elseif ($ExpectDeepCStates) {
                Write-Result 'idle-states' 'FAIL' "no processor entered a C-state deeper than C1 although the machine offers them: $idleDetail" `
                    'boot once with Parameters\SkipRegistration = 1 and test again: if C2/C3 come back, owning the processors with IdleStateCount 0 costs this machine its deep C-states (docs/architecture.md, "Idle states"): uninstall, and report with Export-PpmPepLogs.ps1'
            } else {
                Write-Result 'idle-states' 'WARN' "no processor entered a C-state deeper than C1 (a VM usually offers only C1; pass -ExpectDeepCStates where the machine offers more): $idleDetail"
            }
        }
    }
}

# --- summary --------------------------------------------------------------------------------
$results | Export-Csv -LiteralPath (Join-Path $OutputDirectory 'results.csv') -NoTypeInformation -Encoding UTF8
$results | Format-Table -AutoSize -Wrap | Out-String -Width 240 | Write-Host
$failed = @($results | Where-Object { $_.Result -eq 'FAIL' })
foreach ($failure in $failed) {
    Write-Host "FAIL $($failure.Check): $($failure.Action)"
}
if ($failed.Count -eq 0) {
    Write-Host "PASS ($($results.Count) checks; results in $OutputDirectory)"
    exit 0
}
Write-Host "FAIL: $(($failed | ForEach-Object { $_.Check }) -join ', ') (results in $OutputDirectory)"
exit 1
