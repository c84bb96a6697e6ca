"""Kernels over bfloat16 arrays, written once for both Warp and simkit: test_bfloat16.py imports
this file as it is (``M`` is simkit) and a copy whose first line reads ``import warp as M``, and
compares the two. Nothing here may use a name the other does not have."""
import simkit as M  # the first line: the test swaps it for "import warp as M"


@M.kernel
def arithmetic(x: M.array(dtype=M.bfloat16), y: M.array(dtype=M.bfloat16), s: M.bfloat16,
               out: M.array(dtype=M.bfloat16), wide: M.array(dtype=M.float32)):
    i = M.tid()
    out[i] = x[i] * s + y[i] / x[i] - M.sqrt(M.abs(y[i])) + M.sin(x[i]) * M.bfloat16(0.5)
    wide[i] = M.float32(x[i]) * 3.0


@M.kernel
def accumulate(x: M.array(dtype=M.bfloat16), total: M.array(dtype=M.bfloat16),
               lo: M.array(dtype=M.bfloat16), hi: M.array(dtype=M.bfloat16)):
    i = M.tid()
    M.atomic_add(total, 0, x[i])
    M.atomic_min(lo, 0, x[i])
    M.atomic_max(hi, 0, x[i])
