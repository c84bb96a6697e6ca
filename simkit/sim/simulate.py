"""Run a model for many steps, keeping every state for the tape or just two buffers.

Example::

    states = sk.sim.simulate(model, sk.sim.SemiImplicitEuler(), model.state(), steps=100, dt=1e-3)
    states[-1].particle_q.numpy()
"""

from __future__ import annotations

from typing import Sequence

from ..core import device as D
from .model import Control, Model, State
from .stability import StabilityCheck


def _control_at(control, k: int, n: int):
    if control is None or isinstance(control, Control):
        return control
    if len(control) != n:
        raise ValueError(f"simulate: control has {len(control)} entries, expected one Control or one per frame ({n})")
    return control[k]


def simulate(model: Model, integrator, state: State, steps: int, dt: float, *, substeps: int = 1,
             control: Control | Sequence[Control] | None = None, keep_states: bool = True,
             check: StabilityCheck | int | None = None) -> list[State]:
    """Advance ``state`` by ``steps`` frames of length ``dt``, each split into ``substeps``
    integrator steps of ``dt / substeps``. ``control`` is one Control for the whole run or a
    sequence with one per frame.

    With ``keep_states=True`` (what a Tape needs) every step writes a new State and the
    list of all ``steps * substeps + 1`` states is returned, ``state`` first. With
    ``keep_states=False`` two buffers alternate (nothing is allocated per step) and the
    list is ``[state, final]``; ``state`` itself is left unchanged.

    ``check`` (off by default): a :class:`~simkit.sim.StabilityCheck`, or an int N for
    ``StabilityCheck(every=N)``, which raises a :class:`~simkit.sim.SimulationError` naming the
    step, the time and the state array as soon as positions or velocities stop being finite
    or leave the scene's bounds (a time step too large for the stiffest force).

    Example::

        with sk.Tape() as tape:
            states = sk.sim.simulate(model, integrator, model.state(requires_grad=True), 50, 1e-3)
            sk.launch(loss_kernel, 1, inputs=[states[-1].particle_q, loss])
    """
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"simulate: steps must be an int >= 0, got {steps!r}")
    if not isinstance(substeps, int) or isinstance(substeps, bool) or substeps < 1:
        raise ValueError(f"simulate: substeps must be an int >= 1, got {substeps!r}")
    if not isinstance(state, State) or state.model is not model:
        raise ValueError("simulate: state must be a State of this model (use model.state())")
    h = dt / substeps
    check = StabilityCheck.coerce(check, "simulate")
    if check is not None and D.state.capturing:
        # the check reads the state on the host, which a captured sequence cannot do
        raise RuntimeError("simulate: check is not allowed inside sk.capture(); check the replayed states instead")
    last = steps * substeps
    bound = None if check is None else check.bind(model, state, duration=last * h)

    def checked(s: State, n: int) -> None:
        if bound is not None and bound.due(n, last):
            bound(s, n, n * h, h, where="simulate")

    n = 0
    if keep_states:
        states = [state]
        for k in range(steps):
            c = _control_at(control, k, steps)
            for _ in range(substeps):
                nxt = model.state(requires_grad=state.requires_grad)
                integrator.step(model, states[-1], nxt, c, h)
                states.append(nxt)
                n += 1
                checked(nxt, n)
        return states
    a, b = model.state(requires_grad=False), model.state(requires_grad=False)
    a.copy_from(state)
    for k in range(steps):
        c = _control_at(control, k, steps)
        for _ in range(substeps):
            integrator.step(model, a, b, c, h)
            a, b = b, a
            n += 1
            checked(a, n)
    return [state, a]
