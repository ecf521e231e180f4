#!/usr/bin/env python3
"""Writes the seed corpora of the ppm-engine fuzz targets (fuzz/corpus/<target>/).

The targets decode their input with `arbitrary` 1.x (derive): integers little-endian, `bool` =
byte & 1, `Option` = bool then value, collections = a `true` byte before each element (the
input's last collection runs to the end of the data), enums = a little-endian u32 `t` selecting
variant `(t * variants) >> 32`, struct fields in declaration order. This script mirrors the
input types field by field; `cargo fuzz fmt <target> <seed>` prints how a seed decodes.

Run from anywhere: python3 fuzz/corpus/gen_seeds.py
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


class Enc:
    def __init__(self):
        self.b = bytearray()

    def u8(self, v):
        self.b += struct.pack("<B", v)

    def u16(self, v):
        self.b += struct.pack("<H", v)

    def u32(self, v):
        self.b += struct.pack("<I", v)

    def u64(self, v):
        self.b += struct.pack("<Q", v)

    def bool(self, v):
        self.u8(1 if v else 0)

    def variant(self, index, count):
        tag = -(-(index << 32) // count)
        assert (tag * count) >> 32 == index
        self.u32(tag)

    def option(self, value, encode):
        self.bool(value is not None)
        if value is not None:
            encode(value)

    def vec(self, items, encode):
        for item in items:
            self.bool(True)
            encode(item)
        self.bool(False)


# ---- shared shapes (fuzz/src) ---------------------------------------------------------------

VENDORS = ["Intel", "Amd", "Hygon", "Other"]


def regs(e, eax=0, ebx=0, ecx=0, edx=0):
    for v in (eax, ebx, ecx, edx):
        e.u32(v)


def cpu_setup(e, c):
    vendor = c.get("vendor", "Intel")
    if isinstance(vendor, tuple):
        e.variant(3, 4)
        for w in vendor:
            e.u32(w)
    else:
        e.variant(VENDORS.index(vendor), 4)
    e.u32(c.get("max_leaf", 0x16))
    for leaf in ("features", "power", "pmu", "frequency"):
        regs(e, **c.get(leaf, {}))
    e.u32(c.get("max_extended", 0x8000_0008))
    for leaf in ("extended_power", "extended_features"):
        regs(e, **c.get(leaf, {}))


MSR_FIELDS = ["platform_info", "turbo_ratio_limit", "pm_enable", "hwp_capabilities", "cppc_cap1",
              "fixed_ctr_ctrl", "perf_global_ctrl"]


def msr_setup(e, m):
    for field in MSR_FIELDS:
        e.option(m.get(field), e.u64)


def counter_setup(e, c):
    e.u64(c.get("start_actual", 1000))
    e.u64(c.get("start_nominal", 1000))
    e.u16(c.get("actual_per_us", 3000))
    e.u16(c.get("nominal_per_us", 2000))
    e.u8(c.get("ticks_per_us", 10))
    e.u64(c.get("frequency", 10_000_000))
    e.bool(c.get("timestamp", True))
    e.bool(c.get("fixed_reserved", False))
    e.bool(c.get("fault_at_start", False))


def config_setup(e, c):
    e.bool(c.get("disabled", False))
    e.u8(c.get("source", 0))
    e.bool(c.get("performance_view", False))
    e.option(c.get("nominal_mhz"), e.u32)
    e.option(c.get("perf"), lambda p: [e.u32(x) for x in p])
    e.option(c.get("patterns"), lambda ps: e.vec(ps, lambda p: e.vec([ord(ch) for ch in p], e.u16)))
    e.u32(c.get("latency", 0))


def setup(e, s):
    cpu_setup(e, s.get("cpu", {}))
    msr_setup(e, s.get("msrs", {}))
    counter_setup(e, s.get("counters", {}))
    config_setup(e, s.get("config", {}))
    e.u8(s.get("capacity", 8))
    e.u32(s.get("processor", 0))


INTEL_HWP = {
    "cpu": {
        "vendor": "Intel", "max_leaf": 0x16,
        "features": {"eax": 0x000A_0655},
        "power": {"eax": 0x82, "ecx": 1},
        "pmu": {"eax": 0x0730_0805, "edx": 3 | 48 << 5},
        "frequency": {"eax": 2000},
        "extended_power": {"edx": 1 << 8},
    },
    "msrs": {"platform_info": 0x14 << 8 | 0x08 << 40 | 0x04 << 48, "turbo_ratio_limit": 0x28,
             "pm_enable": 1, "hwp_capabilities": 0x0408_1428},
}
AMD_ZEN = {
    "cpu": {
        "vendor": "Amd", "max_leaf": 0x10,
        "features": {"eax": 0x0080_0F12},
        "power": {"ecx": 1},
        "extended_power": {"edx": 1 << 10 | 1 << 8},
        "extended_features": {"ebx": 1 << 27},
    },
    "msrs": {"cppc_cap1": 0xFF80_4010},
}
VM_FIXED_PMC = {
    "cpu": {
        "vendor": "Intel", "max_leaf": 0x0A,
        "features": {"eax": 0x000A_0655, "ecx": 1 << 31},
        "power": {},
        "pmu": {"eax": 0x0730_0802, "edx": 3 | 48 << 5},
    },
    "msrs": {"fixed_ctr_ctrl": 0, "perf_global_ctrl": 0},
    "counters": {"fixed_reserved": True, "timestamp": True},
}
NO_COUNTERS = {
    "cpu": {"vendor": (0x6E65_4778, 0x6E69_7569, 0x5854_4D65), "max_leaf": 1,
            "features": {"eax": 0x600}},
    "config": {"nominal_mhz": 2400},
}


def with_(base, **changes):
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in base.items()}
    for key, value in changes.items():
        merged.setdefault(key, {})
        merged[key].update(value) if isinstance(value, dict) else merged.__setitem__(key, value)
    return merged


ID_VARIANTS = ["Processor", "Other", "Raw"]


def id_spec(e, spec):
    kind = spec[0]
    e.variant(ID_VARIANTS.index(kind), 3)
    if kind == "Processor":
        _, shape, number, lowercase = spec
        e.u8(shape)
        e.u16(number)
        e.bool(lowercase)
    elif kind == "Other":
        e.u8(spec[1])
    else:
        e.vec([ord(ch) for ch in spec[1]], e.u16)


def cpu(n, shape=0, lowercase=False):
    return ("Processor", shape, n, lowercase)


HANDLES = ["Null", "Live", "Stale", "Forged", "Flipped"]


def handle_spec(e, spec):
    kind = spec[0]
    e.variant(HANDLES.index(kind), 5)
    if kind in ("Live", "Stale"):
        e.u8(spec[1])
    elif kind == "Forged":
        e.u64(spec[1])
    elif kind == "Flipped":
        e.u8(spec[1])
        e.u8(spec[2])


PPM_IDS = {"QUERY_CAPABILITIES": 0x01, "QUERY_FEEDBACK_COUNTERS": 0x09, "FEEDBACK_READ": 0x0A,
           "QUERY_PERF_CAPABILITIES": 0x0B, "PERF_SET": 0x0D, "PERF_CHECK_COMPLETE": 0x21,
           "ENTER_SYSTEM_STATE": 0x27, "RESUME_FROM_SYSTEM_STATE": 0x28,
           "QUERY_DISCRETE_PERF_STATES": 0x29, "QUERY_DOMAIN_INFO": 0x2A, "IDLE_EXECUTE": 0x05}
DPM_IDS = [0x01, 0x02, 0x03, 0x04, 0x05, 0x0D, 0x0E, 0x0F, 0x10, 0x12, 0x13, 0x15, 0x19, 0x1A,
           0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28]
DPM_NAMES = {"PREPARE": 0x01, "ABANDON": 0x02, "REGISTER": 0x03, "UNREGISTER": 0x04,
             "POWER_STATE": 0x05, "WORK": 0x0D, "STARTED": 0x12}


def ppm_notification(e, n):
    if isinstance(n, str):
        e.variant(0, 2)
        e.u8(PPM_IDS[n] - 1)
    else:
        e.variant(1, 2)
        e.u32(n)


def dpm_notification(e, n):
    if isinstance(n, str):
        e.variant(0, 2)
        e.u8(DPM_IDS.index(DPM_NAMES[n]))
    else:
        e.variant(1, 2)
        e.u32(n)


def fill(e, data=b"", null=False, extra=0, misalign=0, pad=0):
    e.u8(0 if null else 0xFF)
    e.u8(extra)
    e.u8(misalign)
    e.u8(pad)
    e.vec(list(data), e.u8)


HW = ["SetProcessor", "Advance", "SetCounters", "Fault"]


def hw_op(e, op):
    kind = op[0]
    e.variant(HW.index(kind), 4)
    if kind == "SetProcessor":
        e.u32(op[1])
    elif kind == "Advance":
        e.u8(op[1])
        e.u32(op[2])
        e.u32(op[3])
    elif kind == "SetCounters":
        e.u8(op[1])
        e.u64(op[2])
        e.u64(op[3])
    else:
        e.u8(op[1])
        e.bool(op[2])


def le32(*values):
    return b"".join(struct.pack("<I", v) for v in values)


# ---- ppm_notification -----------------------------------------------------------------------

PPM_OPS = ["Notify", "Hw", "Register", "Unregister"]


def ppm_input(s, devices, ops):
    e = Enc()
    setup(e, s)
    e.vec(devices, lambda d: id_spec(e, d))
    for op in ops:
        e.bool(True)
        kind = op[0]
        e.variant(PPM_OPS.index(kind), 4)
        if kind == "Notify":
            _, handle, notification, data, index = op
            handle_spec(e, handle)
            ppm_notification(e, notification)
            fill(e, **data)
            e.option(index, e.u8)
        elif kind == "Hw":
            hw_op(e, op[1])
        elif kind == "Register":
            id_spec(e, op[1])
        else:
            e.u8(op[1])
    return bytes(e.b)


def notify(handle, notification, index=None, **data):
    return ("Notify", handle, notification, data, index)


READ = "FEEDBACK_READ"
LIVE0 = ("Live", 0)

PPM_SEEDS = {
    "intel-hwp-queries-and-reads": ppm_input(INTEL_HWP, [cpu(0), cpu(1)], [
        notify(LIVE0, "QUERY_CAPABILITIES"),
        notify(LIVE0, "QUERY_FEEDBACK_COUNTERS", data=le32(1)),
        notify(LIVE0, "QUERY_PERF_CAPABILITIES"),
        notify(("Null",), "QUERY_DOMAIN_INFO", data=le32(0)),
        notify(LIVE0, READ, index=0),
        ("Hw", ("Advance", 0, 3000, 2000)),
        notify(LIVE0, READ, index=0),
        ("Hw", ("SetProcessor", 1)),
        notify(LIVE0, READ, index=0),
        notify(("Live", 1), READ, index=0),
    ]),
    "performance-view-two-counters": ppm_input(
        with_(INTEL_HWP, config={"performance_view": True}), [cpu(3, shape=1)], [
            notify(LIVE0, "QUERY_FEEDBACK_COUNTERS", data=le32(2)),
            notify(LIVE0, READ, index=1),
            ("Hw", ("Advance", 0, 30, 20)),
            notify(LIVE0, READ, index=0),
            notify(LIVE0, READ, index=2),
        ]),
    "stale-forged-null-handles": ppm_input(INTEL_HWP, [cpu(0), cpu(1)], [
        notify(LIVE0, READ, index=0),
        ("Unregister", 0),
        notify(("Stale", 0), READ, index=0),
        notify(("Forged", 0xFFFF_0001), READ, index=0),
        notify(("Flipped", 0, 32), READ, index=0),
        notify(("Null",), READ, index=0),
        ("Register", cpu(0)),
        notify(("Live", 1), READ, index=0),
    ]),
    "resets-wraps-faults": ppm_input(INTEL_HWP, [cpu(0)], [
        notify(LIVE0, READ, index=0),
        ("Hw", ("SetCounters", 0, 10, 10)),
        notify(LIVE0, READ, index=0),
        ("Hw", ("SetCounters", 0, 0xFFFF_FFFF_FFFF_FF00, 0xFFFF_FFFF_FFFF_FF00)),
        notify(LIVE0, READ, index=0),
        ("Hw", ("Advance", 0, 0x1000, 0x1000)),
        notify(LIVE0, READ, index=0),
        ("Hw", ("Fault", 0, True)),
        notify(LIVE0, READ, index=0),
        notify(LIVE0, "RESUME_FROM_SYSTEM_STATE", data=le32(1)),
        notify(("Null",), "ENTER_SYSTEM_STATE", data=le32(4)),
    ]),
    "amd-read-only-copies": ppm_input(AMD_ZEN, [cpu(0, shape=3), cpu(1, shape=3)], [
        notify(LIVE0, "QUERY_PERF_CAPABILITIES"),
        notify(LIVE0, READ, index=0),
        ("Hw", ("Advance", 0, 4000, 2000)),
        notify(LIVE0, READ, index=0),
    ]),
    "vm-fixed-counters": ppm_input(VM_FIXED_PMC, [cpu(0)], [
        notify(LIVE0, READ, index=0),
        ("Hw", ("Advance", 0, 3000, 2000)),
        notify(LIVE0, READ, index=0),
        ("Hw", ("SetCounters", 0, (1 << 48) - 5, (1 << 48) - 5)),
        notify(LIVE0, READ, index=0),
    ]),
    "no-counters-unknown-ids-odd-buffers": ppm_input(NO_COUNTERS, [cpu(0)], [
        notify(LIVE0, "QUERY_CAPABILITIES"),
        notify(LIVE0, READ, index=0),
        notify(LIVE0, "IDLE_EXECUTE", data=b"\x01" * 8),
        notify(LIVE0, 0, data=b"abc"),
        notify(LIVE0, 0x2C, extra=7),
        notify(LIVE0, 0xFFFF_FFFF),
        notify(LIVE0, "QUERY_CAPABILITIES", null=True),
        notify(LIVE0, "QUERY_PERF_CAPABILITIES", misalign=0xF3),
        notify(LIVE0, "QUERY_DISCRETE_PERF_STATES", data=le32(3)),
        notify(LIVE0, "PERF_SET", extra=4),
    ]),
}

# ---- dpm_notification -----------------------------------------------------------------------

SHAPES = ["Exact", "OddLength", "Short", "NullBuffer", "MisalignedBuffer", "MisalignedString",
          "NullString"]
DPM_OPS = ["Notify", "Read", "Hw"]


def string_spec(e, spec):
    ident, shape = spec[0], spec[1]
    id_spec(e, ident)
    e.variant(SHAPES.index(shape), len(SHAPES))
    if shape in ("Short", "MisalignedString"):
        e.u8(spec[2])
    e.u16(0x100)


def dpm_input(s, ops):
    e = Enc()
    setup(e, s)
    for op in ops:
        e.bool(True)
        kind = op[0]
        e.variant(DPM_OPS.index(kind), 3)
        if kind == "Notify":
            _, notification, string, handle, data, block = op
            dpm_notification(e, notification)
            fill(e, **data)
            string_spec(e, string)
            handle_spec(e, handle)
            e.u64(0x1000)
            e.bool(block)
            e.vec([0x11] * 8, e.u8)
        elif kind == "Read":
            _, handle, index = op
            handle_spec(e, handle)
            e.u8(index)
            fill(e)
        else:
            hw_op(e, op[1])
    return bytes(e.b)


def dpm(notification, ident=cpu(0), shape=("Exact",), handle=("Null",), block=False, **data):
    return ("Notify", notification, (ident,) + shape, handle, data, block)


DPM_SEEDS = {
    "prepare-register-start-unregister": dpm_input(INTEL_HWP, [
        dpm("PREPARE"), dpm("REGISTER", block=True), dpm("STARTED", handle=LIVE0),
        ("Read", LIVE0, 0), ("Hw", ("Advance", 0, 300, 200)), ("Read", LIVE0, 0),
        dpm("UNREGISTER", handle=LIVE0), ("Read", ("Stale", 0), 0),
        dpm("UNREGISTER", handle=("Stale", 0)),
    ]),
    "malformed-device-id-strings": dpm_input(INTEL_HWP, [
        dpm("PREPARE", shape=("OddLength",)), dpm("PREPARE", shape=("Short", 3)),
        dpm("PREPARE", shape=("NullBuffer",)), dpm("PREPARE", shape=("MisalignedBuffer",)),
        dpm("PREPARE", shape=("MisalignedString", 3)), dpm("PREPARE", shape=("NullString",)),
        dpm("REGISTER", shape=("NullString",)), dpm("ABANDON", shape=("NullBuffer",)),
        dpm("PREPARE", ident=("Raw", "\\_SB.CPU\u00e9")), dpm("PREPARE", ident=("Raw", "")),
    ]),
    "table-full-and-abandon": dpm_input(with_(INTEL_HWP, capacity=1), [
        dpm("PREPARE"), dpm("PREPARE", ident=cpu(1)), dpm("REGISTER", ident=cpu(1)),
        dpm("REGISTER"), dpm("ABANDON"), dpm("PREPARE", ident=cpu(1, lowercase=True)),
        dpm("REGISTER", ident=cpu(1)), dpm("ABANDON", ident=cpu(1)),
        dpm("ABANDON", ident=("Other", 0)),
    ]),
    "other-devices-and-unknown-ids": dpm_input(INTEL_HWP, [
        dpm("PREPARE", ident=("Other", 0)), dpm("PREPARE", ident=("Other", 7)),
        dpm("REGISTER", ident=("Other", 0)), dpm("WORK"), dpm("POWER_STATE", handle=LIVE0),
        dpm(0), dpm(0x29, extra=5), dpm(0xFFFF_FFFF), dpm("PREPARE", null=True),
        dpm("REGISTER", misalign=0xF1),
    ]),
    "custom-patterns-many-shapes": dpm_input(
        with_(INTEL_HWP, config={"patterns": ["ACPI\\GenuineIntel_-_*", "\\_SB.SCK#.C###*"]}), [
            dpm("PREPARE", ident=("Other", 7)), dpm("REGISTER", ident=("Other", 7)),
            dpm("PREPARE", ident=cpu(0x1234, shape=6)),
            dpm("REGISTER", ident=cpu(0x1234, shape=6)),
            ("Read", LIVE0, 0), ("Read", ("Live", 1), 0),
        ]),
}

# ---- sequence -------------------------------------------------------------------------------

HARDWARE = ["IntelAperfMperf", "AmdReadOnly", "FixedCounters"]
SEQ_OPS = ["Prepare", "Register", "Abandon", "Unregister", "Started", "Read", "Resume", "Enter",
           "Advance", "Reset", "ResetOne", "Jump", "Fault"]
REFS = ["Live", "Stale", "Forged"]


def handle_ref(e, ref):
    e.variant(REFS.index(ref[0]), 3)
    if ref[0] == "Forged":
        e.u64(ref[1])
    else:
        e.u8(ref[1])


def seq_input(hardware, ops, performance_view=False, capacity=7, start=(1000, 1000)):
    e = Enc()
    kind = hardware[0]
    e.variant(HARDWARE.index(kind), 3)
    if kind == "FixedCounters":
        e.u8(hardware[1])
        e.bool(hardware[2])
    e.bool(performance_view)
    e.u8(capacity)
    e.u32(start[0])
    e.u32(start[1])
    for op in ops:
        e.bool(True)
        kind = op[0]
        e.variant(SEQ_OPS.index(kind), len(SEQ_OPS))
        if kind in ("Prepare", "Register", "Abandon"):
            e.u8(op[1])
        elif kind in ("Unregister", "Started"):
            handle_ref(e, op[1])
        elif kind == "Read":
            handle_ref(e, op[1])
            e.u8(op[2])
            e.u8(op[3])
        elif kind in ("Resume", "Enter"):
            e.option(op[1], lambda r: handle_ref(e, r))
            e.u8(op[2])
        elif kind == "Advance":
            e.u8(op[1])
            e.u32(op[2])
            e.u32(op[3])
        elif kind == "Reset":
            e.u8(op[1])
            e.u16(op[2])
            e.u16(op[3])
        elif kind == "ResetOne":
            e.u8(op[1])
            e.bool(op[2])
            e.u16(op[3])
        elif kind == "Jump":
            e.u8(op[1])
            e.u64(op[2])
            e.u64(op[3])
        else:
            e.u8(op[1])
            e.bool(op[2])
    return bytes(e.b)


def add(device):
    return [("Prepare", device), ("Register", device)]


def rd(ref=("Live", 0), processor=0, index=0):
    return ("Read", ref, processor, index)


SEQ_SEEDS = {
    "bind-and-accumulate": seq_input(("IntelAperfMperf",), add(0) + add(1) + [
        rd(), ("Advance", 0, 300, 200), rd(), rd(processor=1), ("Advance", 1, 50, 40),
        rd(("Live", 1), 1), ("Advance", 1, 50, 40), rd(("Live", 1), 1), rd(("Live", 1), 0),
        ("Advance", 0, 7, 5), rd(),
    ]),
    "resets-and-wraps": seq_input(("IntelAperfMperf",), add(0) + [
        rd(), ("Advance", 0, 3000, 2000), rd(), ("Reset", 0, 10, 10), rd(),
        ("Advance", 0, 30, 20), rd(), ("ResetOne", 0, True, 5), ("Advance", 0, 1000, 0), rd(),
        ("Jump", 0, 0xFFFF_FFFF_FFFF_FFF0, 0xFFFF_FFFF_FFFF_FFF0), rd(),
        ("Advance", 0, 0x20, 0x20), rd(), ("Advance", 0, 3, 2), rd(),
    ]),
    "unregister-reregister-stale": seq_input(("IntelAperfMperf",), add(0) + [
        rd(), ("Advance", 0, 300, 200), rd(), ("Unregister", ("Live", 0)), rd(("Stale", 0)),
        ("Unregister", ("Stale", 0)), ("Started", ("Stale", 0)),
    ] + add(0) + [rd(("Live", 0), 2), ("Advance", 2, 30, 20), rd(("Live", 0), 2),
                  rd(("Forged", 0x1_0000_0001)), ("Started", ("Live", 0))]),
    "resume-faults-system-states": seq_input(("IntelAperfMperf",), add(0) + add(1) + [
        rd(), ("Advance", 0, 30, 20), rd(), ("Resume", ("Live", 0), 1), ("Advance", 0, 9999, 9999),
        rd(), ("Fault", 0, True), rd(), ("Fault", 0, False), ("Advance", 0, 3, 2), rd(),
        ("Enter", None, 4), ("Resume", None, 1), rd(), ("Resume", ("Stale", 0), 1),
        ("Resume", None, 42), rd(("Live", 1), 3),
    ], performance_view=True),
    "abandon-and-capacity": seq_input(("IntelAperfMperf",), add(0) + [
        ("Prepare", 1), ("Prepare", 2), ("Prepare", 10), ("Register", 2), ("Abandon", 1),
        ("Abandon", 0), rd(), ("Abandon", 11), ("Prepare", 0), ("Prepare", 0), ("Register", 0),
        rd(), ("Abandon", 0),
    ], capacity=1),
    "amd-read-only": seq_input(("AmdReadOnly",), add(3) + [
        rd(processor=3), ("Advance", 3, 4000, 2000), rd(processor=3), ("Reset", 3, 0, 0),
        rd(processor=3),
    ]),
    "fixed-counters-wrap": seq_input(("FixedCounters", 16, True), add(0) + [
        rd(), ("Advance", 0, 3000, 2000), rd(), ("Jump", 0, (1 << 48) - 10, (1 << 48) - 10),
        rd(), ("Advance", 0, 100, 100), rd(), ("Reset", 0, 0, 0), rd(),
    ]),
}


# ---- scenario_parser ------------------------------------------------------------------------

SIM_SCENARIOS = os.path.join(HERE, "..", "..", "sim", "scenarios")
SCENARIO_FILES = ["single.toml", "counter-reset.toml", "near-wrap.toml", "amd-cppc.toml",
                  "wrong-processor.toml", "performance-view.toml"]
MINIMAL = """name = "x"
[platform]
processors = 1
[pofx]
duration_ms = 100
sample_interval_ms = 15
"""


def scenario_seeds():
    seeds = {}
    for name in SCENARIO_FILES:
        path = os.path.join(SIM_SCENARIOS, name)
        if os.path.exists(path):
            with open(path, "rb") as source:
                seeds[name] = source.read()
    seeds["minimal.toml"] = MINIMAL.encode()
    seeds["unknown-key.toml"] = (MINIMAL + "bogus = 1\n").encode()
    seeds["out-of-range.toml"] = MINIMAL.replace("processors = 1", "processors = 4096").encode()
    seeds["wrong-type.toml"] = MINIMAL.replace("duration_ms = 100", 'duration_ms = "long"').encode()
    seeds["syntax-error.toml"] = b'name = "x\n[platform\n'
    seeds["events-and-phases.toml"] = (MINIMAL + """[[phase]]
start_ms = 0
processors = [0]
frequency_mhz = 3200
busy_percent = 100
[[event]]
at_ms = 50
kind = "counter-near-wrap"
processors = "all"
""").encode()
    return seeds


def write(target, seeds):
    directory = os.path.join(HERE, target)
    os.makedirs(directory, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(directory, name), "wb") as out:
            out.write(data)


if __name__ == "__main__":
    write("ppm_notification", PPM_SEEDS)
    write("dpm_notification", DPM_SEEDS)
    write("sequence", SEQ_SEEDS)
    write("scenario_parser", scenario_seeds())
