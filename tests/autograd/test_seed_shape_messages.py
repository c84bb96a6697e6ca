"""A seed or data of the wrong shape for an array of vectors, matrices or transforms is named
with the numpy shape it must have (issue 28, item 12): the array's own shape, (13,) for 13
transforms, is not what the user has to build."""

import numpy as np
import pytest

import simkit as sk


@sk.kernel
def first_x(a: sk.array(dtype=sk.transformd), b: sk.array(dtype=sk.float64)):
    i = sk.tid()
    b[i] = a[i].p[0] * 2.0


@pytest.mark.parametrize("seed", [np.ones(13), np.ones((13, 6))])
def test_a_seed_of_the_wrong_shape_for_transforms_names_the_numpy_shape(seed):
    a = sk.zeros(13, dtype=sk.transformd, requires_grad=True)
    b = sk.zeros(13, dtype=sk.float64)
    with sk.Tape() as tape:
        sk.launch(first_x, 13, inputs=[a], outputs=[b])
    with pytest.raises(ValueError, match=rf"seed of shape \({seed.shape[0]},{'' if seed.ndim == 1 else ' 6'}\) "
                                         r"does not match array of transformd .*\(13, 7\)"):
        tape.backward(grads={a: seed})


def test_a_seed_of_the_numpy_shape_is_accepted():
    a = sk.zeros(13, dtype=sk.transformd, requires_grad=True)
    b = sk.zeros(13, dtype=sk.float64)
    with sk.Tape() as tape:
        sk.launch(first_x, 13, inputs=[a], outputs=[b])
    tape.backward(grads={b: np.ones(13)})
    expected = np.zeros((13, 7))
    expected[:, 0] = 2.0
    np.testing.assert_array_equal(a.grad.numpy(), expected)


@pytest.mark.parametrize("shape, dtype, expected", [((13, 6), sk.transformd, r"\(13, 7\)"),
                                                    ((13,), sk.vec3d, r"\(13, 3\)"),
                                                    ((5, 4, 2), sk.vec3, r"\(5, 4, 3\)"),
                                                    ((13, 3), sk.mat33, r"\(13, 3, 3\)")])
def test_from_numpy_of_the_wrong_shape_names_the_numpy_shape(shape, dtype, expected):
    with pytest.raises(ValueError, match=rf"from_numpy: data of shape .* does not hold elements of .*"
                                         rf"last dims must be .* numpy shape {expected}"):
        sk.from_numpy(np.zeros(shape, dtype=dtype._sk_scalar.np_dtype), dtype=dtype)
