"""Which adjoints of a function can be nonzero, so the reverse sweep (codegen) leaves out
the statements that would only move zeros.

A value that feeds nothing but a comparison (a contact test), an index or a discarded
result never receives an adjoint; without this pass its statement's adjoint still ran in
every thread, adding zeros into the gradients of what it read. The pass is structural
(flow-insensitive): a variable is live when any statement could give it a nonzero adjoint.
"""

from __future__ import annotations

from . import ir


def seeds_adjoints(s: ir.Op) -> bool:
    """Whether the adjoint of ``s`` may make its arguments' adjoints nonzero even when its
    outputs' adjoints are zero: it has no float output (a store, an atomic add: their adjoint
    reads the gradient from memory), or it reads memory in its reverse other than by
    accumulating its output's adjoint there (an atomic whose old value is used, a call of a
    function that takes arrays). Loads (their adjoint only adds ``adj_out`` into the
    gradient) and pure arithmetic do not."""
    if not any(ir.differentiable(o.type) for o in s.outs):
        return True
    if "*g" in s.adj or "take_grad" in s.adj:
        return True
    return (any(isinstance(a, ir.Var) and ir.holds_arrays(a.type) for a in s.args)
            and not s.adj.startswith("sk::accum_grad"))


def live_adjoints(f: ir.FunctionIR) -> set:
    """ids of the variables whose adjoint can be nonzero: the function's returns, the
    arguments of every op that seeds adjoints (seeds_adjoints), and, until nothing
    changes, the arguments of every op with such a variable among its outputs. The
    reverse sweep skips an op none of whose outputs is live (and that seeds nothing)."""
    live = {v.id for v in f.returns}
    ops, carried = [], []

    def visit(block):
        for s in block.stmts:
            if isinstance(s, ir.Op) and s.adj is not None:
                ops.append(s)
            elif isinstance(s, ir.If):
                visit(s.then)
                visit(s.orelse)
            elif isinstance(s, ir.Loop):
                carried.extend(s.carried)
                visit(s.body)
                if s.cond_block:
                    visit(s.cond_block)
    visit(f.body)
    args = [(s, [a.id for a in s.args if isinstance(a, ir.Var)]) for s in ops]
    for s, ids in args:
        if seeds_adjoints(s):
            live.update(ids)
    grew = True
    while grew:
        before = len(live)
        for s, ids in args:
            if any(o.id in live for o in s.outs):
                live.update(ids)
        for c, final in carried:  # the adjoint passes between iterations both ways round
            if c.id in live or final.id in live:
                live.update((c.id, final.id))
        grew = len(live) != before
    return live
