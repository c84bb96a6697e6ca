"""What one run of a sweep reports (its metrics against analytic physics) and the initial
points of a multi-start optimization (no Ray needed)."""

import math

import numpy as np

from simkit.scene import Optimization, load_scene, sweep
from simkit.scene.task import perturb_parameters


def test_a_run_without_ray_gives_the_semi_implicit_euler_values_of_free_flight(tmp_path):
    # a ball thrown in vacuum, no ground: v_n = v0 + n dt g, y_n = y0 + n dt vy0 + dt^2 g n (n + 1) / 2
    scene = tmp_path / "throw.toml"
    scene.write_text('[sim]\ndt = 1e-3\nsubsteps = 10\nframes = 4\ndtype = "float64"\nground = false\n'
                     '[[particles]]\nname = "ball"\npositions = [[0.0, 1.0, 0.0]]\nvelocity = [2.0, 3.0, -1.0]\n'
                     'mass = 2.0\n')
    result = sweep(scene, {"particles[0].velocity[0]": [2.0, 4.0]}, out=tmp_path / "s", use_ray=False)
    n, dt, g = 40, 1e-3, -9.81
    for row, vx in zip(result.rows, (2.0, 4.0)):
        vy = 3.0 + n * dt * g
        assert row["status"] == "ok" and row["steps"] == n
        assert math.isclose(row["kinetic_energy"], 0.5 * 2.0 * (vx ** 2 + vy ** 2 + 1.0), rel_tol=1e-12)
        assert math.isclose(row["com_x"], n * dt * vx, rel_tol=1e-12)
        assert math.isclose(row["com_y"], 1.0 + n * dt * 3.0 + dt * dt * g * n * (n + 1) / 2, rel_tol=1e-12)
        assert math.isclose(row["max_speed"], math.sqrt(vx ** 2 + vy ** 2 + 1.0), rel_tol=1e-12)


def test_the_energy_of_a_spinning_tilted_box_is_its_rotational_energy(tmp_path):
    # a box spinning about its own long axis, tilted in the world, no gravity: E = I w^2 / 2
    a, b, c, density, w = 0.3, 0.1, 0.05, 500.0, 2.0
    q = np.array([0.2, -0.4, 0.3, 0.8])
    q /= np.linalg.norm(q)
    x, y, z, s = q
    axis_x = np.array([1 - 2 * (y * y + z * z), 2 * (x * y + z * s), 2 * (x * z - y * s)])   # R e_x
    scene = tmp_path / "spin.toml"
    rot, spin = [float(v) for v in q], [float(v) for v in w * axis_x]
    scene.write_text(f'[sim]\ndt = 1e-3\nframes = 3\ndtype = "float64"\ngravity = 0.0\nground = false\n'
                     f'[[bodies]]\nname = "box"\nrot = {rot}\nangular_velocity = {spin}\n'
                     f'shapes = [{{ kind = "box", half_extents = [{a}, {b}, {c}], density = {density} }}]\n')
    result = sweep(scene, None, out=tmp_path / "s", use_ray=False)
    mass = density * 8 * a * b * c
    inertia_x = mass * ((2 * b) ** 2 + (2 * c) ** 2) / 12
    row = result.rows[0]
    assert row["status"] == "ok"
    assert math.isclose(row["kinetic_energy"], 0.5 * inertia_x * w * w, rel_tol=1e-9)
    assert abs(row["com_x"]) < 1e-12 and abs(row["com_y"]) < 1e-12


def test_start_zero_is_the_plain_optimization_and_the_others_are_perturbed_within_the_spread(scenes_dir):
    scene = load_scene(scenes_dir / "ball_bounce.toml", frames=10)
    opt = Optimization(scene, iterations=1)
    v0 = opt.parameters[0].array.numpy().copy()
    perturb_parameters(opt, 0, 0.5, 0)
    assert np.array_equal(opt.parameters[0].array.numpy(), v0)
    moved = []
    for start in (1, 2):
        opt.parameters[0].array.assign(v0)
        perturb_parameters(opt, start, 0.5, seed=7)
        d = opt.parameters[0].array.numpy() - v0
        assert np.all(np.abs(d) <= 0.5 * max(np.linalg.norm(v0), 1.0)) and np.any(d != 0)
        moved.append(d)
    assert not np.array_equal(moved[0], moved[1])
    opt.parameters[0].array.assign(v0)
    perturb_parameters(opt, 2, 0.5, seed=7)
    assert np.array_equal(opt.parameters[0].array.numpy() - v0, moved[1])


def test_a_material_start_is_scaled_by_at_most_exp_spread(tmp_path, edit_scene):
    path = edit_scene("flag", "[[cloth]]", '[optimize]\nparameters = ["flag.k_mu"]\nlearning_rate = 0.1\n'
                      '[optimize.loss]\nkind = "travel"\nbody = "flag"\ndirection = [1.0, 0.0, 0.0]\n\n[[cloth]]')
    opt = Optimization(load_scene(path, frames=2), iterations=1)
    p = opt.parameters[0]
    perturb_parameters(opt, 3, 0.25, seed=0)
    assert math.exp(-0.25) <= p.value / p.base <= math.exp(0.25) and p.value != p.base
