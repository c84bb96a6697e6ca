"""A launch's dim is checked before anything runs (issue 28, items 5 and 12): a size the runtime
cannot count or index is a ValueError naming it (it used to wrap around: 2**64 + 7 ran 7
threads), a float is a TypeError naming dim, and numpy integers and lists keep working."""

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def count(c: sk.array(dtype=sk.int64)):
    sk.atomic_add(c, 0, sk.int64(1))


@sk.kernel
def mark(x: sk.array(dtype=sk.int32)):
    i = sk.tid()
    if i < 4:
        x[i] = 1


def _threads(dim) -> int:
    c = sk.zeros(1, dtype=sk.int64)
    sk.launch(count, dim, inputs=[c])
    return int(c.numpy()[0])


@pytest.mark.parametrize("dim, size", [(2 ** 64 + 7, "18446744073709551623"), (2 ** 63, "9223372036854775808")])
def test_a_size_past_int64_is_refused_naming_it(dim, size):
    c = sk.zeros(1, dtype=sk.int64)
    with pytest.raises(ValueError, match=f"count\\(\\): launch size {size} .*too large: at most 9223372036854775807"):
        sk.launch(count, dim, inputs=[c])
    assert c.numpy()[0] == 0


def test_a_thread_count_past_int64_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"dim=\(1099511627776, 1099511627776\) launches 1208925819614629174706176 "
                                         r"threads, more than 9223372036854775807"):
        _threads((2 ** 40, 2 ** 40))


def test_a_tid_component_past_int32_is_refused_naming_it():
    x = sk.zeros(4, dtype=sk.int32)
    with pytest.raises(ValueError, match=r"mark\(\): launch size 2147483648 in dim=2147483648 is too large: at most "
                                         r"2147483647 .*32-bit"):
        sk.launch(mark, 2 ** 31, inputs=[x])


@pytest.mark.parametrize("dim, size", [(-1, -1), ((3, -2), -2)])
def test_a_negative_size_is_refused_naming_it(dim, size):
    with pytest.raises(ValueError, match=f"has the negative size {size}"):
        _threads(dim)


@pytest.mark.parametrize("dim", [3.0, np.float32(3.0), (3.0, 2), "3", None])
def test_a_dim_that_is_not_ints_is_a_type_error_naming_dim(dim):
    with pytest.raises(TypeError, match=r"count\(\): dim must be an int or a tuple of 1 to 4 ints"):
        _threads(dim)


def test_a_float_dim_is_refused_even_after_the_int_ran():
    """3.0 hashes like 3: a launch over 3 must not let 3.0 through afterwards."""
    assert _threads(3) == 3
    with pytest.raises(TypeError, match="dim must be"):
        _threads(3.0)
    assert _threads((3, 2)) == 6
    with pytest.raises(TypeError, match="dim must be"):
        _threads((3.0, 2))


@pytest.mark.parametrize("dim, n", [(np.int64(5), 5), (np.int32(4), 4), ((np.int64(2), 3), 6), ([2, 3], 6), (0, 0)])
def test_numpy_integers_lists_and_zero_still_launch(dim, n):
    assert _threads(dim) == n


def test_a_bad_dim_inside_a_tape_raises_before_the_tape_records():
    c = sk.zeros(1, dtype=sk.int64)
    with sk.Tape() as tape:
        with pytest.raises(ValueError, match="too large"):
            sk.launch(count, 2 ** 63, inputs=[c])
    assert len(tape.entries) == 0
