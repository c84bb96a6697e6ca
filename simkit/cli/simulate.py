"""``simkit run`` and ``simkit optimize``."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from .common import (EXIT_INTERRUPTED, EXIT_OK, UsageError, check_plot_path, check_usd_path, in_window, progress,
                     resolve_scene, scene_inputs)


def cmd_run(args: argparse.Namespace) -> int:
    """``simkit run``: simulate a scene with a progress bar and write USD, or show it live."""
    from ..scene import load_scene, run_scene
    from ..scene.outputs import check_outputs

    if args.view and args.usd:
        raise UsageError("--view shows the run live in a window and writes no file; use either --view or --usd")
    check_usd_path(args.usd)
    scene = load_scene(resolve_scene(args.scene), device=args.device, frames=args.frames)
    st = scene.settings
    if args.view:
        stepper = scene.stepper()
        in_window("play_live", scene.model, stepper.reset, stepper.advance, fps=scene.output["fps"],
                   title=f"simkit: {scene.name}")
        return EXIT_OK
    usd = args.usd or scene.output["usd"]
    check_outputs(scene_inputs(scene), {"--usd" if args.usd else "output.usd": usd})
    with progress(st.steps, 0, "step", scene.name, args.quiet) as bar:
        result = run_scene(scene, usd_path=usd, on_frame=lambda frame, state: bar.update(st.substeps))
    if not args.quiet:
        rate = result.steps / result.seconds if result.seconds > 0 else float("inf")
        compiling = (f" (and {result.compile_seconds:.1f} s compiling kernels, first run only)"
                     if result.compile_seconds else "")
        print(f"{scene.name}: {result.frames} frames ({result.steps} steps of {st.dt:g} s) in {result.seconds:.2f} s, "
              f"{rate:.0f} steps/s{compiling}")
        print(f"  USD: {result.usd_path}")
    return EXIT_OK


def cmd_optimize(args: argparse.Namespace) -> int:
    """``simkit optimize``: run the scene's [optimize] table with resumable checkpoints."""
    from ..scene import Optimization, load_scene, matplotlib_missing
    from ..scene.outputs import check_outputs

    if args.plot:
        why = matplotlib_missing()
        if why is not None:
            raise UsageError(why)
        check_plot_path(args.plot)
    check_usd_path(args.usd)
    _check_multi_start_options(args)
    scene = load_scene(resolve_scene(args.scene), device=args.device, frames=args.frames)
    checkpoint = {"--checkpoint" if args.checkpoint else "optimize.checkpoint":
                  args.checkpoint or scene.optimize["checkpoint"]} if scene.optimize is not None else {}
    outputs = {"--usd" if args.usd else "output.usd": args.usd or scene.output["usd"], "--plot": args.plot}
    if not args.resume:
        outputs.update(checkpoint)
    check_outputs(scene_inputs(scene), outputs, reads_and_writes=checkpoint if args.resume else None)
    say = (lambda *a: None) if args.quiet else print
    if args.starts > 1:
        _multi_start(args, scene, say)
        opt = Optimization(scene, iterations=args.iterations, checkpoint=args.checkpoint, resume=True)
        return _finish_optimize(args, scene, opt, say)
    opt = Optimization(scene, iterations=args.iterations, checkpoint=args.checkpoint, resume=args.resume)
    s = opt.settings
    say(f"{scene.name}: optimizing {', '.join(s['parameters'])} with {s['optimizer']} (learning rate "
        f"{s['learning_rate']:g}) for {opt.iterations} iterations")
    say(f"  loss: {opt.loss.describe()}")
    if args.resume:
        say(f"  resuming from {opt.checkpoint_path} after iteration {opt.iteration}")

    bar = progress(opt.iterations, min(opt.iteration, opt.iterations), "it", scene.name, args.quiet)

    def on_iteration(iteration: int, loss: float) -> None:
        bar.set_postfix(loss=f"{loss:.4e}")
        bar.update()
        if not args.quiet:
            bar.write(f"iteration {iteration:4d}  loss {loss:.6e}", file=sys.stdout)

    try:
        opt.run(on_iteration)
    except KeyboardInterrupt:
        bar.close()
        again = shlex.join(["simkit", *[a for a in args.argv if a != "--resume"], "--resume"])
        print(f"simkit: interrupted; {opt.saved_iteration} completed iterations are saved in {opt.checkpoint_path} "
              f"(continue with: {again})", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        bar.close()
    return _finish_optimize(args, scene, opt, say)


def _multi_start(args: argparse.Namespace, scene: Any, say: Any) -> None:
    """``optimize --starts N``: every start a Ray task; the best's checkpoint is written."""
    from ..scene import SceneError, multi_start

    s = scene.optimize
    if s is None:
        raise SceneError(scene.path, "optimize", "missing; the scene has no [optimize] table, so there is nothing "
                                                 "to optimize (see docs/scenes.md)")
    say(f"{scene.name}: optimizing {', '.join(s['parameters'])} from {args.starts} starts (spread {args.spread:g}, "
        f"seed {args.seed}) with {s['optimizer']} for {args.iterations or s['iterations']} iterations each")
    result = multi_start(scene.path, args.starts, frames=args.frames, device=args.device, iterations=args.iterations,
                         spread=args.spread, seed=args.seed, checkpoint=args.checkpoint or s["checkpoint"],
                         address=args.address, num_cpus=args.cpus, progress=not args.quiet)
    for r in result.starts:
        if r.status == "ok":
            say(f"  start {r.start:3d}: loss {r.initial_loss:.4e} -> {r.loss:.4e}"
                + ("   (best)" if r.start == result.best else ""))
        else:
            say(f"  start {r.start:3d}: failed ({r.error})")


def _check_multi_start_options(args: argparse.Namespace) -> None:
    if args.starts > 1:
        if args.resume:
            raise UsageError("--resume continues one optimization from its checkpoint; it cannot be combined with "
                             "--starts (which runs every start from the beginning)")
        args.spread = 0.5 if args.spread is None else args.spread
        args.seed = 0 if args.seed is None else args.seed
        return
    given = [name for name, value in (("--spread", args.spread), ("--seed", args.seed), ("--address", args.address),
                                      ("--cpus", args.cpus)) if value is not None]
    if given:
        raise UsageError(f"{', '.join(given)}: only used by a multi-start optimization; add --starts N (N >= 2)")


def _finish_optimize(args: argparse.Namespace, scene: Any, opt: Any, say: Any) -> int:
    """Replay the optimized parameters to USD, plot, and summarize."""
    from ..scene import plot_losses

    usd = args.usd or scene.output["usd"]
    final_loss, result = opt.replay(usd_path=usd)
    if args.plot:
        plot_losses(opt.losses + [final_loss], args.plot,
                    title=f"{scene.name}: loss over {opt.iteration} iterations")
    first = f"{opt.losses[0]:.4e} -> " if opt.losses else ""
    say(f"{scene.name}: loss {first}{final_loss:.4e} after {opt.iteration} iterations")
    for p in opt.parameters:
        say(f"  {p.describe()}")
    say(f"  checkpoint: {opt.checkpoint_path.resolve()}")
    say(f"  USD: {result.usd_path}")
    if args.plot:
        say(f"  plot: {Path(args.plot).resolve()}")
    return EXIT_OK
