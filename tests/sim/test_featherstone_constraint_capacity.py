"""Featherstone(contact="constraint") refuses to drop contacts silently: more active
contacts than ``max_contacts`` is an error that names the count needed."""

import pytest

import simkit as sk


def three_boxes_on_ground():
    # three separate boxes resting on the ground: 4 corner contacts each, 12 in all
    b = sk.sim.ModelBuilder(gravity=-9.81, up_axis="z", ground=True)
    for i in range(3):
        b.add_articulation()
        body = b.add_body(((0.5 * i, 0.0, 0.1 - 1e-4), (0.0, 0.0, 0.0, 1.0)))
        b.add_shape_box((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.1, 0.1, 0.1), body=body, density=125.0)
        b.add_joint_free(-1, body)
    return b.finalize(dtype=sk.float64)


def test_more_contacts_than_max_contacts_is_an_error_naming_the_count_needed():
    model = three_boxes_on_ground()
    s0, s1 = model.state(), model.state()
    with pytest.raises(RuntimeError, match=r"max_contacts=8\).*12 contacts.*max_contacts=12\)"):
        sk.sim.Featherstone(contact="constraint", max_contacts=8).step(model, s0, s1, None, 1e-3)


def test_a_larger_max_contacts_on_the_same_model_holds_every_contact():
    model = three_boxes_on_ground()
    s0, s1 = model.state(), model.state()
    with pytest.raises(RuntimeError):
        sk.sim.Featherstone(contact="constraint", max_contacts=8).step(model, s0, s1, None, 1e-3)
    integrator = sk.sim.Featherstone(contact="constraint", max_contacts=12)
    for _ in range(200):
        integrator.step(model, s0, s1, None, 1e-3)
        s0, s1 = s1, s0
    heights = s0.joint_q.numpy().reshape(3, 7)[:, 2]
    assert heights.min() > 0.1 - 2e-3              # every box still on the ground, none sank
