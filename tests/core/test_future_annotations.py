"""Kernels and structs work in modules that use ``from __future__ import annotations``."""

from __future__ import annotations

import simkit as sk


@sk.struct
class Material:
    stiffness: sk.array(dtype=float)
    damping: float


@sk.kernel
def scaled(m: Material, out: sk.array(dtype=float), s: float):
    i = sk.tid()
    out[i] = m.stiffness[i] * s + m.damping


def test_string_annotations_are_evaluated_where_the_kernel_was_defined():
    m = Material(stiffness=sk.array([1.0, 2.0]), damping=0.5)
    out = sk.zeros(2)
    sk.launch(scaled, 2, inputs=[m, out, 3.0])
    assert out.numpy().tolist() == [3.5, 6.5]
