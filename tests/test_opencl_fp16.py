"""`precision=fp16` of the OpenCL target: half storage, float arithmetic, on any device.

`fp16` keeps float tensors as IEEE half bits in device memory and every value as float in
registers (half_storage.py: `ushort` buffers read and written with core OpenCL's
`vload_half`/`vstore_half_rte`, no cl_khr_fp16), so it runs on PoCL's CPU device here and on
NVIDIA's OpenCL; `fp16-native` (half values, TFLite GPU's F32_F16) needs cl_khr_fp16. The
generated programs of every op family of `test_opencl.py` / `test_opencl_ops.py` (their
cases, captured by replacing their `run_cases`), of the quantization casts and of the six
shared models are checked by libclang's OpenCL C front end (`opencl_support.opencl_c_errors`):
`fp16` and `fp32` without the extension, `fp16-native` with it. Numerics run on the device:
every float output of every family and of the transformer kernels (both kernel styles)
within `1e-2 * max|ref|` of the reference target, whole float models within
`3e-2 * max|ref|` (half has an 11-bit significand: 4.9e-4 relative per rounding; float
arithmetic keeps sums from adding to it),
at least 95 % of boolean/integer outputs equal (inputs rounded to half may flip a comparison
between close values), and every store rounded to half exactly as numpy's `astype(float16)`.
`fp16-native` numerics run only where the device reports cl_khr_fp16 (a lent GPU may).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_MODELS
from cpu_support import Case, build_executable, reference_outputs
from opencl_support import AVAILABLE, kernel_style_params, needs_device, opencl_c_errors
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from irc.compiler import CompiledModel
from irc.context import make_context
from irc.dialects import delegate, ocl
from irc.targets.opencl import target as ocl_target
from irc.targets.opencl.codegen import FP16_PRAGMA
from irc.targets.opencl.half_storage import HEADER as HALF_STORAGE_HEADER
from irc.targets.opencl.lower import LowerOpenCLPass
from irc.targets.opencl.program import specialise
from irc.targets.opencl.runtime import FP16_EXTENSION, OpenCLLoadError, OpenCLRuntime
from irc.targets.opencl.target import PRECISION_ENV, TUNE_ENV, OpenCLTarget, PrecisionChoice

pytestmark = pytest.mark.private_cache


def _device_has_fp16() -> bool:
    if not AVAILABLE:
        return False
    from irc.targets.opencl.device import get_device

    return get_device().has_extension(FP16_EXTENSION)


HAS_FP16 = _device_has_fp16()
needs_fp16 = pytest.mark.skipif(not HAS_FP16, reason=f"the OpenCL device lacks {FP16_EXTENSION}")
"""Runs fp16-native kernels: only on a device with cl_khr_fp16 (not PoCL's CPU device)."""
needs_no_fp16 = pytest.mark.skipif(
    not AVAILABLE or HAS_FP16, reason=f"needs an OpenCL device without {FP16_EXTENSION}"
)


@pytest.fixture(autouse=True)
def no_precision_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    monkeypatch.delenv(TUNE_ENV, raising=False)


# ---- Cases ---------------------------------------------------------------------------------------

FAMILIES = [
    ("test_opencl", "test_conv2d_family"),
    ("test_opencl", "test_fully_connected_family"),
    ("test_opencl", "test_batch_matmul_family"),
    ("test_opencl", "test_binary_broadcasting_family"),
    ("test_opencl", "test_unary_family"),
    ("test_opencl", "test_pool_family"),
    ("test_opencl", "test_reduce_and_softmax_family"),
    ("test_opencl", "test_shape_family"),
    ("test_opencl_ops", "test_unary_family"),
    ("test_opencl_ops", "test_binary_family_with_broadcasting"),
    ("test_opencl_ops", "test_compare_logic_and_select"),
    ("test_opencl_ops", "test_softmax_any_axis_log_softmax_and_prod"),
    ("test_opencl_ops", "test_pad_slice_broadcast_gather"),
    ("test_opencl_ops", "test_resize_every_mode"),
    ("test_opencl_ops", "test_data_movement_on_quantized_storage"),
    ("test_opencl_ops", "test_conv2d_transpose_family"),
    ("test_opencl_ops", "test_split_every_axis_uneven_and_empty_pieces"),
]
"""Every op family the OpenCL tests run: (test module, test function calling `run_cases`)."""
FAMILY_IDS = [f"{m.removeprefix('test_')}:{f.removeprefix('test_')}" for m, f in FAMILIES]


def family_cases(module_name: str, function: str) -> list[Case]:
    """The cases a family test hands to its module's `run_cases` (nothing runs); the module's
    random generator is restored, so its own tests see the inputs they always see."""
    module = importlib.import_module(module_name)
    captured: list[list[Case]] = []
    state = module.RNG.bit_generator.state
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "run_cases", lambda cases, *_, **__: captured.append(list(cases)))
        getattr(module, function)()
    module.RNG.bit_generator.state = state
    assert len(captured) == 1, f"{module_name}.{function} no longer calls run_cases once"
    return captured[0]


def lowered_cases(
    cases: Sequence[Case], precision: str | None
) -> tuple[ModuleOp, delegate.ExecutableOp, list]:
    module, executable, built = build_executable(cases, "fp16_cases_0")
    executable.properties["target"] = StringAttr("opencl")
    LowerOpenCLPass(precision=precision).apply(make_context(), module)
    module.verify()
    return module, executable, built


def programs(module: ModuleOp) -> list[ocl.ProgramOp]:
    return [op for op in module.walk() if isinstance(op, ocl.ProgramOp)]


def peak_bytes(module: ModuleOp) -> int:
    return sum(op.peak_bytes.value.data for op in module.walk() if isinstance(op, ocl.ExecuteOp))


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text, "test.mlir").parse_module()
    module.verify()
    return module


def assert_sources_type_check(
    fp16: ocl.ProgramOp, fp32: ocl.ProgramOp, native: ocl.ProgramOp | None = None
) -> None:
    """The fp16 program is 16-bit storage (the conversions' header, no pragma, `half` only
    in the header's builtin calls, no template names left) and type-checks without
    cl_khr_fp16; the fp32 one uses no half and type-checks without it; an fp16-native one
    has the pragma and type-checks with it."""
    assert fp16.precision == "fp16"
    assert fp32.precision == "fp32"
    half, single = fp16.source.data, fp32.source.data
    assert HALF_STORAGE_HEADER in half
    assert "cl_khr_fp16" not in half
    assert "half" not in half.replace(HALF_STORAGE_HEADER, "")
    assert "half" not in single
    assert "cl_khr_fp16" not in single
    for token in ("REAL", "WIDEN", "NARROW"):
        assert token not in half
        assert token not in single
    assert opencl_c_errors(half, fp16=False) == []
    assert opencl_c_errors(single, fp16=False) == []
    if native is not None:
        assert native.precision == "fp16-native"
        assert FP16_PRAGMA in native.source.data
        assert opencl_c_errors(native.source.data) == []


def float_error_ok(got: np.ndarray, ref: np.ndarray, rel: float) -> tuple[bool, str]:
    """The rule of this file: max |got - ref| <= rel * max|ref| (1e-6 for an all-zero ref);
    non-float outputs: at least 95 % of elements equal."""
    if ref.dtype.kind != "f":
        share = float(np.mean(got == ref)) if ref.size else 1.0
        return share >= 0.95, f"{share:.1%} equal"
    if not ref.size:
        return True, "empty"
    finite = np.isfinite(ref)
    if not np.array_equal(np.isfinite(got), finite):
        return False, "infinities or NaNs differ"
    if not finite.any():
        return True, "all non-finite"
    scale = max(float(np.abs(ref[finite]).max()), 1e-6)
    err = float(np.abs(got[finite].astype(np.float64) - ref[finite]).max())
    return err <= rel * scale, f"max err {err:.3g} vs {rel} * {scale:.3g}"


# ---- Type checks (no device needed) --------------------------------------------------------------


@pytest.mark.parametrize(("module_name", "function"), FAMILIES, ids=FAMILY_IDS)
def test_every_op_family_type_checks_in_fp16_and_fp32(module_name: str, function: str) -> None:
    cases = family_cases(module_name, function)
    fp16, _, _ = lowered_cases(cases, "fp16")
    fp32, _, _ = lowered_cases(cases, None)
    native, _, _ = lowered_cases(cases, "fp16-native")
    (half,), (single,), (native_half,) = programs(fp16), programs(fp32), programs(native)
    assert_sources_type_check(half, single, native_half)
    assert "precision" not in single.properties  # the default is today's IR, unchanged


@pytest.mark.parametrize("inner", [64, 7])
def test_quantization_casts_type_check_in_fp16(inner: int) -> None:
    from test_opencl import QMOVE, QUANT_CASTS

    for text in (QUANT_CASTS.replace("INNER", str(inner)), QMOVE):
        fp16, fp32, native = parse(text), parse(text), parse(text)
        LowerOpenCLPass(precision="fp16").apply(make_context(), fp16)
        LowerOpenCLPass(precision="fp32").apply(make_context(), fp32)
        LowerOpenCLPass(precision="fp16-native").apply(make_context(), native)
        (half,), (single,), (native_half,) = programs(fp16), programs(fp32), programs(native)
        assert_sources_type_check(half, single, native_half)
        # quantization parameters and dequantization tables stay float32 (exact); a
        # quantized constant stays int8: nothing here is half
        kinds = {str(u.value.type.get_element_type()) for u in half.uploads}  # type: ignore[union-attr]
        assert kinds == ({"i8", "f32"} if text is QMOVE else {"f32"})


MODELS = SHARED_MODELS
MODEL_FILES = {
    "small_cnn_float32": ("small_cnn_float32.tflite", None),
    "mobilenet_v2_float32": ("mobilenet_v2_float32.tflite", None),
    "face_detection_short_range": ("face_detection_short_range.tflite", None),
    "ppocr_mobile_v2_cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": [1, 3, 48, 192]}),
    "small_cnn_int8": ("small_cnn_int8.tflite", None),
    "mobilenet_v2_int8": ("mobilenet_v2_int8.tflite", None),
}


class _Lowered(Exception):
    def __init__(self, module: ModuleOp) -> None:
        super().__init__("lowered")
        self.module = module


def _stop_before_loading(module: ModuleOp, *_: object, **__: object) -> None:
    raise _Lowered(module)


def compile_for(
    model: object, precision: str | None, *, prepare: bool = True, **kwargs: object
) -> CompiledModel | ModuleOp:
    """`model` compiled for opencl + reference with `lowering_passes()` asking for
    `precision` (the environment variable's path, with the device check replaced). Without
    `prepare`, the lowered module, taken before anything loads."""
    import irc.runtime
    from irc.compiler import compile as irc_compile

    with pytest.MonkeyPatch.context() as mp:
        if precision is not None:
            choice = PrecisionChoice(precision, precision, "")
            mp.setattr(ocl_target, "precision_choice", lambda *_, **__: choice)
        if not prepare:
            mp.setattr(irc.runtime, "compile_function", _stop_before_loading)
        try:
            return irc_compile(model, targets=["opencl", "reference"], **kwargs)  # type: ignore[arg-type]
        except _Lowered as lowered:
            return lowered.module


def compile_model(
    name: str, precision: str | None, *, prepare: bool = True
) -> CompiledModel | ModuleOp:
    """A shared model (skips when it is missing) compiled by `compile_for`."""
    file, shapes = MODEL_FILES[name]
    path = MODELS / name / file
    if not path.exists():
        pytest.skip(f"{path} is not available")
    kwargs = {"input_shapes": shapes} if shapes else {}
    return compile_for(path, precision, prepare=prepare, **kwargs)


@needs_device
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", sorted(MODEL_FILES))
def test_shared_models_type_check_and_halve_device_memory_in_fp16(name: str) -> None:
    fp16 = compile_model(name, "fp16", prepare=False)
    fp32 = compile_model(name, None, prepare=False)
    assert isinstance(fp16, ModuleOp)
    assert isinstance(fp32, ModuleOp)
    halves, singles = programs(fp16), programs(fp32)
    assert halves
    assert len(halves) == len(singles)
    for half, single in zip(halves, singles, strict=True):
        assert_sources_type_check(half, single)
    if name.endswith("int8"):  # 8-bit storage between kernels (int8_storage.py) in both
        assert peak_bytes(fp16) <= peak_bytes(fp32)
    else:
        assert 2 * peak_bytes(fp16) == peak_bytes(fp32)


# ---- Host side -----------------------------------------------------------------------------------

GRAPH = """
func.func @main(%x: tensor<1x6x6x8xf32>) -> (tensor<1x6x6x16xf32>, tensor<3x8xf32>) {
  %w = nn.constant dense<0.125> : tensor<16x3x3x8xf32>
  %b = nn.constant dense<0.5> : tensor<16xf32>
  %c = nn.conv2d %x, %w, %b pads = [1, 1, 1, 1] layout = "NHWC"
      : tensor<1x6x6x8xf32>, tensor<16x3x3x8xf32>, tensor<16xf32> -> tensor<1x6x6x16xf32>
  %r = nn.relu6 %c : tensor<1x6x6x16xf32> -> tensor<1x6x6x16xf32>
  %s = nn.softmax %r axis = 3 : tensor<1x6x6x16xf32> -> tensor<1x6x6x16xf32>
  %f = nn.reshape %x shape = [36, 8] : tensor<1x6x6x8xf32> -> tensor<36x8xf32>
  %k = nn.constant dense<[0, 35, -1]> : tensor<3xi32>
  %g = nn.gather %f, %k axis = 0 : tensor<36x8xf32>, tensor<3xi32> -> tensor<3x8xf32>
  %t = nn.tanh %g : tensor<3x8xf32> -> tensor<3x8xf32>
  func.return %s, %t : tensor<1x6x6x16xf32>, tensor<3x8xf32>
}
"""


def compiled_graph(precision: str | None) -> ModuleOp:
    module = compile_for(parse(GRAPH), precision, prepare=False)
    assert isinstance(module, ModuleOp)
    return module


def test_specialise_resolves_the_template_names() -> None:
    text = (
        "REAL4 v = WIDEN4(((__global const REAL4*)x)[i]); y[i] = NARROW4(v); REAL s = NARROW(1.0f);"
    )
    assert specialise(text, "fp32") == (
        "float4 v = ((__global const float4*)x)[i]; y[i] = v; float s = 1.0f;"
    )
    assert specialise(text, "fp16-native") == (
        "half4 v = convert_float4(((__global const half4*)x)[i]); y[i] = convert_half4(v);"
        " half s = (half)1.0f;"
    )
    assert specialise("convert_REAL16(q) + WIDEN(a[WIDEN(b[0])])", "fp16-native") == (
        "convert_half16(q) + (float)a[(float)b[0]]"
    )
    with pytest.raises(ValueError, match="fp32, fp16 or fp16-native"):
        specialise("REAL", "fp64")


def test_half_storage_reads_and_writes_half_bits_through_ushort_pointers() -> None:
    kernel = (
        "__kernel void K(__global const REAL* restrict x0, __global const int* restrict x1,"
        " __global REAL* restrict y) {\n"
        "    __global const REAL4* wp = (__global const REAL4*)x0 + 2;\n"
        "    const REAL4 w = WIDEN4(wp[x1[0]]);\n"
        "    REAL a = x0[x1[1] + 1] * 2.0f;\n"
        "    ((__global REAL4*)y)[1] = NARROW4(w + (REAL4)(a));\n"
        "    y[0] = NARROW(a); y[1] *= a; if (x0[0] == x0[1]) y[2] = x0[x1[2]];\n"
        "}\n"
    )
    assert specialise(kernel, "fp16") == (
        "__kernel void K(__global const ushort* restrict x0, __global const int* restrict x1,"
        " __global ushort* restrict y) {\n"
        "    __global const ushort4* wp = (__global const ushort4*)x0 + 2;\n"
        "    const float4 w = irc_h2f4(wp[x1[0]]);\n"
        "    float a = irc_h2f(x0[x1[1] + 1]) * 2.0f;\n"
        "    ((__global ushort4*)y)[1] = irc_f2h4(w + (float4)(a));\n"
        "    y[0] = irc_f2h(a); y[1] = irc_f2h(irc_h2f(y[1]) * (a));"
        " if (irc_h2f(x0[0]) == irc_h2f(x0[1])) y[2] = irc_f2h(irc_h2f(x0[x1[2]]));\n"
        "}\n"
    )
    with pytest.raises(ValueError, match="3-wide"):
        specialise("__global REAL3* p = (__global REAL3*)y; p[0] = v;", "fp16")
    with pytest.raises(ValueError, match="without an address space"):
        specialise("const REAL* p = y; v = p[0];", "fp16")


@needs_device
def test_fp16_halves_planned_bytes_and_uploads_float16_constants() -> None:
    fp16 = compiled_graph("fp16")
    fp32 = compiled_graph(None)
    assert 2 * peak_bytes(fp16) == peak_bytes(fp32) > 0
    allocs16 = [op.bytes.value.data for op in fp16.walk() if isinstance(op, ocl.AllocOp)]
    allocs32 = [op.bytes.value.data for op in fp32.walk() if isinstance(op, ocl.AllocOp)]
    assert [2 * b for b in allocs16] == allocs32
    (half,), (single,) = programs(fp16), programs(fp32)
    kinds16 = [u.value.type.get_element_type().name for u in half.uploads]  # type: ignore[union-attr]
    kinds32 = [u.value.type.get_element_type().name for u in single.uploads]  # type: ignore[union-attr]
    # the conv's packed filter, bias and zero row are half; the gather's index table is not
    assert kinds32 == ["f32"] * len(kinds32)
    assert kinds16.count("f32") == 1
    assert kinds16.count("f16") == len(kinds16) - 1
    assert "__global const float* restrict x1" in half.source.data  # the index table
    assert_sources_type_check(half, single)


@needs_device
def test_half_buffers_download_as_float32() -> None:
    from irc.targets.opencl.device import get_device
    from irc.targets.opencl.runtime import OpenCLValue

    device = get_device()
    half = np.array([[0.5, -2.0, 65504.0], [1e-3, 0.0, -0.25]], np.float16)
    flags = device.cl.mem_flags
    buffer = device.cl.Buffer(device.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=half)
    value = OpenCLValue(device, buffer, (2, 3), np.float32, np.float16)
    host = value.to_host()
    assert host.dtype == np.float32
    np.testing.assert_array_equal(host, half.astype(np.float32))


def test_lowering_passes_follow_the_precision_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRC_OPENCL_KERNELS", "cpu")  # a GPU device would add kernels=gpu
    target = OpenCLTarget()
    assert target.lowering_passes() == "lower-opencl"
    assert ocl_target.precision_choice() == PrecisionChoice(None, "fp32", "")
    monkeypatch.setenv(PRECISION_ENV, "FP32")
    assert target.lowering_passes() == "lower-opencl{precision=fp32}"
    monkeypatch.setenv(TUNE_ENV, "1")
    assert target.lowering_passes() == "lower-opencl{tune=true precision=fp32}"
    monkeypatch.delenv(TUNE_ENV)
    monkeypatch.setenv(PRECISION_ENV, "double")
    choice = ocl_target.precision_choice()
    assert choice.precision == "fp32"
    assert choice.reason == (
        f"{PRECISION_ENV}='double' is neither fp32, fp16 nor fp16-native: lowering in fp32"
    )
    assert target.lowering_passes() == "lower-opencl{precision=fp32}"


@needs_no_fp16
def test_fp16_request_is_half_storage_without_cl_khr_fp16(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from irc.targets.opencl.device import get_device

    monkeypatch.setenv(PRECISION_ENV, "fp16")
    monkeypatch.setenv("IRC_OPENCL_KERNELS", "cpu")  # a GPU device would add kernels=gpu
    assert ocl_target.precision_choice() == PrecisionChoice("fp16", "fp16", "")
    assert OpenCLTarget().lowering_passes() == "lower-opencl{precision=fp16}"
    model = compile_for(parse(GRAPH), None)  # the real precision_choice
    assert isinstance(model, CompiledModel)
    (program,) = programs(model.module)
    assert program.properties["precision"] == StringAttr("fp16")  # the decision, in the IR
    x = np.linspace(-2, 2, 288, dtype=np.float32).reshape(1, 6, 6, 8)
    out = model.run({model.input_names[0]: x})
    reference = compile_for(parse(GRAPH), "fp32")
    assert isinstance(reference, CompiledModel)
    want = reference.run({reference.input_names[0]: x})
    for key, value in out.items():
        assert value.dtype == np.float32
        ok, detail = float_error_ok(value, want[key], 1e-2)
        assert ok, (key, detail)
    monkeypatch.setenv(PRECISION_ENV, "fp16-native")
    choice = ocl_target.precision_choice()
    assert choice.precision == "fp16"
    assert choice.reason == (
        f"device '{get_device().name}' lacks cl_khr_fp16: half storage, float arithmetic"
    )


@needs_fp16
def test_fp16_request_is_native_with_cl_khr_fp16(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PRECISION_ENV, "fp16")
    monkeypatch.setenv("IRC_OPENCL_KERNELS", "cpu")  # a GPU device would add kernels=gpu
    assert ocl_target.precision_choice() == PrecisionChoice("fp16", "fp16-native", "")
    assert OpenCLTarget().lowering_passes() == "lower-opencl{precision=fp16-native}"


@needs_no_fp16
def test_loading_an_fp16_native_program_without_cl_khr_fp16_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from irc.targets.opencl.device import get_device
    from irc.tools.irc_run import main

    module = compiled_graph("fp16-native")
    (executable,) = [op for op in module.walk() if isinstance(op, delegate.ExecutableOp)]
    message = (
        f"opencl: the program was lowered with precision=fp16-native, but device "
        f"'{get_device().name}' lacks the cl_khr_fp16 extension"
    )
    with pytest.raises(OpenCLLoadError, match=f"^{re.escape(message)}"):
        OpenCLRuntime().load(executable)
    ir = tmp_path / "fp16.mlir"
    ir.write_text(str(module))
    assert main([str(ir), "--targets", "opencl,reference"]) == 1
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_bad_precisions_are_refused() -> None:
    from test_opencl_tools import PARTITIONED

    from irc.diagnostics import IrcDiagnosticError

    with pytest.raises(
        IrcDiagnosticError, match="lower-opencl: precision must be fp32, fp16 or fp16-native"
    ):
        LowerOpenCLPass(precision="fp8").apply(make_context(), parse(PARTITIONED))
    bad = (
        '"ocl.program"() <{sym_name = "k", source = "", precision = "fp8"}> ({\n^b:\n}) : () -> ()'
    )
    with pytest.raises(
        VerifyException, match="precision must be fp32, fp16 or fp16-native, got 'fp8'"
    ):
        parse(bad)


def test_emit_opencl_prints_the_fp16_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_opencl_tools import PARTITIONED

    from irc.tools.irc_translate import main

    module = parse(PARTITIONED)
    LowerOpenCLPass(precision="fp16").apply(make_context(), module)
    ir = tmp_path / "lowered.mlir"
    ir.write_text(str(module))
    assert main(["--emit-opencl", str(ir)]) == 0
    out = capsys.readouterr().out
    assert HALF_STORAGE_HEADER in out
    assert FP16_PRAGMA not in out
    assert (
        "__kernel void k0(__global const ushort* restrict x0, __global ushort* restrict y)" in out
    )


def test_emit_opencl_lowers_partitioned_ir_as_the_target_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not yet lowered IR is lowered with the target's own passes (its precision choice)."""
    from test_opencl_tools import PARTITIONED

    from irc.tools.irc_translate import main

    ir = tmp_path / "partitioned.mlir"
    ir.write_text(PARTITIONED)
    choice = PrecisionChoice("fp16", "fp16", "")
    monkeypatch.setattr(ocl_target, "precision_choice", lambda *_, **__: choice)
    assert main(["--emit-opencl", str(ir)]) == 0
    assert HALF_STORAGE_HEADER in capsys.readouterr().out
    monkeypatch.undo()
    assert main(["--emit-opencl", str(ir)]) == 0
    assert HALF_STORAGE_HEADER not in capsys.readouterr().out


# ---- Numerics (any device: 16-bit storage; fp16-native where the device has cl_khr_fp16) ----


def run_family(module_name: str, function: str, precision: str, kernels: str) -> None:
    """A family's cases lowered in `precision` and `kernels` style, run on the device and
    compared with the reference target (`float_error_ok`, 1e-2)."""
    run_in(family_cases(module_name, function), precision, kernels)


def run_in(cases: Sequence[Case], precision: str, kernels: str) -> None:
    """`cases` lowered in `precision` and `kernels` style (the fp16 source type-checked
    without cl_khr_fp16), run on the device and compared with the reference target
    (`float_error_ok`, 1e-2)."""
    module, executable, built = build_executable(cases, "fp16_numerics_0")
    executable.properties["target"] = StringAttr("opencl")
    with np.errstate(all="ignore"):  # edge cases' NaN and inf
        expected = [reference_outputs(b) for b in built]
    # finfo.min constants become -inf halves quietly (Program.constant)
    LowerOpenCLPass(precision=precision, kernels=kernels).apply(make_context(), module)
    (program,) = programs(module)
    assert opencl_c_errors(program.source.data, fp16=precision == "fp16-native") == []
    loaded = OpenCLRuntime().load(executable)
    outs = iter(loaded.execute("entry", [a for b in built for a in b.args]))
    for b, refs in zip(built, expected, strict=True):
        for ref in refs:
            got = next(outs).to_host()
            assert got.dtype == ref.dtype, b.case.id
            assert got.shape == ref.shape, b.case.id
            ok, detail = float_error_ok(got, ref, 1e-2)
            assert ok, (b.case.id, detail)


@needs_device
@pytest.mark.parametrize("kernels", kernel_style_params())
@pytest.mark.parametrize(("module_name", "function"), FAMILIES, ids=FAMILY_IDS)
def test_every_op_family_matches_the_reference_in_fp16(
    module_name: str, function: str, kernels: str
) -> None:
    run_family(module_name, function, "fp16", kernels)


@needs_device
@pytest.mark.parametrize("kernels", kernel_style_params())
def test_transformer_kernels_match_the_reference_in_fp16(kernels: str) -> None:
    """Layer norm, gelu/silu, attention (masked rows included) and rows-first fully
    connected kernels of test_opencl_transformer.py (its integer and out-of-half-range cases
    aside: they differ by design)."""
    import test_opencl_transformer as transformer

    cases = (
        transformer._layer_norm_cases()
        + transformer._activation_cases()
        + transformer._attention_cases()
        + transformer._fully_connected_cases()
    )
    run_in(cases, "fp16", kernels)


@needs_fp16
@pytest.mark.parametrize(("module_name", "function"), FAMILIES, ids=FAMILY_IDS)
def test_every_op_family_matches_the_reference_in_fp16_native(
    module_name: str, function: str
) -> None:
    run_family(module_name, function, "fp16-native", "cpu")


HALF_PRODUCTS = """
func.func @main(%x: tensor<Nxf32>, %y: tensor<Nxf32>) -> tensor<Nxf32> {
  %p = nn.mul %x, %y : tensor<Nxf32>, tensor<Nxf32> -> tensor<Nxf32>
  %n = nn.neg %p : tensor<Nxf32> -> tensor<Nxf32>
  func.return %n : tensor<Nxf32>
}
"""


@needs_device
def test_stores_round_to_half_as_numpy_does() -> None:
    """Inputs are uploaded as half (numpy's rounding); the (negated) product of two halves is
    exact in float (22 significant bits), so the stored result is it rounded once to half
    by a kernel's store: bit for bit numpy's `astype(float16)` — ties to even, subnormal
    results, overflow to infinity, signed zeros, NaN."""
    rng = np.random.default_rng(7)
    n = 1 << 16
    x = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(np.float16)
    y = rng.integers(0, 1 << 16, n, dtype=np.uint16).view(np.float16)
    y[:256] = np.float16(1.5)  # 1.5 * (1 + k 2^-10): a tie for every odd k
    x[:256] = (1 + np.arange(256) / 1024).astype(np.float16)
    model = compile_for(parse(HALF_PRODUCTS.replace("N", str(n))), "fp16")
    assert isinstance(model, CompiledModel)
    (program,) = programs(model.module)
    assert program.precision == "fp16"
    got = model.run(dict(zip(model.input_names, (x.astype(np.float32), y.astype(np.float32)))))
    (result,) = got.values()
    with np.errstate(all="ignore"):  # overflow to inf, NaN inputs: the expected rounding
        exact = -(x.astype(np.float32) * y.astype(np.float32))
        want = exact.astype(np.float16)
        rounded = want.astype(np.float32)
        other = np.where(
            rounded > exact,
            np.nextafter(want, np.float16(-np.inf)),
            np.nextafter(want, np.float16(np.inf)),
        ).astype(np.float32)
        finite = np.isfinite(exact) & np.isfinite(rounded) & np.isfinite(other)
        ties = finite & (rounded != exact) & (np.abs(rounded - exact) == np.abs(other - exact))
    assert ties.sum() >= 128
    assert (np.abs(want) < np.float16(6.1e-5)).sum() > 0  # subnormal results
    assert np.isinf(want).sum() > 0
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(result), nan)
    bits = result.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(bits[~nan], want.view(np.uint16)[~nan])


@needs_device
@pytest.mark.parametrize("tables", [True, False], ids=["tables", "builtins"])
def test_every_half_widens_exactly(tables: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """All 65536 halves through an elementwise kernel's scalar loads and stores (`nn.neg`):
    bit for bit numpy's negation, with the CPU device's lookup tables (IRC_HALF_TABLES) and
    with the builtins a GPU uses (the build option taken away)."""
    from irc.targets.opencl import build as ocl_build
    from irc.targets.opencl import runtime as ocl_runtime

    n = 1 << 16
    if not tables:
        monkeypatch.setattr(ocl_build, "program_build_options", ocl_build.device_build_options)
        monkeypatch.setattr(ocl_runtime, "program_build_options", ocl_build.device_build_options)
        n += 1  # another program: the in-memory cache holds the tables' build
    text = HALF_PRODUCTS.replace("%p = nn.mul %x, %y", "%p = nn.abs %x").replace(
        ", tensor<Nxf32> -> tensor<Nxf32>\n  %n", " -> tensor<Nxf32>\n  %n"
    )
    model = compile_for(parse(text.replace("N", str(n))), "fp16")
    assert isinstance(model, CompiledModel)
    halves = np.arange(n, dtype=np.uint32).astype(np.uint16).view(np.float16)
    x = halves.astype(np.float32)
    inputs = dict(zip(model.input_names, (x, x), strict=False))
    (result,) = model.run(inputs).values()
    want = -np.abs(x)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(result), nan)
    np.testing.assert_array_equal(result.view(np.uint32)[~nan], want.view(np.uint32)[~nan])


# Run on whole models: the small CNN and MobileNetV2. face_detection (47 CPU s of PoCL kernel
# builds cold, the costliest test of the suite) and ppocr (19 s) add no family the per-family
# runs above miss (both kernel styles, every family); their fp16 programs are type-checked by
# test_shared_models_type_check_and_halve_device_memory_in_fp16.
RUN_MODELS = ["mobilenet_v2_float32", "small_cnn_float32"]


@needs_device
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", RUN_MODELS)
def test_shared_float_models_match_the_reference_in_fp16(name: str) -> None:
    from irc.compiler import compile as irc_compile

    model = compile_model(name, "fp16")
    assert isinstance(model, CompiledModel)
    assert all(p.precision == "fp16" for p in programs(model.module))
    file, shapes = MODEL_FILES[name]
    kwargs = {"input_shapes": shapes} if shapes else {}
    reference = irc_compile(MODELS / name / file, targets=["reference"], **kwargs)
    inputs = dict(np.load(MODELS / name / "inputs_0.npz"))
    got, want = model.run(inputs), reference.run(inputs)
    for key, ref in want.items():
        assert got[key].dtype == np.float32
        ok, detail = float_error_ok(got[key], ref, 3e-2)
        assert ok, (key, detail)
