"""Frontend, element access: array loads/stores/atomics and vector, matrix and struct components.

Mixed into :class:`frontend.Builder`. Array reads accumulate their adjoint into the
array's grad; a store takes it back (and resets it: the overwritten value influences
nothing after the store); component and field assignment build a new value (functional
update), so their gradients flow like any other op.

Store-to-load forwarding: a thread that reads its own element (indexed by its whole
thread index) after storing it there on every path reads the stored value, not memory.
That read is then no read of the array's earlier contents, so the tape accepts the kernel
(``y[i] = x[i]; z[i] = y[i]``), and the adjoint's replay sees what the forward saw.
"""

from __future__ import annotations

import ast

from . import ir, slices
from . import types as T
from .array import ArrayType
from .config import config
from .exprs import _COMPONENTS, type_str


class AccessMixin:
    def bounds_check(self, n_idx: int) -> str:
        if config.mode != "debug":
            return ""
        idx = ", ".join(f"$a{k + 1}" for k in range(n_idx))
        return f"if (!sk::check_bounds(&sk_error, {self.line}, $a0, {idx})) $RETURN; "

    def check_index_count(self, arr, idx, node):
        if len(idx) != arr.type.ndim:
            self.error(f"{arr.type.ndim}-d array indexed with {len(idx)} index(es); give exactly {arr.type.ndim} "
                       "(reading with fewer gives a sub-array, which is not assignable as a whole)", node)

    def view(self, arr, idx, node):
        """``a[i]`` of a 2-D array: the 1-D row, sharing memory and gradient with ``a`` (reads,
        writes and atomics through it are those of ``a``; it carries no adjoint of its own)."""
        if len(idx) >= arr.type.ndim:
            self.error(f"{arr.type.ndim}-d array indexed with {len(idx)} indices", node)
        out = self.new_var(ArrayType(arr.type.dtype, arr.type.ndim - len(idx)))
        self.inherit_origin(out, arr)
        self.view_ids.add(out.id)
        text = "$a0"
        for k in range(len(idx)):
            text = f"sk::view<Dense>({text}, $a{k + 1})"
        check = ""
        if config.mode == "debug":
            ix = ", ".join(f"$a{k + 1}" for k in range(len(idx)))
            check = f"if (!sk::check_bounds<{len(idx)}>(&sk_error, {self.line}, $a0, {ix})) $RETURN; "
        self.emit([out], [arr, *idx], f"{check}$o0 = {text};")
        return out

    def owned(self, arr, idx) -> bool:
        """:meth:`owned_index` for an access of ``arr``; never for a sub-array view, whose
        element index says nothing of which element of the parameter array it is."""
        return arr.id not in self.view_ids and self.owned_index(idx)

    # -- which parameter arrays a kernel touches, and how ----------------------------
    def note_access(self, arr, write: bool, shared: set | None = None):
        """Record which parameter arrays ``arr`` may be; ``shared``: also into this of
        gathers/adds/stores (see ir.FunctionIR)."""
        origins = self.origins.get(arr.id, ())
        if not origins:
            self.untracked = True
        (self.writes if write else self.reads).update(origins)
        if shared is not None:
            shared.update(origins)

    def owned_index(self, idx) -> bool:
        """Indexed by the whole thread index: the element belongs to this thread alone."""
        return len(idx) == self.tid_dims and all(self.tid_component.get(getattr(v, "id", None)) == k
                                                 for k, v in enumerate(idx))

    def note_tid_index(self, arr, idx) -> None:
        """Record the axes of a parameter array that every thread indexes by its own thread
        index (``i = sk.tid(); a[i]`` outside any branch or loop): a launch over more
        threads than such an axis holds is out of bounds for certain (launch.py refuses it)."""
        if not self.is_kernel or self.block is not self.top_block or arr.id in self.view_ids:
            return
        origins = self.origins.get(arr.id, ())
        if len(origins) != 1:
            return
        (name, path), = origins
        for axis, v in enumerate(idx):
            k = self.tid_component.get(getattr(v, "id", None))
            if k is not None:
                self.tid_indexed.setdefault((name, path, axis, k), self.line)

    # -- store-to-load forwarding ----------------------------------------------------
    def single_origin(self, arr):
        origins = self.origins.get(arr.id, ())
        return next(iter(origins)) if len(origins) == 1 else None

    def note_store(self, arr, value=None):
        """``arr`` is written here; ``value``: a plain store at this thread's own element."""
        origins = self.origins.get(arr.id, ())
        self.store_log.extend(origins or ["*"])
        for o in origins:
            self.stored.pop(o, None)
        key = self.single_origin(arr)
        if value is not None and key is not None:
            self.stored[key] = value

    def forget_stores(self):
        """Something wrote arrays this frontend cannot name (a called function)."""
        self.store_log.append("*")
        self.stored.clear()

    def stores_surviving(self, saved: dict, logged: int) -> dict:
        """``saved`` less what was written since ``store_log`` had ``logged`` entries (a branch arm or
        loop body may or may not have run, so its stores forward nothing after it)."""
        since = self.store_log[logged:]
        if "*" in since:
            return {}
        return {k: v for k, v in saved.items() if k not in since}

    # -- an element, or one field of a struct element (a[i].x: no load of the whole struct) --
    # ``field``: None for the whole element, else the path of field names (``("inner", "a")`` for
    # ``a[i].inner.a``) of a field of a struct element; nested struct fields are reached in place.
    def element_type(self, arr, field, node):
        """The type of ``a[i]`` (``field`` None) or of ``a[i].f.g`` of an array of structs."""
        t = arr.type.dtype
        for name in field or ():
            if name not in t._sk_fields:
                self.error(f"struct {t.__name__} has no field '{name}' (fields: {', '.join(t._sk_fields)})", node)
            t = t._sk_fields[name]
        return t

    def element_refs(self, arr, n_idx, field):
        """C++ of the element (an lvalue) and of its gradient's address (null without a grad)."""
        ix = ", ".join(f"$a{k + 1}" for k in range(n_idx))
        elem, grad = f"sk::at<Dense>($a0, {ix})", f"sk::grad_ptr<Dense>($a0, {ix})"
        t = arr.type.dtype
        for name in field or ():
            elem, grad = f"{elem}.{name}", f"sk::field_ptr({grad}, &{t._sk_ctype}::{name})"
            t = t._sk_fields[name]
        return elem, grad

    def load(self, arr, idx, node, field=None):
        self.check_index_count(arr, idx, node)
        self.note_tid_index(arr, idx)
        t = self.element_type(arr, field, node)
        owned = self.owned(arr, idx)  # then its gradient needs no atomic
        key = self.single_origin(arr) if owned else None
        if key in self.stored:
            self.forwarded.add(key)
            if field is not None:
                out = self.stored[key]
                for name in field:
                    out = self.get_field(out, name, node)
                return out
            out = self.new_var(t)
            self.copy(out, self.stored[key])
            return out
        self.note_access(arr, write=False, shared=None if owned else self.gathers)
        out = self.new_var(t)
        elem, grad = self.element_refs(arr, len(idx), field)
        fwd = self.bounds_check(len(idx)) + f"$o0 = {elem};"
        accum = "accum_grad_owned" if owned else "accum_grad"
        # tangent: the array's tangent buffer travels as its grad (autograd.forward), null: zero
        self.emit([out], [arr, *idx], fwd, f"sk::{accum}({grad}, $adj_o0);" if ir.differentiable(t) else None,
                  tan=f"$tan_o0 = sk::tan_load({grad});")
        return out

    def store(self, arr, idx, value, node, field=None):
        self.check_index_count(arr, idx, node)
        self.note_tid_index(arr, idx)
        self.note_access(arr, write=True, shared=self.stores)
        t = self.element_type(arr, field, node)
        value = self.convert(value, t, node)
        elem, grad = self.element_refs(arr, len(idx), field)
        v = f"$a{len(idx) + 1}"
        fwd = self.bounds_check(len(idx)) + f"{elem} = {v};"
        owned = self.owned(arr, idx)
        take = "take_grad" if owned else "take_grad_shared"
        adj = f"sk::{take}({grad}, $adj_a{len(idx) + 1});" if ir.differentiable(t) else None
        self.emit([], [arr, *idx, value], fwd, adj, replay=False,
                  tan=f"sk::tan_store({grad}, $tan_a{len(idx) + 1});")
        # a field store changes the element a whole-element store left: nothing to forward then
        self.note_store(arr, value if owned and field is None and isinstance(value, ir.Var) else None)

    def atomic(self, name, arr, idx, value, node, want_result=True, field=None):
        if not (isinstance(arr, ir.Var) and getattr(arr.type, "_sk_kind", "") == "array"):
            self.error(f"{name} needs an array as its first argument", node)
        if field is None and getattr(arr.type.dtype, "_sk_kind", "") == "struct":
            self.error(f"{name} on an array of {arr.type.dtype.__name__} structs: atomics work on one field of an "
                       f"element (a[i].field += v), not on whole structs", node)
        self.check_index_count(arr, idx, node)
        self.note_tid_index(arr, idx)
        if name in ("atomic_min", "atomic_max") and T.holds_floats(self.element_type(arr, field, node)):
            # the adjoint compares against the value the launch left: the tape checks nothing changed it
            self.extrema.update(self.origins.get(arr.id, ()))
        self.note_store(arr)
        if name in ("atomic_min", "atomic_max") or want_result:
            self.shared_atomics = True  # every thread must see the others' updates
            self.note_access(arr, write=True, shared=self.stores)
        else:
            self.note_access(arr, write=True, shared=None if self.owned(arr, idx) else self.adds)
        dt = self.element_type(arr, field, node)
        if dt._sk_kind == "struct":
            self.error(f"{name} on the struct field '{'.'.join(field)}': atomics work on scalar, vector and "
                       "matrix fields", node)
        if name in ("atomic_min", "atomic_max") and dt._sk_kind not in ("scalar", "vec"):
            self.error(f"{name} works on scalar and vector arrays", node)
        if dt._sk_scalar.np_dtype.itemsize < 4 and dt._sk_scalar.is_int:
            self.error(f"{name} on an array of {T.type_name(dt)}: GPUs have no 8- or 16-bit atomics; "
                       f"use an array of int32 or uint32", node)
        value = self.convert(value, dt, node)
        elem, grad = self.element_refs(arr, len(idx), field)
        v = f"$a{len(idx) + 1}"
        adj_v = f"$adj_a{len(idx) + 1}"
        fn = {"atomic_add": "atomic_add_any", "atomic_sub": "atomic_add_any",
              "atomic_min": "atomic_min_any", "atomic_max": "atomic_max_any"}[name]
        operand = f"-{v}" if name == "atomic_sub" else v
        check = self.bounds_check(len(idx))
        out = self.new_var(dt) if want_result else None
        assign = "$o0 = " if out is not None else ""
        fwd = check + f"{assign}sk::{fn}(&{elem}, {operand});"
        if name == "atomic_add":
            adj = f"if (auto* g = {grad}) {adj_v} += *g;"
        elif name == "atomic_sub":
            adj = f"if (auto* g = {grad}) {adj_v} -= *g;"
        else:
            adj = f"sk::take_grad_if_won({grad}, {elem}, {v}, {adj_v});"
        replay_fwd = (check + f"$o0 = {elem};") if out is not None else None
        # tangent: an add's goes into the tangent buffer alike; a used old value or a min/max winner
        # would need the tangent updated atomically with the value: no rule (refused when used)
        tan = None
        if name in ("atomic_add", "atomic_sub") and out is None:
            tan = f"if (auto* g = {grad}) sk::{fn}(g, {'-' if name == 'atomic_sub' else ''}$tan_a{len(idx) + 1});"
        what = f"{name} on a float array" + (" whose result is used" if out is not None and name in ("atomic_add", "atomic_sub") else "")
        self.emit([out] if out is not None else [], [arr, *idx, value], fwd, adj, replay=False, replay_fwd=replay_fwd,
                  tan=tan, what=what)
        return out

    def extract(self, base, idx, node):
        t = base.type
        kind = getattr(t, "_sk_kind", "")
        if kind in ("vec", "quat"):
            if len(idx) != 1:
                self.error(f"{type_str(t)} takes one index", node)
            idx = [self.static_bounds(idx[0], t._sk_shape[0], node)]
            out = self.new_var(t._sk_scalar)
            if isinstance(idx[0], ir.Const):
                self.emit([out], [base, idx[0]], "$o0 = $a0[$a1];", "$adj_a0[$a1] += $adj_o0;", tan=ir.LINEAR)
            else:
                self.check_component(idx[0], t._sk_shape[0])
                self.emit([out], [base, idx[0]], "$o0 = sk::component($a0, $a1);",
                          "sk::add_component($adj_a0, $a1, $adj_o0);", tan=ir.LINEAR)
            return out
        if kind == "mat":
            r, c = t._sk_shape
            if len(idx) == 2:
                idx = [self.static_bounds(idx[0], r, node), self.static_bounds(idx[1], c, node)]
                out = self.new_var(t._sk_scalar)
                self.emit([out], [base, *idx], "$o0 = $a0[$a1][$a2];", "$adj_a0[$a1][$a2] += $adj_o0;", tan=ir.LINEAR)
                return out
            if len(idx) == 1:
                idx = [self.static_bounds(idx[0], r, node)]
                out = self.new_var(T.vector(c, t._sk_scalar))
                self.emit([out], [base, idx[0]], f"SK_UNROLL for (int k = 0; k < {c}; ++k) $o0[k] = $a0[$a1][k];",
                          f"SK_UNROLL for (int k = 0; k < {c}; ++k) $adj_a0[$a1][k] += $adj_o0[k];", tan=ir.LINEAR)
                return out
        self.error(f"{type_str(t)} cannot be indexed like this", node)

    def check_component(self, i, n: int):
        """Debug mode: a run-time component index outside [0, n) stops the thread and raises
        IndexError naming the line (release mode reads component 0 and writes nothing)."""
        if config.mode == "debug":
            self.emit([], [i], f"if ($a0 < 0 || $a0 >= {n}) {{ sk::report_error(&sk_error, 6, {self.line}); $RETURN; }}")

    def static_bounds(self, i, n, node):
        """Index ``i`` of a dimension of length ``n``, checked when constant; a negative constant
        counts from the end, as in Python and Warp (``v[-1]`` is the last component)."""
        if isinstance(i, ir.Const):
            if not -n <= int(i.value) < n:
                self.error(f"index {int(i.value)} out of range for length {n}", node)
            if int(i.value) < 0:
                return ir.Const(int(i.value) + n, i.type)
        return i

    def insert(self, base, idx, value, node):
        """A copy of composite ``base`` with component ``idx`` replaced (differentiable)."""
        t = base.type
        kind = getattr(t, "_sk_kind", "")
        out = self.new_var(t)
        if kind in ("vec", "quat") and len(idx) == 1:
            idx = [self.static_bounds(idx[0], t._sk_shape[0], node)]
            value = self.convert(value, t._sk_scalar, node)
            if isinstance(idx[0], ir.Const):
                self.emit([out], [base, idx[0], value], "$o0 = $a0; $o0[$a1] = $a2;",
                          "$adj_a2 += $adj_o0[$a1]; $adj_o0[$a1] = 0; $adj_a0 += $adj_o0; $adj_o0 = {};", tan=ir.LINEAR)
            else:
                self.check_component(idx[0], t._sk_shape[0])
                self.emit([out], [base, idx[0], value], "$o0 = $a0; sk::set_component($o0, $a1, $a2);",
                          "$adj_a2 += sk::component($adj_o0, $a1); sk::set_component($adj_o0, $a1, 0); "
                          "$adj_a0 += $adj_o0; $adj_o0 = {};", tan=ir.LINEAR)
            return out
        if kind == "mat" and len(idx) == 2:
            idx = [self.static_bounds(idx[0], t._sk_shape[0], node), self.static_bounds(idx[1], t._sk_shape[1], node)]
            value = self.convert(value, t._sk_scalar, node)
            self.emit([out], [base, *idx, value], "$o0 = $a0; $o0[$a1][$a2] = $a3;",
                      "$adj_a3 += $adj_o0[$a1][$a2]; $adj_o0[$a1][$a2] = 0; $adj_a0 += $adj_o0; $adj_o0 = {};", tan=ir.LINEAR)
            return out
        self.error(f"cannot assign to this component of {type_str(t)}", node)

    def setfield(self, base, name, value, node):
        t = base.type
        kind = getattr(t, "_sk_kind", "")
        out = self.new_var(t)
        if kind == "struct":
            self.inherit_origin(out, base)
            if name not in t._sk_fields:
                self.error(f"struct {t.__name__} has no field '{name}' (fields: {', '.join(t._sk_fields)})", node)
            ft = t._sk_fields[name]
            value = self.convert(value, ft, node)
            if ft._sk_kind == "array":
                self.emit([out], [base, value], f"$o0 = $a0; $o0.{name} = $a1;", "$adj_a0 += $adj_o0; $adj_o0 = {};", tan=ir.LINEAR)
            else:
                self.emit([out], [base, value], f"$o0 = $a0; $o0.{name} = $a1;",
                          f"$adj_a1 += $adj_o0.{name}; $adj_o0.{name} = {{}}; $adj_a0 += $adj_o0; $adj_o0 = {{}};", tan=ir.LINEAR)
            return out
        if kind in ("vec", "quat") and name in _COMPONENTS:
            return self.insert(base, [ir.Const(_COMPONENTS[name], T.int32)], value, node)
        if kind == "transform" and name in ("p", "q"):
            ft = T.vector(3, t._sk_scalar) if name == "p" else T.quat_of(t._sk_scalar)
            value = self.convert(value, ft, node)
            self.emit([out], [base, value], f"$o0 = $a0; $o0.{name} = $a1;",
                      f"$adj_a1 += $adj_o0.{name}; $adj_o0.{name} = {{}}; $adj_a0 += $adj_o0; $adj_o0 = {{}};", tan=ir.LINEAR)
            return out
        self.error(f"{type_str(t)} has no assignable attribute '{name}'", node)

    def assign_subscript(self, target, value, s):
        base = self.expr(target.value)
        if getattr(getattr(base, "obj", None), "_sk_adjoint", False) is True:  # sk.adjoint[x] = / += ...
            slot = self.adjoint_slot(target.slice, s)
            self.assign_name(slot, self.convert(value, self.vars[slot].type, s), s)
            return
        if slices.has_slice(target.slice):
            slices.write(self, target, value, s)
            return
        idx = self.indices(target.slice, s)
        if isinstance(base, ir.Var) and getattr(base.type, "_sk_kind", "") == "array":
            self.store(base, idx, value, s)
            return
        if not isinstance(base, ir.Var):
            self.error("only arrays and local vectors/matrices accept element assignment", s)
        self.assign_target(target.value, self.insert(base, idx, value, s), s)

    def struct_element(self, node):
        """``(array, indices, field path)`` when ``node`` is ``a[i].f`` or ``a[i].f.g`` (every index
        given, each field but the last a struct) of an array of structs, else None (then nothing
        is emitted)."""
        path = []
        while isinstance(node, ast.Attribute):
            path.insert(0, node.attr)
            node = node.value
        if not path or not isinstance(node, ast.Subscript):
            return None
        t = self.static_type_of(node.value)
        if getattr(t, "_sk_kind", None) != "array" or getattr(t.dtype, "_sk_kind", None) != "struct":
            return None
        n = len(node.slice.elts) if isinstance(node.slice, ast.Tuple) else 1
        if n != t.ndim:
            return None
        ft = t.dtype
        for name in path[:-1]:
            ft = ft._sk_fields.get(name)
            if getattr(ft, "_sk_kind", None) != "struct":
                return None  # a[i].v.x: the component of a field, taken from the loaded field
        return self.expr(node.value), self.indices(node.slice, node), tuple(path)

    def assign_attribute(self, target, value, s):
        element = self.struct_element(target)
        if element is not None:  # a[i].field = v: a store of that field alone
            arr, idx, path = element
            self.store(arr, idx, value, s, field=path)
            return
        base = self.expr(target.value)
        if not isinstance(base, ir.Var):
            self.error("attribute assignment needs a struct, vector, quaternion or transform value", s)
        self.assign_target(target.value, self.setfield(base, target.attr, value, s), s)
