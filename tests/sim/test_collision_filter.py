"""Collision filter between shapes (ModelBuilder.set_shape_collision): MuJoCo's
contype/conaffinity rule, in both integrators, the ground and particles unaffected."""

import math

import numpy as np
import pytest

import simkit as sk
from simkit.kernels.shapes import collision_pairs

IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)
R = 0.05


def ball_over_box(ball_collision=None, box_collision=None):
    """A 2 kg box resting on the ground and a 0.5 kg ball just above its top face."""
    b = sk.sim.ModelBuilder()
    box = b.add_body(sk.transform((0.0, 0.1, 0.0), IDENTITY_Q))
    box_shape = b.add_shape_box((0.0, 0.0, 0.0), IDENTITY_Q, (0.1, 0.1, 0.1), body=box, density=2.0 / 0.008)
    ball = b.add_body(sk.transform((0.0, 0.26, 0.0), IDENTITY_Q))
    ball_shape = b.add_shape_sphere((0.0, 0.0, 0.0), R, body=ball, density=0.5 / (4.0 / 3.0 * math.pi * R ** 3))
    if box_collision:
        b.set_shape_collision(box_shape, *box_collision)
    if ball_collision:
        b.set_shape_collision(ball_shape, *ball_collision)
    return b


def pairs(model) -> set:
    return {tuple(p) for p in collision_pairs(model).numpy()}


@pytest.mark.parametrize("ball, box, collide", [
    (None, None, True),                 # every shape starts in group 1 with mask 1
    ((1, 0), (1, 0), False),            # two parts of one robot: group 1, mask 0
    ((1, 0), (1, 1), True),             # group_ball & mask_box
    ((2, 1), (1, 2), True),             # both ways
    ((2, 2), (1, 1), False),            # no shared bit either way
    ((0, 0), (1, 1), False),            # out of shape contact altogether
], ids=["default", "robot-parts", "one-way", "both-ways", "disjoint", "none"])
def test_two_shapes_collide_when_one_group_shares_a_bit_with_the_other_mask(ball, box, collide):
    model = ball_over_box(ball, box).finalize()
    assert ({(1, 0)} <= pairs(model)) == collide


@pytest.mark.parametrize("integrator", [sk.sim.SemiImplicitEuler(), sk.sim.XPBD()], ids=["semi-implicit", "xpbd"])
def test_a_ball_filtered_from_a_box_falls_through_it_to_the_ground(integrator):
    dt = 1e-3 if isinstance(integrator, sk.sim.XPBD) else 1e-4
    for filtered in (False, True):
        model = ball_over_box(ball_collision=(1, 0) if filtered else None,
                              box_collision=(1, 0) if filtered else None).finalize(dtype=sk.float64)
        end = sk.sim.simulate(model, integrator, model.state(), int(round(1.0 / dt)), dt, keep_states=False)[-1]
        ball_y = end.body_q.numpy()[1, 1]
        if filtered:
            assert ball_y == pytest.approx(R, abs=5e-3)        # on the ground, through the box
        else:
            assert ball_y == pytest.approx(0.2 + R, abs=5e-3)  # on the box


def test_the_filter_is_carried_by_add_builder():
    world = sk.sim.ModelBuilder()
    world.add_builder(ball_over_box((1, 0), (1, 0)))
    world.add_builder(ball_over_box(), xform=sk.transform((1.0, 0.0, 0.0), IDENTITY_Q))
    got = pairs(world.finalize())
    assert (1, 0) not in got and (3, 2) in got


@pytest.mark.parametrize("shape, group, mask, error, message", [
    (5, 1, 1, ValueError, "shape=5 is out of range"),
    (0, -1, 1, ValueError, "group must be an int bit mask"),
    (0, 1, 2 ** 32, ValueError, "mask must be an int bit mask"),
    (0, 1.0, 1, ValueError, "group must be an int bit mask"),
    (0, True, 1, ValueError, "group must be an int bit mask"),
    ("0", 1, 1, TypeError, "shape must be an int"),
])
def test_bad_collision_masks_are_refused_naming_the_parameter(shape, group, mask, error, message):
    b = ball_over_box()
    with pytest.raises(error, match=message):
        b.set_shape_collision(shape, group, mask)
    assert b.shape_collision == [[1, 1], [1, 1]]
