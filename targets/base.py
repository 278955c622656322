"""The Target protocol (docs/design.md §4) and the target registry.

A target is what TFLite calls a delegate, LiteRT a compiler plugin, MindSpore Lite a
`Delegate` and ONNX Runtime an execution provider:

| step | irc |
|---|---|
| availability | `Target.available()` -> `Availability` (bool + reason) |
| capability | `Target.supports(op)` -> `Support` (yes, or a reason code and text) |
| layout / quantization | `preferred_layout` ("NHWC", "NCHW" or None), `runs_quantized` |
| float16 | `computes_float16` (can), `computes_float16_op(op, precision)` (does): keeps `f16` ops |
| compile | `Target.lowering_passes()`: pass pipeline applied to its executables |
| own passes | `Target.passes()`: the passes that pipeline names besides irc's (`PassTable`) |
| emit | `Target.emit_source(executable)`: generated source text (`irc-translate --emit-*`) |
| ahead of time | `Target.embed_binaries(module)`: device binaries in a saved artifact |
| cost (optional) | `Target.cost(ops)`: lets the partitioner prefer cheaper placements |
| prepare | `Target.runtime().load(executable)`: build programs, upload weights, once |
| execute | `LoadedExecutable.execute(entry, args)`, per call |

`supports(op)` judges the op as imported (the model's layout, quantized types), knowing the
conversions the default pipeline will apply inside its regions (docs/design.md §3).

Targets are found through the entry-point group `irc.targets` (the `reference` target is
registered that way, like any third-party target), through `register()` for in-process
plugins, and through `IRC_PLUGINS=module:attr,...` (or the CLI's `--plugin module:attr`),
which imports `attr` from `module`: a Target class or instance, or a callable returning one.
A plugin module that is not importable from `sys.path` is looked up in the current working
directory too (as uvicorn and gunicorn do for `module:attr` specs), so
`IRC_PLUGINS=tests.plugins.testplugin:TestPluginTarget irc-run ...` works from the repository
root although console scripts do not put the working directory on `sys.path`.

Built-in targets go through this protocol like a plugin would: irc's core and tools import
only this module (and `irc.targets`), never a target's package; `irc.context.get_all_passes()`
registers every registered target's `passes()`, `irc-translate --emit-c/--emit-opencl` print
`emit_source()`, `CompiledModel.save(embed_binaries=True)` calls `embed_binaries()`.

Registering is idempotent: registering a target whose type is already registered under that
name returns the registered instance. An installed entry point that fails to load does not
break the others: the error is raised when that target is asked for by name.
"""

from __future__ import annotations

import importlib
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

ENTRY_POINT_GROUP = "irc.targets"
PLUGINS_ENV = "IRC_PLUGINS"

Layout = Literal["NHWC", "NCHW"]


# ---- Answers -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Availability:
    """Whether a target can run here, and why not."""

    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


REASON_CODES = (
    "op",  # the op kind is not implemented
    "dtype",  # an element type is not supported
    "rank",  # a rank is not supported
    "dynamic",  # a dynamic dimension
    "attribute",  # a property value (e.g. a resize mode, an activation)
    "quantized",  # a quantization scheme (per-axis, storage type)
    "denied",  # the user denied the op (deny-ops)
    "pinned",  # the user pinned the op to another target
    "lowering",  # the target's lowering failed on this op
    "unavailable",  # the target is not available on this machine
)
"""Reason codes of refusals; every refusal carries one, plus a human-readable text."""


@dataclass(frozen=True)
class Support:
    """A target's answer to `supports(op)`: yes, or a reason code and text."""

    ok: bool
    code: str = ""
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok

    @staticmethod
    def yes() -> Support:
        return Support(True)

    @staticmethod
    def no(code: str, reason: str) -> Support:
        if code not in REASON_CODES:
            raise ValueError(f"unknown reason code '{code}' (one of {', '.join(REASON_CODES)})")
        return Support(False, code, reason)


# ---- Runtime side ------------------------------------------------------------------------------


@runtime_checkable
class DeviceValue(Protocol):
    """A value a target runtime keeps on its device between consecutive dispatches."""

    def to_host(self) -> Any:
        """The value as a numpy array (copies it from the device)."""
        ...


class LoadedExecutable(ABC):
    """An executable prepared by a target runtime (programs built, weights uploaded)."""

    @abstractmethod
    def execute(self, entry: str, args: Sequence[Any]) -> Sequence[Any]:
        """Run an entry on numpy arrays or this runtime's DeviceValues; returns its results
        in signature order (numpy arrays, or DeviceValues the executor hands on untouched
        to the next dispatch of the same target)."""

    def accepts_device_values(self) -> bool:
        """Whether `execute` takes this runtime's DeviceValues as arguments."""
        return False


class TargetRuntime(ABC):
    """Prepares executables of one target, once."""

    @abstractmethod
    def load(self, executable: Operation) -> LoadedExecutable:
        """Prepare a `delegate.executable` (lowered by the target's passes) for execution."""


# ---- Passes ------------------------------------------------------------------------------------


class PassTable(Mapping[str, type[ModulePass]]):
    """A target's passes by name, each imported when it is first looked up.

    `PassTable({"lower-cpu": "irc.targets.cpu.lower:LowerCpuPass"})`: the names are known
    without importing anything (`irc-opt --help` stays fast, as xDSL's `get_all_passes()`
    factories); `table["lower-cpu"]` imports the module and returns the class.
    """

    def __init__(self, specs: Mapping[str, str]) -> None:
        for name, spec in specs.items():
            module, sep, attr = spec.partition(":")
            if not sep or not module or not attr:
                raise ValueError(f"pass '{name}': bad spec '{spec}' (expected module:attr)")
        self._specs = dict(specs)

    def __getitem__(self, name: str) -> type[ModulePass]:
        module, _, attr = self._specs[name].partition(":")
        pass_class = getattr(importlib.import_module(module), attr)
        if not (isinstance(pass_class, type) and issubclass(pass_class, ModulePass)):
            raise TypeError(f"pass '{name}' ({self._specs[name]}) is not a ModulePass class")
        return pass_class

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


# ---- The target --------------------------------------------------------------------------------


class Target(ABC):
    """A compilation target: capability check, lowering passes and a runtime."""

    name: ClassVar[str]
    """The name used in `partition{targets=...}`, `delegate.region "name"` and the CLI."""

    preferred_layout: ClassVar[Layout | None] = None
    """The layout `convert-layout{targets=...}` gives this target's regions (None: any)."""

    runs_quantized: ClassVar[bool] = False
    """True: runs quantized ops natively (int8 kernels); False: `insert-qdq` turns its
    quantized ops into float ops (the TFLite GPU delegate's approach)."""

    computes_float16: ClassVar[bool] = False
    """True: `supports()` judges float16 ops too, and the target can compute those it takes
    as docs/semantics.md defines them (float32 arithmetic on the widened inputs, one
    rounding to float16 per result), storing float16 tensors as float16; whether it does,
    op by op, is `computes_float16_op`. False: `widen-fp16` gives it float32 ops."""

    def available(self) -> Availability:
        """Whether the target can run on this machine (a driver, a compiler...)."""
        return Availability(True)

    @abstractmethod
    def supports(self, op: Operation) -> Support:
        """Whether the target takes `op` (as imported), or why not."""

    def computes_float16_op(self, op: Operation, precision: str | None = None) -> bool:
        """Whether the target computes `op`, an op on a float16 model's `f16` tensors (as
        imported), in float16 itself (16-bit storage of its `f16` results); `widen-fp16
        {targets=...}` keeps such an op's tensors and computes every other one in float32
        between casts. `precision`: what the pipeline asks for (`fp16`: 16-bit storage
        where the target can; `fp32`: none), None: the target's own default. Default:
        `computes_float16`, `precision` not `fp32` and `supports(op)`."""
        if not self.computes_float16 or precision == "fp32":
            return False
        return bool(self.supports(op))

    def lowering_passes(self) -> str:
        """The pass pipeline (irc-opt `-p` syntax) applied to this target's executables."""
        return ""

    def float16_lowering_passes(self, precision: str | None = None) -> str | None:
        """The pipeline for this target's executables in a float16 model that `widen-fp16`
        widened (float32 tensors holding float16 values; the module carries
        `irc.float16_model`): e.g. 16-bit storage of those tensors. `precision`: what the
        pipeline asked for (`fp16` or `fp32`; None: the target's own default). None (the
        default): `lowering_passes()`."""
        return None

    def passes(self) -> Mapping[str, type[ModulePass]]:
        """This target's own passes, by name: those `lowering_passes()` may name besides
        irc's (`lower-cpu`, `cpu-fuse`, ...). `irc.context.get_all_passes()` registers them,
        so `irc-opt -p NAME` runs them alone; a `PassTable` imports each on first use."""
        return {}

    def emit_source(self, executable: Operation) -> str | None:
        """The source text generated for one of this target's `delegate.executable`s once
        `lowering_passes()` ran on it (C, OpenCL C, ...), as `irc-translate --emit-*` prints
        it; None: the target generates no source, or the executable holds none yet."""
        return None

    def embed_binaries(self, module: ModuleOp) -> int:
        """Ahead of time: build this target's executables in `module` (a lowered module
        about to be saved) for this machine's device and record the binaries in the IR, so
        a later load on the same device skips the build. Returns how many executables got a
        binary (default: 0, nothing to embed); raises when the device cannot build them."""
        return 0

    def cost(self, ops: Sequence[Operation]) -> float | None:
        """Optional estimate of running `ops` as one region (lower is better); None: no
        estimate. The partitioner uses it when present to choose between placements."""
        return None

    @abstractmethod
    def runtime(self) -> TargetRuntime:
        """The runtime that loads and executes this target's executables."""


# ---- Registry ----------------------------------------------------------------------------------

TargetFactory = Callable[[], Target]

_registered: dict[str, Target] = {}
_broken: dict[str, str] = {}
"""Entry points that failed to load, by name, with the error to raise when asked for."""
_discovered = False


class TargetError(Exception):
    """An unknown target name, a plugin that cannot be loaded, or a name clash."""


def register(target: Target | type[Target], *, replace: bool = False) -> Target:
    """Register a target (class or instance) in this process; returns the registered instance.

    Registering a target whose type is already registered under its name returns the
    instance registered first (plugins may be named twice, by `IRC_PLUGINS` and `--plugin`);
    `replace=True` installs the new one instead. Another type under a taken name is a clash.
    """
    if isinstance(target, type):
        try:
            instance = target()
        except Exception as exc:
            raise TargetError(
                f"cannot instantiate target {target.__name__}: {type(exc).__name__}: {exc}"
            ) from None
    else:
        instance = target
    if not isinstance(instance, Target):
        raise TargetError(f"{target!r} is not an irc Target")
    name = getattr(instance, "name", None)
    if not isinstance(name, str) or not name:
        raise TargetError(f"target {type(instance).__name__} has no name")
    existing = _registered.get(name)
    if existing is not None and not replace:
        if type(existing) is type(instance):
            return existing
        raise TargetError(
            f"a target named '{name}' is already registered ({type(existing).__name__})"
        )
    _registered[name] = instance
    _broken.pop(name, None)
    return instance


def load_plugin(spec: str) -> Target:
    """Import and register `module:attr` (a Target class/instance or a factory of one)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise TargetError(f"bad plugin '{spec}': expected module:attr")
    try:
        module = _import_plugin_module(module_name)
        obj = getattr(module, attr)
    except Exception as exc:  # whatever the plugin module raises while importing
        raise TargetError(f"cannot load plugin '{spec}': {type(exc).__name__}: {exc}") from None
    if isinstance(obj, type) and issubclass(obj, Target):
        return register(obj)
    if isinstance(obj, Target):
        return register(obj)
    if callable(obj):
        try:
            made = obj()
        except Exception as exc:
            raise TargetError(
                f"plugin '{spec}' failed to create its target: {type(exc).__name__}: {exc}"
            ) from None
        if not isinstance(made, Target):
            raise TargetError(f"plugin '{spec}' returned {type(made).__name__}, not an irc Target")
        return register(made)
    raise TargetError(f"plugin '{spec}' is not a Target class, instance or factory")


def _import_plugin_module(module_name: str) -> Any:
    """`importlib.import_module`, retried with the working directory on `sys.path`."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        missing = exc.name or ""
        if not (module_name == missing or module_name.startswith(missing + ".")) or cwd in (
            os.path.abspath(p or os.curdir) for p in sys.path
        ):
            raise  # a dependency of the plugin is missing, or the cwd was searched already
    sys.path.append(cwd)
    try:
        return importlib.import_module(module_name)
    except BaseException:
        sys.path.remove(cwd)
        raise


def _plugin_specs() -> list[str]:
    return [s.strip() for s in os.environ.get(PLUGINS_ENV, "").split(",") if s.strip()]


def _discover() -> None:
    """Entry points of the `irc.targets` group, then `IRC_PLUGINS`, once per process.

    A broken entry point is recorded (and reported when its target is asked for); a bad
    `IRC_PLUGINS` spec raises, and discovery is tried again on the next call.
    """
    global _discovered
    if _discovered:
        return
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in _registered or entry.name in _broken:
            continue
        try:
            obj = entry.load()  # a Target class or instance, or a factory of one
            made: Any = obj() if callable(obj) and not isinstance(obj, type) else obj
            register(made)
        except Exception as exc:  # a broken third-party plugin must not break the others
            _broken[entry.name] = (
                f"cannot load target '{entry.name}' ({entry.value}): {type(exc).__name__}: {exc}"
            )
    for spec in _plugin_specs():
        load_plugin(spec)
    _discovered = True


def get_target(name: str) -> Target:
    """The registered target called `name`; TargetError naming the known ones otherwise."""
    _discover()
    target = _registered.get(name)
    if target is None:
        if name in _broken:
            raise TargetError(_broken[name])
        known = ", ".join(sorted(_registered)) or "none"
        raise TargetError(f"unknown target '{name}' (known targets: {known})")
    return target


def registered_targets() -> dict[str, Target]:
    """Every registered target by name (entry points and plugins included)."""
    _discover()
    return dict(_registered)
