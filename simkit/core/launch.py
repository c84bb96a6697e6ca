"""``sk.launch``: check arguments, pack them into the kernel's C struct, run the grid.

Packing is planned once per kernel (field offsets and a packer per parameter), so
a launch does no signature introspection: it writes each argument into a
preallocated ctypes struct and makes one foreign call into the thread pool. The
same struct bytes are the single parameter of the CUDA entry point, so a GPU
launch packs exactly alike (see :mod:`simkit.core.cuda.launch`).

Where a launch runs: ``device=`` when given, else where its arrays are (all must
agree), else, for a kernel without array arguments, the default device. The CPU
fast path assumes the CPU and finds out otherwise while packing, so it costs the
CPU nothing to support GPUs.

Example::

    sk.launch(saxpy, n, inputs=[x, y, 2.0])
    sk.launch(grid_kernel, (64, 64), inputs=[field])
"""

from __future__ import annotations

import ctypes
import math
from typing import Any, Sequence

import numpy as np

from . import compiler
from . import ir
from . import device as D
from . import types as T
from .array import Array, ArrayHeader
from .config import config
from .device import DeviceMismatch
from .kernel_errors import ErrorRecord, raise_kernel_error  # noqa: F401 (ErrorRecord: importable from here)
from .interop import as_array
from .launch_args import with_adjoints
from .launch_dim import launch_shape
from .private import descriptors

# Grids of less work than this run inline on the calling thread, where work is elements
# times the kernel's statements per element (ir.work_estimate). With the pool's workers
# spinning between launches (runtime.cpp), a split pays from a few tens of microseconds
# of work: the 64x64 cloth's 4225-particle integration (17 statements) went from 24 to
# 19.5 us split over two threads, its 12160-edge bending kernel (111) from 443 to 245 us.
PARALLEL_WORK = 16384 * 4
MIN_GRAIN = 1024


def grain_of(fir, adjoint: bool) -> int:
    """The grid size from which a launch of ``fir`` (its adjoint) splits over threads."""
    return max(MIN_GRAIN, PARALLEL_WORK // max(1, ir.work_estimate(fir, adjoint)))


# A kernel that accumulates into shared memory its accumulators cannot be made private
# for (core/private.py) needs atomics when its grid is split, and they cost about twice
# the plain adds of a launch run whole on one thread (the 16^3 soft grid's tet kernel:
# 2.38 ms atomic vs 1.12 ms plain): that split only wins from three threads on.
SCATTER_MIN_THREADS = 3


class LaunchBounds(ctypes.Structure):
    """Mirror of ``sk::launch_t``."""

    _fields_ = [("shape", ctypes.c_int64 * 4), ("ndim", ctypes.c_int32), ("pad", ctypes.c_int32),
                ("size", ctypes.c_int64)]


_BOUNDS_SIZE = ctypes.sizeof(LaunchBounds)


class Job(ctypes.Structure):
    """Mirror of the runtime's ``job_t``: one prebuilt launch, so the call converts no Python ints."""

    _fields_ = [("fn", ctypes.c_void_p), ("args", ctypes.c_void_p), ("args_size", ctypes.c_int64),
                ("grain", ctypes.c_int64), ("min_threads", ctypes.c_int64), ("priv", ctypes.c_void_p),
                ("npriv", ctypes.c_int64), ("error", ctypes.c_void_p), ("extents", ctypes.c_void_p),
                ("nextents", ctypes.c_int64), ("name", ctypes.c_char_p)]


# The error code sk_launch leaves when it refuses a grid larger than an array axis that every
# thread indexes by its thread index (runtime.cpp; Plan.check_extents is the Python twin).
EXTENT_ERROR = 5


def _array_packer(base, off, name, t, kname):
    hdr_size = ctypes.sizeof(ctypes.c_int64) * 10
    memmove = ctypes.memmove
    dtype, ndim = t.dtype, t.ndim

    def pack(v, device="cpu"):
        """Slow path: wrap foreign buffers and explain mismatches (the common case is inlined in Plan.pack)."""
        if type(v) is not Array:
            v = as_array(v, t, name)
        if v.dtype is not dtype or v.ndim != ndim:
            raise TypeError(f"{kname}(): argument '{name}' expects {t!r}, got array of "
                            f"{T.type_name(v.dtype)} with ndim={v.ndim}")
        if v.device != device:
            raise DeviceMismatch(v.device, name)
        memmove(base + off, v._hdr_addr, hdr_size)
        return v
    return pack


def _scalar_packer(args, field, name, t, kname):
    kind = t.kind
    py = {"f": float, "i": int, "u": int, "b": bool}[kind]
    if t in T.SMALL_FLOATS:  # float16, bfloat16: passed as their 16-bit pattern (ctypes has no such type)
        def py(v):
            return int(np.asarray(v, dtype=t.np_dtype).view(np.uint16))
    ok = (float, int, np.floating, np.integer, bool, np.bool_) if kind == "f" else (int, np.integer, bool, np.bool_)

    def pack(v, device="cpu"):
        if not isinstance(v, ok):
            raise TypeError(f"{kname}(): argument '{name}' expects {T.type_name(t)}, got {type(v).__name__}"
                            + (" (a float for an integer parameter)" if isinstance(v, (float, np.floating)) else ""))
        setattr(args, field, py(v))
        return v
    return pack


def _composite_packer(view, off, name, t, kname):
    size = T.type_size(t)
    end = off + size
    dt = t._sk_scalar.np_dtype
    shape = tuple(t._sk_shape)

    def pack(v, device="cpu"):
        if type(v) is t:  # the common case: bytes straight into the args (no ctypes call)
            view[off:end] = v._v.tobytes()
            return v
        data = np.asarray(v, dtype=dt)
        if data.shape != shape:
            if data.size != int(np.prod(shape)):
                raise TypeError(f"{kname}(): argument '{name}' expects {T.type_name(t)}, got {type(v).__name__} "
                                f"with {data.size} component(s)")
        view[off:end] = data.tobytes()
        return v
    return pack


def _struct_packer(view, off, name, t, kname):
    end = off + ctypes.sizeof(t._sk_ctypes)
    prefix = name + "."

    def pack(v, device="cpu"):
        if type(v) is not t:
            raise TypeError(f"{kname}(): argument '{name}' expects struct {t.__name__}, got {type(v).__name__}")
        v._sk_pack(device, prefix)
        view[off:end] = v._view
        return v
    return pack


class Plan:
    """Everything a launch of one kernel needs, computed once per kernel and mode.

    The layout comes from the kernel's IR alone; the CPU library is loaded on the
    first CPU launch (``run`` starts as a loader that replaces itself), so a kernel
    that only ever runs on a GPU never invokes the C++ compiler.
    """

    def __init__(self, kernel):
        fir = kernel.build_ir()
        self.kernel = kernel
        self.fir = fir
        fields = [("launch", LaunchBounds)] + [(v.cname, T.ctypes_of(v.type)) for v in fir.params]
        self.Args = type(f"{fir.cname}_args", (ctypes.Structure,), {"_fields_": fields})
        self.args = self.Args()
        base = ctypes.addressof(self.args)
        self.base = base
        self.error = ErrorRecord()  # the CPU module's record once loaded; all zero until then
        self.jobs = ((None, 0), (None, 1))  # (Job, its address) per direction once loaded
        self.run = self._load_cpu
        self.cuda: dict = {}  # device -> simkit.core.cuda.launch.CudaKernel
        self.tid_dims = fir.tid_dims
        index = {v.cname: k for k, v in enumerate(fir.params)}
        self.writes = [(index[ir_cname(fir, name)], path) for name, path in sorted(fir.writes)]
        self.reads = [(index[ir_cname(fir, name)], path) for name, path in sorted(fir.reads)]
        self.extrema = [(index[ir_cname(fir, name)], path) for name, path in sorted(fir.extrema)]
        self.forwarded = [(index[ir_cname(fir, name)], path) for name, path in sorted(fir.forwarded)]
        self.nparams = len(fir.params)
        self.bounds: dict = {}
        self.packers = []
        self.view = memoryview(self.args).cast("B")
        self.fast_arrays = []  # (index, start, end, dtype, ndim) of array parameters
        self.others = []       # (index, packer) of every other parameter
        kname = kernel.name
        has_struct = False
        for v, pname in zip(fir.params, kernel.arg_names):
            t = v.type
            off = getattr(self.Args, v.cname).offset
            kind = t._sk_kind
            if kind == "array":
                self.packers.append(_array_packer(base, off, pname, t, kname))
                self.fast_arrays.append((len(self.packers) - 1, off, off + ctypes.sizeof(ArrayHeader), t.dtype, t.ndim))
            elif kind == "scalar":
                self.packers.append(_scalar_packer(self.args, v.cname, pname, t, kname))
            elif kind == "struct":
                has_struct = True
                self.packers.append(_struct_packer(self.view, off, pname, t, kname))
            else:
                self.packers.append(_composite_packer(self.view, off, pname, t, kname))
        self.others = [(k, p) for k, p in enumerate(self.packers) if k not in {a[0] for a in self.fast_arrays}]
        if not self.fast_arrays and not has_struct:
            self.pack = self._pack_on_default_device
        self.i64 = self.view.cast("q")  # the packed args as int64 words (the struct is 8-byte aligned)
        self.extents = self._extent_checks()
        # The same checks for the CPU runtime, which makes them before a launch (sk_launch), as
        # (dim word, shape word) pairs: a CPU launch pays no Python for them.
        pairs = [w for k, words in self.extents for at in words for w in (k, at)]
        self.extent_pairs = (ctypes.c_int64 * max(1, len(pairs)))(*pairs)
        # How the runtime names the kernel if it crashes the process (every job points at it).
        self.crash_label = f"kernel '{kernel.name}' ({self.fir.file})".encode(errors="replace")

    def _extent_checks(self) -> tuple:
        """``(dim word, shape words)`` per thread-index component, where the shape words are those
        of the array axes every thread indexes by that component (ir.FunctionIR.tid_indexed);
        words of :attr:`i64`, so a launch compares packed ints. :attr:`extent_labels` names them."""
        params = dict(zip(self.kernel.arg_names, self.fir.params))
        shape_at = ArrayHeader.shape.offset
        groups: dict = {}
        self.extent_labels = {}
        for (name, path, axis, k), line in sorted(self.fir.tid_indexed.items(), key=lambda e: e[1]):
            v = params[name]
            t, off = v.type, getattr(self.Args, v.cname).offset
            for f in path:
                off += getattr(t._sk_ctypes, f).offset
                t = t._sk_fields[f]
            base = (off + shape_at) // 8
            groups.setdefault(k, []).append(base + axis)
            self.extent_labels.setdefault(base + axis, (".".join((name, *path)), axis, k, line, base, t.ndim))
        return tuple((k, tuple(words)) for k, words in sorted(groups.items()))

    def check_extents(self, dim) -> None:
        """Raise ValueError if the launch just packed (``set_bounds(dim)``) runs more threads than an
        array axis indexed by the thread index holds (the GPU and capture paths; sk_launch checks
        natively)."""
        i64 = self.i64
        if not i64[5]:
            return  # no thread runs
        for k, words in self.extents:
            n = i64[k]
            for at in words:
                if i64[at] < n:
                    self._extent_error(dim, self.extent_labels[at])

    def _load_cpu(self, which: int) -> None:
        """First CPU launch: compile or load the module, then run ``which`` (0 forward, 1 adjoint)."""
        self.ensure_cpu()
        self.run(self.jobs[which][1])

    def ensure_cpu(self) -> None:
        """Load the kernel's CPU library and prebuild its two jobs (once)."""
        if self.jobs[0][0] is not None:
            return
        lib, _fir, _path = self.kernel.loaded()
        self.forward = ctypes.cast(getattr(lib, f"{self.fir.cname}_cpu_forward"), ctypes.c_void_p).value
        self.backward = ctypes.cast(getattr(lib, f"{self.fir.cname}_cpu_backward"), ctypes.c_void_p).value
        get_error = lib.sk_get_error
        get_error.restype = ctypes.POINTER(ErrorRecord)
        self.error = get_error().contents
        entries = []
        for adjoint, (which, fn) in enumerate((("forward", self.forward), ("backward", self.backward))):
            scatters = ctypes.c_int.in_dll(lib, f"{self.fir.cname}_cpu_{which}_scatters").value
            private = descriptors(self.fir, self.Args, bool(adjoint))
            entries.append((fn, grain_of(self.fir, bool(adjoint)), SCATTER_MIN_THREADS if scatters and private is None
                            else 2, private))
        # per direction: (entry point, grain, min_threads, PrivateTarget array or None)
        self.cpu_entries = tuple(entries)
        jobs = (self.cpu_job(False), self.cpu_job(True))
        self.jobs = tuple((job, ctypes.c_void_p(ctypes.addressof(job))) for job in jobs)
        runtime = compiler.runtime()
        runtime.sk_catch_interrupts()  # again per kernel: the program may have set its own handler since
        self.run = runtime.sk_launch

    def tangent_job(self, constant_fields: bool = False):
        """The CPU launch of the kernel's tangent entries (compiled on first use, see
        Kernel.tangent_loaded), as ``(Job, its address)``. It adds into the tangent buffers
        where the forward adds into the arrays, so it splits as the forward does: with private
        copies of both where core/private.py allows (run inline or with atomics, a cloth's
        scatter launches made the tangent pass twice the forward's time on two threads), else
        with atomics. ``constant_fields``: the entry for launches whose struct arguments' arrays
        carry no tangent (codegen_tangent), None where the kernel has none."""
        attr, which = ("_tangent_c", "tangent_c") if constant_fields else ("_tangent", "tangent")
        job = getattr(self, attr, None)
        if job is None:
            lib, _fir, _path = self.kernel.tangent_loaded()
            try:
                fn = ctypes.cast(getattr(lib, f"{self.fir.cname}_cpu_{which}"), ctypes.c_void_p).value
            except AttributeError:
                if not constant_fields:
                    raise
                self._tangent_c = job = False
                return None
            get_error = lib.sk_get_error
            get_error.restype = ctypes.POINTER(ErrorRecord)
            self.tangent_error = get_error().contents
            scatters = ctypes.c_int.in_dll(lib, f"{self.fir.cname}_cpu_{which}_scatters").value
            if not hasattr(self, "_tangent_private"):  # both tangent jobs point into it
                self._tangent_private = descriptors(self.fir, self.Args, False, tangent=True)
            private = self._tangent_private
            job = Job(fn, self.base, ctypes.sizeof(self.Args), grain_of(self.fir, True),
                      SCATTER_MIN_THREADS if scatters and private is None else 2,
                      ctypes.addressof(private) if private is not None and len(private) else None,
                      -1 if private is None else len(private), ctypes.addressof(self.tangent_error),
                      ctypes.addressof(self.extent_pairs), len(self.extent_pairs) // 2 if self.extents else 0,
                      self.crash_label)
            job = (job, ctypes.c_void_p(ctypes.addressof(job)))
            setattr(self, attr, job)
        return job or None

    def array_slots(self) -> list:
        """``(parameter index, field path, int64 word of the grad pointer)`` of every array among
        the parameters, struct fields at any depth included: where a tangent launch puts the
        tangent buffers (simkit.autograd.forward) after packing the arguments as usual."""
        slots = getattr(self, "_array_slots", None)
        if slots is None:
            slots = []
            grad_at = ArrayHeader.grad.offset

            def visit(k, path, t, off):
                if t._sk_kind == "array":
                    slots.append((k, path, (off + grad_at) // 8))
                elif t._sk_kind == "struct":
                    for name, ft in t._sk_fields.items():
                        visit(k, path + (name,), ft, off + getattr(t._sk_ctypes, name).offset)
            for k, v in enumerate(self.fir.params):
                visit(k, (), v.type, getattr(self.Args, v.cname).offset)
            self._array_slots = slots
        return slots

    def check_tangent_error(self) -> None:
        """Raise what the tangent module's error record says (as :meth:`check_error` does)."""
        self.error, saved = self.tangent_error, self.error
        try:
            self.check_error()
        finally:
            self.error = saved

    def cpu_job(self, adjoint: bool, args: int | None = None) -> Job:
        """The runtime's description of a launch of one direction over the args struct at
        ``args`` (this plan's own by default): its grain and how its grid may split."""
        fn, grain, min_threads, private = self.cpu_entries[adjoint]
        return Job(fn, self.base if args is None else args, ctypes.sizeof(self.Args), grain, min_threads,
                   ctypes.addressof(private) if private is not None and len(private) else None,
                   -1 if private is None else len(private), ctypes.addressof(self.error),
                   ctypes.addressof(self.extent_pairs), len(self.extent_pairs) // 2 if self.extents else 0,
                   self.crash_label)

    def pack(self, values):
        """Write every argument into the args struct for a CPU launch; sk arrays of the right type
        take the fast path. An argument on a GPU raises DeviceMismatch."""
        view, packers = self.view, self.packers
        for k, start, end, dtype, ndim in self.fast_arrays:
            v = values[k]
            if type(v) is Array and v.dtype is dtype and v.ndim == ndim and v.device == "cpu":
                view[start:end] = v._hdr_view
            else:
                packers[k](v)
        for k, pack in self.others:
            pack(values[k])

    def _pack_on_default_device(self, values):
        """``pack`` of a kernel without arrays: it runs on the default device."""
        if D.state.default != "cpu":
            raise DeviceMismatch(D.state.default, None)
        self.pack_on(values, "cpu")

    def pack_on(self, values, device: str) -> None:
        """Write every argument for a launch on ``device``; an array elsewhere is a ValueError naming it."""
        view, packers = self.view, self.packers
        try:
            for k, start, end, dtype, ndim in self.fast_arrays:
                v = values[k]
                if type(v) is Array and v.dtype is dtype and v.ndim == ndim and v.device == device:
                    view[start:end] = v._hdr_view
                else:
                    packers[k](v, device)
            for k, pack in self.others:
                pack(values[k], device)
        except DeviceMismatch as e:
            raise ValueError(f"{self.kernel.name}(): argument '{e.where}' is on {e.device}, but the launch runs on "
                             f"{device}; move it with .to('{device}') or launch on its device") from None

    def set_bounds(self, dim) -> int:
        """Write the bounds of a launch over ``dim`` (checked, see launch_dim.py); return its thread count."""
        # Only ints and tuples of ints are cached: 3.0 and (3.0, 2) equal 3 and (3, 2), and must reach
        # launch_shape's TypeError. On a hit, dim's entries equal ints, so sum() is safe and cheap.
        t = type(dim)
        if t is not int and t is not tuple and isinstance(dim, np.integer):
            dim, t = int(dim), int  # a numpy int shares the int's cached bounds
        b = self.bounds.get(dim) if t is int or t is tuple else None
        if b is not None and t is tuple and type(sum(dim)) is not int:
            b = None
        if b is None:
            exact = t is int or (t is tuple and all(type(s) is int for s in dim))
            shape = launch_shape(self.kernel.name, dim, self.tid_dims)
            if self.tid_dims and len(shape) != self.tid_dims:
                raise ValueError(f"{self.kernel.name}(): the kernel unpacks sk.tid() into {self.tid_dims} index(es), "
                                 f"but was launched with a {len(shape)}-d dim {dim!r}")
            b = LaunchBounds()
            for k, s in enumerate(shape):
                b.shape[k] = int(s)
            b.ndim = len(shape)
            b.size = math.prod(shape)
            b = (bytes(b), b.size)
            if exact:
                self.bounds[dim] = b
        self.view[:_BOUNDS_SIZE] = b[0]
        return b[1]

    def _extent_error(self, dim, label) -> None:
        name, axis, k, line, base, ndim = label
        shape = tuple(self.i64[base:base + ndim])
        which = "sk.tid()" if self.tid_dims == 1 else f"component {k} of sk.tid()"
        where = "it" if ndim == 1 else f"its axis {axis}"
        raise ValueError(f"{self.kernel.name}(): launched with dim={dim!r}, but argument '{name}' has shape {shape} "
                         f"and every thread indexes {where} by {which} ({self.fir.file}:{line}): thread indices "
                         f"{shape[axis]} to {self.i64[k] - 1} would access memory out of bounds. Launch over at "
                         f"most {shape[axis]} there, or guard the access (if i < n: ...)")

    def check_error(self):
        e = self.error
        if e.code == 0:
            return
        record = ErrorRecord.from_buffer_copy(e)
        ctypes.memset(ctypes.addressof(e), 0, ctypes.sizeof(e))
        if record.code == EXTENT_ERROR:  # sk_launch refused the grid: extent_pairs[2 * dim + 1] is short
            i64 = self.i64
            shape = tuple(i64[:i64[4] & 0xFFFFFFFF])
            self._extent_error(shape[0] if len(shape) == 1 else shape, self.extent_labels[self.extent_pairs[2 * record.dim + 1]])
        raise_kernel_error(self.kernel, self.fir, record, "cpu")


def ir_cname(fir, name: str) -> str:
    return next(v.cname for v in fir.params if v.name == name)


def resolve_arrays(values, slots) -> list:
    """The arrays at (parameter index, struct field path) slots of a launch's values, with their labels."""
    out = []
    for k, path in slots:
        v = values[k]
        for f in path:
            v = getattr(v, f, None)
        if type(v) is Array:
            out.append((k, path, v))
    return out


def refuse_forwarding_alias(plan: Plan, values) -> None:
    """A kernel that reads back an element it stored (store-to-load forwarding, access.py) takes
    the stored value; that is what memory holds only if no other array argument it writes is
    the same memory."""
    written = resolve_arrays(values, plan.writes)
    for k, path, a in resolve_arrays(values, plan.forwarded):
        for k2, path2, b in written:
            if (k2, path2) != (k, path) and a.ptr == b.ptr and a.device == b.device:
                names = plan.kernel.arg_names
                raise ValueError(f"{plan.kernel.name}(): '{'.'.join((names[k], *path))}' and "
                                 f"'{'.'.join((names[k2], *path2))}' are the same memory; this kernel reads back "
                                 f"elements of '{names[k]}' that it stored, so they must be distinct arrays")


def bump_versions(plan: Plan, values) -> None:
    """Count one more write on every array the kernel writes (overwrite detection)."""
    for k, path in plan.writes:
        v = values[k]
        for f in path:
            v = getattr(v, f)
        if type(v) is Array:
            v._version += 1


# Tapes, captures and forward-mode JVPs (simkit.autograd, simkit.core.capture) push themselves
# here; core never imports the layers above it. The innermost one sees each launch first, and
# the next one out only if it did not take the launch over: ``intercept`` returns True when it
# has (a capture, a JVP). A JVP sits outermost, so every Tape records a launch it runs.
hooks: list = []


def _intercepted(kernel, plan, dim, values, device, adjoint) -> bool:
    for h in reversed(hooks):
        if h.intercept(kernel, plan, dim, values, device, adjoint):
            return True
    return False


def plan_for(kernel) -> Plan:
    p = kernel._plan.get(config.mode)
    if p is None:
        p = kernel._plan[config.mode] = Plan(kernel)
    return p


def launch(kernel, dim: Any, inputs: Sequence = (), outputs: Sequence = (), device: str | None = None,
           adjoint: bool = False, adj_inputs: Sequence | None = None, adj_outputs: Sequence | None = None) -> None:
    """Run ``kernel`` over a grid of ``dim`` (an int or a tuple of up to 4 ints; a float is a
    TypeError, a negative size or one the runtime cannot index a ValueError).

    ``inputs`` then ``outputs`` give the kernel's parameters in order. numpy arrays,
    torch tensors and other CUDA-array-interface objects are wrapped zero-copy. The
    launch runs on ``device`` if given, else where its array arguments are (they must
    all be on one device). ``adjoint=True`` runs the generated adjoint, accumulating
    into the arrays' ``.grad`` buffers (the Tape does this for you). GPU launches are
    queued: ``sk.synchronize()`` or ``.numpy()`` waits for them. With ``adjoint=True``,
    ``adj_inputs`` and ``adj_outputs`` (lists parallel to ``inputs`` and ``outputs``)
    give the adjoint buffers of the array arguments instead of their ``.grad``: the
    adjoint reads the output seeds from them and accumulates the input gradients into
    them (None, as in Warp: that array's own ``.grad``, which a float array must then have;
    non-array entries are ignored). As on the tape, the seed of an output the kernel
    stores (``y[i] = ...``) is consumed: left zero. A ``dim`` larger than an
    array axis that every thread indexes by its ``sk.tid()`` raises ValueError before
    anything runs; on the CPU, Ctrl-C stops a launch and raises KeyboardInterrupt.

    Example::

        sk.launch(saxpy, len(x), inputs=[x, y, 2.0])
    """
    try:
        plan = kernel._plan.get(config.mode)
    except AttributeError:
        raise TypeError(f"sk.launch expects an @sk.kernel, got {type(kernel).__name__}") from None
    values = inputs + outputs if type(inputs) is type(outputs) else [*inputs, *outputs]
    if adj_inputs is not None or adj_outputs is not None:
        values = with_adjoints(kernel, values, inputs, outputs, adj_inputs, adj_outputs, adjoint)
    if plan is None:
        if kernel.generic:  # the overload for these arguments' types
            kernel = kernel.instance_for(values)
        plan = kernel._plan.get(config.mode) or plan_for(kernel)
    if adjoint and not kernel.enable_backward:
        raise RuntimeError(f"kernel '{kernel.name}' was declared with enable_backward=False: it has no adjoint")
    if len(values) != plan.nparams:
        raise TypeError(f"{kernel.name}() takes {plan.nparams} argument(s) ({', '.join(kernel.arg_names)}), "
                        f"got {len(values)}")
    if plan.forwarded and not adjoint:
        refuse_forwarding_alias(plan, values)
    if hooks:
        plan.set_bounds(dim)  # a bad dim raises before a tape or capture records the launch
        if _intercepted(kernel, plan, dim, values, device, adjoint):
            return
    if device is not None and device != "cpu":
        return launch_on(plan, dim, values, device, adjoint)
    try:
        plan.pack(values)
    except DeviceMismatch as e:
        if device is None:
            return launch_on(plan, dim, values, e.device, adjoint)
        return launch_on(plan, dim, values, "cpu", adjoint)  # explains the mismatch
    n = plan.set_bounds(dim)
    if n:
        plan.run(plan.jobs[adjoint][1])
        if plan.error.code:
            plan.check_error()
    if not adjoint:
        for k, path in plan.writes:
            v = values[k]
            for f in path:
                v = getattr(v, f)
            if type(v) is Array:
                v._version += 1


def launch_device(plan: Plan, values, device: str | None) -> str:
    """The device a launch runs on (``device``, its arrays' or the default), validated; the args
    are packed for the CPU when that is the answer."""
    if device is not None:
        return D.require(device, "device")
    try:
        plan.pack(values)
    except DeviceMismatch as e:
        return D.require(e.device, "device")
    return "cpu"


def launch_on(plan: Plan, dim: Any, values, device: str, adjoint: bool) -> None:
    """The general launch: any device, arguments checked against it (the path off the CPU fast path)."""
    dev = D.require(device, "device")
    if dev == "cpu":
        plan.pack_on(values, "cpu")
        n = plan.set_bounds(dim)
        if n:
            plan.run(plan.jobs[adjoint][1])
            if plan.error.code:
                plan.check_error()
    else:
        _cuda_launch()(plan, dim, values, dev, adjoint)
    if not adjoint:
        bump_versions(plan, values)


def _cuda_launch():
    """``simkit.core.cuda.launch.launch``, imported on the first GPU launch (CPU-only use never does)."""
    global _cuda_launch_fn
    if _cuda_launch_fn is None:
        from .cuda import launch as cuda_launch

        _cuda_launch_fn = cuda_launch.launch
    return _cuda_launch_fn


_cuda_launch_fn = None
