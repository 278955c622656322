"""OpenCL program binaries embedded in a compiled module (`irc-compile --embed-binaries`).

`embed_binaries(module)` builds the `ocl.program` of every OpenCL executable on the current
device and records its binary on the op, in the discardable attribute `ocl.binaries`: an
array with one dictionary per device it was built for (a later embedding on another device
adds its own entry)::

    ocl.binaries = [{platform = "Portable Computing Language", device = "pthread-...",
                     driver = "3.0", version = "OpenCL 3.0 ...", options = "-cl-fast-...",
                     source_sha256 = "<hex>", sha256 = "<hex>",
                     binary = dense<"0x..."> : tensor<49232xi8>}]

`embedded_program(device, program_op)` is the OpenCL runtime's load hook: it returns the
program built from the entry whose tag matches the device exactly (platform name, device
name, driver version, OpenCL version), the runtime's build options and the SHA-256 of the op's
source, and whose bytes hash to the recorded `sha256`; otherwise None, and the runtime builds
the source as usual. A binary for another device, for other source or options, or one whose
bytes were altered is never handed to the driver. `describe_embedded` says which entry would
be used, or why none (tests, diagnostics).

The binary is a `dense<"0x...">` of `i8` (the raw bytes, printed as hex); the device strings
come from the OpenCL driver, never from a model.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    i8,
)
from xdsl.ir import Attribute

from irc.dialects import delegate, ocl
from irc.targets.opencl.device import Device, get_device

if TYPE_CHECKING:
    from irc.targets.opencl.runtime import BuiltProgram

__all__ = [
    "BINARIES_ATTR",
    "DeviceTag",
    "describe_embedded",
    "embed_binaries",
    "embedded_program",
]

BINARIES_ATTR = "ocl.binaries"
"""The discardable attribute of `ocl.program` that holds its embedded binaries."""

_TAG_FIELDS = ("platform", "device", "driver", "version", "options")


@dataclass(frozen=True)
class DeviceTag:
    """What a binary was built for: it is used only where all of this matches."""

    platform: str
    device: str
    driver: str
    version: str
    """The device's OpenCL version string."""
    options: str
    """The build options."""

    @staticmethod
    def of(device: Device) -> DeviceTag:
        """The tag of `device` with the runtime's build options."""
        from irc.targets.opencl.runtime import BUILD_OPTIONS

        d = device.device
        return DeviceTag(
            str(d.platform.name), str(d.name), str(d.driver_version), str(d.version), BUILD_OPTIONS
        )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _entries(program: ocl.ProgramOp) -> list[DictionaryAttr]:
    attr = program.attributes.get(BINARIES_ATTR)
    if not isinstance(attr, ArrayAttr):
        return []
    return [entry for entry in attr.data if isinstance(entry, DictionaryAttr)]


def _string(entry: DictionaryAttr, key: str) -> str | None:
    value = entry.data.get(key)
    return value.data if isinstance(value, StringAttr) else None


def _tag_of(entry: DictionaryAttr) -> DeviceTag | None:
    values: list[str] = []
    for key in _TAG_FIELDS:
        value = _string(entry, key)
        if value is None:
            return None
        values.append(value)
    return DeviceTag(*values)


def _binary_of(entry: DictionaryAttr) -> bytes | None:
    value = entry.data.get("binary")
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return None
    return bytes(value.data.data)


# ---- Embedding ---------------------------------------------------------------------------------


def _entry(tag: DeviceTag, source: str, binary: bytes) -> DictionaryAttr:
    fields: dict[str, Attribute] = {
        "platform": StringAttr(tag.platform),
        "device": StringAttr(tag.device),
        "driver": StringAttr(tag.driver),
        "version": StringAttr(tag.version),
        "options": StringAttr(tag.options),
        "source_sha256": StringAttr(_sha256(source.encode())),
        "sha256": StringAttr(_sha256(binary)),
        "binary": DenseIntOrFPElementsAttr(TensorType(i8, [len(binary)]), BytesAttr(binary)),
    }
    return DictionaryAttr(fields)


def _programs(module: ModuleOp) -> list[ocl.ProgramOp]:
    from irc.targets.opencl.lower import TARGET

    return [
        op
        for executable in module.body.block.ops
        if isinstance(executable, delegate.ExecutableOp) and executable.target.data == TARGET
        for op in executable.body.block.ops
        if isinstance(op, ocl.ProgramOp)
    ]


def embed_binaries(module: ModuleOp, device: Device | None = None) -> int:
    """Build every OpenCL program of `module` on `device` (default: the current one) and
    record its binary on the `ocl.program` op; an earlier entry for the same device is
    replaced. Returns how many programs got a binary. Raises the runtime's
    `OpenCLBuildError` for a program the driver rejects, and its `OpenCLLoadError` for an fp16
    program on a device without cl_khr_fp16."""
    from irc.targets.opencl.runtime import build_program, check_precision, prefetch_programs

    device = get_device() if device is None else device
    tag = DeviceTag.of(device)
    count = 0
    programs = _programs(module)
    for program in programs:
        check_precision(device, program)
    prefetch_programs(device, [program.source.data for program in programs])  # in parallel
    for program in programs:
        source = program.source.data
        built = build_program(device, source)
        (binary,) = built.program.get_info(device.cl.program_info.BINARIES)
        kept = [entry for entry in _entries(program) if _tag_of(entry) != tag]
        program.attributes[BINARIES_ATTR] = ArrayAttr([*kept, _entry(tag, source, bytes(binary))])
        count += 1
    return count


# ---- Loading -----------------------------------------------------------------------------------


def describe_embedded(device: Device, program: ocl.ProgramOp) -> tuple[bytes | None, str]:
    """The embedded binary `device` may load for `program`, or None; and why (a short
    phrase: `matches`, `no embedded binary`, `built for another device`, ...)."""
    entries = _entries(program)
    if not entries:
        return None, "no embedded binary"
    tag = DeviceTag.of(device)
    source_hash = _sha256(program.source.data.encode())
    matching = [entry for entry in entries if _tag_of(entry) == tag]
    if not matching:
        return None, "built for another device"
    reason = "built from other source"
    for entry in matching:
        if _string(entry, "source_sha256") != source_hash:
            continue
        binary = _binary_of(entry)
        if binary is None or _string(entry, "sha256") != _sha256(binary):
            reason = "binary does not match its SHA-256"
            continue
        return binary, "matches"
    return None, reason


def embedded_program(device: Device, program: ocl.ProgramOp) -> BuiltProgram | None:
    """The runtime's `BuiltProgram` from the matching embedded binary of `program`, or None
    (no entry for this device, or the driver refuses the binary): then build the source."""
    from irc.targets.opencl.build import BuildFailure, build, show_log
    from irc.targets.opencl.runtime import BuiltProgram, program_key

    binary, _ = describe_embedded(device, program)
    if binary is None:
        return None
    try:
        built, log = build(device, binary=binary)
    except BuildFailure:
        return None
    key = program_key(device, program.source.data)
    show_log(device, f"program {key[:12]} (embedded binary)", log)
    return BuiltProgram(built, key, from_cache=True, saved=True, log=log)
