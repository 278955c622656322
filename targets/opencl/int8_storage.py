"""8-bit storage of the float tensors between kernels of an int8 model (`opencl-bufferize`).

`opencl-fuse` folds the `quant.qcast` -> `quant.dcast` pair an int8 model leaves after a conv
or GEMM into the kernel's epilogue as one round trip (lowerings/requantize.py): the kernel
stores `scale * q`, a float32, for an integer `q` in `[low - zp, high - zp]`. Such a tensor
holds at most 256 distinct values, yet it takes 4 bytes per element between kernels
(MobileNetV2's 112x112x96 activations: 4.8 MB, past the L2 cache). Here it is stored as its
8-bit storage integer `q + zp` (`char`, or `uchar` for an unsigned storage type) instead: the
producing kernel's epilogue ends at the rounded, clamped `q` and stores `q + zp`; every
consumer loads the byte and dequantizes it as `scale * ((float)c - zp)` in its prologue.
Bit for bit the same: `(float)c - zp` is `q` exactly (small integers), and the product is
the same correctly rounded float32 product the producer stored before. Where the dequantized
value is added to something in the same expression (a residual read), `+ 0.0f` keeps
`-cl-mad-enable` from contracting the product into a fused multiply-add (requantize.py's
round trip does the same).

The protocol, per op that `opencl-bufferize` lowers (`Offer`): bufferize offers the 8-bit
storage of the op's inputs that are stored so, and of its result when the fusion ends in a
round trip; a kernel generator (conv_kernels.py, gpu_kernels.py) that produces the kernel
with those loads or that store `claims` them when it finishes the kernel. What is not
claimed is not used: an unclaimed result is stored as float (the round trip's product), an
unclaimed input gets a dequantizing launch into a float buffer before the op (correct for
any lowering). Bufferize offers only where every reader is likely to claim
(`likely_int8_reader`). Strict builds only (under fast math the round trip is not folded).
In fp16 the readers get the float32 value, where a half buffer held it rounded to half.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import SSAValue

TABLE = "XTABLE"
"""In a kernel template, the input holding `Int8Storage.table` (the generator makes it the
last regular input)."""


@dataclass(frozen=True)
class Int8Storage:
    """How a float tensor of 8-bit quantized values is stored: `ctype` (`char` or `uchar`)
    holding `q + zero_point`, where the float value is `scale * q` (`scale` a float32)."""

    ctype: str
    scale: float
    zero_point: int

    @property
    def scale_literal(self) -> str:
        """`scale` as an exact float literal (lowerings/helpers.py's `_f`)."""
        return f"{np.float32(self.scale)!r}".replace("np.float32(", "").rstrip(")") + "f"

    @property
    def lowest(self) -> int:
        """The storage type's smallest value."""
        return -128 if self.ctype == "char" else 0

    def table(self) -> np.ndarray:
        """The float32 value of every storage value from `lowest`: `scale * (c - zp)`, each a
        correctly rounded float32 product (numpy's float32 multiply), the kernels' own."""
        codes = np.arange(self.lowest, self.lowest + 256, dtype=np.int64) - self.zero_point
        return np.float32(self.scale) * codes.astype(np.float32)

    def table_load(self, load: str) -> str:
        """A scalar load dequantized through the `TABLE` input: one float load indexed by
        the byte (register-tiled kernels: as cheap as reading a float, where the arithmetic
        doubled a GEMM's inner loop on PoCL)."""
        return f"({TABLE} + {-self.lowest})[{load}]"

    def pointer(self, width: int = 0) -> str:
        """The element type of a pointer to `width` elements (0: one) of the storage."""
        return f"{self.ctype}{width or ''}"

    def dequantize(self, load: str, width: int = 0, added: bool = False) -> str:
        """The float (`width` 0) or `floatW` value of a loaded storage element or vector:
        `scale * ((float)c - zp)`. `added`: the value is added to something in the same
        expression (`+ 0.0f` keeps the product from being contracted into an fma)."""
        value = f"convert_float{width}({load})" if width else f"(float)({load})"
        if self.zero_point:
            value = f"({value} - {self.zero_point}.0f)"
        product = f"{self.scale_literal} * {value}"
        return f"({product} + 0.0f)" if added else f"({product})"

    def store(self, v: str, width: int = 0) -> str:
        """The storage value of a rounded, clamped float `v` (an integer in `[low - zp,
        high - zp]`): `v + zp`, converted exactly (it is an integer in the storage range)."""
        value = f"{v} + {self.zero_point}.0f" if self.zero_point else v
        return f"convert_{self.ctype}{width}({value})" if width else f"({self.ctype})({value})"


@dataclass
class Offer:
    """The 8-bit storage offered to the op being lowered, and what its kernel claimed."""

    inputs: dict[SSAValue, Int8Storage] = field(default_factory=dict)
    """Inputs (regular or residual) stored as 8-bit."""
    result: Int8Storage | None = None
    """The storage the op's result may take (the fusion ends in a round trip)."""
    residuals: list[SSAValue] = field(default_factory=list)
    """The op's residual inputs in epilogue order (`RESIDUAL<j>` is `residuals[j]`)."""
    product: str = ""
    """The round trip's last epilogue expression (the `scale * q` product) that a kernel
    storing `result` leaves out."""
    claimed_inputs: set[SSAValue] = field(default_factory=set)
    claimed_result: bool = False


_OFFERS: weakref.WeakKeyDictionary[object, Offer] = weakref.WeakKeyDictionary()


def set_offer(program: object, offer: Offer | None) -> None:
    """Make `offer` the current one of `program` (None: no 8-bit storage offered)."""
    if offer is None:
        _OFFERS.pop(program, None)
    else:
        _OFFERS[program] = offer


def current_offer(program: object) -> Offer | None:
    """The offer made to the op `program` is lowering now, or None."""
    return _OFFERS.get(program)
