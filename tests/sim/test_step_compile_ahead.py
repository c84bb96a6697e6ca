"""The first step of SemiImplicitEuler and XPBD (and Featherstone's, whose code they share)
starts compiling the kernel modules it launches all at once, through one ``sk.compile_ahead``,
before its first launch, and none it does not launch (issue 30, item 5).

Most tests here take every launch over (a launch hook that records the kernel's module and
runs nothing), so they compile nothing and run in milliseconds; the last one steps for real.
"""

from types import SimpleNamespace

import numpy as np
import pytest

import simkit as sk
from simkit.core import launch as L
from simkit.core.modules import Module
from simkit.sim import integrators, xpbd

IDENTITY = (0.0, 0.0, 0.0, 1.0)


def _box_mesh(h: float) -> tuple:
    v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float) * h
    f = np.array([[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1], [2, 3, 7], [2, 7, 6],
                  [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]])
    return v, f


def _cloth(b, self_contact=False):
    b.add_cloth_grid((0.0, 1.0, 0.0), IDENTITY, (0.0, 0.0, 0.0), 3, 3, 0.1, 0.1, mass=1e-3, fix_left=True,
                     k_mu=1e3, k_lambda=1e3, k_damp=0.1, edge_ke=1e-3)
    b.add_spring(0, b.add_particle((0.0, 0.5, 0.0), (0.0, 0.0, 0.0), 1e-3), ke=10.0, kd=0.1)
    if self_contact:
        b.set_cloth_self_contact(thickness=2e-3)
    return b


def _rigid(b, mesh=False):
    a = b.add_body(sk.transform((0.0, 0.5, 0.0), IDENTITY))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.1, 0.1), body=a)
    c = b.add_body(sk.transform((0.3, 0.5, 0.0), IDENTITY))
    b.add_shape_capsule((0.0, 0.0, 0.0), IDENTITY, 0.05, 0.1, body=c)
    b.add_shape_sphere((1.0, 0.2, 0.0), 0.2)
    b.add_joint_revolute(a, c, sk.transform((0.15, 0.0, 0.0), IDENTITY), sk.transform((-0.15, 0.0, 0.0), IDENTITY))
    if mesh:
        b.add_shape_mesh(b.add_body(sk.transform((0.0, 0.9, 0.0), IDENTITY)), *_box_mesh(0.1), density=500.0)
    return b


def _soft(b):
    b.add_soft_grid((0.0, 0.01, 0.0), IDENTITY, (0.0, 0.0, 0.0), 2, 2, 2, 0.02, 0.02, 0.02, density=1000.0,
                    k_mu=2e4, k_lambda=2e4, k_damp=0.0)
    return b


def _particles(b):
    b.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), 1.0, radius=0.1)
    b.add_particle((0.1, 1.0, 0.0), (0.0, 0.0, 0.0), 1.0, radius=0.1)
    return b


def _swept(b):
    b.broad_phase = "sweep"
    return _rigid(b)


def _on_a_static_mesh(b):
    b.add_shape_mesh(-1, *_box_mesh(0.5))
    return _particles(b)


# name: (builder keywords, what the model holds)
MODELS = {
    "particles": ({"ground": False}, _particles),
    "cloth": ({}, _cloth),
    "soft": ({}, _soft),
    "rigid": ({}, _rigid),
    "cloth_and_rigid": ({}, lambda b: _rigid(_cloth(b))),
    "self_contact_cloth_and_meshes": ({}, lambda b: _rigid(_cloth(b, self_contact=True), mesh=True)),
    "swept_rigid": ({}, _swept),
    "particles_on_a_static_mesh": ({"ground": False}, _on_a_static_mesh),
    "particle_contact": ({"particle_contact": True}, _particles),
}
INTEGRATORS = {"SemiImplicitEuler": sk.sim.SemiImplicitEuler, "XPBD": lambda: sk.sim.XPBD(iterations=2)}


def model_of(name: str, contacts: bool = True):
    keywords, build = MODELS[name]
    model = build(sk.sim.ModelBuilder(gravity=-9.81, **{"ground": True, **keywords})).finalize(dtype=sk.float32)
    model.contacts_enabled = contacts
    return model


def _modules(kernels) -> set[str]:
    """The names of the modules of ``kernels`` (kernels or namespaces of them), as compile_ahead reads them."""
    found = set()
    for item in kernels:
        for k in vars(item).values() if isinstance(item, SimpleNamespace) else [item]:
            if isinstance(getattr(k, "module", None), Module):
                found.add(k.module.name)
    return found


class _TakeOver:
    """A launch hook that notes each launch's module and runs nothing (nothing compiles)."""

    def __init__(self, events: list):
        self.events = events

    def intercept(self, kernel, plan, dim, values, device, adjoint) -> bool:
        self.events.append(("launch", kernel.module.name))
        return True


@pytest.fixture
def dry_steps(monkeypatch):
    """``run(model, integrator, steps=1)``: the ``("ahead", modules)`` calls of compile_ahead
    and the ``("launch", module)`` launches of ``steps`` steps, in order, none of them run."""
    events = []
    monkeypatch.setattr(integrators, "compile_ahead", lambda *kernels: events.append(("ahead", _modules(kernels))))

    def run(model, integrator, steps: int = 1) -> list:
        events.clear()
        s0, s1 = model.state(), model.state()
        hook = _TakeOver(events)
        L.hooks.append(hook)
        try:
            for _ in range(steps):
                integrator.step(model, s0, s1, None, 1e-4)
        finally:
            L.hooks.remove(hook)
        return list(events)
    return run


# every model under both integrators (XPBD refuses particle contact), with contacts on and off
CASES = [pytest.param(name, integrator, contacts, id=f"{name}-{integrator}-contacts_{contacts}")
         for name in MODELS for integrator in INTEGRATORS for contacts in (True, False)
         if not (integrator == "XPBD" and name == "particle_contact")]


def _ahead_and_launched(events: list) -> tuple[set, set]:
    ahead = set().union(*(names for what, names in events if what == "ahead"))
    return ahead, {name for what, name in events if what == "launch"}


@pytest.mark.parametrize("name, integrator, contacts", CASES)
def test_a_first_step_starts_every_compile_in_one_call_before_its_first_launch(dry_steps, name, integrator,
                                                                               contacts):
    events = dry_steps(model_of(name, contacts), INTEGRATORS[integrator]())
    assert events[0][0] == "ahead"
    assert [what for what, _ in events].count("ahead") == 1


@pytest.mark.parametrize("name, integrator, contacts", CASES)
def test_a_first_step_compiles_ahead_every_module_it_launches(dry_steps, name, integrator, contacts):
    ahead, launched = _ahead_and_launched(dry_steps(model_of(name, contacts), INTEGRATORS[integrator]()))
    assert launched <= ahead, f"launched but not compiled ahead: {sorted(launched - ahead)}"


@pytest.mark.parametrize("name, integrator, contacts", CASES)
def test_a_first_step_compiles_ahead_no_module_it_does_not_launch(dry_steps, name, integrator, contacts):
    ahead, launched = _ahead_and_launched(dry_steps(model_of(name, contacts), INTEGRATORS[integrator]()))
    assert ahead <= launched, f"compiled ahead but never launched: {sorted(ahead - launched)}"


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_cloth_step_compiles_no_module_of_bodies_joints_tetrahedra_or_meshes(dry_steps, integrator):
    ahead, _ = _ahead_and_launched(dry_steps(model_of("cloth"), INTEGRATORS[integrator]()))
    unused = ("bodies", "joints", "tets", "body_contact", "xpbd_bodies", "xpbd_body_contact", "mesh_contact",
              "xpbd_mesh_contact", "cloth_self_contact", "hash_grid")
    assert not {f"simkit.kernels.{m}.float32" for m in unused} & ahead, sorted(ahead)


def test_featherstones_penalty_step_compiles_ahead_exactly_the_modules_it_launches(dry_steps):
    b = sk.sim.ModelBuilder(up_axis="z", ground=True)
    b.add_articulation()
    body = b.add_body(((0.0, 0.0, 0.3), IDENTITY))
    b.add_shape_box((0.0, 0.0, 0.0), IDENTITY, (0.1, 0.1, 0.1), body=body)
    b.add_joint_free(-1, body, parent_xform=((0.0, 0.0, 0.3), IDENTITY))
    ahead, launched = _ahead_and_launched(dry_steps(b.finalize(dtype=sk.float32), sk.sim.Featherstone()))
    assert ahead == launched


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_later_steps_start_no_compile(dry_steps, integrator):
    events = dry_steps(model_of("cloth_and_rigid"), INTEGRATORS[integrator](), steps=3)
    assert [what for what, _ in events].count("ahead") == 1


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_the_first_step_after_contacts_are_switched_on_compiles_the_contact_modules_ahead(dry_steps, integrator):
    model = model_of("cloth_and_rigid", contacts=False)
    step = INTEGRATORS[integrator]()
    dry_steps(model, step)
    model.contacts_enabled = True
    ahead, launched = _ahead_and_launched(dry_steps(model, step))
    assert ahead and launched <= ahead


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_compiling_ahead_leaves_the_steps_results_unchanged(monkeypatch, integrator):
    # what the step compiles ahead is asked of the model (its shape rows, contact patches,
    # pairs) before the step asks; the states must come out bit for bit the same without it
    def rollout() -> list:
        model = model_of("cloth_and_rigid")
        s0, s1 = model.state(), model.state()
        step = INTEGRATORS[integrator]()
        for _ in range(3):
            step.step(model, s0, s1, None, 1e-4)
            s0, s1 = s1, s0
        return [s0.particle_q.numpy(), s0.particle_qd.numpy(), s0.body_q.numpy(), s0.body_qd.numpy()]

    ahead = rollout()
    monkeypatch.setattr(integrators, "compile_step_ahead", lambda *args: None)
    monkeypatch.setattr(xpbd, "compile_step_ahead", lambda *args: None)
    for a, b in zip(ahead, rollout()):
        np.testing.assert_array_equal(a, b)
