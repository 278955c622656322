#!/usr/bin/env python3
"""irc's OpenCL target on a GPU beside PyTorch (eager and CUDA graph), in one process.

For a shared model (default: mobilenet_v2_float32), every configuration below is compiled
with `irc.compile(path, targets=["opencl", "reference"])` and timed end to end
(`CompiledModel.run(feed)`: input upload, every launch, output download; median of
`--repeat` runs after `--warmup`), then profiled: the sum of the kernels' device time per run
(OpenCL events), the launch count, and the `--kernels` slowest kernels with GFLOP/s.

Configurations (`--configs`, comma-separated):
- `gpu`: the default on a GPU device (`kernels=gpu`, gpu_kernels.py's launch rule);
- `gpu-wide` / `gpu-narrow`: the same kernels with 4x / 1/4 the work-items per compute unit
  (`gpu_kernels.ITEMS_PER_UNIT`: more K splitting and fewer pixels per work-item, or less);
- `gpu-tuned`: `gpu` with `IRC_OPENCL_TUNE=1` (work-group sizes measured, cached);
- `cpu`: the register-tiled kernels shaped for CPU devices (`IRC_OPENCL_KERNELS=cpu`).

`--torch` also times the same architecture in PyTorch on CUDA (MobileNetV2 only, batch 1,
fp32 with TF32 off, BN folded into conv biases as irc's model has it, input on the device):
eager with `torch.cuda.synchronize()` per run, and one CUDA graph replayed. Prints tables;
asserts nothing. Needs an OpenCL device (any: on PoCL it shows the CPU-device picture).

usage: python benchmarks/opencl_gpu.py [--model NAME] [--configs gpu,cpu] [--repeat 200]
                                       [--warmup 20] [--kernels 10] [--geometry] [--torch]
                                       [--compute-units N]

`--compute-units N` shapes the `gpu` kernels for N compute units instead of the device's
(`IRC_OPENCL_COMPUTE_UNITS`): on PoCL, `--geometry --compute-units 132` prints the launch
geometry an H100 would get, with the error of those kernels run on the CPU device.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from opencl_vs_ort import kernel_flops, launch_geometry
from side_by_side import DEFAULT_MODELS, load_inputs, timed_runs

CONFIGS = ("gpu", "gpu-wide", "gpu-narrow", "gpu-tuned", "cpu")
_DEFAULT_ITEMS: dict[str, int] = {}
"""gpu_kernels.ITEMS_PER_UNIT as the module set it (before any configuration changed it)."""


def median_ms(fn: Callable[[], object], repeat: int, warmup: int) -> tuple[float, float]:
    """(median, minimum) wall-clock ms of `fn`."""
    times = timed_runs(fn, repeat, warmup)
    return statistics.median(times) * 1e3, min(times) * 1e3


def _configure(config: str) -> None:
    from irc.targets.opencl import gpu_kernels

    os.environ["IRC_OPENCL_KERNELS"] = "cpu" if config == "cpu" else "gpu"
    os.environ.pop("IRC_OPENCL_TUNE", None)
    if config == "gpu-tuned":
        os.environ["IRC_OPENCL_TUNE"] = "1"
    base = _DEFAULT_ITEMS.setdefault("items", gpu_kernels.ITEMS_PER_UNIT)
    gpu_kernels.ITEMS_PER_UNIT = {"gpu-wide": base * 4, "gpu-narrow": base // 4}.get(config, base)


def run_config(
    path: Path, config: str, repeat: int, warmup: int, kernels: int, geometry: bool
) -> list[str]:
    import irc
    from irc.runtime.profiling import Profile

    _configure(config)
    inputs = load_inputs(path.parent)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = irc.compile(path, targets=["opencl", "reference"])
        compile_s = time.perf_counter() - start
    feed = {k: inputs[k] for k in model.input_names if k in inputs} or inputs
    golden = dict(np.load(path.parent / "outputs_0.npz"))
    got = model.run(feed)
    got_list = list(got.values()) if isinstance(got, dict) else list(got)
    errors = [
        float(
            np.max(np.abs(np.asarray(g, np.float64).reshape(w.shape) - w))
            / max(np.abs(w).max(), 1e-12)
        )
        for g, w in zip(got_list, golden.values(), strict=False)
    ]
    med, low = median_ms(lambda: model.run(feed), repeat, warmup)
    profile = Profile()
    runs = max(5, repeat // 10)
    for _ in range(runs):
        model.run(feed, profile=profile)
    rows = profile.kernel_rows(order="time")
    device_ms = sum(row.mean_ms for row in rows)
    launches = sum(
        len(loaded.launch_geometry("entry"))
        for loaded in model.program.loaded.values()
        if hasattr(loaded, "launch_geometry")
    )
    lines = [
        f"{config:>11}: run median {med:7.3f} ms (min {low:7.3f}), kernels' device time "
        f"{device_ms:7.3f} ms/run, {launches} launches, compile {compile_s:5.1f} s, "
        f"max error rel. to output scale {max(errors, default=float('nan')):.2e}"
    ]
    for row in rows[:kernels]:
        flops = kernel_flops(row.description)
        rate = f"{flops / row.mean_ms / 1e6:8.1f}" if flops and row.mean_ms else f"{'—':>8}"
        lines.append(f"      {row.mean_ms * 1e3:8.1f} us {rate} GFLOP/s  {row.description[:110]}")
    if geometry:
        lines += launch_geometry(model)
    return lines


def torch_mobilenet_v2() -> Any:
    """MobileNetV2 (torchvision's layout: 1.0 width, 1000 classes) with BN folded into conv
    biases, built without torchvision."""
    import torch
    from torch import nn

    def conv(cin: int, cout: int, k: int, s: int, groups: int = 1, act: bool = True) -> Any:
        layers: list[Any] = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=True)]
        if act:
            layers.append(nn.ReLU6(inplace=True))
        return nn.Sequential(*layers)

    class Inverted(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
            super().__init__()
            hidden = cin * expand
            layers = [] if expand == 1 else [conv(cin, hidden, 1, 1)]
            layers += [conv(hidden, hidden, 3, stride, hidden), conv(hidden, cout, 1, 1, act=False)]
            self.body = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x: Any) -> Any:
            return x + self.body(x) if self.residual else self.body(x)

    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1)]
    settings += [(6, 160, 3, 2), (6, 320, 1, 1)]
    layers: list[Any] = [conv(3, 32, 3, 2)]
    cin = 32
    for t, c, n, s in settings:
        for i in range(n):
            layers.append(Inverted(cin, c, s if i == 0 else 1, t))
            cin = c
    layers.append(conv(cin, 1280, 1, 1))
    features = nn.Sequential(*layers)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = features
            self.fc = nn.Linear(1280, 1000)

        def forward(self, x: Any) -> Any:
            x = self.features(x).mean((2, 3))
            return torch.softmax(self.fc(x), dim=1)

    return Net()


def run_torch(repeat: int, warmup: int) -> list[str]:
    try:
        import torch
    except ImportError:
        return ["torch: not installed"]
    if not torch.cuda.is_available():
        return ["torch: no CUDA device"]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    net = torch_mobilenet_v2().cuda().eval()
    x = torch.randn(1, 3, 224, 224, device="cuda")
    host = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    lines = [f"torch {torch.__version__} on {torch.cuda.get_device_name()}"]
    with torch.inference_mode():

        def eager() -> None:
            net(x)
            torch.cuda.synchronize()

        def eager_host() -> None:
            net(torch.from_numpy(host).cuda()).cpu()

        med, low = median_ms(eager, repeat, warmup)
        lines.append(f"      eager (input on the device): median {med:7.3f} ms (min {low:7.3f})")
        med, low = median_ms(eager_host, repeat, warmup)
        lines.append(f"      eager (host in/out):         median {med:7.3f} ms (min {low:7.3f})")
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                net(x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            net(x)

        def replay() -> None:
            graph.replay()
            torch.cuda.synchronize()

        med, low = median_ms(replay, repeat, warmup)
        lines.append(f"      CUDA graph (input on device): median {med:7.3f} ms (min {low:7.3f})")
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--model", default="mobilenet_v2_float32")
    parser.add_argument("--configs", default="gpu,cpu")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--kernels", type=int, default=10)
    parser.add_argument("--geometry", action="store_true")
    parser.add_argument("--torch", action="store_true")
    parser.add_argument(
        "--compute-units",
        type=int,
        default=0,
        help="shape gpu kernels for this many compute units instead of the device's "
        "(IRC_OPENCL_COMPUTE_UNITS; 132 on PoCL shows an H100's launch geometry)",
    )
    args = parser.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if args.compute_units > 0:
        os.environ["IRC_OPENCL_COMPUTE_UNITS"] = str(args.compute_units)
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configs {unknown}: choose from {', '.join(CONFIGS)}")
    folder = args.models / args.model
    paths = sorted(folder.glob("*.tflite")) + sorted(folder.glob("*.onnx"))
    if not paths:
        parser.error(f"no model in {folder}")
    from irc.targets.opencl.device import get_device

    print(f"device: {get_device().profile.describe()}")
    print(f"model: {paths[0].name}, batch 1, fp32")
    for config in configs:
        try:
            lines = run_config(
                paths[0], config, args.repeat, args.warmup, args.kernels, args.geometry
            )
        except Exception as exc:  # report and go on with the next configuration
            lines = [
                f"{config:>11}: failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            ]
        print("\n".join(lines), flush=True)
    if args.torch:
        print("\n".join(run_torch(args.repeat, args.warmup)), flush=True)


if __name__ == "__main__":
    main()
