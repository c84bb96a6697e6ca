"""MuJoCo's contact parameters of a shape or of the ground: their defaults and their checks.

These are the numbers MuJoCo gives every geom, with MuJoCo's meaning (see MuJoCo's
documentation, "Contact parameters"); the constraint-based contact solve reads them, the
penalty contact of ``SemiImplicitEuler`` and ``XPBD`` reads ``mu`` and the collision masks:

- ``torsional_mu`` (default 0.005, a length in m: torsional friction per unit normal force)
  and ``rolling_mu`` (default 1e-4, m): the second and third numbers of MuJoCo's
  ``friction`` (the first is ``mu``, sliding);
- ``condim`` (1, 3, 4 or 6; default 3): the dimension of the contact: normal only, with
  sliding friction, with torsional friction too, with rolling friction too;
- ``solref`` (default ``(0.02, 1.0)``): the contact's reference response, a time constant
  (s) and a damping ratio, or MuJoCo's direct form ``(-stiffness, -damping)`` (both <= 0,
  the first < 0);
- ``solimp`` (default ``(0.9, 0.95, 0.001, 0.5, 2.0)``): the impedance ``dmin, dmax, width,
  midpoint, power`` (``dmin``, ``dmax`` in [0, 1]: the constraint's softness from zero to
  ``width`` (m) of penetration; ``midpoint`` in [0, 1] and ``power`` >= 1 shape that curve);
- ``margin`` (m, default 0): contacts are found this far before the surfaces touch;
  ``gap`` (m, default 0): of that margin, the part where the contact is found but not
  active;
- ``contype``, ``conaffinity`` (default 1 and 1): 32-bit masks; two shapes (or a shape and
  the ground) may touch when ``contype_a & conaffinity_b`` or ``contype_b & conaffinity_a``
  is nonzero.

Example::

    contact_params("add_shape_box", {"condim": 1, "solref": (0.01, 0.8)})["solimp"]
    # (0.9, 0.95, 0.001, 0.5, 2.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import validate as V

CONTACT_DEFAULTS = {"torsional_mu": 0.005, "rolling_mu": 1.0e-4, "condim": 3, "solref": (0.02, 1.0),
                    "solimp": (0.9, 0.95, 0.001, 0.5, 2.0), "margin": 0.0, "gap": 0.0, "contype": 1,
                    "conaffinity": 1}
CONDIMS = (1, 3, 4, 6)
CONE_KINDS = ("pyramidal", "elliptic")
# the float parameters of a shape, in the order of a builder row (``shape_contact``)
CONTACT_ROW = ("torsional_mu", "rolling_mu", "condim", "solref", "solimp", "margin", "gap")
CONTACT_ROW_WIDTH = 12


def _integer(value: Any, where: str, what: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise TypeError(f"{where} must be an int ({what}), got {type(value).__name__} {value!r}")
    return int(value)


def _numbers(value: Any, n: int, where: str, what: str) -> tuple:
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{where} expects {n} finite numbers ({what}), got {value!r}") from None
    if v.shape != (n,) or not np.all(np.isfinite(v)):
        raise ValueError(f"{where} expects {n} finite numbers ({what}), got {value!r}")
    return tuple(float(x) for x in v)


def check_solref(value: Any, where: str) -> tuple:
    """``(timeconst > 0, dampratio > 0)`` or MuJoCo's direct ``(-stiffness < 0, -damping <= 0)``."""
    what = "timeconst, dampratio, or MuJoCo's direct form -stiffness, -damping"
    r = _numbers(value, 2, where, what)
    if not ((r[0] > 0.0 and r[1] > 0.0) or (r[0] < 0.0 and r[1] <= 0.0)):
        raise ValueError(f"{where} must be (timeconst > 0, dampratio > 0) or MuJoCo's direct form "
                         f"(-stiffness < 0, -damping <= 0), got {value!r}")
    return r


def check_solimp(value: Any, where: str) -> tuple:
    """``(dmin, dmax, width, midpoint, power)``: ``dmin``, ``dmax``, ``midpoint`` in [0, 1],
    ``width`` >= 0, ``power`` >= 1."""
    s = _numbers(value, 5, where, "dmin, dmax, width, midpoint, power")
    dmin, dmax, width, midpoint, power = s
    if not (0.0 <= dmin <= 1.0 and 0.0 <= dmax <= 1.0 and width >= 0.0 and 0.0 <= midpoint <= 1.0 and power >= 1.0):
        raise ValueError(f"{where} must be (dmin, dmax, width, midpoint, power) with dmin, dmax and midpoint in "
                         f"[0, 1], width >= 0 and power >= 1, got {value!r}")
    return s


def check_mask(value: Any, where: str) -> int:
    """A 32-bit mask: an int in [0, 2**32)."""
    v = _integer(value, where, "a bit mask")
    if not 0 <= v < 2 ** 32:
        raise ValueError(f"{where} must be an int bit mask in [0, 2**32), got {value!r}")
    return v


def check_condim(value: Any, where: str) -> int:
    v = _integer(value, where, "1, 3, 4 or 6")
    if v not in CONDIMS:
        raise ValueError(f"{where} must be 1, 3, 4 or 6 (MuJoCo's condim), got {value!r}")
    return v


_CHECKS = {"torsional_mu": V.nonneg, "rolling_mu": V.nonneg, "condim": check_condim, "solref": check_solref,
           "solimp": check_solimp, "margin": V.nonneg, "gap": V.nonneg, "contype": check_mask,
           "conaffinity": check_mask}


def contact_params(where: str, given: dict, base: dict | None = None) -> dict:
    """Every contact parameter: those of ``given`` (``None``: not given) checked, the others
    from ``base`` (default: MuJoCo's defaults). A name that is not a contact parameter is a
    TypeError naming ``where``.

    Example::

        contact_params("set_ground_material", {"margin": 0.01})["margin"]    # 0.01
    """
    unknown = sorted(set(given) - set(_CHECKS))
    if unknown:
        raise TypeError(f"{where}: unexpected keyword argument {unknown[0]!r} (the contact parameters are "
                        f"{', '.join(_CHECKS)})")
    out = dict(CONTACT_DEFAULTS if base is None else base)
    for name, value in given.items():
        if value is not None:
            out[name] = _CHECKS[name](value, f"{where}: {name}")
    return out


def contact_row(params: dict) -> list:
    """The float parameters of ``params`` as one row of ``CONTACT_ROW_WIDTH`` numbers."""
    return [params["torsional_mu"], params["rolling_mu"], float(params["condim"]), *params["solref"],
            *params["solimp"], params["margin"], params["gap"]]


def split_rows(rows: np.ndarray) -> dict:
    """The columns of rows made by :func:`contact_row`, by name."""
    rows = np.asarray(rows, dtype=np.float64).reshape(-1, CONTACT_ROW_WIDTH)
    return {"torsional_mu": rows[:, 0], "rolling_mu": rows[:, 1], "condim": rows[:, 2].astype(np.int32),
            "solref": rows[:, 3:5], "solimp": rows[:, 5:10], "margin": rows[:, 10], "gap": rows[:, 11]}


def mask_int32(values: Any) -> np.ndarray:
    """32-bit masks (ints in [0, 2**32)) as int32 with the same bits, as the kernels read them."""
    return np.asarray(values, dtype=np.int64).reshape(-1).astype(np.uint32).view(np.int32)
