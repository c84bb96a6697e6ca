"""``simkit.torch``, the public name of the PyTorch bridge :mod:`simkit.bridges.torch`: importing
it imports that module and makes this name the same module object (so ``simkit.torch.X`` is
``simkit.bridges.torch.X``, patching included). Needs PyTorch.

Example::

    import simkit.torch

    @simkit.torch.function
    def f(x: sk.array(dtype=sk.float32)): ...
"""

import sys

from .bridges import torch as _bridge

sys.modules[__name__] = _bridge
