"""The importers' errors, in a module of their own: a tool catches them without importing
an importer (the ONNX converters import `onnx`, a tenth of a second per process).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MissingShapesError", "ModelImportError"]


class ModelImportError(Exception):
    """A model cannot be imported: corrupt file, unsupported ops, bad option.

    The message names the file and, where there is one, the place (operator index and name).
    """


class MissingShapesError(ModelImportError):
    """Inputs with dynamic dimensions (other than a leading batch) and no given shape;
    `missing` describes them (`'x' [?, 3, ?, ?]`), so that a tool can name its own option."""

    def __init__(
        self,
        path: str,
        missing: Sequence[str],
        names: Sequence[str] = (),
        example: Sequence[int] = (),
    ) -> None:
        self.path = path
        self.missing = list(missing)
        self.names = list(names)
        self.example = list(example)
        """A shape of the first input's rank (its static sizes kept), for the hint."""
        super().__init__(self.message("pass input_shapes={name: shape}"))

    def message(self, hint: str) -> str:
        """The message with `hint` (what to pass) in place of the Python keyword."""
        return (
            f"{self.path}: inputs with dynamic dimensions need static shapes: "
            f"{', '.join(self.missing)}; {hint}"
        )

    def cli_message(self, alternative: str = "") -> str:
        """The message as the tools say it (`--input-shape`), with a tool's `alternative`
        (``"or give input values with --inputs FILE.npz"``)."""
        name = self.names[0] if self.names else "NAME"
        dims = "x".join(str(d) for d in self.example) or "1x3x224x224"
        hint = f"give them with --input-shape {name}=DIMS (e.g. {name}={dims})"
        return self.message(f"{hint}, {alternative}" if alternative else hint)
