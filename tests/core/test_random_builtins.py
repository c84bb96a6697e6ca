"""Random numbers in kernels (rand_init, randi, randu, randf, randn, sample_*): deterministic per
(seed, offset), advancing a state local in place, statistically sound over 1e5 draws (generous
bounds), each sampler inside its domain, and no gradient. The streams are simkit's own, so they
are checked against the distributions, not against Warp's numbers."""

import numpy as np
import pytest

import simkit as sk

N = 100_000


@sk.kernel
def draws(seed: int, u: sk.array(dtype=float), u2: sk.array(dtype=float), g: sk.array(dtype=float),
          k: sk.array(dtype=int), r: sk.array(dtype=float)):
    i = sk.tid()
    rng = sk.rand_init(seed, i)
    u[i] = sk.randf(rng)
    u2[i] = sk.randf(rng)  # the state moved on: another number
    g[i] = sk.randn(rng)
    k[i] = sk.randi(rng, -3, 7)
    r[i] = sk.randf(rng, 2.0, 5.0)


@sk.kernel
def samples(seed: int, ball: sk.array(dtype=sk.vec3), sphere: sk.array(dtype=sk.vec3),
            half_ball: sk.array(dtype=sk.vec3), hemisphere: sk.array(dtype=sk.vec3), cube: sk.array(dtype=sk.vec3),
            square: sk.array(dtype=sk.vec2), disk: sk.array(dtype=sk.vec2), ring: sk.array(dtype=sk.vec2),
            tri: sk.array(dtype=sk.vec2)):
    i = sk.tid()
    rng = sk.rand_init(seed, i)
    ball[i] = sk.sample_unit_sphere(rng)
    sphere[i] = sk.sample_unit_sphere_surface(rng)
    half_ball[i] = sk.sample_unit_hemisphere(rng)
    hemisphere[i] = sk.sample_unit_hemisphere_surface(rng)
    cube[i] = sk.sample_unit_cube(rng)
    square[i] = sk.sample_unit_square(rng)
    disk[i] = sk.sample_unit_disk(rng)
    ring[i] = sk.sample_unit_ring(rng)
    tri[i] = sk.sample_triangle(rng)


@sk.kernel
def first_draw(seed: int, u: sk.array(dtype=sk.uint32)):
    i = sk.tid()
    u[i] = sk.randu(sk.rand_init(seed, i))


@sk.kernel
def one_stream(seed: int, offset: int, u: sk.array(dtype=float)):
    rng = sk.rand_init(seed, offset)
    for j in range(u.shape[0]):
        u[j] = sk.randf(rng)


@sk.kernel
def scaled_noise(x: sk.array(dtype=float), seed: int, y: sk.array(dtype=float)):
    i = sk.tid()
    rng = sk.rand_init(seed, i)
    y[i] = x[i] * (1.0 + 0.1 * sk.randn(rng))


def _draws(seed):
    outs = [sk.zeros(N), sk.zeros(N), sk.zeros(N), sk.zeros(N, dtype=int), sk.zeros(N)]
    sk.launch(draws, N, inputs=[seed, *outs])
    return [o.numpy() for o in outs]


def _samples(seed):
    outs = [sk.zeros(N, dtype=sk.vec3) for _ in range(5)] + [sk.zeros(N, dtype=sk.vec2) for _ in range(4)]
    sk.launch(samples, N, inputs=[seed, *outs])
    return [o.numpy() for o in outs]


def test_randf_is_uniform_in_zero_to_one():
    u = _draws(1)[0]
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    counts = np.histogram(u, bins=20, range=(0, 1))[0]
    chi2 = np.sum((counts - N / 20) ** 2 / (N / 20))
    assert chi2 < 60  # 19 degrees of freedom: 60 is far in the tail


def test_successive_draws_from_one_state_are_uncorrelated():
    u, u2 = _draws(2)[:2]
    assert np.mean(u != u2) > 0.999
    assert abs(np.corrcoef(u, u2)[0, 1]) < 0.02


def test_randn_has_mean_zero_and_variance_one():
    g = _draws(3)[2]
    assert abs(g.mean()) < 0.02 and abs(g.var() - 1.0) < 0.03
    assert abs(np.mean(np.abs(g) < 1.0) - 0.6827) < 0.01


def test_randi_with_a_range_covers_it_uniformly():
    k = _draws(4)[3]
    assert k.min() == -3 and k.max() == 6
    assert np.all(np.abs(np.bincount(k + 3) - N / 10) < 0.05 * N / 10)


def test_randf_with_a_range_stays_in_it():
    r = _draws(5)[4]
    assert r.min() >= 2.0 and r.max() < 5.0 and abs(r.mean() - 3.5) < 0.03


def test_draws_are_deterministic_per_seed_and_offset():
    a, b = _draws(6), _draws(6)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_different_seeds_give_different_numbers():
    assert np.mean(_draws(7)[0] != _draws(8)[0]) > 0.999


def test_different_offsets_give_different_streams():
    streams = []
    for offset in (0, 1, 2):
        u = sk.zeros(64)
        sk.launch(one_stream, 1, inputs=[9, offset, u])
        streams.append(u.numpy())
    for i in range(3):
        for j in range(i + 1, 3):
            assert np.mean(streams[i] != streams[j]) > 0.9
    first = sk.zeros(N, dtype=sk.uint32)
    sk.launch(first_draw, N, inputs=[9, first])
    assert len(np.unique(first.numpy())) > 0.999 * N  # 32-bit draws: few collisions among 1e5


def test_unit_sphere_samples_fill_the_ball_and_the_sphere():
    ball, sphere, half_ball, hemisphere = _samples(10)[:4]
    r = np.linalg.norm(ball, axis=1)
    assert r.max() <= 1.0 + 1e-6 and abs(np.mean(r ** 3) - 0.5) < 0.01  # r^3 uniform in [0, 1]
    np.testing.assert_allclose(np.linalg.norm(sphere, axis=1), 1.0, atol=1e-6)
    assert np.all(np.abs(sphere.mean(axis=0)) < 0.01)
    assert np.all(np.abs(np.mean(sphere ** 2, axis=0) - 1 / 3) < 0.01)
    assert half_ball[:, 2].min() >= 0.0 and np.linalg.norm(half_ball, axis=1).max() <= 1.0 + 1e-6
    np.testing.assert_allclose(np.linalg.norm(hemisphere, axis=1), 1.0, atol=1e-6)
    assert hemisphere[:, 2].min() >= 0.0 and abs(hemisphere[:, 2].mean() - 0.5) < 0.01  # z uniform in [0, 1]


def test_square_cube_disk_ring_and_triangle_samples_stay_in_their_domains():
    cube, square, disk, ring, tri = _samples(11)[4:]
    for x in (cube, square):
        assert x.min() >= -0.5 and x.max() < 0.5 and np.all(np.abs(x.mean(axis=0)) < 0.01)
    assert np.linalg.norm(disk, axis=1).max() <= 1.0 + 1e-6
    assert abs(np.mean(np.linalg.norm(disk, axis=1) ** 2) - 0.5) < 0.01  # r^2 uniform in [0, 1]
    np.testing.assert_allclose(np.linalg.norm(ring, axis=1), 1.0, atol=1e-6)
    assert tri.min() >= 0.0 and np.sum(tri, axis=1).max() <= 1.0 + 1e-6
    np.testing.assert_allclose(tri.mean(axis=0), [1 / 3, 1 / 3], atol=0.01)


def test_random_numbers_carry_no_gradient():
    x = sk.array(np.arange(1.0, 5.0), dtype=float, requires_grad=True)
    y = sk.zeros(4, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(scaled_noise, 4, inputs=[x, 3, y])
    tape.backward(grads={y: np.ones(4, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), y.numpy() / x.numpy(), rtol=1e-6)  # d y / d x: the noisy factor


def test_a_draw_from_a_kernel_argument_state_is_refused():
    def bad(state: sk.uint32, out: sk.array(dtype=float)):
        out[0] = sk.randf(state)
    with pytest.raises(sk.CompileError, match=r"randf\(state\) advances its state in place.*copy it to a local"):
        sk.launch(sk.kernel(bad), 1, inputs=[5, sk.zeros(1)])


def test_randf_of_a_float_state_is_refused_with_its_signatures():
    def bad(out: sk.array(dtype=float)):
        s = 1.5
        out[0] = sk.randf(s)
    with pytest.raises(sk.CompileError, match=r"randf\(\) does not accept \(float32\)"):
        sk.launch(sk.kernel(bad), 1, inputs=[sk.zeros(1)])


def test_randf_in_python_reads_the_state_without_advancing_it():
    state = sk.rand_init(42)
    assert sk.randf(state) == sk.randf(state)
    assert 0.0 <= sk.randf(state) < 1.0
