"""Instruction-set profiles of the CPU target: which vector ISA its kernels are built for.

The kernels are one C source for every ISA; what differs is how it is compiled: the
`-march` flags (which the kernels' `#if __AVX512F__` / `__AVX2__` branches follow),
`IRC_PORTABLE` for the portable C, and the register tiles (MR output pixels x NR output
channels per micro-kernel family), sized so the accumulators, the weights and the
broadcast input fit the register file (XNNPACK's f32 GEMM tiles: 6x16 with 16 ymm registers
on AVX2, 8x32 with 32 zmm on AVX-512). The packed weight layouts do not depend on the ISA:
a kernel whose NR is smaller than the packed block (16 or 32 channels) walks the block in
NR-wide slices, so one lowered executable runs with any profile and the choice is made
when its library is built.

* `host_features()` reads the CPU's feature flags once (`/proc/cpuinfo`; the machine name
  where there is none).
* `select()` is the profile to build with: `$IRC_CPU_ISA` (generic, avx2, avx512,
  avx512vnni, neon) when set, `IRC_CPU_PORTABLE=1` as an alias of generic, else the best
  profile this host runs. A forced profile the host cannot run raises `IsaError`, naming
  the missing features.
* `IsaProfile.build_flags(native_ok)` are the compiler flags of the profile: `-march=native`
  when the profile is the host's best one and the compiler accepted it (the tuning and every
  extension of this CPU), else the profile's own `-march` level, so a forced, lesser
  profile really is built for the lesser CPU.
"""

from __future__ import annotations

import functools
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ISA_ENV = "IRC_CPU_ISA"
PORTABLE_ENV = "IRC_CPU_PORTABLE"

Tile = tuple[int, int]
"""(MR, NR): output pixels x output channels of one register tile."""


class IsaError(Exception):
    """A forced ISA that is unknown, or that this host cannot run."""


@dataclass(frozen=True)
class IsaProfile:
    """One vector ISA the kernels are built for."""

    name: str
    arch: str
    """The machine it runs on (`platform.machine()` spelling): x86_64, aarch64, or any."""
    features: frozenset[str]
    """CPU flags (`/proc/cpuinfo` spelling) the profile needs."""
    march: tuple[str, ...]
    """Compiler flags that target the profile's CPU level (without `-march=native`)."""
    tiles: Mapping[str, Tile] = field(default_factory=dict)
    """Register tile per kernel family: conv_f32 (1x1/kxk convs, fully connected, matmul),
    depthwise_f32, conv_i8 (fused int8 1x1/kxk convs and fully connected)."""
    native_extra: tuple[str, ...] = ()
    """Flags added to `-march=native` (gcc prefers 256-bit vectors on AVX-512 CPUs)."""

    def defines(self) -> tuple[str, ...]:
        """The preprocessor flags that select the profile's kernels and tiles."""
        flags: list[str] = []
        for family, (mr, nr) in sorted(self.tiles.items()):
            flags += [f"-DIRC_{family.upper()}_MR={mr}", f"-DIRC_{family.upper()}_NR={nr}"]
        if self.name == "generic":
            flags.append("-DIRC_PORTABLE")
        return tuple(flags)

    def build_flags(self, native: bool) -> tuple[str, ...]:
        """`-march=native` (+ extras) when `native`, else the profile's `-march`, then the
        defines."""
        arch = ("-march=native", *self.native_extra) if native else self.march
        return (*arch, *self.defines())


_AVX2 = frozenset({"avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "movbe"})
_AVX512 = _AVX2 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_WIDE_TILES = {"conv_f32": (8, 32), "depthwise_f32": (8, 16), "conv_i8": (8, 32)}

PROFILES: dict[str, IsaProfile] = {
    p.name: p
    for p in (
        IsaProfile(
            "generic",
            "any",
            frozenset(),
            (),
            {"conv_f32": (4, 8), "depthwise_f32": (8, 4), "conv_i8": (4, 16)},
        ),
        IsaProfile(
            "avx2",
            "x86_64",
            _AVX2,
            ("-march=x86-64-v3",),
            # 6 x 16 floats: 12 ymm accumulators + 2 weight vectors + 1 broadcast.
            {"conv_f32": (6, 16), "depthwise_f32": (8, 8), "conv_i8": (4, 16)},
        ),
        IsaProfile(
            "avx512",
            "x86_64",
            _AVX512,
            ("-march=x86-64-v4", "-mprefer-vector-width=512"),
            _WIDE_TILES,
            ("-mprefer-vector-width=512",),
        ),
        IsaProfile(
            "avx512vnni",
            "x86_64",
            _AVX512 | {"avx512_vnni"},
            ("-march=x86-64-v4", "-mavx512vnni", "-mprefer-vector-width=512"),
            _WIDE_TILES,
            ("-mprefer-vector-width=512",),
        ),
        IsaProfile(
            "neon",
            "aarch64",
            frozenset({"asimd"}),
            ("-march=armv8-a",),
            # 32 q registers: 8 x 8 floats = 16 accumulators.
            {"conv_f32": (8, 8), "depthwise_f32": (8, 4), "conv_i8": (4, 16)},
        ),
    )
}
"""Every profile, by name."""

PREFERENCE = ("avx512vnni", "avx512", "avx2", "neon", "generic")
"""Best first: the host gets the first profile it can run."""


def machine() -> str:
    """The host's architecture, normalised (amd64 -> x86_64, arm64 -> aarch64)."""
    name = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(name, name)


@functools.cache
def host_features() -> frozenset[str]:
    """The CPU feature flags of this host (`flags` / `Features` in /proc/cpuinfo; on aarch64
    without it, asimd, which every AArch64 CPU has)."""
    flags: set[str] = set()
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            flags.update(value.split())
            break
    if machine() == "aarch64":
        flags.add("asimd")
    return frozenset(flags)


def missing(profile: IsaProfile) -> list[str]:
    """What this host lacks to run `profile` (the machine, or CPU features); [] if nothing."""
    if profile.arch not in ("any", machine()):
        return [f"a {profile.arch} CPU (this one is {machine()})"]
    return sorted(profile.features - host_features())


def runnable() -> list[IsaProfile]:
    """The profiles this host can run, best first."""
    return [PROFILES[name] for name in PREFERENCE if not missing(PROFILES[name])]


def best() -> IsaProfile:
    """The best profile this host runs (generic at worst)."""
    return runnable()[0]


def requested() -> str | None:
    """The profile name forced by `$IRC_CPU_ISA` (or `IRC_CPU_PORTABLE=1`), else None."""
    name = os.environ.get(ISA_ENV, "").strip().lower()
    if name:
        return name
    if os.environ.get(PORTABLE_ENV, "").strip() == "1":
        return "generic"
    return None


def lookup(name: str) -> IsaProfile:
    """The profile called `name`, or IsaError listing the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(PREFERENCE)
        raise IsaError(f"{ISA_ENV}={name!r} is not an ISA the cpu target knows ({known})") from None


def select() -> IsaProfile:
    """The profile to build with now (see the module docstring); IsaError when a forced
    one is unknown or cannot run here."""
    name = requested()
    if name is None:
        return best()
    profile = lookup(name)
    if lacking := missing(profile):
        raise IsaError(f"{ISA_ENV}={name} cannot run on this host: it lacks {', '.join(lacking)}")
    return profile
