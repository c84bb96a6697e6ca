"""simkit.optim: gradient-based optimization of simulations.

- :class:`SGD` and :class:`Adam` update sk arrays (any float element type) in place from
  their ``.grad`` with kernels; :func:`clip_grad_norm` and :func:`grad_norm` work on the
  global norm of many grads;
- :class:`LevenbergMarquardt` and :class:`GaussNewton` minimize a sum of squared
  residuals computed by kernels, with Jacobians from forward mode (one jvp per parameter);
- :class:`Rollout` runs a simulation and a loss and backpropagates through it, on one Tape
  or with gradient checkpointing (memory O(sqrt(T)) for T steps, the same gradient).

Example::

    import simkit as sk

    s0 = model.state(requires_grad=True)
    rollout = sk.optim.Rollout(model, sk.sim.SemiImplicitEuler(), steps=1000, dt=1e-3, loss=final_height,
                               checkpoint_every="auto")
    opt = sk.optim.Adam([s0.particle_qd], lr=1e-2)
    for it in range(100):
        opt.zero_grad()
        result = rollout.run(s0)
        opt.step()
"""

from .optimizers import SGD, Adam, Optimizer, clip_grad_norm, grad_norm
from .rollout import Rollout, RolloutResult
from .least_squares import GaussNewton, LevenbergMarquardt

__all__ = ["SGD", "Adam", "Optimizer", "clip_grad_norm", "grad_norm", "Rollout", "RolloutResult",
           "GaussNewton", "LevenbergMarquardt"]
