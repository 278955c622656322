"""Kernel profile labels of the CPU target's fused int8 kernels (targets/cpu/profiling.py).

With `IRC_CPU_PROFILE=1` every kernel of a generated function is timed and labelled by an
op; a `cpu.fusion`'s kernel times the whole fused chain, so its label starts with the
fusion's kind (a quantized swish's 256-entry table is "qtable quant.scast ...", a global
average pool's sum "qsum nn.reduce ...", not a bare scast or reduce), and an op outside any
fusion keeps its plain label.
"""

from __future__ import annotations

import numpy as np
import pytest
from cpu_support import lower, needs_compiler, qtype, random_storage
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region

from irc.dialects import delegate, nn
from irc.targets.cpu.profiling import PROFILE_ENV, kernel_tables
from irc.targets.cpu.runtime import CpuRuntime

pytestmark = [needs_compiler, pytest.mark.private_cache(unset=["IRC_CPU_FUSE_INT8"])]


def _swish_then_mean() -> tuple[ModuleOp, delegate.ExecutableOp, TensorType]:
    """x -> swish (a qtable) -> global average pool (a qsum, then its rescale)."""
    x_type = TensorType(qtype("int8", 0.05, -5), [1, 6, 6, 8])
    block = Block(arg_types=[x_type])
    x = block.args[0]
    sig = nn.SigmoidOp.make(x, result_elements=qtype("int8", 1 / 256, -128))
    mul = nn.MulOp.make(x, sig.results[0], result_elements=qtype("int8", 0.03, -100))
    mean = nn.ReduceOp.make(
        mul.results[0],
        kind="mean",
        axes=[1, 2],
        keepdims=True,
        result_elements=qtype("int8", 0.02, 3),
    )
    block.add_ops([sig, mul, mean, ReturnOp(mean.results[0])])
    func = FuncOp("entry", FunctionType.from_lists([x_type], [mean.results[0].type]), Region(block))
    executable = delegate.ExecutableOp("test_cpu_qprofile", "cpu", [func])
    module = ModuleOp([executable])
    module.verify()
    return module, executable, x_type


def test_fused_kernels_are_labelled_with_their_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PROFILE_ENV, "1")
    module, executable, _ = _swish_then_mean()
    lower(module)
    loaded = CpuRuntime().load(executable)
    feed = random_storage(np.random.default_rng(5), (1, 6, 6, 8), "int8")
    loaded.execute("entry", [feed])
    (table,) = kernel_tables(loaded.library.path)
    heads = [label.split(" ")[:2] for label in table.labels]
    assert [head[0] for head in heads].count("qtable") == 1  # the swish chain's last op next
    assert ["qsum", "nn.reduce"] in heads
    # the rescale after the sum is an op of its own: its plain label
    assert any(label.startswith("quant.rescale 1x1x1x8") for label in table.labels)
