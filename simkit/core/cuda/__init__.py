"""The CUDA backend's internals: the driver (contexts, streams), device memory, NVRTC modules,
launches and graph capture. Every module here loads ``cuda.bindings`` lazily, so importing
it on a machine without a GPU costs nothing and initialises nothing; the public face is
``sk.is_cuda_available()``, ``device="cuda"`` and :mod:`simkit.cuda`.
"""
