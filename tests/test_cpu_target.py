"""The CPU target around its kernels: registration, availability, `supports()` reasons, the
`lower-cpu` IR, the buffer plan's corner cases, the build cache, argument checks, names from
the model never reaching the C source, and several threads sharing one loaded executable.
"""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from cpu_support import lower
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from irc.context import get_all_passes, make_context
from irc.diagnostics import IrcDiagnosticError
from irc.dialects import cpu, delegate, nn
from irc.printing import print_ir
from irc.runtime.errors import InputError
from irc.targets import get_target
from irc.targets.cpu import toolchain
from irc.targets.cpu.lower import LowerCpuPass
from irc.targets.cpu.runtime import CpuLoadError, CpuRuntime
from irc.targets.cpu.target import CpuTarget

# The run's build cache; the tests of the cache itself take an empty one (`fresh_cache`).
pytestmark = pytest.mark.private_cache

HAS_COMPILER = bool(CpuTarget().available())
needs_compiler = pytest.mark.skipif(not HAS_COMPILER, reason="no working C compiler")


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text, "test.mlir").parse_module()
    module.verify()
    return module


def executable_of(module: ModuleOp) -> delegate.ExecutableOp:
    return next(op for op in module.walk() if isinstance(op, delegate.ExecutableOp))


def source_of(module: ModuleOp) -> str:
    return next(op for op in module.walk() if isinstance(op, cpu.CModuleOp)).source.data


ADD_RELU = """
delegate.executable private @main_cpu_0 target("cpu") {
  func.func @entry(%x: tensor<2x8xf32>, %y: tensor<8xf32>) -> tensor<2x8xf32> {
    %s = nn.add %x, %y : tensor<2x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    %r = nn.relu %s : tensor<2x8xf32> -> tensor<2x8xf32>
    func.return %r : tensor<2x8xf32>
  }
}
"""


def add_relu_expected(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.maximum(x + y, 0)


# ---- Registration and availability --------------------------------------------------------------


def test_registered_through_entry_point() -> None:
    target = get_target("cpu")
    assert isinstance(target, CpuTarget)
    assert target.preferred_layout == "NHWC"
    assert target.runs_quantized is True
    assert target.lowering_passes() == "lower-quantized,lower-cpu"
    assert "lower-cpu" in get_all_passes()


@needs_compiler
def test_probe_finds_compiler_and_flags() -> None:
    probe = toolchain.probe()
    assert probe.toolchain is not None
    assert set(toolchain.BASE_FLAGS) <= set(probe.toolchain.flags)
    assert os.path.isabs(probe.toolchain.compiler)


def test_missing_compiler_makes_target_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_CC", "/nonexistent/irc-test-cc")
    availability = CpuTarget().available()
    assert not availability
    assert "no working C compiler" in availability.reason
    assert "/nonexistent/irc-test-cc" in availability.reason
    module = parse(ADD_RELU)
    with pytest.raises(CpuLoadError, match="no working C compiler"):
        CpuRuntime().load(executable_of(module))


def test_broken_compiler_makes_target_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake-cc"
    fake.write_text("#!/bin/sh\necho 'fake-cc 1.0'\necho 'cannot compile anything' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("IRC_CC", str(fake))
    availability = CpuTarget().available()
    assert not availability
    assert "cannot build a shared library" in availability.reason
    assert "cannot compile anything" in availability.reason


def test_cache_dir_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("IRC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert toolchain.cache_dir() == tmp_path / "xdg" / "irc"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert toolchain.cache_dir() == Path.home() / ".cache" / "irc"


# ---- supports() ---------------------------------------------------------------------------------


def ops_of(text: str) -> list[nn.NNOp]:
    module = parse(text)
    return [op for op in module.walk() if isinstance(op, nn.NNOp)]


_Q8 = "tensor<4x!quant.uniform<i8:f32, 0.5>>"

SUPPORT_CASES = {
    # name: (type of %x, the op, expected refusal code or "" for yes)
    "conv": (
        "tensor<1x4x4x3xf32>",
        '%y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x4x4x3xf32>, tensor<2x1x1x3xf32>'
        " -> tensor<1x4x4x2xf32>",
        "",
    ),
    "nchw_pool": (
        "tensor<1x3x4x4xf32>",
        '%y = nn.max_pool2d %x kernel = [2, 2] layout = "NCHW" : tensor<1x3x4x4xf32>'
        " -> tensor<1x3x3x3xf32>",
        "",
    ),
    "quantized_relu": (_Q8, f"%y = nn.relu %x : {_Q8} -> {_Q8}", ""),
    "quantized_reshape": (
        _Q8,
        f"%y = nn.reshape %x shape = [2, 2] : {_Q8} -> tensor<2x2x!quant.uniform<i8:f32, 0.5>>",
        "",
    ),
    "quantized_softmax": (
        _Q8,
        f"%y = nn.softmax %x : {_Q8} -> tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>",
        "",  # a native kernel (quant_kernels.py)
    ),
    "quantized_div": (_Q8, f"%y = nn.div %x, %x : {_Q8}, {_Q8} -> {_Q8}", "quantized"),
    "f16": ("tensor<4xf16>", "%y = nn.relu %x : tensor<4xf16> -> tensor<4xf16>", ""),
    "f16_softmax": (  # no float16 kernel (lowerings/binary16.py): the host runs it
        "tensor<4xf16>",
        "%y = nn.softmax %x : tensor<4xf16> -> tensor<4xf16>",
        "dtype",
    ),
    "i32": (
        "tensor<4xi32>",
        "%y = nn.add %x, %x : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>",
        "",
    ),
    "i64": (
        "tensor<4xi64>",
        "%y = nn.add %x, %x : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>",
        "dtype",
    ),
    "dynamic": (
        "tensor<?x4xf32>",
        "%y = nn.relu %x : tensor<?x4xf32> -> tensor<?x4xf32>",
        "dynamic",
    ),
    "compare": (
        "tensor<2x2xf32>",
        '%y = nn.compare %x, %x kind = "lt" : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xi1>',
        "",  # lowerings/transformer.py
    ),
    "no_kernel": (
        "tensor<3xf32>",
        '%y = nn.batch_norm %w, %x, %x, %x, %x layout = "NHWC" : tensor<2x1x1x3xf32>, '
        "tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x1x1x3xf32>",
        "op",
    ),
    "reflect_pad": (
        "tensor<4xf32>",
        '%y = nn.pad %x pads = [1, 1] mode = "reflect" : tensor<4xf32> -> tensor<6xf32>',
        "attribute",
    ),
}


@pytest.mark.parametrize("name", sorted(SUPPORT_CASES))
def test_supports_answers_with_reason_codes(name: str) -> None:
    arg_type, line, code = SUPPORT_CASES[name]
    text = f"func.func @f(%x: {arg_type}, %w: tensor<2x1x1x3xf32>) {{\n  {line}\n  func.return\n}}"
    (op,) = ops_of(text)
    support = CpuTarget().supports(op)
    if not code:
        assert support, support.reason
        return
    assert not support
    assert support.code == code
    assert support.reason.startswith("cpu: ")
    assert op.name in support.reason


def test_supports_float32_constant_but_not_integer_constant() -> None:
    text = """func.func @f() {
      %a = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
      %b = nn.constant dense<[1, 2]> : tensor<2xui16>
      func.return
    }"""
    a, b = ops_of(text)
    assert CpuTarget().supports(a)
    assert CpuTarget().supports(b).code == "dtype"


# ---- lower-cpu ----------------------------------------------------------------------------------


def test_lowering_replaces_entry_body_with_one_call() -> None:
    module = lower(parse(ADD_RELU))
    exe = executable_of(module)
    (cmodule,) = [op for op in exe.body.block.ops if isinstance(op, cpu.CModuleOp)]
    entry = next(op for op in exe.body.block.ops if op.name == "func.func")
    names = [op.name for op in entry.body.block.ops]  # type: ignore[attr-defined]
    assert names == ["cpu.call", "func.return"]
    assert "void irc_fn_0(const float *in0, const float *in1, float *out0," in cmodule.source.data
    # The lowered IR prints and parses back to the same text (custom and generic forms).
    text = print_ir(module)
    assert print_ir(parse(text)) == text
    generic = print_ir(module, generic=True)
    assert print_ir(parse(generic)) == text
    # A second run leaves lowered executables alone.
    LowerCpuPass().apply(make_context(), module)
    assert print_ir(module) == text


def test_lowering_leaves_other_targets_alone() -> None:
    module = parse(ADD_RELU.replace('target("cpu")', 'target("reference")'))
    before = print_ir(module)
    assert print_ir(lower(module)) == before


def test_lowering_refuses_unsupported_op_at_the_op() -> None:
    text = """
    delegate.executable private @e target("cpu") {
      func.func @entry(%x: tensor<1x2x2xf32>, %s: tensor<2xf32>) -> tensor<1x2x2xf32> {
        %y = nn.batch_norm %x, %s, %s, %s, %s layout = "NHWC" : tensor<1x2x2xf32>,
          tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<1x2x2xf32>
        func.return %y : tensor<1x2x2xf32>
      }
    }"""
    module = parse(text)
    with pytest.raises(IrcDiagnosticError, match=r"lower-cpu: no kernel for 'nn\.batch_norm'"):
        lower(module)
    assert "nn.batch_norm" in print_ir(module)  # nothing was rewritten


def test_workspace_is_reused_along_a_chain() -> None:
    lines = ["%v0 = nn.relu %x : tensor<256xf32> -> tensor<256xf32>"]
    for i in range(1, 10):
        lines.append(f"%v{i} = nn.exp %v{i - 1} : tensor<256xf32> -> tensor<256xf32>")
    body = "\n        ".join(lines)
    text = f"""
    delegate.executable private @e target("cpu") {{
      func.func @entry(%x: tensor<256xf32>) -> tensor<256xf32> {{
        {body}
        func.return %v9 : tensor<256xf32>
      }}
    }}"""
    module = lower(parse(text))
    (call,) = [op for op in module.walk() if isinstance(op, cpu.CallOp)]
    # Nine intermediates of 1 KiB, at most two alive at once: two buffers, not nine.
    assert call.workspace.value.data == 2 * 256 * 4


def test_constant_filters_are_packed_in_the_ir() -> None:
    text = """
    delegate.executable private @e target("cpu") {
      func.func @entry(%x: tensor<1x5x5x2xf32>) -> tensor<1x3x3x4xf32> {
        %w = nn.constant dense<0.5> : tensor<4x3x3x2xf32>
        %y = nn.conv2d %x, %w layout = "NHWC" : tensor<1x5x5x2xf32>, tensor<4x3x3x2xf32>
            -> tensor<1x3x3x4xf32>
        func.return %y : tensor<1x3x3x4xf32>
      }
    }"""
    module = lower(parse(text.replace("\n            ->", " ->")))
    (const,) = [op for op in module.walk() if isinstance(op, cpu.ConstantOp)]
    assert const.packing.data.startswith("conv2d_filter")
    # [G=1][OC blocks=1][KH][KW][Cg][16 lanes], channels 4..15 zero.
    assert tuple(const.value.get_type().get_shape()) == (1, 1, 3, 3, 2, 16)


# ---- Running: buffer plan corner cases, entries, arguments --------------------------------------

OUTPUTS = """
delegate.executable private @outs target("cpu") {
  func.func @entry(%x: tensor<2x3xf32>, %y: tensor<6xf32>)
      -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<2x3xf32>,
          tensor<2xf32>, tensor<2x3xf32>) {
    %c = nn.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %r = nn.relu %x : tensor<2x3xf32> -> tensor<2x3xf32>
    %flat = nn.reshape %r shape = [6] : tensor<2x3xf32> -> tensor<6xf32>
    %yy = nn.reshape %y shape = [2, 3] : tensor<6xf32> -> tensor<2x3xf32>
    %s = nn.add %yy, %yy : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
    %dead = nn.exp %x : tensor<2x3xf32> -> tensor<2x3xf32>
    func.return %x, %yy, %flat, %flat, %s, %c, %r
      : tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<6xf32>, tensor<2x3xf32>,
        tensor<2xf32>, tensor<2x3xf32>
  }
}
"""


@needs_compiler
def test_outputs_that_alias_arguments_constants_and_each_other() -> None:
    module = lower(parse(OUTPUTS))
    loaded = CpuRuntime().load(executable_of(module))
    x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
    y = np.arange(6, dtype=np.float32)
    outs = loaded.execute("entry", [x, y])
    relu = np.maximum(x, 0)
    expected = [x, y.reshape(2, 3), relu.ravel(), relu.ravel(), 2 * y.reshape(2, 3), [1, 2], relu]
    assert len(outs) == len(expected)
    for out, exp in zip(outs, expected, strict=True):
        np.testing.assert_array_equal(out, np.asarray(exp, dtype=np.float32))
    # Results never share memory with the arguments or with each other.
    assert not np.shares_memory(outs[0], x)
    assert not np.shares_memory(outs[2], outs[3])


MULTI_ENTRY = """
delegate.executable private @two target("cpu") {
  func.func @entry(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = nn.neg %x : tensor<4xf32> -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
  func.func @other(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
    %z = nn.mul %x, %y : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    func.return %z : tensor<3xf32>
  }
}
"""


@needs_compiler
def test_unlowered_executable_with_two_entries_loads() -> None:
    module = parse(MULTI_ENTRY)
    before = print_ir(module)
    loaded = CpuRuntime().load(executable_of(module))
    assert print_ir(module) == before  # the runtime lowered a copy
    assert set(loaded.entries) == {"entry", "other"}
    (neg,) = loaded.execute("entry", [np.arange(4, dtype=np.float32)])
    np.testing.assert_array_equal(neg, -np.arange(4, dtype=np.float32))
    (prod,) = loaded.execute("other", [np.full(3, 2, np.float32), np.arange(3, dtype=np.float32)])
    np.testing.assert_array_equal(prod, [0, 2, 4])


@needs_compiler
def test_arguments_are_checked_before_entering_c() -> None:
    loaded = CpuRuntime().load(executable_of(parse(ADD_RELU)))
    x, y = np.ones((2, 8), np.float32), np.ones(8, np.float32)
    with pytest.raises(InputError, match="takes 2 arguments, got 1"):
        loaded.execute("entry", [x])
    with pytest.raises(InputError, match="argument #0 of @entry must be float32, got float64"):
        loaded.execute("entry", [x.astype(np.float64), y])
    with pytest.raises(
        InputError, match=r"argument #1 of @entry must have shape \(8,\), got \(9,\)"
    ):
        loaded.execute("entry", [x, np.ones(9, np.float32)])
    with pytest.raises(InputError, match="argument #1 of @entry must be a numpy array, got list"):
        loaded.execute("entry", [x, [1.0] * 8])
    with pytest.raises(InputError, match="no entry @nope"):
        loaded.execute("nope", [x, y])
    # A non-contiguous view is accepted (copied) and computed correctly.
    wide = np.arange(32, dtype=np.float32).reshape(2, 16) - 10
    (out,) = loaded.execute("entry", [wide[:, ::2], y])
    np.testing.assert_array_equal(out, add_relu_expected(wide[:, ::2], y))


def test_loading_another_targets_executable_fails() -> None:
    module = parse(ADD_RELU.replace('target("cpu")', 'target("reference")'))
    with pytest.raises(CpuLoadError, match='target "cpu"'):
        CpuRuntime().load(executable_of(module))


@needs_compiler
def test_threads_share_one_loaded_executable() -> None:
    loaded = CpuRuntime().load(executable_of(parse(ADD_RELU)))
    rng = np.random.default_rng(3)
    inputs = [
        (rng.standard_normal((2, 8), dtype=np.float32), rng.standard_normal(8, dtype=np.float32))
        for _ in range(8)
    ]
    errors: list[BaseException] = []

    def work(x: np.ndarray, y: np.ndarray) -> None:
        try:
            for _ in range(200):
                (out,) = loaded.execute("entry", [x, y])
                np.testing.assert_array_equal(out, add_relu_expected(x, y))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=pair) for pair in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# ---- The build cache ----------------------------------------------------------------------------


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "cpu").glob("*.so"))


@needs_compiler
def test_second_load_uses_the_cache(fresh_cache: Path) -> None:
    module = lower(parse(ADD_RELU))
    first = CpuRuntime().load(executable_of(module))
    assert not first.from_cache
    assert first.library.compile_seconds > 0
    second = CpuRuntime().load(executable_of(module))
    assert second.from_cache
    assert second.library.path == first.library.path
    # the code and its kernel library (core and parts), each once
    needs = [lib.path for lib in first.library.needs]
    assert _entries(fresh_cache) == sorted([first.library.path, *needs])
    so = first.library.path
    assert (so.parent / f"{first.library.key}.json").exists()
    # Written atomically: no temporary build directories are left behind.
    assert [p.name for p in (fresh_cache / "cpu").iterdir() if p.name.startswith(".")] == []
    x, y = np.ones((2, 8), np.float32), -2 * np.ones(8, np.float32)
    for loaded in (first, second):
        (out,) = loaded.execute("entry", [x, y])
        np.testing.assert_array_equal(out, add_relu_expected(x, y))


@needs_compiler
@pytest.mark.parametrize("damage", ["garbage_library", "truncated_library", "bad_record"])
def test_damaged_cache_entry_is_rebuilt(fresh_cache: Path, damage: str) -> None:
    module = lower(parse(ADD_RELU))
    first = CpuRuntime().load(executable_of(module))
    so = first.library.path
    record = so.parent / f"{first.library.key}.json"
    # Damage lands as a new file (another process, a disk error), never in place: this
    # process has the library mapped, as the runtime's own writes (rename) also respect.
    victim, data = (record, b"{not json") if damage == "bad_record" else (so, b"")
    if damage == "garbage_library":
        data = b"\x7fELF not really a library"
    elif damage == "truncated_library":
        data = so.read_bytes()[:1000]
    replacement = victim.with_suffix(".damaged")
    replacement.write_bytes(data)
    os.replace(replacement, victim)
    again = CpuRuntime().load(executable_of(module))
    assert not again.from_cache
    assert toolchain._cached(so, record, first.library.key)
    x, y = np.full((2, 8), 3, np.float32), np.ones(8, np.float32)
    (out,) = again.execute("entry", [x, y])
    np.testing.assert_array_equal(out, add_relu_expected(x, y))


@needs_compiler
def test_cache_key_covers_source_flags_and_compiler() -> None:
    tc = toolchain.probe().toolchain
    assert tc is not None
    key = tc.cache_key("int x;")
    assert tc.cache_key("int y;") != key
    assert (
        toolchain.Toolchain(tc.compiler, tc.version, (*tc.flags, "-g")).cache_key("int x;") != key
    )
    assert (
        toolchain.Toolchain(tc.compiler, tc.version + " patched", tc.flags).cache_key("int x;")
        != key
    )
    assert toolchain.Toolchain("/other/cc", tc.version, tc.flags).cache_key("int x;") != key


# ---- Names from the model never reach the C source ----------------------------------------------

HOSTILE = """
delegate.executable private @"evil*/ #include <stdlib.h> /*" target("cpu") {
  func.func @"entry\\"); system(\\"rm -rf /\\"); //"(%x: tensor<4xf32> loc("x*/ boom(); /*"))
      -> tensor<4xf32> attributes {irc.input_names = ["in*/ boom(); /*"]} {
    %y = nn.relu %x {note = "*/ boom(); /*"} : tensor<4xf32> -> tensor<4xf32> loc("y*/ boom();")
    func.return %y : tensor<4xf32>
  }
}
"""


def test_model_names_do_not_reach_the_c_source() -> None:
    module = lower(parse(HOSTILE))
    source = source_of(module)
    for fragment in ("boom", "system", "evil", "rm -rf", "stdlib"):
        assert fragment not in source
    assert source.count("/*") == source.count("*/")  # every comment closes where it should


@needs_compiler
def test_hostile_names_still_run() -> None:
    module = parse(HOSTILE)
    loaded = CpuRuntime().load(executable_of(module))
    (entry,) = loaded.entries
    (out,) = loaded.execute(entry, [np.array([-1, 2, -3, 4], np.float32)])
    np.testing.assert_array_equal(out, [0, 2, 0, 4])


# ---- irc-translate --emit-c ---------------------------------------------------------------------


@needs_compiler
def test_emit_c_prints_a_standalone_translation_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from irc.tools.irc_translate import main

    ir = tmp_path / "model.mlir"
    ir.write_text(ADD_RELU + MULTI_ENTRY)
    out = tmp_path / "kernels.c"
    assert main(["--emit-c", str(ir), "-o", str(out)]) == 0
    text = out.read_text()
    assert text.count("/* ---- executable @") == 2
    tc = toolchain.probe().toolchain
    assert tc is not None
    # Each unit compiles on its own; here the first, which ends where the second begins.
    first = text.split("/* ---- executable @two ---- */")[0]
    unit = tmp_path / "unit.c"
    unit.write_text(first)
    proc = subprocess.run(
        [tc.compiler, "-std=gnu99", "-fsyntax-only", "-Wall", "-Werror=implicit", str(unit)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_emit_c_without_cpu_executables_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from irc.tools.irc_translate import main

    ir = tmp_path / "plain.mlir"
    ir.write_text(ADD_RELU.replace('target("cpu")', 'target("reference")'))
    assert main(["--emit-c", str(ir)]) == 1
    assert "no cpu executables" in capsys.readouterr().err
