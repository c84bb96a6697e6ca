"""Every physics kernel compiles to PTX through NVRTC (the CUDA path, checked without a GPU)."""

import pytest

import simkit as sk
from simkit.kernels.bending import bending_kernels
from simkit.kernels.contact import contact_kernels
from simkit.kernels.particles import particle_kernels
from simkit.kernels.springs import spring_kernels
from simkit.kernels.tets import tet_kernels
from simkit.kernels.triangles import triangle_kernels
from simkit.kernels.xpbd import xpbd_kernels

pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-python) is not installed")

FACTORIES = [particle_kernels, spring_kernels, contact_kernels, triangle_kernels, bending_kernels, tet_kernels,
             xpbd_kernels]
KERNELS = [(f"{factory.__name__}.{name}", k) for factory in FACTORIES
           for name, k in vars(factory(sk.float32)).items() if isinstance(k, sk.core.kernel.Kernel)]


@pytest.mark.parametrize("kernel", [k for _, k in KERNELS], ids=[n for n, _ in KERNELS])
def test_physics_kernel_compiles_to_ptx(kernel):
    fwd, bwd = sk.cuda.entry_points(kernel)
    text = sk.cuda.ptx(kernel)
    assert f".entry {fwd}(" in text and f".entry {bwd}(" in text
