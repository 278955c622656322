"""The OpenCL target's 16-bit storage (`precision=fp16`: half bits in device memory through
`vload_half`/`vstore_half_rte`, float arithmetic; no cl_khr_fp16 needed) beside float32
storage, in one process, on the device `IRC_OPENCL_DEVICE` picks (PoCL's CPU device here).

Models: MobileNetV2 float32 (shared models; lowered with `IRC_OPENCL_PRECISION=fp32` and
`fp16`) and a float16 MobileNetV3-small-like ONNX model (tests/fp16_graphs.py,
`convert_float_to_float16(keep_io_types=True)`: by default it gets fp16 storage, with
`IRC_OPENCL_PRECISION=fp32` its float16 values are computed and stored in float32). Runs
interleaved (`side_by_side.interleaved_ms`) and prints medians, the ratio fp16/fp32 per
model, the planned device bytes of each, and each output's error relative to the output
scale against the float32 run (MobileNetV2) or onnxruntime's float32 model (MobileNetV3,
with onnxruntime's own float16 run beside it). Timings compare only within one run.

    python benchmarks/opencl_fp16_storage.py [--image 224] [--rounds 30] [--kernels cpu|gpu]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from side_by_side import DEFAULT_MODELS


def _compile(path: Path, precision: str) -> Any:
    """`path` compiled for opencl with `IRC_OPENCL_PRECISION=precision`."""
    import irc
    from irc.targets.opencl.target import PRECISION_ENV

    old = os.environ.get(PRECISION_ENV)
    os.environ[PRECISION_ENV] = precision
    try:
        return irc.compile(path, ["opencl"])
    finally:
        if old is None:
            del os.environ[PRECISION_ENV]
        else:
            os.environ[PRECISION_ENV] = old


def _planned_bytes(compiled: Any) -> int:
    from irc.dialects import ocl

    return sum(
        op.peak_bytes.value.data for op in compiled.module.walk() if isinstance(op, ocl.ExecuteOp)
    )


def _precisions(compiled: Any) -> str:
    from irc.dialects import ocl

    return ",".join(op.precision for op in compiled.module.walk() if isinstance(op, ocl.ProgramOp))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", type=int, default=224, help="MobileNetV3's input size")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--kernels", default="", help="IRC_OPENCL_KERNELS (cpu, gpu)")
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    args = parser.parse_args()
    if args.kernels:
        os.environ["IRC_OPENCL_KERNELS"] = args.kernels

    import numpy as np
    import onnx
    import onnxruntime
    from side_by_side import cpu_name, interleaved_ms

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fp16_graphs import mobilenet_v3_small_like, to_float16

    from irc.targets.opencl.device import get_device

    runners: dict[str, Callable[[], object]] = {}
    outputs: dict[str, np.ndarray] = {}
    goldens: dict[str, np.ndarray] = {}
    notes: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as folder:
        v2 = args.models / "mobilenet_v2_float32" / "mobilenet_v2_float32.tflite"
        if v2.exists():
            inputs = dict(np.load(v2.parent / "inputs_0.npz"))
            for precision in ("fp32", "fp16"):
                label = f"mobilenet_v2 {precision}"
                compiled = _compile(v2, precision)
                runners[label] = lambda c=compiled, i=inputs: c.run(i)
                (outputs[label],) = compiled.run(inputs).values()
                notes[label] = f"{_precisions(compiled)}, {_planned_bytes(compiled)} B planned"
            goldens["mobilenet_v2"] = outputs["mobilenet_v2 fp32"]
        else:
            print(f"{v2} is not available: MobileNetV2 left out")
        model = mobilenet_v3_small_like(image=args.image)
        fp32_path, fp16_path = Path(folder) / "mnv3.onnx", Path(folder) / "mnv3_fp16.onnx"
        onnx.save(model, fp32_path)
        onnx.save(to_float16(model), fp16_path)
        feeds = {
            "input": np.random.default_rng(1)
            .uniform(-1, 1, (1, 3, args.image, args.image))
            .astype(np.float32)
        }
        for precision in ("fp32", "fp16"):
            label = f"mnv3 fp16 model {precision}"
            compiled = _compile(fp16_path, precision)
            runners[label] = lambda c=compiled: c.run(feeds)
            outputs[label] = compiled.run(feeds)["output"]
            notes[label] = f"{_precisions(compiled)}, {_planned_bytes(compiled)} B planned"

        def ort(path: Path) -> np.ndarray:
            session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
            return session.run(None, feeds)[0]

        goldens["mnv3 fp16 model"] = ort(fp32_path)
        ort16 = ort(fp16_path)
        for runner in runners.values():
            for _ in range(3):
                runner()
        times = interleaved_ms(runners, args.rounds)
    med = {label: statistics.median(t) for label, t in times.items()}
    print(f"OpenCL device: {get_device().name}; host {cpu_name()}; {args.rounds} rounds")
    for label, ms in med.items():
        model_name = label.rsplit(" ", 1)[0]
        golden = goldens[model_name]
        error = float(np.max(np.abs(outputs[label] - golden)) / np.max(np.abs(golden)))
        print(f"  {label:24s} {ms:8.2f} ms  error {error:.2e}  ({notes[label]})")
    golden = goldens["mnv3 fp16 model"]
    ort_error = float(np.max(np.abs(ort16 - golden)) / np.max(np.abs(golden)))
    print(f"  onnxruntime's float16 run of the MobileNetV3 model: error {ort_error:.2e}")
    for model_name in dict.fromkeys(label.rsplit(" ", 1)[0] for label in med):
        ratio = med[f"{model_name} fp16"] / med[f"{model_name} fp32"]
        print(f"{model_name}: fp16 storage / fp32 storage {ratio:.2f}x")


if __name__ == "__main__":
    main()
