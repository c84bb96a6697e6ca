"""examples/torch_policy.py: a torch MLP trained closed loop through simkit.torch.function.
A short run (30 iterations) must cut the loss tenfold and save a learning curve; the
gradient of a short episode with respect to the policy's weights must match central
differences. Skipped where torch is missing."""

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

import torch_policy  # noqa: E402


def test_thirty_iterations_cut_the_loss_tenfold_and_save_a_learning_curve(tmp_path):
    pytest.importorskip("matplotlib")
    result = torch_policy.main(iterations=30, usd_path=tmp_path / "reach.usda", quiet=True)
    losses = result["losses"]
    assert len(losses) == 30
    assert losses[-1] < losses[0] / 10
    assert Path(result["plot_path"]).stat().st_size > 0
    assert Path(result["usd_path"]).exists()
    assert result["distance"] < 0.05


def test_the_episode_gradient_through_the_simulator_matches_central_differences(monkeypatch):
    monkeypatch.setattr(torch_policy, "FRAMES", 6)
    task = torch_policy.train(0, quiet=True)
    policy = task["policy"]
    args = (task["model"], task["frame"], task["free"], task["centers"], policy, task["targets"])
    params = list(policy.parameters())
    grads = torch.autograd.grad(torch_policy.episode(*args), params)
    gen = torch.Generator().manual_seed(1)
    direction = [torch.randn(p.shape, generator=gen, dtype=p.dtype) for p in params]
    analytic = sum((g * d).sum() for g, d in zip(grads, direction)).item()
    eps = 1e-6
    values = []
    with torch.no_grad():
        for sign in (1.0, -1.0):
            for p, d in zip(params, direction):
                p.add_(sign * eps * d)
            values.append(torch_policy.episode(*args).item())
            for p, d in zip(params, direction):
                p.sub_(sign * eps * d)
    fd = (values[0] - values[1]) / (2 * eps)
    assert analytic == pytest.approx(fd, rel=1e-6)
