#!/usr/bin/env python3
"""Hash the C that `--targets cpu` generates for every model at hand (a refactoring check).

Compiles, for the CPU target only and without building anything (the pipeline stops right
before the host program is prepared), each model of ../shared/models/manifest.json, the
example networks of examples/build_*.py (DenseNet-121, the 640x640 detection network, the
MobileNetV2-style net) and the transformer graphs of tests/transformer_graphs.py (BERT- and
GPT-2-like), and prints one SHA-256 per generated C translation unit (`cpu.module`). Run it
before and after a change to the code generator and compare the two JSON files: a
refactoring that must not change the generated C gives identical hashes.

usage: python benchmarks/cpu_c_hashes.py [--models DIR] [--only NAME,...] [--profile]
           [--json OUT] [--compare BEFORE.json]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODELS = ROOT.parent / "shared" / "models"


class _Stop(Exception):
    """Raised in place of preparing the host program: the module is lowered by then."""

    def __init__(self, module: Any) -> None:
        super().__init__("stopped before prepare")
        self.module = module


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _programs(models: Path) -> Iterator[tuple[str, Callable[[str], str], dict[str, list[int]]]]:
    """(name, write the model into a folder and give its path, input shapes)."""
    manifest = models / "manifest.json"
    if manifest.exists():
        for entry in json.loads(manifest.read_text())["models"]:
            path = models / entry["file"]
            shapes = {i["name"]: list(i["shape"]) for i in entry.get("inputs", ())}
            yield entry["name"], (lambda _d, p=path: str(p)), shapes

    def onnx_model(name: str, build: Callable[[], Any]) -> Callable[[str], str]:
        def write(folder: str) -> str:
            import onnx

            out = os.path.join(folder, f"{name}.onnx")
            onnx.save(build(), out)
            return out

        return write

    examples = ROOT / "examples"
    densenet = _load(examples / "build_densenet.py")
    yield "densenet121", onnx_model("densenet121", densenet.build_model), {}
    detection = _load(examples / "build_detection_net.py")
    yield "detection_640", onnx_model("detection_640", detection.build_model), {}
    mobilenet = _load(examples / "build_mobilenet.py")
    yield "mobilenet_96", onnx_model("mobilenet_96", mobilenet.build_model), {}
    graphs = _load(ROOT / "tests" / "transformer_graphs.py")
    seq = [1, 16]
    bert_shapes = {"input_ids": seq, "attention_mask": seq, "token_type_ids": seq}
    yield "bert_like", onnx_model("bert_like", graphs.bert_like), bert_shapes
    yield "gpt2_like", onnx_model("gpt2_like", graphs.gpt2_like), {"input_ids": seq}


def _sources(path: str, shapes: dict[str, list[int]]) -> list[str]:
    """The C translation units `irc.compile(path, targets=["cpu"])` generates."""
    import irc
    import irc.runtime
    from irc.dialects import cpu

    real = irc.runtime.compile_function

    def stop(module: Any, *args: object, **kwargs: object) -> Any:
        raise _Stop(module)

    irc.runtime.compile_function = stop  # type: ignore[assignment]  # the lowered module only
    try:
        irc.compile(path, targets=["cpu"], input_shapes=shapes or None)
    except _Stop as stopped:
        return [op.source.data for op in stopped.module.walk() if isinstance(op, cpu.CModuleOp)]
    finally:
        irc.runtime.compile_function = real  # type: ignore[assignment]
    raise RuntimeError(f"{path}: the pipeline never reached the host program")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=Path, default=DEFAULT_MODELS)
    parser.add_argument("--only", help="comma-separated program names")
    parser.add_argument("--profile", action="store_true", help="with IRC_CPU_PROFILE=1")
    parser.add_argument("--json", type=Path, help="write {program: [sha256, ...]} here")
    parser.add_argument("--compare", type=Path, help="a JSON file of an earlier run")
    args = parser.parse_args(argv)
    if args.profile:
        os.environ["IRC_CPU_PROFILE"] = "1"
    only = set(args.only.split(",")) if args.only else None
    hashes: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, write, shapes in _programs(args.models):
            if only is not None and name not in only:
                continue
            sources = _sources(write(folder), shapes)
            hashes[name] = [hashlib.sha256(s.encode()).hexdigest() for s in sources]
            size = sum(len(s) for s in sources)
            print(f"{name}: {len(sources)} C sources, {size} bytes, {hashes[name]}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(hashes, indent=1) + "\n")
    if args.compare:
        before = json.loads(args.compare.read_text())
        same = [n for n in hashes if before.get(n) == hashes[n]]
        differ = [n for n in hashes if n in before and before[n] != hashes[n]]
        print(f"identical: {len(same)} programs; different: {differ or 'none'}")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
