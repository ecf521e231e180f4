"""The kernel and KMDF calls of the image, each translated into one host request to ppm-sim
(docs/image-backend.md, "Host requests"). A mixin of runner.Runner: `self.arg(n)` is the n-th
argument of the call being made, `self.ask` the host request, `self.read`/`self.write` emulated
memory. A handler returns the return value, RAX or X0 (None: leave it). Each is written
once for both architectures: `self.arg(n)` follows the image's calling convention."""

from __future__ import annotations

import sys
from typing import Any

from . import printf
from .ddi_rules import POOL_FLAG_PAGED
from .layout import (
    DRIVER_OBJECT,
    DRIVER_UNLOAD,
    EVENT_DATA_DESCRIPTOR_BYTES,
    EVENT_DATA_DESCRIPTOR_SIZE,
    GROUP_AFFINITY_GROUP,
    KMDF_MAX_FUNCTIONS,
    KMDF_STUBS,
    KMDF_TABLE,
    KMODE_EXCEPTION_NOT_HANDLED,
    MAX_COPY_BYTES,
    PAGE,
    PEP_INFORMATION_SIZE_FIELD,
    PEP_KERNEL_INFORMATION_SIZE_FIELD,
    POFX_STUBS,
    POOL,
    POOL_LIMIT,
    STATUS_INVALID_PARAMETER,
    STATUS_SUCCESS,
    UNLOAD_THUNK,
    WDF_BIND_INFO_FUNC_COUNT,
    WDF_BIND_INFO_FUNC_TABLE,
    WDF_DEVICE_STATE_FIELDS,
    WDF_DRIVER_CONFIG_DEVICE_ADD,
    WDF_DRIVER_CONFIG_UNLOAD,
    WDF_GLOBALS,
    WDFDEVICE,
    WDFDRIVER,
    Crash,
    Fatal,
)
from .protocol import ProtocolError, hex_bytes, integer, unsigned
from .verifier import SLACK

EVENT_CONTROL_CODE_ENABLE_PROVIDER = 1
MAX_COUNTERS = 64
MAX_ETW_DESCRIPTORS = 128
MAX_ETW_BYTES = 0x10000
MAX_INFORMATION_BYTES = 0x1000
STATUS_INSUFFICIENT_RESOURCES = 0xC000009A
SLACK_BYTE = bytes([SLACK])


def _status(answer: dict[str, Any]) -> int:
    return integer(answer, "status", 32)


class Services:
    # ---- C library ----------------------------------------------------------------------

    def _length(self, index: int) -> int:
        length = self.arg(index)
        if length > MAX_COPY_BYTES:
            raise Crash(
                KMODE_EXCEPTION_NOT_HANDLED,
                [0xC0000005, self._rip(), 0, 0],
                f"memory operation of {length} bytes (limit {MAX_COPY_BYTES})",
            )
        return length

    def imp_memcpy(self) -> int:
        self.write(self.arg(0), self.read(self.arg(1), self._length(2)))
        return self.arg(0)

    imp_memmove = imp_memcpy

    def imp_memset(self) -> int:
        self.write(self.arg(0), bytes([self.arg(1) & 0xFF]) * self._length(2))
        return self.arg(0)

    def imp_memcmp(self) -> int:
        length = self._length(2)
        a, b = self.read(self.arg(0), length), self.read(self.arg(1), length)
        for x, y in zip(a, b, strict=True):
            if x != y:
                return (x - y) & 0xFFFFFFFF
        return 0

    # ---- ntoskrnl -----------------------------------------------------------------------

    def imp_KeBugCheckEx(self) -> int:
        code = self.arg32(0)
        raise Crash(
            code,
            [self.arg(n) for n in range(1, 5)],
            "KeBugCheckEx",
            self.return_address(),
        )

    def imp___C_specific_handler(self) -> int:
        raise Fatal("the image called __C_specific_handler itself (only the dispatcher may)")

    def imp_DbgPrintEx(self) -> int:
        component, level, fmt = self.arg32(0), self.arg32(1), self.arg(2)
        position = [3]

        def next_arg() -> int:
            value = self.arg(position[0])
            position[0] += 1
            return value

        text = printf.format_message(
            self.c_string(fmt).encode("latin-1"), next_arg, self.c_string, self.wide_string
        )
        self.ask({"host": "log", "component": component, "level": level, "text": text})
        return STATUS_SUCCESS

    def imp_ExAllocatePool2(self) -> int:
        flags, size, tag = self.arg(0), self.arg(1), self.arg32(2)
        block = None
        if size > POOL_LIMIT:
            address = None
        elif self.verifier is not None:
            # Driver Verifier's special pool (verifier.py): the block ends at the end of its
            # own pages, the page after it stays unmapped, the slack before it is filled to be
            # checked at free.
            block = self.verifier.place(size, self.pool_next)
            address = block.address if block is not None else None
        else:
            address = (self.pool_next + 15) & ~15
            if address + size > POOL + POOL_LIMIT:
                address = None
        if address is None:
            print(f"image-runner: pool limit of {POOL_LIMIT} bytes reached", file=sys.stderr)
            return 0
        answer = self.ask(
            {"host": "pool_allocate", "flags": flags, "bytes": size, "tag": tag, "address": address}
        )
        if not answer.get("granted"):
            return 0
        if block is not None:
            self.uc.mem_map(block.first_page, block.pages * PAGE)
            self.uc.mem_write(block.first_page, SLACK_BYTE * (address - block.first_page))
            block.paged = bool(flags & POOL_FLAG_PAGED)
            self.pool_next = block.first_page + (block.pages + 1) * PAGE
            self.verifier.allocated(block)
            return address
        end = address + max(size, 1)
        if end > self.pool_mapped:
            top = (end + PAGE - 1) & ~(PAGE - 1)
            self.uc.mem_map(self.pool_mapped, top - self.pool_mapped)
            self.pool_mapped = top
        self.uc.mem_write(address, b"\0" * size)
        self.pool_next = end
        return address

    def imp_ExFreePool(self) -> None:
        address = self.arg(0)
        if self.verifier is not None:
            if self.verifier.skip_frees:
                return
            block = self.verifier.blocks.get(address)
            slack = b""
            if block is not None:
                slack = self.read(block.first_page, block.address - block.first_page)
            site = self.return_address()
            block = self.verifier.free(address, site, slack)
            self.uc.mem_unmap(block.first_page, block.pages * PAGE)
        self.ask({"host": "pool_free", "address": address})

    def imp_KeGetCurrentProcessorNumberEx(self) -> int:
        answer = self.current_processor()
        self._processor_number(self.arg(0), answer)
        return integer(answer, "index", 32)

    def _processor_number(self, address: int, answer: dict[str, Any]) -> None:
        if address:
            group, number = integer(answer, "group", 16), integer(answer, "number", 8)
            self.write(address, group.to_bytes(2, "little") + bytes([number, 0]))

    def imp_KeGetProcessorNumberFromIndex(self) -> int:
        answer = self.ask({"host": "processor_number", "index": self.arg32(0)})
        status = _status(answer)
        if status == STATUS_SUCCESS:
            self._processor_number(self.arg(1), answer)
        return status

    def _count(self, which: str) -> int:
        answer = self.ask(
            {"host": "processor_count", "which": which, "group": self.arg(0) & 0xFFFF}
        )
        return integer(answer, "count", 32)

    def imp_KeQueryMaximumProcessorCountEx(self) -> int:
        return self._count("maximum")

    def imp_KeQueryActiveProcessorCountEx(self) -> int:
        return self._count("active")

    def _affinity(self, address: int) -> tuple[int, int]:
        return self.u16(address + GROUP_AFFINITY_GROUP), self.u64(address)

    def imp_KeSetSystemGroupAffinityThread(self) -> None:
        group, mask = self._affinity(self.arg(0))
        answer = self.ask({"host": "set_affinity", "group": group, "mask": mask})
        previous = self.arg(1)
        if previous:
            self.write(
                previous,
                integer(answer, "mask").to_bytes(8, "little")
                + integer(answer, "group", 16).to_bytes(2, "little")
                + b"\0" * 6,
            )

    def imp_KeRevertToUserGroupAffinityThread(self) -> None:
        group, mask = self._affinity(self.arg(0))
        self.ask({"host": "revert_affinity", "group": group, "mask": mask})

    def imp_PoFxRegisterPluginEx(self) -> int:
        information, flags, kernel = self.arg(0), self.arg(1), self.arg(2)
        info_size = (
            min(self.u16(information + PEP_INFORMATION_SIZE_FIELD), MAX_INFORMATION_BYTES)
            if information
            else 0
        )
        kernel_size = (
            min(self.u16(kernel + PEP_KERNEL_INFORMATION_SIZE_FIELD), MAX_INFORMATION_BYTES)
            if kernel
            else 0
        )
        answer = self.ask(
            {
                "host": "register_plugin",
                "information": self.read(information, info_size).hex() if information else "",
                "flags": flags,
                "kernel_information_bytes": kernel_size,
            }
        )
        status = _status(answer)
        if status == STATUS_SUCCESS and kernel:
            data = bytearray(hex_bytes(answer, "kernel_information")[:kernel_size])
            functions = answer.get("functions", [])
            if not isinstance(functions, list):
                raise Fatal("register_plugin: 'functions' must be a list of offsets")
            for offset in functions:
                offset = unsigned(offset, "offset", 32)
                if offset + 8 > len(data) or offset >= PAGE:
                    raise Fatal(f"register_plugin: function offset {offset} outside the structure")
                if offset % len(self.arch.stub_bytes):
                    raise Fatal(f"register_plugin: function offset {offset} is not aligned")
                data[offset : offset + 8] = (POFX_STUBS + offset).to_bytes(8, "little")
            self.write(kernel, bytes(data))
            self.kernel_information = kernel
        return status

    # ---- HAL ----------------------------------------------------------------------------

    def imp_KeQueryPerformanceCounter(self) -> int:
        answer = self.ask({"host": "performance_counter"})
        self.put(self.arg(0), integer(answer, "frequency"), 8)
        return integer(answer, "ticks")

    def imp_KeStallExecutionProcessor(self) -> None:
        self.ask({"host": "stall", "microseconds": self.arg32(0)})

    def imp_HalAllocateHardwareCounters(self) -> int:
        resource_list, handle = self.arg(2), self.arg(3)
        listing = None
        if resource_list:
            count = self.u32(resource_list)
            if count > MAX_COUNTERS:
                return STATUS_INVALID_PARAMETER
            # PHYSICAL_COUNTER_RESOURCE_LIST: Count, padding, then 24-byte descriptors (Type,
            # Flags, a 16-byte union); the structure declares one.
            listing = self.read(resource_list, 8 + 24 * max(count, 1)).hex()
        answer = self.ask({"host": "hal_allocate_counters", "list": listing})
        status = _status(answer)
        if status == STATUS_SUCCESS:
            self.put(handle, integer(answer, "handle"), 8)
        return status

    def imp_HalFreeHardwareCounters(self) -> int:
        return _status(self.ask({"host": "hal_free_counters", "handle": self.arg(0)}))

    # ---- ETW ----------------------------------------------------------------------------

    def imp_EtwRegister(self) -> int:
        provider, callback, context, handle_out = (self.arg(n) for n in range(4))
        answer = self.ask({"host": "etw_register", "provider": self.read(provider, 16).hex()})
        status = _status(answer)
        if status == STATUS_SUCCESS:
            handle = integer(answer, "handle")
            self.put(handle_out, handle, 8)
            self.etw_providers[handle] = (callback, context)
            if self.verifier is not None:
                self.verifier.etw_registered(handle)
            if answer.get("enable") is not None and callback:
                self._etw_enable(provider, callback, context, answer["enable"])
        return status

    def _etw_enable(self, provider: int, callback: int, context: int, enable: Any) -> None:
        """A session already enables the provider (a boot trace): Windows calls its
        EnableCallback from inside EtwRegister, on the same thread, before EtwRegister returns:
        (SourceId, IsEnabled, Level, MatchAnyKeyword, MatchAllKeyword, FilterData,
        CallbackContext)."""
        if not isinstance(enable, dict):
            raise ProtocolError(f"etw_register: 'enable' must be an object, got {enable!r}")
        level, keywords = integer(enable, "level", 8), integer(enable, "keywords")
        arguments = [provider, EVENT_CONTROL_CODE_ENABLE_PROVIDER, level, keywords, 0, 0, context]
        result = self.execute(callback, arguments, self.interrupts, nested=True)
        self._protect_stale()  # EtwRegister resumes
        crash = result.get("crash")
        if crash is not None:
            raise Crash(crash["code"], crash["parameters"], crash["what"], crash["address"])

    def _etw_handle(self, function: str, handle: int) -> None:
        if self.verifier is not None:
            self.verifier.etw_used(function, handle)

    def imp_EtwWriteTransfer(self) -> int:
        handle, descriptor, count, data = self.arg(0), self.arg(1), self.arg32(4), self.arg(5)
        self._etw_handle("EtwWriteTransfer", handle)
        if count > MAX_ETW_DESCRIPTORS:
            return STATUS_INVALID_PARAMETER
        pieces = []
        for n in range(count):
            descriptor_at = data + EVENT_DATA_DESCRIPTOR_BYTES * n
            pointer = self.u64(descriptor_at)
            size = self.u32(descriptor_at + EVENT_DATA_DESCRIPTOR_SIZE)
            if size > MAX_ETW_BYTES:
                return STATUS_INVALID_PARAMETER
            pieces.append(self.read(pointer, size).hex())
        answer = self.ask(
            {
                "host": "etw_write",
                "handle": handle,
                "descriptor": self.read(descriptor, 16).hex(),
                "data": pieces,
            }
        )
        return _status(answer)

    def imp_EtwSetInformation(self) -> int:
        self._etw_handle("EtwSetInformation", self.arg(0))
        length = self.arg32(3)
        if length > MAX_ETW_BYTES:
            return STATUS_INVALID_PARAMETER
        answer = self.ask(
            {
                "host": "etw_set_information",
                "handle": self.arg(0),
                "class": self.arg32(1),
                "data": self.read(self.arg(2), length).hex(),
            }
        )
        return _status(answer)

    def imp_EtwUnregister(self) -> int:
        self._etw_handle("EtwUnregister", self.arg(0))
        if self.verifier is not None:
            self.verifier.etw.discard(self.arg(0))
        return _status(self.ask({"host": "etw_unregister", "handle": self.arg(0)}))

    # ---- WDFLDR -------------------------------------------------------------------------

    def imp_WdfVersionBind(self) -> int:
        bind_info, globals_out = self.arg(2), self.arg(3)
        count = self.u32(bind_info + WDF_BIND_INFO_FUNC_COUNT)
        table = self.u64(bind_info + WDF_BIND_INFO_FUNC_TABLE)
        if count > KMDF_MAX_FUNCTIONS:
            print(
                f"image-runner: WdfVersionBind: FuncCount {count} exceeds KMDF 1.31's "
                f"{KMDF_MAX_FUNCTIONS}",
                file=sys.stderr,
            )
            return STATUS_INVALID_PARAMETER
        self.kmdf_count = count
        self.write(
            KMDF_TABLE,
            b"".join(self.stub_address(KMDF_STUBS, n).to_bytes(8, "little") for n in range(count)),
        )
        self.put(table, KMDF_TABLE, 8)
        self.write(WDF_GLOBALS, b"\0" * 0x40)
        self.put(globals_out, WDF_GLOBALS, 8)
        return STATUS_SUCCESS

    def imp_WdfVersionUnbind(self) -> int:
        return STATUS_SUCCESS

    # ---- KMDF ---------------------------------------------------------------------------

    def _kmdf(self, index: int) -> int | None:
        self.kmdf_calls[index] = self.kmdf_calls.get(index, 0) + 1
        name = self.kmdf_name(index)
        failure = self._verify_call(name)
        if failure is not None:
            return failure
        handler = getattr(self, f"wdf_{name}", None)
        if handler is None or index >= self.kmdf_count:
            raise Crash(
                KMODE_EXCEPTION_NOT_HANDLED,
                [0xC0000005, index, 0, 0],
                f"KMDF function table index {index} ({name}): not translated by the runner",
                self.return_address(),
            )
        return handler()

    def _wdf(self, function: str, **fields: Any) -> dict[str, Any]:
        return self.ask({"host": "wdf", "function": function, **fields})

    def wdf_WdfDriverCreate(self) -> int:
        config, driver_out = self.arg(4), self.arg(5)
        device_add = self.u64(config + WDF_DRIVER_CONFIG_DEVICE_ADD) if config else 0
        unload = self.u64(config + WDF_DRIVER_CONFIG_UNLOAD) if config else 0
        answer = self._wdf("WdfDriverCreate", device_add=bool(device_add), unload=bool(unload))
        status = _status(answer)
        if status == STATUS_SUCCESS:
            self.device_add, self.driver_unload = device_add, unload
            self.put(driver_out, WDFDRIVER, 8)
            self.put(WDF_GLOBALS, WDFDRIVER, 8)
            if unload:
                # The framework's DriverUnload: EvtDriverUnload(WDFDRIVER), as a tail call.
                self.uc.mem_write(UNLOAD_THUNK, self.arch.unload_thunk(WDFDRIVER, unload))
                self.put(DRIVER_OBJECT + DRIVER_UNLOAD, UNLOAD_THUNK, 8)
        return status

    def _open(self, function: str, key_out: int, **fields: Any) -> int:
        if "parent" in fields:
            self._key(function, fields["parent"], optional=True)
        answer = self._wdf(function, **fields)
        status = _status(answer)
        if status == STATUS_SUCCESS:
            self.put(key_out, integer(answer, "key"), 8)
            if self.verifier is not None:
                self.verifier.key_opened(integer(answer, "key"))
        return status

    def _key(self, function: str, key: int, optional: bool = False) -> None:
        """Driver Verifier's handle check of a WDFKEY argument."""
        if self.verifier is not None:
            self.verifier.key_used(function, key, optional)

    def wdf_WdfDriverOpenParametersRegistryKey(self) -> int:
        return self._open("WdfDriverOpenParametersRegistryKey", self.arg(4), access=self.arg32(2))

    def wdf_WdfDriverOpenPersistentStateRegistryKey(self) -> int:
        return self._open(
            "WdfDriverOpenPersistentStateRegistryKey", self.arg(4), access=self.arg32(2)
        )

    def wdf_WdfRegistryOpenKey(self) -> int:
        return self._open(
            "WdfRegistryOpenKey",
            self.arg(5),
            parent=self.arg(1),
            name=self.unicode_string(self.arg(2)),
            access=self.arg32(3),
        )

    def wdf_WdfRegistryCreateKey(self) -> int:
        self._key("WdfRegistryCreateKey", self.arg(1), optional=True)
        answer = self._wdf(
            "WdfRegistryCreateKey",
            parent=self.arg(1),
            name=self.unicode_string(self.arg(2)),
            access=self.arg32(3),
            options=self.arg32(4),
        )
        status = _status(answer)
        if status == STATUS_SUCCESS:
            if "disposition" in answer:
                self.put(self.arg(5), integer(answer, "disposition", 32), 4)
            self.put(self.arg(7), integer(answer, "key"), 8)
            if self.verifier is not None:
                self.verifier.key_opened(integer(answer, "key"))
        return status

    def wdf_WdfRegistryQueryValue(self) -> int:
        capacity, value, length_out, type_out = (
            self.arg32(3),
            self.arg(4),
            self.arg(5),
            self.arg(6),
        )
        self._key("WdfRegistryQueryValue", self.arg(1))
        answer = self._wdf(
            "WdfRegistryQueryValue",
            key=self.arg(1),
            name=self.unicode_string(self.arg(2)),
            capacity=capacity,
        )
        status = _status(answer)
        if "data" in answer and value:
            self.write(value, hex_bytes(answer, "data")[:capacity])
        if "length" in answer:
            self.put(length_out, integer(answer, "length", 32), 4)
        if "type" in answer:
            self.put(type_out, integer(answer, "type", 32), 4)
        return status

    def wdf_WdfRegistryAssignULong(self) -> int:
        self._key("WdfRegistryAssignULong", self.arg(1))
        return _status(
            self._wdf(
                "WdfRegistryAssignULong",
                key=self.arg(1),
                name=self.unicode_string(self.arg(2)),
                value=self.arg32(3),
            )
        )

    def wdf_WdfRegistryAssignValue(self) -> int:
        self._key("WdfRegistryAssignValue", self.arg(1))
        length = self.arg32(4)
        if length > MAX_ETW_BYTES:
            return STATUS_INVALID_PARAMETER
        return _status(
            self._wdf(
                "WdfRegistryAssignValue",
                key=self.arg(1),
                name=self.unicode_string(self.arg(2)),
                type=self.arg32(3),
                data=self.read(self.arg(5), length).hex(),
            )
        )

    def wdf_WdfRegistryClose(self) -> None:
        if self.verifier is not None:
            self.verifier.key_closed(self.arg(1))
        self._wdf("WdfRegistryClose", key=self.arg(1))

    def wdf_WdfDeviceCreate(self) -> int:
        init_pointer, device_out = self.arg(1), self.arg(3)
        status = _status(self._wdf("WdfDeviceCreate"))
        if status == STATUS_SUCCESS:
            self.put(device_out, WDFDEVICE, 8)
            self.put(init_pointer, 0, 8)  # the framework takes the WDFDEVICE_INIT
        return status

    def wdf_WdfDeviceSetStaticStopRemove(self) -> None:
        self._wdf("WdfDeviceSetStaticStopRemove", stoppable=bool(self.arg(2) & 0xFF))

    def wdf_WdfDeviceSetDeviceState(self) -> None:
        state = self.arg(2)
        values = {name: self.u32(state + at) for name, at in WDF_DEVICE_STATE_FIELDS.items()}
        self._wdf("WdfDeviceSetDeviceState", state=values)
