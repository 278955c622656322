"""A MobileNet-sized module prints weights as hex and round-trips exactly (docs/design.md §2)."""

import numpy as np
from xdsl.parser import Parser

from irc.context import make_context
from irc.dialects import nn
from irc.synthetic import mobilenet_v2_like


def test_mobilenet_sized_module_round_trips_with_hex_weights() -> None:
    module = mobilenet_v2_like(seed=3)
    module.verify()
    constants = [op for op in module.walk() if isinstance(op, nn.ConstantOp)]
    assert 150 <= sum(1 for _ in module.walk()) <= 200
    assert 3_000_000 < sum(c.to_array().size for c in constants) < 4_000_000

    text = str(module)
    # xDSL prints elements as hex once a constant has more than 100 of them.
    assert text.count('dense<"0x') == sum(1 for c in constants if c.to_array().size > 100)
    parsed = Parser(make_context(), text).parse_module()
    parsed.verify()
    assert str(parsed) == text
    reparsed = [op for op in parsed.walk() if isinstance(op, nn.ConstantOp)]
    for before, after in zip(constants, reparsed, strict=True):
        np.testing.assert_array_equal(before.to_array(), after.to_array())


def test_synthetic_module_is_seeded() -> None:
    assert str(mobilenet_v2_like(seed=1, resolution=32, classes=10)) == str(
        mobilenet_v2_like(seed=1, resolution=32, classes=10)
    )
