//! The default processor patterns against the names real x86 firmware gives processors and the
//! names it gives other devices PoFx may offer a PEP.
//!
//! Processor names: Intel client and server firmware (`\_PR.CPU0`, `\_PR.CP00`, ACPI0007
//! `\_SB.PR00`, socket scopes `\_SB.SCK0.CP00` / `\_SB.SCK0.C000`), AMD firmware, which numbers
//! processors in hexadecimal (`\_PR.P000` … `\_PR.P00A`, `\_SB.P00A`, `\_SB.C00B`, and the
//! `\_SB.PLTF.C000` platform container of current AMD systems), and QEMU's `\_SB.CPUS.C000`.
//! Other names: PCI root bridges (`\_SB.PC00` on current Intel firmware, `\_SB.PCI0`), the PEP and
//! platform devices, containers, and devices *below* a processor.

use ppm_engine::device_id::DeviceIdPatterns;

fn accepted(id: &str) -> bool {
    let units: Vec<u16> = id.encode_utf16().collect();
    DeviceIdPatterns::defaults().matches(&units)
}

#[test]
fn processor_names_from_real_firmware_are_accepted() {
    let processors = [
        "\\_PR.CPU0",
        "\\_PR.CPU7",
        "\\_PR.CPUF",
        "\\_PR.CP00",
        "\\_PR.CP1F",
        "\\_PR.P000",
        "\\_PR.P009",
        "\\_PR.P00A",
        "\\_PR.P00B",
        "\\_PR.P0FF",
        "\\_SB.CPU0",
        "\\_SB.CP00",
        "\\_SB.PR00",
        "\\_SB.PR0B",
        "\\_SB.PR23",
        "\\_SB.P000",
        "\\_SB.P00A",
        "\\_SB.P01F",
        "\\_SB.P7FF",
        "\\_SB.C000",
        "\\_SB.C00B",
        "\\_SB.C7FF",
        "\\_SB.SCK0.CP00",
        "\\_SB.SCK1.CP3F",
        "\\_SB.SCK0.C000",
        "\\_SB.PLTF.C000",
        "\\_SB.PLTF.C01F",
        "\\_SB.CPUS.C000",
        "\\_SB.CPUS.C00A",
        // Device ids are compared case-insensitively.
        "\\_sb.p00a",
    ];
    let declined: Vec<&str> = processors.into_iter().filter(|id| !accepted(id)).collect();
    assert!(declined.is_empty(), "processors declined: {declined:?}");
}

#[test]
fn other_devices_are_declined() {
    let others = [
        "\\_SB.PC00",
        "\\_SB.PC01",
        "\\_SB.PCI0",
        "\\_SB.PC00.GFX0",
        "\\_SB.PCI0.LPCB.EC0",
        "\\_SB.PEPD",
        "\\_SB.PEP",
        "\\_SB.PEP0",
        "\\_SB.PWRB",
        "\\_SB.PLTF",
        "\\_SB.CPUS",
        "\\_SB.SCK0",
        "\\_SB.FUR0",
        "\\_SB.I2CA",
        "\\_SB.BAT0",
        "\\_SB.LID0",
        "\\_SB.UBTC",
        "\\_PR",
        // Below a processor: never the processor itself.
        "\\_PR.CPU0.C1",
        "\\_SB.PR00.TPSS",
        "\\_SB.P00A.AAAA",
        "\\_SB.PLTF.C000.CST0",
        // Five-character segments no firmware can have.
        "\\_SB.CPU10",
        "\\_SB.P0000",
        "\\_SB.C0000",
    ];
    let accepted: Vec<&str> = others.into_iter().filter(|id| accepted(id)).collect();
    assert!(accepted.is_empty(), "non-processors accepted: {accepted:?}");
}
