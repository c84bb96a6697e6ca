"""A per-step broad phase for the penalty body contact: sweep and prune over world-space
boxes of the shapes, giving the shape pairs whose boxes overlap (docs/geometry.md, "Broad
phase").

Each step, on the device, in kernels that never leave it:

1. ``shape_bounds``: the world-space axis-aligned box of every shape from its body's pose
   (a box's rotated half extents, a capsule's or cylinder's axis plus its radius, an
   ellipsoid's exact extent, else the bounding sphere), widened by ``BOUNDS_PAD`` of its
   bounding radius so that rounding never drops a touching pair. Every contact point,
   thickened by its radius, lies inside its shape, so a pair whose boxes are apart cannot
   touch.
2. ``spread_axis``: the axis along which the box centers spread most.
3. ``sort_keys`` then ``bitonic_step`` (``log2(N) (log2(N) + 1) / 2`` launches over ``N``,
   the shape count rounded up to a power of two): the shapes sorted by their box's low
   end on that axis, ties by shape index.
4. ``sweep_pass`` (counting): each shape sweeps forward through the sorted list until a
   box starts past its high end, and counts, for the first shape of every candidate
   ordered pair, the pairs whose boxes overlap on all three axes and that pass
   ``collision_pairs``'s rules (worlds, joints, collision masks, one orientation for a
   sphere).
5. ``scan_counts`` (one thread), ``sweep_pass`` again (writing: the same sweep, into each
   first shape's segment) and ``order_pairs`` (each segment sorted by its second shape):
   the pair list in ascending ``(a, b)`` order, the order of ``collision_pairs``, whatever
   order the atomics handed out the slots in. The true number of pairs is kept even when
   it passes the capacity (the pairs past it are dropped: :func:`broad_phase_overflow`).

The narrow phase (``listed_pair_contact``) runs one thread per slot of the list and
stops past its count. A pair's friction anchors live in the slots of its place in the
list; the next step finds a pair's place in the previous step's list (kept in the
State, ``contact_pairs``) by binary search and reads its anchors from there, so the
anchors follow their pair when the list changes. The selection kernels have no adjoint
and run outside any Tape (they select, they have no derivative); the narrow phase is
recorded as usual, so states and gradients are those of the static pair list.

Example::

    pairs = broad_phase_pairs(state)    # the (a, b) rows the last step tested
"""

# No ``from __future__ import annotations``: kernel annotations name closure types.
import functools
from types import SimpleNamespace
from typing import Any

import numpy as np

import simkit as sk
from ..core import array as A
from ..core import types as T
from ..core.launch import launch
from ..autograd.tape import paused_tapes
from .body_contact import add_pair_contact
from .broad_phase_options import broad_phase_capacity, broad_phase_mode, candidate_shapes
from .shapes import MAX_PLANE_POINTS, MAX_SHAPE_POINTS, shape_bounding_radius, shape_transform, surface_only
from .structs import (SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CONE, SHAPE_CYLINDER, SHAPE_ELLIPSOID, SHAPE_SPHERE,
                      model_structs)

AnyArray = sk.array(dtype=Any)
ints = sk.array(dtype=sk.int32)
pair_rows = sk.array(dtype=sk.int32, ndim=2)

# A shape's box is widened by this fraction of its bounding radius: far above the rounding
# of a pose, far below any gap that matters.
BOUNDS_PAD = 1.0e-4

@sk.func
def shape_extent(kind: int, size: Any, q: Any):
    """Half widths along the world axes of the box around a shape of ``kind`` and ``size``
    rotated by ``q``, at most its bounding radius on each axis."""
    R = sk.quat_to_matrix(q)
    r = shape_bounding_radius(kind, size)
    e = size * 0.0
    for i in range(3):
        w = r
        if kind == SHAPE_BOX:
            w = sk.abs(R[i, 0]) * size[0] + sk.abs(R[i, 1]) * size[1] + sk.abs(R[i, 2]) * size[2]
        elif kind == SHAPE_CAPSULE:
            w = sk.abs(R[i, 1]) * size[1] + size[0]
        elif kind == SHAPE_CYLINDER or kind == SHAPE_CONE:
            # a disk of radius r whose normal has component a on this axis spans r sqrt(1 - a^2)
            w = sk.abs(R[i, 1]) * size[1] + size[0] * sk.sqrt(sk.max(1.0 - R[i, 1] * R[i, 1], 0.0 * r))
        elif kind == SHAPE_ELLIPSOID:
            a = R[i, 0] * size[0]
            b = R[i, 1] * size[1]
            c = R[i, 2] * size[2]
            w = sk.sqrt(a * a + b * b + c * c)
        e[i] = sk.min(w, r) + r * BOUNDS_PAD
    return e


@sk.kernel(enable_backward=False)
def shape_bounds(body_q: AnyArray, shapes: Any, lo: AnyArray, hi: AnyArray):
    s = sk.tid()
    X = shape_transform(shapes, body_q, s)
    e = shape_extent(shapes.kind[s], shapes.params[s], X.q)
    lo[s] = X.p - e
    hi[s] = X.p + e


@sk.kernel(enable_backward=False)
def spread_axis(lo: AnyArray, hi: AnyArray, candidates: ints, m: int, axis: ints):
    # One thread: the axis of widest spread of the box centers (picks the sweep axis only,
    # so it changes the work, never the pairs found).
    first = candidates[0]
    low = lo[first] + hi[first]
    high = low
    for t in range(1, m):
        c = lo[candidates[t]] + hi[candidates[t]]
        low = sk.min(low, c)
        high = sk.max(high, c)
    w = high - low
    best = 0
    if w[1] > w[best]:
        best = 1
    if w[2] > w[best]:
        best = 2
    axis[0] = best


@sk.kernel(enable_backward=False)
def sort_keys(lo: AnyArray, candidates: ints, m: int, axis: ints, key: AnyArray, order: ints):
    t = sk.tid()
    if t < m:
        s = candidates[t]
        key[t] = lo[s][axis[0]]
        order[t] = s
    else:
        key[t] = key[t] * 0.0
        order[t] = -1


@sk.func
def sorts_before(ka: Any, oa: int, kb: Any, ob: int) -> int:
    """1 when entry ``(ka, oa)`` comes before ``(kb, ob)``: by key, then by shape index; the
    padding (index -1) after everything."""
    result = 0
    if oa >= 0:
        if ob < 0:
            result = 1
        elif ka < kb:
            result = 1
        elif ka == kb and oa < ob:
            result = 1
    return result


@sk.kernel(enable_backward=False)
def bitonic_step(key: AnyArray, order: ints, j: int, k: int):
    # One compare-exchange stage of a bitonic sort: blocks of k alternate up and down.
    i = sk.tid()
    other = i ^ j
    if other > i:
        swap = 0
        if (i & k) == 0:
            swap = sorts_before(key[other], order[other], key[i], order[i])
        else:
            swap = sorts_before(key[i], order[i], key[other], order[other])
        if swap == 1:
            ki = key[i]
            oi = order[i]
            key[i] = key[other]
            order[i] = order[other]
            key[other] = ki
            order[other] = oi


@sk.func
def joined(joint_lo: ints, joint_hi: ints, joint_count: int, ba: int, bb: int) -> int:
    """1 when bodies ``ba`` and ``bb`` are joined by a joint (the sorted rows ``(lo, hi)``)."""
    lo = sk.min(ba, bb)
    hi = sk.max(ba, bb)
    first = 0
    last = joint_count
    while first < last:
        mid = (first + last) // 2
        if joint_lo[mid] < lo or (joint_lo[mid] == lo and joint_hi[mid] < hi):
            first = mid + 1
        else:
            last = mid
    result = 0
    if first < joint_count:
        if joint_lo[first] == lo and joint_hi[first] == hi:
            result = 1
    return result


@sk.func
def may_collide(shapes: Any, world: ints, group: ints, mask: ints, joint_lo: ints, joint_hi: ints,
                joint_count: int, i: int, k: int) -> int:
    """1 when shapes ``i`` and ``k`` may collide by ``collision_pairs``'s rules: other bodies,
    not both static, not of two worlds, masks that meet, bodies not joined."""
    bi = shapes.body[i]
    bk = shapes.body[k]
    result = 1
    if bi == bk or (bi < 0 and bk < 0):
        result = 0
    elif world[i] >= 0 and world[k] >= 0 and world[i] != world[k]:
        result = 0
    elif ((group[i] & mask[k]) | (group[k] & mask[i])) == 0:
        result = 0
    elif bi >= 0 and bk >= 0:
        if joined(joint_lo, joint_hi, joint_count, bi, bk) == 1:
            result = 0
    return result


@sk.func
def points_against(shapes: Any, a: int, b: int) -> int:
    """1 when ``(a, b)`` is a candidate orientation: a sphere is only ever the ``a`` side, a
    plane or a heightfield only ever the ``b`` side, and of two spheres the lower index is."""
    sa = shapes.kind[a] == SHAPE_SPHERE
    sb = shapes.kind[b] == SHAPE_SPHERE
    result = 1
    if surface_only(shapes.kind[a]) == 1 or (sb and not sa):
        result = 0
    elif sa and sb and a > b:
        result = 0
    return result


@sk.func
def boxes_overlap(lo_i: Any, hi_i: Any, lo_k: Any, hi_k: Any) -> int:
    result = 1
    for d in range(3):
        if lo_k[d] > hi_i[d] or lo_i[d] > hi_k[d]:
            result = 0
    return result


@sk.func
def note_pair(write: int, pairs: pair_rows, start: ints, cursor: ints, a: int, b: int):
    # Counting (write 0) and writing (write 1) pass through the very same sweep, so the
    # counts and the written rows always agree.
    slot = sk.atomic_add(cursor, a, 1)
    if write == 1:
        slot += start[a]
        if slot < pairs.shape[0]:
            pairs[slot, 0] = a
            pairs[slot, 1] = b


@sk.kernel(enable_backward=False)
def sweep_pass(order: ints, key: AnyArray, lo: AnyArray, hi: AnyArray, axis: ints, m: int, shapes: Any,
               world: ints, group: ints, mask: ints, joint_lo: ints, joint_hi: ints, joint_count: int,
               write: int, start: ints, cursor: ints, pairs: pair_rows):
    # The sorted keys (key[t], the low ends on the sweep axis) stop the sweep without
    # reaching into the boxes of the shapes passed over.
    j = sk.tid()
    i = order[j]
    lo_i = lo[i]
    hi_i = hi[i]
    top = hi_i[axis[0]]
    for t in range(j + 1, m):
        if key[t] > top:
            break
        k = order[t]
        if boxes_overlap(lo_i, hi_i, lo[k], hi[k]) == 1:
            if may_collide(shapes, world, group, mask, joint_lo, joint_hi, joint_count, i, k) == 1:
                if points_against(shapes, i, k) == 1:
                    note_pair(write, pairs, start, cursor, i, k)
                if points_against(shapes, k, i) == 1:
                    note_pair(write, pairs, start, cursor, k, i)


@sk.kernel(enable_backward=False)
def scan_counts(count: ints, n: int, start: ints, total: ints):
    # One thread: the segment of each first shape; the counts are cleared for the writing pass.
    s = 0
    for x in range(n):
        start[x] = s
        s += count[x]
        count[x] = 0
    start[n] = s
    total[0] = s


@sk.kernel(enable_backward=False)
def order_pairs(start: ints, pairs: pair_rows):
    # Insertion sort of one first shape's segment by its second shape (a dozen entries).
    x = sk.tid()
    first = start[x]
    last = sk.min(start[x + 1], pairs.shape[0])
    for t in range(first + 1, last):
        b = pairs[t, 1]
        u = t
        while u > first and pairs[u - 1, 1] > b:
            pairs[u, 1] = pairs[u - 1, 1]
            u -= 1
        pairs[u, 1] = b


@sk.func
def find_pair(pairs: pair_rows, count: int, a: int, b: int) -> int:
    """The row of ``(a, b)`` among the first ``count`` rows of ``pairs`` (ascending), or -1."""
    first = 0
    last = count
    while first < last:
        mid = (first + last) // 2
        if pairs[mid, 0] < a or (pairs[mid, 0] == a and pairs[mid, 1] < b):
            first = mid + 1
        else:
            last = mid
    result = -1
    if first < count:
        if pairs[first, 0] == a and pairs[first, 1] == b:
            result = first
    return result


@sk.kernel
def listed_pair_contact(pairs: pair_rows, pair_count: ints, held_pairs: pair_rows, held_count: ints,
                        body_q: AnyArray, body_qd: AnyArray, bodies: Any, shapes: Any, offset: int,
                        stuck_in: ints, anchor_in: AnyArray, point_in: AnyArray, body_f: AnyArray,
                        stuck_out: ints, anchor_out: AnyArray, point_out: AnyArray):
    # body_contact.pair_contact over this step's pair list; a pair's anchors are read from its
    # row of the list of the step that wrote them.
    i = sk.tid()
    if i >= pair_count[0]:
        return
    a = pairs[i, 0]
    b = pairs[i, 1]
    held = find_pair(held_pairs, sk.min(held_count[0], held_pairs.shape[0]), a, b)
    first_in = -1
    if held >= 0:
        first_in = offset + held * MAX_SHAPE_POINTS
    add_pair_contact(a, b, offset + i * MAX_SHAPE_POINTS, first_in, body_q, body_qd, bodies, shapes, stuck_in,
                     anchor_in, point_in, body_f, stuck_out, anchor_out, point_out)


@sk.overload_types
def _param_types(real) -> dict:
    """The types of the kernels' generic parameters for float type ``real``."""
    S = model_structs(real)
    spatials = sk.array(dtype=S.spatial)
    vec3s = sk.array(dtype=S.vec3)
    return {"body_q": sk.array(dtype=S.transform), "body_qd": spatials, "body_f": spatials, "bodies": S.Bodies,
            "shapes": S.Shapes, "lo": vec3s, "hi": vec3s, "key": sk.array(dtype=real),
            "anchor_in": vec3s, "anchor_out": vec3s, "point_in": vec3s, "point_out": vec3s}


@functools.cache
def broad_phase_kernels(real) -> SimpleNamespace:
    """The overloads of this module's kernels for float type ``real`` (they compile together)."""
    return sk.instantiate(real, __name__)


def pair_buffers(model) -> tuple[A.Array, A.Array]:
    """A State's per-step pair list for ``model``: the int32 rows ``(capacity, 2)`` and the
    int32 count ``(1,)`` (how many rows the step found, which may pass the capacity); no rows
    when the model keeps the static list. A fresh state has no pairs, so its first step
    starts with no anchors.

    Example::

        state.contact_pairs, state.contact_pair_count = pair_buffers(model)
    """
    rows = broad_phase_capacity(model) if model.shape_count and broad_phase_mode(model) == "sweep" else 0
    return (A.zeros((rows, 2), dtype=T.int32, device=model.device),
            A.zeros(1, dtype=T.int32, device=model.device))


def _setup(model) -> SimpleNamespace:
    """The sweep's scratch and the filters of ``collision_pairs`` as device arrays, once per model."""
    bp = model.__dict__.get("_broad_phase")
    if bp is not None:
        return bp
    n = model.shape_count
    dev = model.device
    candidates = candidate_shapes(model)
    m = len(candidates)
    size = 1 << max(int(m - 1).bit_length(), 0)

    def int_array(x):
        return A.array(np.ascontiguousarray(x, dtype=np.int32), dtype=T.int32, device=dev)

    joints = set()
    if model.joint_count:
        for p, c in zip(model.joints.parent.numpy(), model.joints.child.numpy()):
            if p >= 0:
                joints.add((min(int(p), int(c)), max(int(p), int(c))))
    joints = np.array(sorted(joints), dtype=np.int32).reshape(-1, 2)
    everything = np.full(n, -1, dtype=np.int64)
    group = everything if model.shape_collision_group is None else model.shape_collision_group
    mask = everything if model.shape_collision_mask is None else model.shape_collision_mask
    vec3 = model.types.vec3
    bp = SimpleNamespace(
        n=n, m=m, size=size, candidates=int_array(candidates),
        # the 32-bit masks as int32 of the same bits: kernels only take their bitwise and
        group=int_array(np.asarray(group, dtype=np.int64).astype(np.uint32).view(np.int32)),
        mask=int_array(np.asarray(mask, dtype=np.int64).astype(np.uint32).view(np.int32)),
        world=int_array(model.shape_world.numpy()), joint_lo=int_array(joints[:, 0].copy()),
        joint_hi=int_array(joints[:, 1].copy()), joint_count=len(joints),
        lo=A.zeros(n, dtype=vec3, device=dev), hi=A.zeros(n, dtype=vec3, device=dev),
        key=A.zeros(size, dtype=model.dtype, device=dev), order=A.zeros(size, dtype=T.int32, device=dev),
        axis=A.zeros(1, dtype=T.int32, device=dev), count=A.zeros(n, dtype=T.int32, device=dev),
        start=A.zeros(n + 1, dtype=T.int32, device=dev))
    model._broad_phase = bp
    return bp


def sweep_pairs(model, body_q: A.Array, pairs: A.Array, pair_count: A.Array) -> None:
    """Find the candidate pairs of ``model``'s shapes at poses ``body_q`` whose boxes overlap
    into ``pairs`` (ascending ``(a, b)`` rows) and their number into ``pair_count[0]``. Runs
    outside any Tape: a selection has no derivative.

    Example::

        sweep_pairs(model, state.body_q, state.contact_pairs, state.contact_pair_count)
    """
    bp = _setup(model)
    k = broad_phase_kernels(model.dtype)
    filters = [model.shapes, bp.world, bp.group, bp.mask, bp.joint_lo, bp.joint_hi, bp.joint_count]
    with paused_tapes():
        launch(k.shape_bounds, bp.n, inputs=[body_q, model.shapes, bp.lo, bp.hi])
        if bp.m == 0:
            pair_count.zero_()
            return
        launch(k.spread_axis, 1, inputs=[bp.lo, bp.hi, bp.candidates, bp.m, bp.axis])
        launch(k.sort_keys, bp.size, inputs=[bp.lo, bp.candidates, bp.m, bp.axis, bp.key, bp.order])
        block = 2
        while block <= bp.size:
            step = block // 2
            while step >= 1:
                launch(k.bitonic_step, bp.size, inputs=[bp.key, bp.order, step, block])
                step //= 2
            block *= 2
        bp.count.zero_()
        sweep = [bp.order, bp.key, bp.lo, bp.hi, bp.axis, bp.m, *filters]
        launch(k.sweep_pass, bp.m, inputs=[*sweep, 0, bp.start, bp.count, pairs])
        launch(scan_counts, 1, inputs=[bp.count, bp.n, bp.start, pair_count])
        launch(k.sweep_pass, bp.m, inputs=[*sweep, 1, bp.start, bp.count, pairs])
        launch(order_pairs, bp.n, inputs=[bp.start, pairs])


def eval_listed_pair_contact(model, state_in, state_out, held: list, out: list) -> None:
    """The pair contact of :func:`~simkit.sim.forces.eval_body_contact_forces` over the
    pairs the sweep finds at ``state_in`` (kept in ``state_out``), reading each pair's anchors
    from its row of ``state_in``'s list. ``held`` and ``out`` are the states' stick fields.

    Example::

        eval_listed_pair_contact(model, state_in, state_out, held, out)
    """
    sweep_pairs(model, state_in.body_q, state_out.contact_pairs, state_out.contact_pair_count)
    k = broad_phase_kernels(model.dtype)
    launch(k.listed_pair_contact, state_out.contact_pairs.shape[0],
           inputs=[state_out.contact_pairs, state_out.contact_pair_count, state_in.contact_pairs,
                   state_in.contact_pair_count, state_in.body_q, state_in.body_qd, model.bodies, model.shapes,
                   model.shape_count * MAX_PLANE_POINTS, *held, state_in.body_f, *out])


def broad_phase_pairs(state) -> np.ndarray:
    """The ordered pairs ``(a, b)`` the step that wrote ``state`` tested, as an int32 array
    ``(P, 2)`` in ascending order (at most the capacity; see :func:`broad_phase_overflow`).

    Example::

        broad_phase_pairs(state)[:3]     # [[0, 1], [0, 7], [1, 0]]
    """
    count = min(int(state.contact_pair_count.numpy()[0]), state.contact_pairs.shape[0])
    return state.contact_pairs.numpy()[:count].copy()


def broad_phase_overflow(state) -> int:
    """How many overlapping pairs the step that wrote ``state`` found past the list's capacity
    (their contacts were dropped): 0 unless ``broad_phase_capacity`` is too small.

    Example::

        assert broad_phase_overflow(state) == 0
    """
    return max(int(state.contact_pair_count.numpy()[0]) - state.contact_pairs.shape[0], 0)
