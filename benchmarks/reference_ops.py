#!/usr/bin/env python3
"""Reference-target conv kernels beside onnxruntime on MobileNetV2-sized convolutions.

For each conv the script times the reference kernel (`kernel_for(nn.conv2d)` on numpy arrays,
NCHW and NHWC) and onnxruntime's CPU provider on the same single-op ONNX model (NCHW), both
single-threaded by default, and prints the median of `--repeat` runs and the ratio
reference / onnxruntime. Targets: within 5x on 1x1 and 3x3 convs, within 10x on depthwise.
A second table times pools the same way, for information (no target).

usage: python benchmarks/reference_ops.py [--repeat N] [--threads T]
"""

from __future__ import annotations

import argparse
import os
import sys

# BLAS reads its thread count when numpy loads: parse it before importing numpy.
_threads = "1"
for i, arg in enumerate(sys.argv):
    if arg == "--threads" and i + 1 < len(sys.argv):
        _threads = sys.argv[i + 1]
    elif arg.startswith("--threads="):
        _threads = arg.split("=", 1)[1]
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, _threads)

from dataclasses import dataclass  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from side_by_side import median_ms  # noqa: E402
from xdsl.dialects.builtin import TensorType, f32  # noqa: E402
from xdsl.ir import Block  # noqa: E402

from irc.dialects import nn  # noqa: E402
from irc.targets.reference import kernel_for  # noqa: E402


@dataclass(frozen=True)
class ConvCase:
    name: str
    target: float
    """Largest acceptable ratio reference / onnxruntime."""
    hw: int
    c_in: int
    c_out: int
    kernel: int
    stride: int
    groups: int = 1

    @property
    def pads(self) -> list[int]:
        p = self.kernel // 2
        return [p, p, p, p]

    def flops(self) -> float:
        out = (self.hw + 2 * (self.kernel // 2) - self.kernel) // self.stride + 1
        return 2.0 * out * out * self.c_out * (self.c_in // self.groups) * self.kernel**2


CASES = [
    ConvCase("1x1 28x28x32->192", 5, 28, 32, 192, 1, 1),
    ConvCase("1x1 14x14x64->384", 5, 14, 64, 384, 1, 1),
    ConvCase("3x3 112x112x3->32 s2", 5, 112, 3, 32, 3, 2),
    ConvCase("3x3 56x56x64->64", 5, 56, 64, 64, 3, 1),
    ConvCase("dw3x3 112x112x32", 10, 112, 32, 32, 3, 1, groups=32),
    ConvCase("dw3x3 56x56x144", 10, 56, 144, 144, 3, 1, groups=144),
    ConvCase("dw3x3 56x56x144 s2", 10, 56, 144, 144, 3, 2, groups=144),
]


def onnxruntime_op(op_type: str, inputs: dict[str, np.ndarray], threads: int, **attrs: object):
    """A callable running one float ONNX node on `inputs` with onnxruntime's CPU provider."""
    node = helper.make_node(op_type, list(inputs), ["y"], **attrs)
    graph = helper.make_graph(
        [node],
        op_type,
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, a.shape) for k, a in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10  # onnxruntime 1.31 refuses the IR version onnx 1.23 writes
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return lambda: session.run(None, inputs)


def onnxruntime_conv(case: ConvCase, x: np.ndarray, w: np.ndarray, b: np.ndarray, threads: int):
    return onnxruntime_op(
        "Conv",
        {"x": x, "w": w, "b": b},
        threads,
        kernel_shape=[case.kernel] * 2,
        strides=[case.stride] * 2,
        pads=case.pads,
        group=case.groups,
    )


def reference_op(op_type: type[nn.NNOp], arrays: list[np.ndarray], **props: object):
    """A callable running the reference kernel of `op_type` built on arguments like `arrays`."""
    block = Block(arg_types=[TensorType(f32, a.shape) for a in arrays])
    run = kernel_for(op_type.make(*block.args, **props))
    return lambda: run(*arrays)


def reference_conv(case: ConvCase, x: np.ndarray, w: np.ndarray, b: np.ndarray, layout: str):
    props = dict(strides=[case.stride] * 2, pads=case.pads, groups=case.groups, layout=layout)
    return reference_op(nn.Conv2DOp, [x, w, b], **props)


# (name, ONNX op, nn op, input NCHW, kernel, stride, pad)
POOLS = [
    ("max 3x3 s2 112x112x64", "MaxPool", nn.MaxPool2DOp, (1, 64, 112, 112), 3, 2, 1),
    ("avg 3x3 s2 112x112x64", "AveragePool", nn.AvgPool2DOp, (1, 64, 112, 112), 3, 2, 1),
    ("avg global 7x7x1280", "AveragePool", nn.AvgPool2DOp, (1, 1280, 7, 7), 7, 1, 0),
]


def pool_table(rng: np.random.Generator, repeat: int, threads: int) -> None:
    header = f"{'pool':<22} {'ort ms':>8} {'ref NCHW':>9} {'ratio':>6} {'ref NHWC':>9} {'ratio':>6}"
    print()
    print(header)
    print("-" * len(header))
    for name, onnx_op, op_type, shape, k, stride, pad in POOLS:
        x = rng.standard_normal(shape).astype(np.float32)
        x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        attrs = dict(kernel_shape=[k, k], strides=[stride] * 2, pads=[pad] * 4)
        props = dict(kernel=[k, k], strides=[stride] * 2, pads=[pad] * 4)
        ort_fn = onnxruntime_op(onnx_op, {"x": x}, threads, **attrs)
        nchw_fn = reference_op(op_type, [x], layout="NCHW", **props)
        nhwc_fn = reference_op(op_type, [x_nhwc], layout="NHWC", **props)
        expected = ort_fn()[0]
        np.testing.assert_allclose(nchw_fn()[0], expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(nhwc_fn()[0].transpose(0, 3, 1, 2), expected, 1e-4, 1e-5)
        t_ort, t_nchw, t_nhwc = (median_ms(f, repeat, 1) / 1e3 for f in (ort_fn, nchw_fn, nhwc_fn))
        print(
            f"{name:<22} {t_ort * 1e3:8.3f} {t_nchw * 1e3:9.3f} {t_nchw / t_ort:5.1f}x "
            f"{t_nhwc * 1e3:9.3f} {t_nhwc / t_ort:5.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1, help="BLAS and onnxruntime threads")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    header = (
        f"{'conv':<22} {'MFLOP':>6} {'ort ms':>8} {'ref NCHW':>9} {'ratio':>6} "
        f"{'ref NHWC':>9} {'ratio':>6} {'target':>6}"
    )
    print(f"threads: {args.threads}, median of {args.repeat} runs")
    print(header)
    print("-" * len(header))
    misses = 0
    for case in CASES:
        x = rng.standard_normal((1, case.c_in, case.hw, case.hw)).astype(np.float32)
        w = rng.standard_normal(
            (case.c_out, case.c_in // case.groups, case.kernel, case.kernel)
        ).astype(np.float32)
        b = rng.standard_normal(case.c_out).astype(np.float32)
        x_nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        w_ohwi = np.ascontiguousarray(w.transpose(0, 2, 3, 1))

        ort_fn = onnxruntime_conv(case, x, w, b, args.threads)
        nchw_fn = reference_conv(case, x, w, b, "NCHW")
        nhwc_fn = reference_conv(case, x_nhwc, w_ohwi, b, "NHWC")
        expected = ort_fn()[0]
        np.testing.assert_allclose(nchw_fn()[0], expected, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(nhwc_fn()[0].transpose(0, 3, 1, 2), expected, 1e-4, 1e-4)

        t_ort = median_ms(ort_fn, args.repeat, 1) / 1e3
        t_nchw = median_ms(nchw_fn, args.repeat, 1) / 1e3
        t_nhwc = median_ms(nhwc_fn, args.repeat, 1) / 1e3
        r_nchw, r_nhwc = t_nchw / t_ort, t_nhwc / t_ort
        ok = max(r_nchw, r_nhwc) <= case.target
        misses += not ok
        print(
            f"{case.name:<22} {case.flops() / 1e6:6.1f} {t_ort * 1e3:8.3f} "
            f"{t_nchw * 1e3:9.3f} {r_nchw:5.1f}x {t_nhwc * 1e3:9.3f} {r_nhwc:5.1f}x "
            f"{'<=' if ok else '> '}{case.target:g}x"
        )
    print(f"{len(CASES) - misses}/{len(CASES)} within target")
    pool_table(rng, args.repeat, args.threads)


if __name__ == "__main__":
    main()
