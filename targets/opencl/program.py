"""The kernels and constants of one OpenCL executable, and the precision of its templates.

`Program` collects what `opencl-bufferize` generates for an executable: kernel templates
(specialised to the program's precision by `specialise`, identical kernels shared under one
name `k<n>`) with a comment each, and the constants to upload. Lowerings
(`irc.targets.opencl.lowerings`) add to it; `opencl-codegen` assembles the source.

Precision (`opencl-bufferize{precision=...}`, recorded on `ocl.program`): templates name the
element type of float tensors `REAL` / `REAL<n>` and mark conversions `WIDEN<n>(x)` (to the
float accumulator type) and `NARROW<n>(x)` (to `REAL<n>`); `specialise` turns them into
`float<n>` and nothing (fp32: the source is exactly what it was before precision existed), or
`half<n>`, `(float)x` / `convert_float<n>(x)` and `(half)x` / `convert_half<n>(x)` (fp16).
fp16 follows TFLite GPU's F32_F16: buffers (activations, weights, constants) hold half;
elementwise arithmetic runs in half (literals of an expression of a half `v` are cast to
half); the dot products of conv, conv2d_transpose, fully_connected and batch_matmul, reduce
sums and means, pooling and softmax accumulate in float (inputs widened before the
multiply), and the fused epilogue of those kernels runs on the float accumulator before one
conversion to half at the store. Lowering tables (dequantization, quantization parameters,
gather indices, resize taps) stay float32 in either precision.

Two fp16 schemes share the templates (`PRECISIONS`):

* `fp16` (16-bit storage, core OpenCL 1.0, no extension): every buffer of a float tensor
  holds IEEE half bits, but no kernel holds a `half` value. `specialise` declares the
  pointers `ushort<n>*` (the size of `half<n>`, so pointer arithmetic is unchanged), turns
  each element access through them into `vload_half<n>(i, p)` (exact, to float) or, for an
  assignment, `vstore_half<n>_rte(v, i, p)` (rounded to nearest even, numpy's
  `astype(float16)`), and makes `REAL<n>` values `float<n>`: every value is float in
  registers, the arithmetic is the fp32 kernels', only what is stored is rounded to half
  (Vulkan's 16-bit storage without shaderFloat16). This is what PoCL's CPU device and
  NVIDIA's OpenCL (neither has cl_khr_fp16) run.
* `fp16-native` (needs cl_khr_fp16): `half<n>` buffers and values as described above.
"""

from __future__ import annotations

import re

import numpy as np

from irc.targets.opencl.half_storage import half_storage

KERNEL_STYLES = ("cpu", "gpu")
"""How conv, fully_connected and softmax kernels are shaped: `cpu` (conv_kernels.py: few
work-items with register tiles) or `gpu` (gpu_kernels.py: one float4 per work-item, K split
over a work-group where the device would idle)."""

PRECISIONS = ("fp32", "fp16", "fp16-native")
"""The element storage of float tensors: `float` (default), half bits read and written by
`vload_half`/`vstore_half_rte` (`fp16`, any device), or `half` (`fp16-native`, needs
cl_khr_fp16)."""

HALF_PRECISIONS = ("fp16", "fp16-native")
"""The precisions whose float tensors take 2 bytes per element on the device."""

REAL = "REAL"
"""The template name of the element type of float tensors (`specialise` resolves it)."""

_REAL_TYPE = re.compile(r"(?<![A-Za-z0-9])REAL([0-9]*)(?![A-Za-z0-9_])")
_CONVERSION = re.compile(r"(?<![A-Za-z0-9_])(WIDEN|NARROW)([0-9]*)\(")


def _conversion(kind: str, width: str, arg: str, precision: str) -> str:
    if precision != "fp16-native":
        return arg  # no conversion: every WIDEN/NARROW argument is a primary expression
    target = "float" if kind == "WIDEN" else "half"
    return f"convert_{target}{width}({arg})" if width else f"({target}){arg}"


def _resolve_conversions(text: str, precision: str) -> str:
    """`text` with its `WIDEN<n>(x)` / `NARROW<n>(x)` resolved (nested ones too)."""
    out: list[str] = []
    pos = 0
    while (m := _CONVERSION.search(text, pos)) is not None:
        depth, end = 1, m.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        out.append(text[pos : m.start()])
        arg = _resolve_conversions(text[m.end() : end - 1], precision)
        out.append(_conversion(m.group(1), m.group(2), arg, precision))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def specialise(text: str, precision: str) -> str:
    """A template with `REAL<n>`, `WIDEN<n>(x)` and `NARROW<n>(x)` in the given precision."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be fp32, fp16 or fp16-native, got '{precision}'")
    text = _resolve_conversions(text, precision)
    if precision == "fp16":
        return half_storage(text)
    real = "float" if precision == "fp32" else "half"
    return _REAL_TYPE.sub(lambda t: real + t.group(1), text)


class Program:
    """The kernels and constants of one executable, shared by its entries, in one precision
    (`PRECISIONS`)."""

    def __init__(
        self, precision: str = "fp32", kernels: str = "cpu", compute_units: int = 0
    ) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be fp32, fp16 or fp16-native, got '{precision}'")
        if kernels not in KERNEL_STYLES:
            raise ValueError(f"kernels must be cpu or gpu, got '{kernels}'")
        self.precision = precision
        self.kernel_style = kernels
        """`KERNEL_STYLES`: which generator shapes conv/GEMM/softmax kernels."""
        self.compute_units = compute_units
        """The device's compute units for `gpu` launch shapes (0: `GPU_DEFAULT_UNITS`)."""
        self.kernels: dict[str, str] = {}
        self.comments: dict[str, str] = {}
        self.requests: list[tuple[str, str]] = []
        """(kernel name, comment) of every `kernel()` call, shared kernels included."""
        self.constants: list[np.ndarray] = []

    @property
    def real_bytes(self) -> int:
        """Bytes per element of a float tensor's device buffer (4, or 2 in fp16)."""
        return 2 if self.precision in HALF_PRECISIONS else 4

    def kernel(self, signature_and_body: str, comment: str) -> str:
        """The name of the kernel (a template, specialised to the precision here)."""
        signature_and_body = specialise(signature_and_body, self.precision)
        comment = specialise(comment, self.precision)
        name = self.kernels.get(signature_and_body)
        if name is None:
            name = f"k{len(self.kernels)}"
            self.kernels[signature_and_body] = name
            self.comments[name] = comment
        self.requests.append((name, comment))
        return name

    def constant(self, array: np.ndarray, table: bool = False) -> str:
        """A tensor read through `REAL` pointers (float32, or float16 in fp16); a lowering
        `table` read through `float` pointers (always float32: indices and quantization
        parameters must stay exact); int8/uint8 kept as stored (a quantized constant read by
        a char kernel, a mask)."""
        keep = array.dtype in (np.int8, np.uint8)
        real = np.float16 if self.precision in HALF_PRECISIONS and not table else np.float32
        with np.errstate(over="ignore"):  # to half: beyond its range is ±inf
            self.constants.append(np.ascontiguousarray(array, None if keep else real))
        return f"c{len(self.constants) - 1}"
