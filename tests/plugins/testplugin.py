"""`testplugin`: a small third-party-style target for tests of partitioning and dispatch.

Load it as a plugin, never by importing it under another name:

    IRC_PLUGINS=tests.plugins.testplugin:TestPluginTarget irc-run ...   (from the repo root)
    irc.targets.load_plugin("tests.plugins.testplugin:TestPluginTarget")

What it models: an accelerator with a few float32 kernels that prefers NCHW (so
`convert-layout{targets=testplugin}` matters), does not run quantized ops, and keeps its
values on the device between consecutive dispatches.

* `supports(op)`: nn.conv2d, add, relu, relu6, clip, max_pool2d, avg_pool2d, reshape,
  concat and transpose (the transposes convert-layout puts in its regions), float32 tensors
  of static shape, either layout. Refusals: quantized tensors ("quantized"), other element
  types ("dtype"), dynamic dimensions ("dynamic"), other ops ("op").
* The runtime runs executables with irc's reference kernels (numpy). `execute` returns
  `TestPluginValue`s (device values: the array is reachable only through `to_host()`) and
  takes them back untouched (`accepts_device_values()` is True).
* `TestPluginTarget.counters` counts loads, executes, uploads (numpy arrays given to
  `execute`: host -> device) and downloads (`to_host()` calls: device -> host), so tests
  can check that the executor moves data only where it must.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Operation

from irc.dialects import nn
from irc.dialects.quant import UniformQuantizedType
from irc.targets import Availability, LoadedExecutable, Support, Target, TargetRuntime

__all__ = ["SUPPORTED_OPS", "Counters", "TestPluginTarget", "TestPluginValue"]

SUPPORTED_OPS: tuple[type[Operation], ...] = (
    nn.Conv2DOp,
    nn.AddOp,
    nn.ReluOp,
    nn.Relu6Op,
    nn.ClipOp,
    nn.MaxPool2DOp,
    nn.AvgPool2DOp,
    nn.ReshapeOp,
    nn.ConcatOp,
    nn.TransposeOp,
)
"""The op classes `testplugin` takes (float32, static shapes)."""


class Counters:
    """What the test device did; thread-safe."""

    __test__ = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.loads = 0
        self.executes = 0
        self.uploads = 0
        self.downloads = 0

    def add(self, name: str, count: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + count)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {
                "loads": self.loads,
                "executes": self.executes,
                "uploads": self.uploads,
                "downloads": self.downloads,
            }

    def reset(self) -> None:
        with self._lock:
            self.loads = self.executes = self.uploads = self.downloads = 0


class TestPluginValue:
    """A tensor on the test device: only `to_host()` gives its data back."""

    __test__ = False
    __slots__ = ("_array", "_counters")

    def __init__(self, array: np.ndarray, counters: Counters) -> None:
        self._array = array
        self._counters = counters

    def to_host(self) -> np.ndarray:
        self._counters.add("downloads")
        return self._array

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        # A host kernel given a device value is an executor bug: fail loudly.
        raise TypeError("a testplugin device value reached the host without to_host()")

    def __repr__(self) -> str:
        return f"<TestPluginValue {self._array.dtype}{list(self._array.shape)}>"


class TestPluginTarget(Target):
    """A float32-only, NCHW-preferring target that keeps values on its device."""

    __test__ = False  # not a pytest test class, whatever its name says

    name: ClassVar[str] = "testplugin"
    preferred_layout = "NCHW"
    runs_quantized = False

    def __init__(self) -> None:
        self.counters = Counters()

    def available(self) -> Availability:
        return Availability(True)

    def supports(self, op: Operation) -> Support:
        if not isinstance(op, SUPPORTED_OPS):
            return Support.no("op", f"testplugin: '{op.name}' is not supported")
        types = [*op.operand_types, *op.result_types]
        tensors = [t for t in types if isinstance(t, TensorType)]
        if len(tensors) != len(types):
            return Support.no("dtype", f"testplugin: '{op.name}' has non-tensor values")
        if any(isinstance(t.element_type, UniformQuantizedType) for t in tensors):
            return Support.no("quantized", f"testplugin: quantized '{op.name}' is not supported")
        for t in tensors:
            if t.element_type != f32:
                return Support.no(
                    "dtype", f"testplugin: {t.element_type} tensors are not supported (f32 only)"
                )
        if any(d < 0 for t in tensors for d in t.get_shape()):
            return Support.no("dynamic", "testplugin: dynamic dimensions are not supported")
        return Support.yes()

    def runtime(self) -> TestPluginRuntime:
        return TestPluginRuntime(self.counters)


class TestPluginRuntime(TargetRuntime):
    __test__ = False

    def __init__(self, counters: Counters) -> None:
        self.counters = counters

    def load(self, executable: Operation) -> TestPluginExecutable:
        from irc.targets.reference.target import ReferenceRuntime

        self.counters.add("loads")
        return TestPluginExecutable(ReferenceRuntime().load(executable), self.counters)


class TestPluginExecutable(LoadedExecutable):
    __test__ = False

    def __init__(self, inner: LoadedExecutable, counters: Counters) -> None:
        self.inner = inner
        self.counters = counters

    def accepts_device_values(self) -> bool:
        return True

    def execute(self, entry: str, args: Sequence[Any]) -> list[TestPluginValue]:
        arrays = []
        uploads = 0
        for index, arg in enumerate(args):
            if isinstance(arg, TestPluginValue):
                if arg._counters is not self.counters:
                    raise TypeError(f"argument #{index} is on another testplugin device")
                arrays.append(arg._array)
            elif isinstance(arg, np.ndarray):
                uploads += 1
                arrays.append(arg)
            else:
                raise TypeError(f"argument #{index}: cannot take a {type(arg).__name__}")
        self.counters.add("uploads", uploads)
        self.counters.add("executes")
        results = self.inner.execute(entry, arrays)
        return [TestPluginValue(np.asarray(result), self.counters) for result in results]
