"""Integrator steps that replay: ``step(model, state_in, state_out, control, dt)`` called
again with the same model, states, control and ``dt`` runs the launches it recorded the
last time, natively (:mod:`simkit.core.step_cache`), instead of its Python.

Each integrator's ``step`` enters through :func:`replayed_step`, with what makes a step not
replayable (it reads array contents on the host, or keys a host cache on them) and a guard:
the host-side values its Python branches on that no setter announces.

- :class:`~simkit.sim.SemiImplicitEuler`: none; not replayed with particle-particle contact
  (the hash grid's cell size is cached on the radii's version);
- :class:`~simkit.sim.XPBD`: none (its per-step ``zero_`` of the scratch buffers is recorded
  and replayed);
- :class:`~simkit.sim.Featherstone`: whether ``state_in``'s bodies are the forward kinematics
  of its coordinates (the step places them otherwise); not replayed with particle-particle
  contact. With ``contact="constraint"`` the check that no more than ``max_contacts`` were
  active runs after every step, replayed or not.

Steps on a GPU, under a Tape or a forward-mode JVP, or inside ``sk.capture`` run as before.
``sk.config.replay_steps = False`` or ``integrator.replay = False`` turns replays off.

Example::

    integrator = sk.sim.Featherstone()
    for _ in range(1000):
        integrator.step(model, s0, s1, control, 1e-3)   # from the 3rd call on: a replay
        s0, s1 = s1, s0
    integrator.recorded_steps()          # what each (state_in, state_out) pair replays
"""

from __future__ import annotations

from typing import Any, Callable

from ..core import mutation
from ..core.step_cache import Entry, StepCache
from .model import Model, State


class Replayed:
    """What the integrators share: their ``step`` replays (see the module documentation).
    ``replay`` (default True) turns it off for one integrator; setting any attribute of an
    integrator makes its recorded steps record again.

    Example::

        integrator.replay = False            # every step runs its Python
        integrator.recorded_steps()          # [<step cache entry: replays 12 launch(es), 998 time(s)>, ...]
    """

    replay = True

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        # a setting (friction_scale, iterations, ...) its recorded steps, or a taped run that
        # holds it, baked in; an integrator being made (or one that never recorded) counts nothing,
        # so making one leaves every other recording alone
        d = self.__dict__
        if "_replay_cache" in d or "_held" in d:
            mutation.count[0] += 1

    def __getstate__(self) -> dict:
        # pickling or copying an integrator copies its settings, not its recordings (native
        # launch lists of this process, holding the states they step)
        return {k: v for k, v in self.__dict__.items() if k != "_replay_cache"}

    def replays_taped(self, model) -> bool:
        """Whether a taped rollout of ``model`` under this integrator may replay as a whole
        (:class:`simkit.optim.Rollout`, :mod:`simkit.autograd.tape_replay`): where its steps
        could (on the CPU, replays on, none of what makes a step unreplayable).

        Example::

            sk.sim.SemiImplicitEuler().replays_taped(model)   # True
        """
        return self.replay and type(model) is Model and model.device == "cpu" and self._replay_eligible(model)

    def _replay_eligible(self, model) -> bool:
        return True

    def recorded_steps(self) -> list[Entry]:
        """The steps this integrator has recorded, oldest first: per ``(model, state_in,
        state_out, control)`` one entry with the ``program`` it replays (``program.launches``
        names each launch) and how many ``replays`` it served, or the ``reason`` it cannot.

        Example::

            for e in integrator.recorded_steps():
                print(e.program.launches if e.program else e.reason)
        """
        cache = self.__dict__.get("_replay_cache")
        return cache.entries() if cache is not None else []


def replayed_step(integrator: Replayed, body: Callable, model, state_in, state_out, control, dt: float,
                  eligible: Callable | None = None, guard: Callable | None = None,
                  after: Callable | None = None) -> None:
    """Run ``body(model, state_in, state_out, control, dt)`` through the integrator's step
    cache. ``eligible(integrator, model)`` says whether the step can replay at all (what it
    reads is announced by setters, so it is asked only before recording); ``guard(state_in)``
    gives the host-side values the step branches on that no setter announces, asked on every
    call; ``after(state_in, state_out, values)`` redoes the host-side bookkeeping of the step
    after a replay (``values``: what the guard gave).

    Example::

        replayed_step(self, self._step, model, state_in, state_out, control, dt)
    """
    cache = integrator.__dict__.get("_replay_cache")
    if cache is not None and type(state_in) is State:
        # the fast path: a recording exists only for a valid, eligible call, and whatever made
        # the call valid and eligible (types aside) is announced by setters, which the cache
        # checks (simkit.core.mutation)
        extra = () if guard is None else guard(state_in)
        if cache.replay((model, state_in, state_out, control), (dt, extra)):
            if after is not None:
                after(state_in, state_out, extra)
            return
    # anything odd (wrong types, a GPU, not eligible) takes the step's own path, with its checks and errors
    if type(model) is not Model or type(state_in) is not State or model.device != "cpu" or not integrator.replay \
            or (eligible is not None and not eligible(integrator, model)):
        body(model, state_in, state_out, control, dt)
        return
    if cache is None:
        cache = _cache_of(integrator)
    extra = () if guard is None else guard(state_in)
    if cache.run((model, state_in, state_out, control), (dt, extra),
                 lambda: body(model, state_in, state_out, control, dt)) and after is not None:
        after(state_in, state_out, extra)


def _cache_of(integrator: Replayed) -> StepCache:
    cache = integrator.__dict__.get("_replay_cache")
    if cache is None:
        cache = StepCache()
        object.__setattr__(integrator, "_replay_cache", cache)  # a cache, not a setting: no mutation
    return cache


def reserve_steps(integrator: Any, n: int) -> None:
    """Let ``integrator`` keep the recordings of at least ``n`` sets of step arguments (4 by
    default, enough for a ping-pong loop): a rollout whose control changes every frame steps
    over two per frame, and would otherwise record them again on every run. Does nothing for an
    integrator whose steps do not replay.

    Example::

        reserve_steps(integrator, 2 * frames + 2)
    """
    if isinstance(integrator, Replayed):
        cache = _cache_of(integrator)
        cache.size = max(cache.size, n)


def _particle_contact(model) -> bool:
    """Whether particle-particle contact runs in a step of ``model`` (its hash grid keys host
    caches on array versions, which a replay would not look at)."""
    return bool(model.particle_contact and model.contacts_enabled and model.particle_count)


def particles_eligible(integrator, model) -> bool:
    """Whether a maximal-coordinate step of ``model`` can replay: not with particle-particle contact.

    Example::

        particles_eligible(integrator, model)   # True
    """
    return not _particle_contact(model)


_NO_TAPES = frozenset()


def featherstone_eligible(integrator, model) -> bool:
    """Whether a Featherstone step of ``model`` can replay: not with particle-particle contact.

    Example::

        featherstone_eligible(integrator, model)   # True
    """
    return not _particle_contact(model)


def featherstone_guard(state_in) -> tuple:
    """Featherstone's guard: whether ``state_in``'s bodies are current (the step runs forward
    kinematics when not).

    It reads the mark Featherstone leaves on a state it placed (``_featherstone_fk``: the
    versions of its coordinates and bodies, and the Tapes that saw it): a replay only happens
    with no Tape recording, when the mark holds if the versions still match.

    Example::

        featherstone_guard(state_in)   # (True,)
    """
    mark = state_in.__dict__.get("_featherstone_fk")
    return (mark is not None and mark[0] == (state_in.joint_q._version, state_in.joint_qd._version,
                                              state_in.body_q._version, state_in.body_qd._version),)


def featherstone_after(state_in, state_out, guard: tuple) -> None:
    """After a replayed Featherstone step: mark both states' bodies as placed from their
    coordinates (the step placed ``state_out``'s, and ``state_in``'s or checked them), as the
    step's Python does with no Tape recording (the next step's guard reads the marks).

    Example::

        featherstone_after(state_in, state_out, (True,))
    """
    # through __dict__: a private cache (no mutation to count), and no Python __setattr__ per step.
    # state_in's bodies are current after any step: placed, or checked against their coordinates
    # (a write of them, as the versions count it)
    state_in.__dict__["_featherstone_fk"] = ((state_in.joint_q._version, state_in.joint_qd._version,
                                              state_in.body_q._version, state_in.body_qd._version), _NO_TAPES)
    state_out.__dict__["_featherstone_fk"] = ((state_out.joint_q._version, state_out.joint_qd._version,
                                               state_out.body_q._version, state_out.body_qd._version), _NO_TAPES)
