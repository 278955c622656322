"""Mutation fuzzer for irc's three front ends: the TFLite importer, the ONNX importer and the
IR parser.

Each case takes a seed (a small real model, a model built the way the tests build them, or an
`.mlir` file of the repository), mutates it deterministically from `(seed, case index)`, and runs
the front end in-process exactly as the tools do. The only allowed outcomes are success or the
project's clear user errors (`ModelImportError` for models; xDSL's `ParseError` and
`DiagnosticException` for IR text, which the tools print as one located message). Anything else
is a *finding*: another exception (a traceback in the tools), `RecursionError`, `MemoryError`, or
a case running longer than `--case-timeout` seconds.

Long run (outside CI; the pytest smoke test `tests/test_fuzz_smoke.py` runs a few hundred)::

    .venv/bin/python fuzz/fuzz_frontends.py --cases 100000 --seed 1

It prints executions per second per front end and every distinct finding; `--save-dir DIR`
keeps each finding's input for a regression test. The script needs no package beyond irc's own
dependencies (`tests/` supplies the model builders; `/work/shared/models` the real models,
skipped when absent).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import hashlib
import io
import os
import random
import re
import resource
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHARED_MODELS = Path(os.environ.get("IRC_SHARED_MODELS", "/work/shared/models"))
FRONTENDS = ("tflite", "onnx", "mlir")
MAX_SEED_BYTES = 1_000_000
"""Real models larger than this are not used as seeds (each case would import megabytes)."""

BOUNDARY_INTS = (
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    0x7F,
    0x80,
    0xFF,
    0x7FFF,
    0xFFFF,
    0x7FFFFFFF,
    0x80000000,
    0xFFFFFFFF,
    -1,
    -2,
)
MLIR_TOKENS = (
    "{",
    "}",
    "(",
    ")",
    "<",
    ">",
    "[",
    "]",
    ":",
    ",",
    "->",
    "x",
    "?",
    "%0",
    "%arg0",
    "^bb0",
    "@main",
    '"',
    "\\",
    "0x",
    "#",
    "!",
    "tensor<",
    "dense<",
    "f32",
    "i8",
    "99999999999999999999",
    "-1",
    "0",
    "1e39",
    "nan",
    "inf",
    "func.func",
    "nn.add",
    "quant.qcast",
    "delegate.region",
    "builtin.module",
    "{-#",
    "#-}",
    "//",
    "\n",
    "loc(",
    "array<i64:",
    "memref<",
    "\u00e9",
    "\x00",
)


class CaseTimeout(BaseException):
    """A case ran past its time limit (a BaseException so that no `except Exception` hides it)."""


@dataclass(frozen=True)
class Seed:
    """One starting input of a front end."""

    frontend: str
    name: str
    data: bytes


@dataclass(frozen=True)
class Finding:
    """An outcome other than success or a clear user error."""

    frontend: str
    seed: str
    case: int
    kind: str
    message: str
    where: str
    data: bytes

    @property
    def key(self) -> tuple[str, str, str]:
        """Findings with the same front end, exception type and raising line are one bug."""
        return (self.frontend, self.kind, self.where)


@dataclass
class Report:
    """What a fuzzing run did."""

    executions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FRONTENDS, 0))
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(FRONTENDS, 0.0))
    outcomes: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.executions.values())

    def distinct_findings(self) -> list[Finding]:
        seen: dict[tuple[str, str, str], Finding] = {}
        for finding in self.findings:
            seen.setdefault(finding.key, finding)
        return list(seen.values())


# ---- Seeds --------------------------------------------------------------------------------------


def _tests_on_path() -> None:
    tests = str(REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def tflite_seeds() -> list[Seed]:
    """Small models built with tests/tflite_builder.py, then the small shared models."""
    _tests_on_path()
    from tflite_builder import Op, T, build_model, build_op_model

    f32 = "float32"
    rng = np.random.default_rng(0)
    seeds = [
        build_op_model("ADD", [T([1, 4], f32), T([1, 4], f32, data=np.ones(4))], [T([1, 4], f32)]),
        build_op_model(
            "CONV_2D",
            [
                T([1, 5, 5, 2], f32),
                T([3, 3, 3, 2], f32, data=rng.normal(size=54)),
                T([3], f32, data=np.zeros(3)),
            ],
            [T([1, 5, 5, 3], f32)],
            (
                "Conv2DOptions",
                {
                    "padding": "SAME",
                    "stride_w": 1,
                    "stride_h": 1,
                    "fused_activation_function": "RELU6",
                },
            ),
        ),
        build_op_model(
            "FULLY_CONNECTED",
            [
                T([1, 8], "int8", 0.5, 1),
                T([4, 8], "int8", [0.1] * 4, [0] * 4, data=np.arange(32) - 16),
                T([4], "int32", [0.05] * 4, [0] * 4, data=np.arange(4)),
            ],
            [T([1, 4], "int8", 0.25, -3)],
        ),
        build_op_model(
            "RESHAPE",
            [T([2, 6], f32), T([2], "int32", data=[3, 4])],
            [T([3, 4], f32)],
            ("ReshapeOptions", {"new_shape": [3, 4]}),
        ),
        build_model(
            [
                T([1, 4, 4, 1], f32),
                T([1, 2, 2, 1], f32),
                T([1, 2, 2, 1], f32),
                T([4], "int32", data=[1, 2, 2, 1], name="s"),
            ],
            [
                Op(
                    "MAX_POOL_2D",
                    [0],
                    [1],
                    (
                        "Pool2DOptions",
                        {
                            "padding": "VALID",
                            "stride_w": 2,
                            "stride_h": 2,
                            "filter_width": 2,
                            "filter_height": 2,
                        },
                    ),
                ),
                Op("RESHAPE", [1, 3], [2]),
            ],
            [0],
            [2],
        ),
    ]
    result = [Seed("tflite", f"builder_{i}", s) for i, s in enumerate(seeds)]
    return result + _shared_seeds("tflite", ".tflite")


def _shared_seeds(frontend: str, suffix: str) -> list[Seed]:
    if not SHARED_MODELS.is_dir():
        return []
    found = []
    for path in sorted(SHARED_MODELS.glob(f"*/*{suffix}")):
        if path.stat().st_size <= MAX_SEED_BYTES:
            found.append(Seed(frontend, path.name, path.read_bytes()))
    return found


def onnx_seeds() -> list[Seed]:
    """Small graphs made with `onnx.helper` (convolution, shapes, an `If`), then the shared ONNX
    models with their dynamic input dimensions fixed so that they import."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def model(nodes, inputs, outputs, inits=(), opset=18) -> bytes:
        graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 10
        return m.SerializeToString()

    def vi(name: str, shape: Sequence[int], elem: int = TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, elem, list(shape))

    def branch(name: str, op: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node(op, ["X"], [f"{name}_y"])], name, [], [vi(f"{name}_y", [1, 4])]
        )

    weight = numpy_helper.from_array(rng.normal(size=(3, 2, 3, 3)).astype(np.float32), "W")
    bias = numpy_helper.from_array(np.zeros(3, np.float32), "B")
    shape = numpy_helper.from_array(np.array([2, 6], np.int64), "S")
    seeds = [
        model(
            [
                helper.make_node("Conv", ["X", "W", "B"], ["C"], pads=[1, 1, 1, 1]),
                helper.make_node("Relu", ["C"], ["Y"]),
            ],
            [vi("X", [1, 2, 5, 5])],
            [vi("Y", [1, 3, 5, 5])],
            [weight, bias],
        ),
        model(
            [
                helper.make_node("Reshape", ["X", "S"], ["R"]),
                helper.make_node("Transpose", ["R"], ["Y"], perm=[1, 0]),
            ],
            [vi("X", [3, 4])],
            [vi("Y", [6, 2])],
            [shape],
        ),
        model(
            [
                helper.make_node("Shape", ["X"], ["s"]),
                helper.make_node(
                    "ConstantOfShape",
                    ["s"],
                    ["z"],
                    value=numpy_helper.from_array(np.array([1.5], np.float32)),
                ),
                helper.make_node("Add", ["X", "z"], ["Y"]),
            ],
            [vi("X", [2, 3])],
            [vi("Y", [2, 3])],
        ),
        model(
            [
                helper.make_node(
                    "Constant",
                    [],
                    ["c"],
                    value=helper.make_tensor("c", TensorProto.BOOL, [], [True]),
                ),
                helper.make_node(
                    "If",
                    ["c"],
                    ["Y"],
                    then_branch=branch("then", "Relu"),
                    else_branch=branch("else", "Neg"),
                ),
            ],
            [vi("X", [1, 4])],
            [vi("Y", [1, 4])],
        ),
        model(
            [helper.make_node("Gemm", ["X", "G"], ["Y"], transB=1)],
            [vi("X", [2, 4])],
            [vi("Y", [2, 3])],
            [numpy_helper.from_array(rng.normal(size=(3, 4)).astype(np.float32), "G")],
        ),
    ]
    result = [Seed("onnx", f"helper_{i}", s) for i, s in enumerate(seeds)]
    for seed in _shared_seeds("onnx", ".onnx"):
        proto = onnx.ModelProto()
        proto.ParseFromString(seed.data)
        folder = next(SHARED_MODELS.glob(f"*/{glob.escape(seed.name)}")).parent
        _fix_dynamic_inputs(proto, folder / "inputs_0.npz")
        result.append(Seed("onnx", seed.name, proto.SerializeToString()))
    return result


def _fix_dynamic_inputs(proto: object, sample: Path) -> None:
    """Give dynamic input dimensions the sizes of the model's sample inputs (or 1)."""
    shapes: dict[str, tuple[int, ...]] = {}
    if sample.exists():
        with np.load(sample) as arrays:
            shapes = {name: arrays[name].shape for name in arrays.files}
    for info in proto.graph.input:  # type: ignore[attr-defined]
        for i, dim in enumerate(info.type.tensor_type.shape.dim):
            if not dim.HasField("dim_value") or dim.dim_value <= 0:
                given = shapes.get(info.name)
                dim.dim_value = given[i] if given and i < len(given) else 1


def mlir_seeds() -> list[Seed]:
    """examples/*.mlir and filecheck/**/*.mlir, split at `// -----` like `--split-input-file`."""
    seeds = []
    files = sorted(REPO.glob("examples/*.mlir")) + sorted(REPO.glob("filecheck/**/*.mlir"))
    for path in files:
        if "Output" in path.parts:  # lit's generated files
            continue
        chunks = re.split(r"^// -----\n", path.read_text(encoding="utf-8"), flags=re.M)
        for i, chunk in enumerate(chunks):
            if chunk.strip() and len(chunk) < 20_000:
                name = f"{path.relative_to(REPO)}#{i}"
                seeds.append(Seed("mlir", name, chunk.encode()))
    return seeds


def all_seeds(frontends: Sequence[str] = FRONTENDS) -> dict[str, list[Seed]]:
    makers = {"tflite": tflite_seeds, "onnx": onnx_seeds, "mlir": mlir_seeds}
    return {f: makers[f]() for f in frontends}


# ---- Mutations ----------------------------------------------------------------------------------


def mutate_bytes(data: bytes, rng: random.Random, pool: Sequence[bytes]) -> tuple[bytes, str]:
    """One to four generic byte mutations; returns the result and what was done."""
    buf = bytearray(data)
    done = []
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        kind = rng.randrange(9)
        n = len(buf)
        pos = rng.randrange(n) if n else 0
        if kind == 0 and n:
            buf[pos] ^= 1 << rng.randrange(8)
            done.append(f"flip@{pos}")
        elif kind == 1 and n:
            buf[pos] = rng.randrange(256)
            done.append(f"set@{pos}")
        elif kind == 2:
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            done.append(f"insert@{pos}")
        elif kind == 3 and n:
            del buf[pos : pos + rng.randint(1, 64)]
            done.append(f"delete@{pos}")
        elif kind == 4 and n:
            length = rng.randint(1, 256)
            buf[pos:pos] = buf[pos : pos + length]
            done.append(f"duplicate@{pos}")
        elif kind == 5 and pool:
            other = rng.choice(pool)
            start = rng.randrange(len(other)) if other else 0
            chunk = other[start : start + rng.randint(1, 512)]
            if rng.random() < 0.5:
                buf[pos : pos + len(chunk)] = chunk
            else:
                buf[pos:pos] = chunk
            done.append(f"splice@{pos}")
        elif kind == 6 and n >= 4:
            aligned = (pos // 4) * 4 if rng.random() < 0.8 else pos
            aligned = min(aligned, n - 4)
            value = rng.choice((*BOUNDARY_INTS, n, n - 4, n + 4, rng.randrange(n + 1)))
            buf[aligned : aligned + 4] = (value & 0xFFFFFFFF).to_bytes(4, "little")
            done.append(f"int32@{aligned}={value}")
        elif kind == 7 and n:
            del buf[rng.randrange(n) :]
            done.append("truncate")
        elif kind == 8 and n >= 2:
            value = rng.choice((0, 1, 0xFF, 0x7F, 0x80, 0xFFFF))
            buf[pos : pos + 2] = (value & 0xFFFF).to_bytes(2, "little")
            done.append(f"int16@{pos}")
    return bytes(buf), "+".join(done) or "none"


def _replace_a_match(
    rng: random.Random, text: str, pattern: str, group: int, values: tuple[str, ...], tag: str
) -> tuple[bytes, str] | None:
    """`text` with one random match of `pattern` (its `group`) replaced by one of `values`,
    and a tag naming where; None when nothing matches."""
    matches = list(re.finditer(pattern, text))
    if not matches:
        return None
    m = rng.choice(matches)
    value = rng.choice(values)
    return (text[: m.start(group)] + value + text[m.end(group) :]).encode(), f"{tag}@{m.start()}"


def mutate_text(data: bytes, rng: random.Random, pool: Sequence[bytes]) -> tuple[bytes, str]:
    """IR-aware mutations: tokens, numbers at boundaries, line shuffles, deep nesting."""
    text = data.decode("utf-8", "replace")
    kind = rng.randrange(7)
    if kind == 0:
        pos = rng.randrange(len(text) + 1)
        token = rng.choice(MLIR_TOKENS)
        return (text[:pos] + token + text[pos:]).encode(), f"token@{pos}"
    if kind == 1:
        numbers = (
            "0",
            "-1",
            "4294967296",
            "9223372036854775808",
            "99999999999999999999999",
            "1e400",
            "65536",
            "2147483648",
        )
        found = _replace_a_match(rng, text, r"-?\d+(\.\d+)?", 0, numbers, "number")
        if found is not None:
            return found
    if kind == 2:
        lines = text.splitlines(keepends=True)
        if lines:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            choice = rng.randrange(3)
            if choice == 0:
                lines.insert(i, lines[j])
            elif choice == 1:
                del lines[i]
            else:
                lines[i], lines[j] = lines[j], lines[i]
            return "".join(lines).encode(), f"lines{choice}@{i},{j}"
    if kind == 3:
        depth = rng.choice((50, 200, 1000, 5000))
        opener = rng.choice(
            ('"test.op"() ({\n', "tensor<", "(", "[", "{", "array<i64: ", "dense<[")
        )
        pos = rng.randrange(len(text) + 1)
        return (text[:pos] + opener * depth + text[pos:]).encode(), f"nest{depth}@{pos}"
    if kind == 4:
        dims = (
            "100000x100000x100000",
            "0",
            "4294967296x4294967296",
            "?x?",
            "-1",
            "9223372036854775807",
        )
        found = _replace_a_match(rng, text, r"tensor<([0-9x?]+)x", 1, dims, "shape")
        if found is not None:
            return found
    if kind == 5 and pool:
        other = rng.choice(pool).decode("utf-8", "replace")
        a, b = sorted(rng.randrange(len(other) + 1) for _ in range(2))
        pos = rng.randrange(len(text) + 1)
        return (text[:pos] + other[a:b] + text[pos:]).encode(), f"splice@{pos}"
    return mutate_bytes(data, rng, pool)


def mutate_onnx_structure(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """Mutations through the protobuf: hostile sizes, lengths, paths, nesting."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.ModelProto()
    model.ParseFromString(data)
    graph = model.graph
    kind = rng.randrange(9)
    tensors = list(graph.initializer) + [
        a.t for n in graph.node for a in n.attribute if a.type == onnx.AttributeProto.TENSOR
    ]
    if kind == 0 and tensors:  # a huge or negative declared size
        tensor = rng.choice(tensors)
        dims = rng.choice(([2**40], [-1], [2**31, 2**31], [0], [-5, 3], [2**62, 4], [1] * 64))
        del tensor.dims[:]
        tensor.dims.extend(dims)
        return model.SerializeToString(), f"tensor-dims={dims[:3]}"
    if kind == 1 and tensors:  # raw data shorter or longer than declared
        tensor = rng.choice(tensors)
        raw = tensor.raw_data
        tensor.raw_data = raw[: rng.randrange(len(raw) + 1)] if raw else b"\x00" * 7
        if rng.random() < 0.3:
            tensor.raw_data += b"\x01" * rng.randint(1, 9)
        return model.SerializeToString(), "raw-length"
    if kind == 2 and tensors:  # external data that escapes the model's folder
        tensor = rng.choice(tensors)
        tensor.data_location = TensorProto.EXTERNAL
        tensor.ClearField("raw_data")
        del tensor.external_data[:]
        location = rng.choice(
            (
                "../../etc/passwd",
                "/etc/passwd",
                "weights.bin",
                "sub/../../x",
                "weights.bin\x00",
                "",
                "missing.bin",
                ".",
            )
        )
        entries = {"location": location}
        if rng.random() < 0.5:
            entries["offset"] = str(rng.choice((0, 4, 2**40, -8)))
        if rng.random() < 0.5:
            entries["length"] = str(rng.choice((0, 8, 2**40, -8, 12)))
        for key, value in entries.items():
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        return model.SerializeToString(), f"external={location!r}"
    if kind == 3:  # deeply nested If graphs
        depth = rng.choice((5, 20, 32, 34, 60))  # protobuf parses 100 levels
        leaf = helper.make_graph(
            [helper.make_node("Identity", ["X"], ["y0"])],
            "b0",
            [],
            [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None)],
        )
        inner = leaf  # only the then-branch nests: the model grows linearly with depth
        try:
            for level in range(1, depth):
                name = f"y{level}"
                node = helper.make_node("If", ["cond"], [name], then_branch=inner, else_branch=leaf)
                inner = helper.make_graph(
                    [node], f"b{level}", [], [helper.make_tensor_value_info(name, 1, None)]
                )
            cond = helper.make_tensor("cond", TensorProto.BOOL, [], [True])
            graph.initializer.append(cond)
            node = helper.make_node("If", ["cond"], ["deep"], then_branch=inner, else_branch=leaf)
            graph.node.append(node)
            return model.SerializeToString(), f"nested-if={depth}"
        except Exception:  # protobuf refuses too deep a message: not irc's concern
            return data, "nested-if-unbuildable"
    if kind == 4 and graph.input:  # huge or negative input dimensions
        info = rng.choice(list(graph.input))
        for dim in info.type.tensor_type.shape.dim:
            if rng.random() < 0.5:
                dim.dim_value = rng.choice((2**40, 0, -3, 2**31, 2**63 - 1))
        return model.SerializeToString(), "input-dims"
    if kind == 5 and graph.node:  # hostile integer attributes
        node = rng.choice(list(graph.node))
        ints = [
            a
            for a in node.attribute
            if a.type in (onnx.AttributeProto.INT, onnx.AttributeProto.INTS)
        ]
        value = rng.choice((0, -1, 2**31, 2**62, -(2**62), 10**6))
        if ints:
            attr = rng.choice(ints)
            if attr.type == onnx.AttributeProto.INT:
                attr.i = value
            elif attr.ints:
                attr.ints[rng.randrange(len(attr.ints))] = value
        else:
            node.attribute.append(helper.make_attribute("axis", value))
        return model.SerializeToString(), f"attr={value}"
    if kind == 6 and graph.node:  # another op type with the same operands
        node = rng.choice(list(graph.node))
        node.op_type = rng.choice(
            (
                "Reshape",
                "Expand",
                "Tile",
                "ConstantOfShape",
                "Range",
                "Resize",
                "Pad",
                "Slice",
                "Gather",
                "Concat",
                "Split",
                "Unsqueeze",
                "MatMul",
                "Conv",
                "If",
                "Loop",
                "Scan",
                "TopK",
                "OneHot",
                "Einsum",
                "ReduceSum",
                "Cast",
            )
        )
        return model.SerializeToString(), f"op={node.op_type}"
    if kind == 7 and tensors:  # a constant shape tensor with huge values feeding shape ops
        tensor = rng.choice(tensors)
        values = rng.choice(([2**40], [2**31, 2**31], [-1, 2**33], [0, 10**9]))
        tensor.data_type = TensorProto.INT64
        del tensor.dims[:]
        tensor.dims.append(len(values))
        tensor.raw_data = np.array(values, "<i8").tobytes()
        return model.SerializeToString(), f"shape-values={values}"
    if kind == 8 and tensors:  # another element type for the same bytes
        tensor = rng.choice(tensors)
        tensor.data_type = rng.choice((0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 99))
        return model.SerializeToString(), f"dtype={tensor.data_type}"
    return data, "none"


# ---- Running cases ------------------------------------------------------------------------------


def _allowed_errors(frontend: str) -> tuple[type[BaseException], ...]:
    if frontend == "mlir":
        from xdsl.parser import ParseError
        from xdsl.utils.exceptions import DiagnosticException

        return (ParseError, DiagnosticException)
    from irc.importers import ModelImportError

    return (ModelImportError,)


class FrontendRunner:
    """Runs one input through a front end in-process, as `irc-translate`/`irc-opt` do."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        (workdir / "weights.bin").write_bytes(np.arange(64, dtype=np.float32).tobytes())
        (workdir / "sub").mkdir(exist_ok=True)

    def run(self, frontend: str, data: bytes) -> None:
        if frontend == "mlir":
            import irc

            irc.parse_module(data, filename="fuzz.mlir")
            return
        from irc.importers import import_model_bytes

        import_model_bytes(data, self.workdir / f"fuzz.{frontend}")


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _raising_place(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    for frame in reversed(frames):  # the innermost frame of irc's own code
        if "/irc/" in frame.filename or "/dialects/" in frame.filename:
            return f"{Path(frame.filename).name}:{frame.lineno}"
    return f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"


def run_case(
    runner: FrontendRunner, frontend: str, seed: Seed, case: int, data: bytes, timeout: float
) -> tuple[str, Finding | None]:
    """Run one input; returns the outcome (`ok`, `error` or a finding's kind) and the finding."""
    allowed = _allowed_errors(frontend)
    try:
        with (
            _time_limit(timeout),
            warnings.catch_warnings(),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            runner.run(frontend, data)
    except allowed as exc:
        cause = exc.__cause__ or exc.__context__
        if frontend == "mlir" or not isinstance(cause, (MemoryError, RecursionError)):
            return "error", None
        kind = f"{type(cause).__name__} (wrapped)"
        where = _raising_place(cause)
        finding = Finding(frontend, seed.name, case, kind, str(exc)[:300], where, data)
        return kind, finding
    except (Exception, CaseTimeout, RecursionError, MemoryError) as exc:
        kind = type(exc).__name__
        message = str(exc).splitlines()[0][:300] if str(exc) else ""
        finding = Finding(frontend, seed.name, case, kind, message, _raising_place(exc), data)
        return kind, finding
    return "ok", None


def make_input(seed: Seed, rng: random.Random, pool: Sequence[bytes]) -> tuple[bytes, str]:
    """The mutated input of one case."""
    if seed.frontend == "mlir":
        return mutate_text(seed.data, rng, pool)
    if seed.frontend == "onnx" and rng.random() < 0.5:
        data, what = mutate_onnx_structure(seed.data, rng)
        if rng.random() < 0.2:
            data, more = mutate_bytes(data, rng, pool)
            what += "+" + more
        return data, what
    return mutate_bytes(seed.data, rng, pool)


def _pick_seed(seeds: Sequence[Seed], rng: random.Random) -> Seed:
    # Small seeds import in a millisecond, real models in tens: weight towards the small ones.
    weights = [1.0 / (1.0 + len(s.data) / 20_000) for s in seeds]
    return rng.choices(seeds, weights)[0]


def fuzz(
    cases: int,
    seed: int,
    *,
    frontends: Sequence[str] = FRONTENDS,
    timeout: float = 10.0,
    seeds: dict[str, list[Seed]] | None = None,
    progress: Callable[[Report], None] | None = None,
) -> Report:
    """Run `cases` cases, spread round-robin over `frontends`; deterministic for a `seed`."""
    seeds = seeds if seeds is not None else all_seeds(frontends)
    report = Report()
    pools = {f: [s.data for s in seeds[f]] for f in frontends}
    with tempfile.TemporaryDirectory(prefix="irc-fuzz-") as workdir:
        runner = FrontendRunner(Path(workdir))
        for case in range(cases):
            frontend = frontends[case % len(frontends)]
            if not seeds[frontend]:
                continue
            rng = random.Random(f"{seed}:{case}")
            chosen = _pick_seed(seeds[frontend], rng)
            data, _ = make_input(chosen, rng, pools[frontend])
            start = time.perf_counter()
            outcome, finding = run_case(runner, frontend, chosen, case, data, timeout)
            report.seconds[frontend] += time.perf_counter() - start
            report.executions[frontend] += 1
            report.outcomes[f"{frontend}:{outcome}"] = (
                report.outcomes.get(f"{frontend}:{outcome}", 0) + 1
            )
            if finding is not None:
                report.findings.append(finding)
            if progress is not None and (case + 1) % 1000 == 0:
                progress(report)
    return report


# ---- Command line -------------------------------------------------------------------------------


def _limit_memory(megabytes: int) -> None:
    """Cap the address space so that a runaway allocation is a MemoryError, not a dead box."""
    with open("/proc/self/status") as status:
        vm_kib = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = vm_kib * 1024 + megabytes * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _print_report(report: Report, elapsed: float, stream: io.TextIOBase) -> None:
    stream.write(
        f"executions: {report.total} in {elapsed:.1f} s "
        f"({report.total / max(elapsed, 1e-9):.1f}/s)\n"
    )
    for frontend, count in report.executions.items():
        if count:
            rate = count / max(report.seconds[frontend], 1e-9)
            outcomes = {
                k.split(":", 1)[1]: v
                for k, v in report.outcomes.items()
                if k.startswith(frontend + ":")
            }
            stream.write(f"  {frontend}: {count} executions, {rate:.1f}/s, {outcomes}\n")
    distinct = report.distinct_findings()
    stream.write(f"findings: {len(report.findings)} ({len(distinct)} distinct)\n")
    for f in distinct:
        stream.write(
            f"  [{f.frontend}] {f.kind} at {f.where} (seed {f.seed}, case {f.case}): {f.message}\n"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="number of cases (default 1000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--frontends", default=",".join(FRONTENDS), help="tflite,onnx,mlir")
    parser.add_argument("--case-timeout", type=float, default=10.0, help="seconds per case")
    parser.add_argument(
        "--memory-mb",
        type=int,
        default=4096,
        help="address space allowed beyond the start (0: no limit)",
    )
    parser.add_argument("--save-dir", type=Path, help="write each distinct finding's input here")
    args = parser.parse_args(argv)
    frontends = [f for f in args.frontends.split(",") if f]
    unknown = sorted(set(frontends) - set(FRONTENDS))
    if unknown:
        parser.error(f"unknown front ends {unknown}; choose from {', '.join(FRONTENDS)}")
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    import irc.importers.onnx
    import irc.importers.tflite  # noqa: F401

    seeds = all_seeds(frontends)
    for frontend in frontends:
        sizes = sum(len(s.data) for s in seeds[frontend])
        sys.stdout.write(f"{frontend}: {len(seeds[frontend])} seeds, {sizes} bytes\n")
    if args.memory_mb:
        _limit_memory(args.memory_mb)
    start = time.perf_counter()

    def progress(report: Report) -> None:
        elapsed = time.perf_counter() - start
        sys.stdout.write(
            f"... {report.total} executions, {report.total / elapsed:.1f}/s, "
            f"{len(report.distinct_findings())} distinct findings\n"
        )
        sys.stdout.flush()

    report = fuzz(
        args.cases,
        args.seed,
        frontends=frontends,
        timeout=args.case_timeout,
        seeds=seeds,
        progress=progress,
    )
    _print_report(report, time.perf_counter() - start, sys.stdout)
    if args.save_dir:
        args.save_dir.mkdir(parents=True, exist_ok=True)
        for f in report.distinct_findings():
            digest = hashlib.sha1(f.data).hexdigest()[:12]
            (args.save_dir / f"{f.frontend}-{f.kind}-{digest}.{f.frontend}").write_bytes(f.data)
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
