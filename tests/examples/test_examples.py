"""The trajectory-optimization examples in examples/: each one's ``main`` run in a short form
(fewer iterations than its default) into a temporary USD file. Checks that the loss falls,
that the identification examples recover their parameters, that the written USD reopens
with one time sample per frame, and that the scripts run from the command line."""

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pxr import Usd, UsdGeom

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# iterations of the short runs: enough for each example to show what it does, few enough
# for the whole file to run in about two minutes on a busy 2-core machine (arm_reach and
# cartpole_swingup: about 7 s each)
SHORT = {"ball_toss": 12, "cloth_throw": 5, "spring_walker": 8, "system_id": 30, "soft_id": 25, "box_throw": 15,
         "arm_reach": 20, "cartpole_swingup": 15, "cloth_drape_opt": 4}


def load(name: str):
    """Import ``examples/NAME.py`` as the module ``example_NAME`` (with ``examples/`` on the
    path, as when the script runs, for the helpers it shares with the others)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each example's module and the result of its short run, by name (run on first use)."""
    cache = {}

    def run(name):
        if name not in cache:
            module = load(name)
            usd = tmp_path_factory.mktemp(name) / f"{name}.usda"
            cache[name] = module, module.main(iterations=SHORT[name], usd_path=usd, quiet=True)
        return cache[name]
    return run


def test_ball_toss_loss_falls_fiftyfold(runs):
    _, result = runs("ball_toss")
    assert len(result["losses"]) == SHORT["ball_toss"]
    assert result["losses"][-1] < result["losses"][0] / 50


def test_ball_toss_optimized_throw_bounces_once_and_ends_near_the_target(runs):
    _, result = runs("ball_toss")
    assert result["bounces"] == 1
    assert result["miss"] < 0.1


def test_cloth_throw_loss_falls_thousandfold(runs):
    _, result = runs("cloth_throw")
    assert result["losses"][-1] < result["losses"][0] / 1000
    assert result["final_loss"] < result["losses"][-1]


def test_cloth_drape_opt_loss_falls_hundredfold_and_the_sheet_hangs_folded_over_the_bar(runs):
    module, result = runs("cloth_drape_opt")
    assert result["losses"][-1] < result["losses"][0] / 100
    # resting on the bar's edge (not on the ground), a part of each half hanging below it
    assert result["center"][1] > module.BAR_HEIGHT - 0.05
    assert min(result["hanging"]) > 0.05


def test_spring_walker_learns_to_walk_ten_centimetres_farther(runs):
    _, result = runs("spring_walker")
    losses = result["losses"]          # minus the distance walked
    assert losses[-1] < losses[0] - 0.1
    assert result["distance"] > -losses[0] + 0.1


def test_system_id_loss_falls_thousandfold(runs):
    _, result = runs("system_id")
    assert result["final_loss"] < result["losses"][0] / 1000


def test_system_id_recovers_stiffness_and_damping_within_2_percent(runs):
    module, result = runs("system_id")
    assert result["ke"] == pytest.approx(module.TRUE_KE, rel=0.02)
    assert result["kd"] == pytest.approx(module.TRUE_KD, rel=0.02)
    assert max(result["ke_error"], result["kd_error"]) < 0.02


def test_soft_id_loss_falls_thousandfold(runs):
    _, result = runs("soft_id")
    assert result["final_loss"] < result["losses"][0] / 1000


def test_soft_id_recovers_lame_parameters_within_2_percent(runs):
    module, result = runs("soft_id")
    true_mu, true_lambda = module.lame(module.TRUE_E, module.TRUE_NU)
    assert result["k_mu"] == pytest.approx(true_mu, rel=0.02)
    assert result["k_lambda"] == pytest.approx(true_lambda, rel=0.02)


@pytest.mark.parametrize("name, iterations", [("system_id", 6), ("soft_id", 11)])
def test_levenberg_marquardt_identifies_to_a_millionth_in_a_few_iterations(tmp_path, name, iterations):
    module = load(name)
    result = module.main(iterations=iterations, usd_path=tmp_path / f"{name}.usda", quiet=True, optimizer="lm")
    errors = [v for k, v in result.items() if k.endswith("_error")]
    assert len(errors) == 2 and max(errors) < 1e-6
    assert result["final_loss"] < result["losses"][0] * 1e-12


@pytest.mark.parametrize("name", ["system_id", "cartpole_swingup"])
def test_an_unknown_optimizer_is_refused(tmp_path, name):
    with pytest.raises(ValueError, match="optimizer must be 'adam' or 'lm'"):
        load(name).main(iterations=1, usd_path=tmp_path / "x.usda", quiet=True, optimizer="newton")


def test_box_throw_loss_falls_tenfold(runs):
    _, result = runs("box_throw")
    assert result["losses"][-1] < result["losses"][0] / 10


def test_arm_reach_loss_falls_fourfold(runs):
    _, result = runs("arm_reach")
    assert result["losses"][-1] < result["losses"][0] / 3
    assert result["final_loss"] < result["losses"][0] / 4


def test_arm_reach_hand_follows_the_circling_target_closer_than_holding_still(runs):
    _, result = runs("arm_reach")
    # holding the start pose the hand is ~19 cm from the target on average
    assert result["start_error"] > 0.15
    assert result["mean_error"] < 0.6 * result["start_error"]


def test_cartpole_swingup_levenberg_marquardt_loss_falls_thousandfold(runs):
    _, result = runs("cartpole_swingup")
    assert result["losses"][0] == pytest.approx(math.pi ** 2)        # at rest, hanging: 180 degrees off
    assert result["final_loss"] < result["losses"][0] / 1000


def test_cartpole_swingup_levenberg_marquardt_ends_upright_and_still(runs):
    _, result = runs("cartpole_swingup")
    assert abs(result["angle_error"]) < math.radians(1.0)
    assert abs(result["pole_rate"]) < 0.1                              # rad/s
    assert abs(result["cart_position"]) < 0.05 and abs(result["cart_velocity"]) < 0.1


def test_cartpole_swingup_adam_loss_falls_fivefold_and_brings_the_pole_within_45_degrees(tmp_path):
    result = load("cartpole_swingup").main(iterations=25, usd_path=tmp_path / "adam.usda", quiet=True,
                                           optimizer="adam")
    assert result["final_loss"] < result["losses"][0] / 5
    assert abs(result["angle_error"]) < math.radians(45.0)


@pytest.mark.parametrize("name", list(SHORT))
def test_example_writes_a_usd_stage_with_a_time_sample_per_frame(runs, name):
    module, result = runs(name)
    stage = Usd.Stage.Open(result["usd_path"])
    assert stage is not None
    assert stage.GetStartTimeCode() == 0.0
    assert stage.GetEndTimeCode() == module.FRAMES
    animated = [UsdGeom.PointBased(p).GetPointsAttr() for p in stage.Traverse() if p.IsA(UsdGeom.PointBased)]
    animated += [op.GetAttr() for p in stage.Traverse() if p.GetParent().GetPath().pathString == "/World/Bodies"
                 for op in UsdGeom.Xformable(p).GetOrderedXformOps()]
    assert animated
    for attr in animated:
        assert attr.GetNumTimeSamples() == module.FRAMES + 1


@pytest.mark.parametrize("name", list(SHORT))
def test_example_writes_to_the_ignored_out_folder_by_default(name):
    module = load(name)
    args = module.command_line.parse_args(module.__doc__, module.DEFAULT_ITERATIONS, module.DEFAULT_USD, [])
    assert Path(args.usd) == EXAMPLES / "out" / f"{name}.usd"
    assert "/examples/out/" in (EXAMPLES.parent / ".gitignore").read_text().split()


def test_system_id_runs_from_the_command_line_and_prints_its_result(tmp_path):
    usd = tmp_path / "fit.usda"
    run = subprocess.run([sys.executable, str(EXAMPLES / "system_id.py"), "--iterations", "2", "--usd", str(usd),
                          "--quiet"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("system_id: loss ")
    assert "ke " in run.stdout and "kd " in run.stdout
    assert run.stderr == ""
    assert usd.exists()


def test_system_id_runs_levenberg_marquardt_from_the_command_line(tmp_path):
    usd = tmp_path / "fit.usda"
    run = subprocess.run([sys.executable, str(EXAMPLES / "system_id.py"), "--optimizer", "lm", "--iterations", "1",
                          "--usd", str(usd), "--quiet"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("system_id: loss ") and " in 1 iterations " in run.stdout


@pytest.mark.parametrize("name, words", [("arm_reach", "tool point to target"), ("cartpole_swingup", "from upright")])
def test_featherstone_example_runs_from_the_command_line_and_prints_its_result(tmp_path, name, words):
    usd = tmp_path / f"{name}.usda"
    run = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--iterations", "2", "--usd", str(usd),
                          "--quiet"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(f"{name}: loss ") and " in 2 iterations " in run.stdout
    assert words in run.stdout
    assert run.stderr == ""
    assert usd.exists()


def test_arm_reach_torque_gradient_matches_central_differences_and_checkpointing():
    """d(loss)/du of the example's pipeline (u -> torques on a tape, the Featherstone rollout
    with one Control per frame) against central differences, and a checkpointed rollout
    against the full tape."""
    module = load("arm_reach")
    problem = module.Problem(module.Arm())
    u0 = np.random.default_rng(0).normal(scale=0.3, size=problem.u.shape[0])
    problem.u.assign(u0)
    _, tape = problem.run()
    grad = problem.u.grad.numpy().copy()
    tape.zero()
    n = len(problem.arm.joints)
    for i in (0 * n + 1, 20 * n + 3, 60 * n + 5):          # shoulder early, elbow mid-run, wrist late
        h, losses = 1e-4, []
        for sign in (1.0, -1.0):
            u = u0.copy()
            u[i] += sign * h
            problem.u.assign(u)
            loss, tape = problem.run()
            tape.zero()
            losses.append(loss)
        assert grad[i] == pytest.approx((losses[0] - losses[1]) / (2.0 * h), rel=1e-5, abs=1e-12)
    problem.u.assign(u0)
    problem.rollout = module.sk.optim.Rollout(problem.arm.model, module.sk.sim.Featherstone(), steps=module.FRAMES,
                                              substeps=module.SUBSTEPS, dt=1.0 / module.FPS,
                                              frame_loss=problem.frame_loss, control=problem.controls,
                                              checkpoint_every=8)
    _, tape = problem.run()
    np.testing.assert_allclose(problem.u.grad.numpy(), grad, rtol=1e-10, atol=1e-14)
