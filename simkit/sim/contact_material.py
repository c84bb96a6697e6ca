"""Contact materials of the builder: penalty gains given directly (``ke``, ``kd``, ``kf``) or
per unit mass, by a time constant and a damping ratio.

Per unit mass, a contact of effective mass ``m`` (a particle's mass; for a point of a body,
``1 / (1/m + (r x n) . I^-1 (r x n))``; for two moving sides, the reduced mass) pushes with
stiffness ``m / tc^2``, damping ``2 zeta m / tc`` and friction slope ``m / tc``: every mass
then sinks ``g tc^2`` under its weight and rings with the same frequency ``1 / tc`` (rad/s)
and damping ratio ``zeta``. With the defaults (``tc = 0.01`` s, ``zeta = 1``) a dropped
particle or body of any mass comes to rest without bouncing within about ``10 tc``, 1 mm
into the ground.

Example::

    material = contact_material("ModelBuilder", "contact_", None, None, None, 0.02, 0.5, PARTICLE_PENALTY)
"""

from __future__ import annotations

from typing import Any

from . import validate as V

CONTACT_TIME_CONSTANT = 0.01
CONTACT_DAMPING_RATIO = 1.0
# the gains that were the defaults before contact could be given per unit mass: they fill in
# the ones left out when some of ke/kd/kf are given
PARTICLE_PENALTY = {"ke": 1.0e4, "kd": 10.0, "kf": 100.0}
RIGID_PENALTY = {"ke": 1.0e5, "kd": 1.0e2, "kf": 1.0e2}


def contact_material(where: str, prefix: str, ke: Any, kd: Any, kf: Any, time_constant: Any, damping_ratio: Any,
                     penalty: dict, inherit: dict | None = None) -> dict:
    """``{ke, kd, kf, time_constant, damping_ratio}`` from the arguments of ``where`` (named
    ``prefix + name``; ``None``: not given). The contact's gains are ``ke + m / tc^2``,
    ``kd + 2 zeta m / tc`` and ``kf + m / tc`` (only the first terms when ``tc`` is 0).

    - nothing given: ``inherit`` whole if there is one, else per unit mass with the default
      time constant and damping ratio;
    - some of ``ke``, ``kd``, ``kf`` and no time constant: those gains, ``penalty`` for the
      others, no scaling by mass;
    - a time constant (0 turns the scaling off) or a damping ratio: per unit mass, the rest
      from ``inherit`` when it is per unit mass, else the defaults, plus the gains given (0
      for the others). A damping ratio with a time constant of 0 is an error (it would do
      nothing).

    Example::

        contact_material("add_shape_box", "", 1e5, None, None, None, None, RIGID_PENALTY)
        # {'ke': 100000.0, 'kd': 100.0, 'kf': 100.0, 'time_constant': 0.0, 'damping_ratio': 0.0}
    """
    gains = {"ke": ke, "kd": kd, "kf": kf}
    given = any(value is not None for value in gains.values())
    scaled_given = time_constant is not None or damping_ratio is not None
    if not given and not scaled_given and inherit is not None:
        return dict(inherit)
    out = {name: V.nonneg(value, f"{where}: {prefix}{name}") if value is not None
           else (penalty[name] if given and not scaled_given else 0.0) for name, value in gains.items()}
    if given and not scaled_given:
        return dict(out, time_constant=0.0, damping_ratio=0.0)
    scaled = inherit if inherit is not None and inherit["time_constant"] > 0.0 else {
        "time_constant": CONTACT_TIME_CONSTANT, "damping_ratio": CONTACT_DAMPING_RATIO}
    tc = scaled["time_constant"] if time_constant is None else V.nonneg(time_constant,
                                                                         f"{where}: {prefix}time_constant")
    zeta = scaled["damping_ratio"] if damping_ratio is None else V.nonneg(damping_ratio,
                                                                          f"{where}: {prefix}damping_ratio")
    if tc == 0.0:
        if damping_ratio:
            raise ValueError(f"{where}: {prefix}damping_ratio={damping_ratio!r} needs {prefix}time_constant > 0 "
                             f"(a time constant of 0 turns the per-mass contact off), got {prefix}time_constant=0")
        zeta = 0.0
    return dict(out, time_constant=tc, damping_ratio=zeta)
