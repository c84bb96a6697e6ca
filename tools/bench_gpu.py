"""The capture and GPU sections of tools/bench.py.

``capture``  CPU: ``sk.replay`` of a graph of 100 captured launches of an empty
             kernel (dim=1), per launch, next to ``sk.launch`` of the same kernel.
``gpu``      with a CUDA GPU only (one line saying why otherwise): saxpy over 10M
             float32 in GB/s against the GPU's measured device-to-device copy
             bandwidth; launch overhead of an empty kernel with and without graph
             capture; a 100-launch rollout of a 100k-element chain, forward (on a tape)
             and backward; and, when warp-lang imports and sees the GPU, the same in
             warp and the ratios.

Every GPU timing ends with ``sk.synchronize()`` (``wp.synchronize_device`` for warp),
so it is the time the GPU work took, not the time to queue it.

Registered by bench.py through :func:`add_sections`, so this file holds no driver.
"""

import numpy as np

import simkit as sk

from bench_kernels import chain_link, empty1, saxpy

GRAPH_LAUNCHES = 100
REPLAY_US_TARGET = 1.0          # issue 9: a replayed launch costs at most ~1 us on the CPU
SAXPY_N = 10_000_000
COPY_BYTES = 2 * 4 * SAXPY_N    # read + write of 40 MB
SAXPY_BYTES = 12 * SAXPY_N
SAXPY_VS_COPY = 0.85
CHAIN_N, CHAIN_LEN = 100_000, 100


def _launcher(device, n_launches):
    a = sk.zeros(1, device=device)
    sk.launch(empty1, 1, inputs=[a])
    launch = sk.launch

    def direct(n):
        for _ in range(n):
            for _ in range(n_launches):
                launch(empty1, 1, inputs=[a])
        sk.synchronize()

    with sk.capture() as graph:
        for _ in range(n_launches):
            sk.launch(empty1, 1, inputs=[a])
    replay = sk.replay

    def replayed(n):
        for _ in range(n):
            replay(graph)
        sk.synchronize()
    return direct, replayed


def _chain(device):
    x0 = np.random.default_rng(3).uniform(-1, 1, CHAIN_N).astype(np.float32)
    bufs = [sk.array(x0, device=device, requires_grad=True)] + [sk.zeros(CHAIN_N, device=device)
                                                                 for _ in range(CHAIN_LEN)]
    seed = np.ones(CHAIN_N, np.float32)
    state = {}

    def forward(n):
        for _ in range(n):
            tape = sk.Tape()
            with tape:
                for k in range(CHAIN_LEN):
                    sk.launch(chain_link, CHAIN_N, inputs=[bufs[k]], outputs=[bufs[k + 1]])
            state["tape"] = tape
        sk.synchronize()

    def backward(n):
        for _ in range(n):
            state["tape"].zero()
            state["tape"].backward(grads={bufs[-1]: seed})
        sk.synchronize()

    forward(1)
    backward(1)
    xs, want = x0.astype(np.float64), np.ones(CHAIN_N)
    for _ in range(CHAIN_LEN):  # the chain rule in numpy
        want *= 0.9 * np.cos(xs) + 0.1
        xs = np.sin(xs) * 0.9 + 0.1 * xs
    err = float(np.max(np.abs(bufs[0].grad.numpy() - want)))
    if not err < 1e-3:
        raise RuntimeError(f"the GPU chain gradient is wrong (max error {err:.3g})")
    return forward, backward


def _warp(quiet):
    """Warp's versions of the GPU workloads, or a string saying why there are none."""
    try:
        with quiet():
            import warp as wp
            wp.config.quiet = True
            wp.init()
        if not wp.is_cuda_available():
            return "warp sees no CUDA device"
    except Exception as e:  # noqa: BLE001 - any failure means "no warp here"
        return f"import warp failed: {type(e).__name__}: {e}"
    dev = "cuda:0"
    farr = wp.array(dtype=float)

    @wp.kernel
    def wp_empty(a: farr):
        i = wp.tid()  # noqa: F841 - an empty kernel body

    @wp.kernel
    def wp_link(x: farr, y: farr):
        i = wp.tid()
        y[i] = wp.sin(x[i]) * 0.9 + 0.1 * x[i]

    a = wp.zeros(1, dtype=float, device=dev)
    x0 = np.random.default_rng(3).uniform(-1, 1, CHAIN_N).astype(np.float32)
    bufs = [wp.array(x0, dtype=float, device=dev, requires_grad=True)]
    bufs += [wp.zeros(CHAIN_N, dtype=float, device=dev, requires_grad=True) for _ in range(CHAIN_LEN)]
    seed = wp.array(np.ones(CHAIN_N, np.float32), dtype=float, device=dev)
    state = {}

    def launches(n):
        for _ in range(n):
            for _ in range(GRAPH_LAUNCHES):
                wp.launch(wp_empty, dim=1, inputs=[a], device=dev)
        wp.synchronize_device(dev)

    def forward(n):
        for _ in range(n):
            tape = wp.Tape()
            with tape:
                for k in range(CHAIN_LEN):
                    wp.launch(wp_link, dim=CHAIN_N, inputs=[bufs[k]], outputs=[bufs[k + 1]], device=dev)
            state["tape"] = tape
        wp.synchronize_device(dev)

    def backward(n):
        for _ in range(n):
            state["tape"].zero()
            state["tape"].backward(grads={bufs[-1]: seed})
        wp.synchronize_device(dev)

    with quiet():
        launches(1)
        forward(1)
        backward(1)
    return {"launches": launches, "forward": forward, "backward": backward, "version": wp.config.version}


def add_sections(section, Result, Row, fmt, interleaved, ratio_row, quiet) -> None:
    """Register the ``capture`` and ``gpu`` sections with bench.py's registry."""

    @section("capture", "(f) sk.capture / sk.replay on the CPU: 100 captured launches of an empty kernel")
    def bench_capture(ctx) -> Result:
        res = Result()
        direct, replayed = _launcher("cpu", GRAPH_LAUNCHES)
        st = interleaved({"launch": direct, "replay": replayed}, rounds=ctx.reps(31, 5), ops=ctx.reps(50, 10))
        us_l = st["launch"].median / GRAPH_LAUNCHES * 1e6
        us_r = st["replay"].median / GRAPH_LAUNCHES * 1e6
        res.rows.append(Row("sk.launch, empty kernel [us/launch]", f"{fmt(us_l)} us"))
        met = us_r <= REPLAY_US_TARGET
        res.rows.append(Row("sk.replay, per captured launch [us]", f"{fmt(us_r)} us", f"{fmt(us_l)} us (sk.launch)",
                            f"{us_l / us_r:.0f}x", f"<= {REPLAY_US_TARGET} us", met))
        res.spread.append(("sk.launch x100", st["launch"], 1e6, "us"))
        res.spread.append(("sk.replay of 100 launches", st["replay"], 1e6, "us"))
        res.notes.append("capture: one replay runs the 100 recorded launches in one native call; the per-launch "
                         "figure includes the replay's fixed cost spread over the 100.")
        return res

    @section("gpu", "(g) CUDA GPU: saxpy vs copy bandwidth, launch overhead, 100-launch chain (vs warp)")
    def bench_gpu(ctx) -> Result:
        res = Result()
        if not sk.is_cuda_available():
            from simkit.core.cuda import driver

            res.skipped = f"no CUDA GPU on this machine ({driver.unavailable_reason()})"
            return res
        dev = "cuda:0"
        rng = np.random.default_rng(0)
        x = sk.array(rng.random(SAXPY_N, dtype=np.float32), device=dev)
        y = sk.array(rng.random(SAXPY_N, dtype=np.float32), device=dev)
        before = y.numpy()[:1000]
        sk.launch(saxpy, SAXPY_N, inputs=[x, y, 0.5])
        np.testing.assert_allclose(y.numpy()[:1000], 0.5 * x.numpy()[:1000] + before, rtol=1e-6)
        src, dst = sk.zeros(SAXPY_N, device=dev), sk.zeros(SAXPY_N, device=dev)

        def saxpy_launches(n):
            for _ in range(n):
                sk.launch(saxpy, SAXPY_N, inputs=[x, y, 0.5])
            sk.synchronize()

        def copy(n):
            for _ in range(n):
                dst.assign(src)
            sk.synchronize()

        st = interleaved({"saxpy": saxpy_launches, "copy": copy}, rounds=ctx.reps(21, 3), ops=ctx.reps(20, 3), warmup=2)
        bw_sk = SAXPY_BYTES / st["saxpy"].median / 1e9
        bw_copy = COPY_BYTES / st["copy"].median / 1e9
        res.rows.append(ratio_row("saxpy bandwidth vs device-to-device copy [GB/s]", bw_sk, bw_copy, "GB/s",
                                  bw_sk / bw_copy, ">=", SAXPY_VS_COPY, "cuMemcpyDtoD 40MB"))

        direct, replayed = _launcher(dev, GRAPH_LAUNCHES)
        wf = _warp(quiet)
        contenders = {"launch": direct, "replay": replayed}
        if not isinstance(wf, str):
            contenders["warp"] = wf["launches"]
        st = interleaved(contenders, rounds=ctx.reps(21, 3), ops=ctx.reps(20, 3))
        us = {k: v.median / GRAPH_LAUNCHES * 1e6 for k, v in st.items()}
        res.rows.append(Row("sk.launch on the GPU, empty kernel [us/launch]", f"{fmt(us['launch'])} us",
                            f"{fmt(us['warp'])} us (warp)" if "warp" in us else "-",
                            f"{us['launch'] / us['warp']:.2f}x" if "warp" in us else "-"))
        res.rows.append(Row("sk.replay of a CUDA graph [us/launch]", f"{fmt(us['replay'])} us",
                            f"{fmt(us['launch'])} us (sk.launch)", f"{us['launch'] / us['replay']:.1f}x"))

        forward, backward = _chain(dev)
        fw = {"sk_fwd": forward, "sk_bwd": backward}
        if not isinstance(wf, str):
            fw.update({"wp_fwd": wf["forward"], "wp_bwd": wf["backward"]})
        times = {}
        for phase in ("fwd", "bwd"):
            times.update(interleaved({k: v for k, v in fw.items() if k.endswith(phase)}, rounds=ctx.reps(9, 2)))
        for phase, label in (("fwd", "forward (on a tape)"), ("bwd", "backward")):
            t = times[f"sk_{phase}"].median * 1e3
            if f"wp_{phase}" in times:
                w = times[f"wp_{phase}"].median * 1e3
                res.rows.append(ratio_row(f"100-launch chain, 100k elements, {label} [ms]", t, w, "ms", w / t, ">=",
                                          None, "warp"))
            else:
                res.rows.append(Row(f"100-launch chain, 100k elements, {label} [ms]", f"{fmt(t)} ms"))
        res.notes.append("gpu: every timing ends with a synchronize; warp ratios are warp_time / simkit_time "
                         "(higher is better), launch ratios simkit_us / other_us.")
        if isinstance(wf, str):
            res.notes.append(f"gpu: warp comparison skipped: {wf}")
        else:
            res.notes.append(f"gpu: warp {wf['version']} on the same GPU.")
        return res
