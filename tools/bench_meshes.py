"""The cost of mesh colliders: a semi-implicit Euler step of particles resting on a static
sphere made of triangles (icospheres of 80 to 5120 triangles), against the same scene on
the analytic sphere shape; and a body resting on the ground as a mesh box against the
primitive box.

Run from the repository root::

    python tools/bench_meshes.py
    python tools/bench.py --only meshes

A point against a mesh walks the mesh's bounding volume hierarchy, so the particle step
grows about logarithmically with the triangle count: the rows say by how much. CPU, float32, the median of
``ROUNDS`` runs of ``STEPS`` steps. This is a tool for people, not a test: timings never
live in tests.
"""

import statistics
import sys
import time

import numpy as np

import simkit as sk

ROUNDS = 5
STEPS = 20
PARTICLES = 256
SUBDIVISIONS = (1, 2, 3, 4)       # 80, 320, 1280, 5120 triangles


def icosphere(subdivisions: int):
    """Vertices and outward triangles of a unit icosphere (numpy, no dependency)."""
    t = (1.0 + 5.0 ** 0.5) / 2.0
    v = [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
         [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]]
    f = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6],
         [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10],
         [8, 6, 7], [9, 8, 1]]
    verts = [np.array(p, dtype=float) / np.linalg.norm(p) for p in v]
    for _ in range(subdivisions):
        mid = {}

        def middle(i, j):
            key = (min(i, j), max(i, j))
            if key not in mid:
                p = verts[i] + verts[j]
                verts.append(p / np.linalg.norm(p))
                mid[key] = len(verts) - 1
            return mid[key]

        f = [g for a, b, c in f for g in ([a, middle(a, b), middle(c, a)], [b, middle(b, c), middle(a, b)],
                                          [c, middle(c, a), middle(b, c)],
                                          [middle(a, b), middle(b, c), middle(c, a)])]
    return np.array(verts), np.array(f)


def particles_on(shape: str, subdivisions: int = 0):
    """PARTICLES particles resting on top of a sphere of radius 1 (a mesh or the analytic one)."""
    b = sk.sim.ModelBuilder(ground=False)
    rng = np.random.default_rng(0)
    for _ in range(PARTICLES):
        d = rng.normal(size=3)
        d[1] = abs(d[1]) + 1.0
        b.add_particle(tuple(d / np.linalg.norm(d) * 1.05), (0.0, 0.0, 0.0), 0.01, radius=0.05)
    if shape == "mesh":
        b.add_shape_mesh(-1, *icosphere(subdivisions))
    else:
        b.add_shape_sphere((0.0, 0.0, 0.0), 1.0)
    return b.finalize(device="cpu")


def box_on_ground(shape: str):
    b = sk.sim.ModelBuilder()
    body = b.add_body(sk.transform((0.0, 0.1, 0.0), (0.0, 0.0, 0.0, 1.0)))
    h = np.array([0.2, 0.1, 0.2])
    if shape == "mesh":
        v = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)], dtype=float) * h
        f = np.array([[0, 2, 3], [0, 3, 1], [4, 5, 7], [4, 7, 6], [0, 1, 5], [0, 5, 4], [2, 6, 7], [2, 7, 3],
                      [0, 4, 6], [0, 6, 2], [1, 3, 7], [1, 7, 5]])
        b.add_shape_mesh(body, v, f)
    else:
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), h, body=body)
    return b.finalize(device="cpu")


def step_time(model) -> float:
    """Median seconds per step."""
    integrator = sk.sim.SemiImplicitEuler()
    a, b = model.state(), model.state()
    integrator.step(model, a, b, None, 1e-3)           # compile
    times = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(STEPS):
            integrator.step(model, a, b, None, 1e-3)
            a, b = b, a
        times.append((time.perf_counter() - t0) / STEPS)
    return statistics.median(times)


def measure() -> list:
    """Rows (label, seconds, reference seconds)."""
    rows = []
    analytic = step_time(particles_on("sphere"))
    for s in SUBDIVISIONS:
        tris = 20 * 4 ** s
        rows.append((f"{PARTICLES} particles on a {tris}-triangle sphere", step_time(particles_on("mesh", s)),
                     analytic))
    rows.append(("mesh box (8 vertices) on the ground", step_time(box_on_ground("mesh")),
                 step_time(box_on_ground("box"))))
    return rows


def add_sections(section, Result, Row, fmt) -> None:
    @section("meshes", "Mesh colliders (CPU step, float32)")
    def bench_meshes(ctx):
        res = Result()
        for label, t, ref in measure():
            res.rows.append(Row(f"{label} [us/step]", f"{fmt(t * 1e6)} us", f"{fmt(ref * 1e6)} us (analytic)",
                                f"{t / ref:.2f}x", "(info)", None))
        res.notes.append("meshes: the same scene on the analytic shape as reference; a point against a mesh walks "
                         "its bounding volume hierarchy")
        return res


if __name__ == "__main__":
    for label, t, ref in measure():
        print(f"{label:45s} {t * 1e6:9.1f} us/step   analytic {ref * 1e6:8.1f} us/step   {t / ref:6.2f}x")
    sys.exit(0)
