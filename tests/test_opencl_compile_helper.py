"""The compile helper process (targets/opencl/compile_helper.py): PoCL compiles kernels at
their first launch under one lock per process, so a second process compiles kernels from the
back of the list while the loader compiles from the front; PoCL's disk cache hands the
helper's kernels to the loader. Here: the two sides meet without gaps, the helper exits,
results are unchanged, and the switch (`IRC_OPENCL_COMPILE_HELPER`) is read as documented.
"""

from __future__ import annotations

import io
import signal
import threading
import time

import numpy as np
import pytest
from opencl_support import needs_device
from xdsl.parser import Parser

from irc.context import make_context
from irc.dialects import delegate
from irc.targets.opencl import compile_helper
from irc.targets.opencl import runtime as ocl_runtime
from irc.targets.opencl.build import device_build_options
from irc.targets.opencl.compile_helper import (
    HELPER_ENV,
    CompileHelper,
    HelperLaunch,
    Payload,
    compile_from_both_ends,
    decode_payload,
    encode_payload,
)
from irc.targets.opencl.lower import LowerOpenCLPass
from irc.targets.opencl.runtime import OpenCLRuntime

pytestmark = pytest.mark.private_cache

RNG = np.random.default_rng(57)

KERNELS = 10

ENDED = (0, -signal.SIGTERM)
"""A helper's exit status: done by itself, or ended by `finish` while it compiled nothing."""


def _device():
    from irc.targets.opencl.device import get_device

    return get_device()


def _source(tag: str) -> str:
    """`KERNELS` small kernels, each adding its own constant (the tag keeps PoCL's cache
    from knowing the program)."""
    body = """/* nn.add 64 -> 64 ({tag}) */
__kernel void k{i}(__global const float* restrict x0, __global float* restrict y) {{
    const int i = get_global_id(0);
    y[i] = x0[i] + {i}.0f;
}}
"""
    return "\n".join(body.format(i=i, tag=tag) for i in range(KERNELS))


def _wait_for(condition, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


@needs_device
def test_parent_and_helper_meet_without_gaps() -> None:
    device = _device()
    cl = device.cl
    source = _source(f"{RNG.integers(1 << 62):x}")
    built = ocl_runtime.build_program(device, source)
    launches = [
        HelperLaunch(f"k{i}", (64,), None, [("x", 256), (f"y{i}", 256)]) for i in range(KERNELS)
    ]
    helper = CompileHelper(Payload(device.identity, source, device_build_options(device), launches))
    flags = cl.mem_flags
    x = np.arange(64, dtype=np.float32)
    x_buffer = cl.Buffer(device.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    here: list[int] = []

    def compile_here(i: int) -> None:
        if not here:  # let the helper start (and finish one kernel) before the parent goes
            _wait_for(lambda: helper.done)
        y = cl.Buffer(device.context, flags.READ_WRITE, 256)
        kernel = cl.Kernel(built.program, f"k{i}")
        kernel.set_args(x_buffer, y)
        cl.enqueue_nd_range_kernel(device.queue, kernel, (64,), None)
        out = np.empty(64, np.float32)
        cl.enqueue_copy(device.queue, out, y, is_blocking=True)
        np.testing.assert_array_equal(out, x + i)
        here.append(i)

    count = compile_from_both_ends(helper, compile_here, KERNELS)
    assert count == len(here)
    assert helper.done, "the helper compiled nothing"
    assert here == list(range(count))  # the parent went from the front, in order
    assert set(helper.done) <= set(range(count - 1, KERNELS))  # the helper from the back
    assert set(here) | helper.done == set(range(KERNELS))  # together: every kernel
    assert helper.returncode in ENDED


def test_a_helper_that_has_exited_costs_the_parent_nothing() -> None:
    """A helper that finds no matching device exits at once; the parent's claims then go to
    a closed pipe, and the parent compiles every kernel itself."""
    launches = [HelperLaunch(f"k{i}", (64,), None, [("y", 256)]) for i in range(KERNELS)]
    helper = CompileHelper(Payload("no such device", _source("none"), "", launches))
    here: list[int] = []

    def compile_here(i: int) -> None:
        if not here:
            _wait_for(lambda: helper.returncode is not None)
        here.append(i)

    assert compile_from_both_ends(helper, compile_here, KERNELS) == KERNELS
    assert here == list(range(KERNELS))
    assert not helper.done
    assert helper.returncode == 0


TEMPLATE = """
builtin.module {
  delegate.executable private @chain target("opencl") {
    func.func @entry(%x: tensor<5x16xf32>) -> tensor<5x16xf32> {
      %a = nn.softmax %x axis = 1 : tensor<5x16xf32> -> tensor<5x16xf32>
      %b = nn.mul %a, %x : tensor<5x16xf32>, tensor<5x16xf32> -> tensor<5x16xf32>
      %c = nn.softmax %b axis = 1 : tensor<5x16xf32> -> tensor<5x16xf32>
      %d = nn.add %c, %x : tensor<5x16xf32>, tensor<5x16xf32> -> tensor<5x16xf32>
      %e = nn.softmax %d axis = 1 : tensor<5x16xf32> -> tensor<5x16xf32>
      func.return %e : tensor<5x16xf32>
    }
  }
}
"""


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@needs_device
def test_load_with_a_helper_gives_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runtime's warm-up with a helper (forced on, any device): every launch is warm
    afterwards and the results are those of the reference formula."""
    rows = int(RNG.integers(50, 1000))  # a shape no other test used: a new program
    module = Parser(make_context(), TEMPLATE.replace("5x16", f"{rows}x16"), "m").parse_module()
    LowerOpenCLPass().apply(make_context(), module)
    executable = next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))
    monkeypatch.setenv(HELPER_ENV, "on")
    monkeypatch.setattr(ocl_runtime, "MIN_KERNELS", 1)
    monkeypatch.setattr(ocl_runtime, "HELPER_MIN_BUILD_SECONDS", 0.0)
    monkeypatch.setattr(ocl_runtime, "pocl_kernel_cache_on", lambda device: True)
    helpers: list[CompileHelper] = []
    real = ocl_runtime.compile_from_both_ends

    def spy(helper: CompileHelper, compile_here, count: int) -> int:
        helpers.append(helper)
        first = threading.Event()

        def after_the_helper(i: int) -> None:
            if not first.is_set():
                _wait_for(lambda: helper.done)
                first.set()
            compile_here(i)

        return real(helper, after_the_helper, count)

    monkeypatch.setattr(ocl_runtime, "compile_from_both_ends", spy)
    loaded = OpenCLRuntime().load(executable)
    (helper,) = helpers
    assert helper.done, "the helper compiled nothing"
    assert helper.returncode in ENDED
    assert loaded.warm_up() == 0
    x = RNG.standard_normal((rows, 16)).astype(np.float32)
    (out,) = loaded.execute("entry", [x])
    want = _softmax(_softmax(_softmax(x) * x) + x)
    np.testing.assert_allclose(out.to_host(), want, rtol=1e-5, atol=1e-6)


def test_a_helper_still_starting_is_ended() -> None:
    """The parent is done before the helper has claimed anything: `finish` ends it."""
    launches = [HelperLaunch("k0", (64,), None, [("y", 256)])]
    helper = CompileHelper(Payload("no such device", _source("none"), "", launches))
    assert compile_from_both_ends(helper, lambda i: None, 1) == 1
    assert helper.returncode in ENDED
    assert not helper.done


def test_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile_helper.os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    for value, cpus, want in [
        ("0", 8, False),
        ("off", 8, False),
        ("on", 1, True),
        ("", 2, True),
        ("", 1, False),
    ]:
        monkeypatch.setenv(HELPER_ENV, value)
        assert compile_helper.enabled(cpus) is want, (value, cpus)
    monkeypatch.setenv(HELPER_ENV, "")
    monkeypatch.setattr(compile_helper.os, "getloadavg", lambda: (3.5, 3.0, 2.0))
    assert not compile_helper.enabled(2)  # both CPUs busy: the helper would only cost
    assert compile_helper.enabled(8)


def test_payload_round_trips_through_its_byte_form() -> None:
    """The payload crosses the pipe as JSON and raw bytes (no pickle): every field survives,
    constants byte for byte and in order, a missing local size stays None."""
    payload = Payload(
        "platform|1.0|device|2.0|driver",
        "__kernel void k(__global float *a) {}",
        "-cl-std=CL1.2",
        [
            HelperLaunch("k", (4, 2), None, [("a", 16), ("b", 3)]),
            HelperLaunch("m", (8,), (4,), []),
        ],
        {"a": bytes(range(16)), "b": b"\xff\x00\x7f"},
    )
    stream = io.BytesIO(encode_payload(payload))
    assert decode_payload(stream.read) == payload
    assert stream.read() == b""
