"""simkit.autograd: reverse- and forward-mode differentiation of kernel launches.

- :class:`Tape` records launches and replays their adjoints (``tape.backward``);
  :func:`active_tapes` lists the recording ones, :class:`paused_tapes` stops them
  recording for a step that records a hand-written adjoint (``tape.record_func``);
- :func:`jacobian` builds a launch's Jacobian from the kernel's generated adjoint,
  one adjoint launch per output component, or (``mode="forward"``, chosen by default
  when the inputs have fewer components than the outputs) from its tangent entry, one
  tangent launch per input component;
- given a Python function of launches (an integrator step) instead of a kernel,
  :func:`jacobian` returns the Jacobian of its output arrays with respect to its input
  arrays as one dense matrix (reverse: one Tape recording, one backward per row;
  forward: one replayed tangent run per column); :func:`jacobian_blocks` cuts it per pair;
- :func:`jvp` and :class:`JVP` run launches and rollouts in forward mode (tangent
  kernels) and give Jacobian-vector products;
- :func:`hvp` gives a scalar loss's gradient and Hessian-vector product
  (forward-over-reverse: the adjoints compiled over dual numbers);
- :func:`jacobian_fd` builds the same matrices by central differences;
- :func:`gradcheck` compares the two and reports the worst entry
  (a :class:`GradcheckResult`).

Example::

    import simkit as sk

    @sk.kernel
    def scale(x: sk.array(dtype=sk.float64), y: sk.array(dtype=sk.float64)):
        i = sk.tid()
        y[i] = sk.sin(x[i]) * 2.0

    x = sk.array([0.1, 0.2], dtype=sk.float64)
    y = sk.zeros(2, dtype=sk.float64)
    J = sk.autograd.jacobian(scale, 2, inputs=[x], outputs=[y])[(0, 0)]   # diag(2 cos x)
    print(sk.autograd.gradcheck(scale, 2, inputs=[x], outputs=[y]))
"""

from .tape import Tape, active_tapes, paused_tapes
from .jacobian import GradcheckResult, gradcheck, jacobian, jacobian_fd
from .function_jacobian import jacobian_blocks
from .forward import JVP, jvp
from .hvp import hvp

__all__ = ["Tape", "active_tapes", "paused_tapes", "jacobian", "jacobian_blocks", "jacobian_fd", "gradcheck", "GradcheckResult", "JVP", "jvp", "hvp"]
