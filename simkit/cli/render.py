"""``simkit render``: a scene's run drawn off-screen into PNG frames or an mp4."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_OK, UsageError, progress, resolve_scene, scene_inputs


def cmd_render(args: argparse.Namespace) -> int:
    """``simkit render``: draw a scene's run off-screen into PNG frames or an mp4 video."""
    from ..render.images import VIDEO_EXTENSIONS, video_missing
    from ..scene import load_scene
    from ..scene.outputs import check_outputs
    from ..scene.pictures import render_scene

    out = Path(args.out)
    video = out.suffix.lower() in VIDEO_EXTENSIONS
    if not video and out.suffix and not out.is_dir():
        raise UsageError(f"--out {args.out}: expected a folder (for PNG frames) or a file name ending in "
                         f"{', '.join(VIDEO_EXTENSIONS)}")
    if video and (why := video_missing()) is not None:
        raise UsageError(f"--out {args.out}: {why}")
    if video and (args.size[0] % 2 or args.size[1] % 2):
        raise UsageError(f"--size {args.size[0]}x{args.size[1]}: an mp4 video needs an even width and height")
    if not out.resolve().parent.is_dir():
        raise UsageError(f"--out {args.out}: the folder {out.resolve().parent} does not exist")
    if out.exists() and not video and not out.is_dir():
        raise UsageError(f"--out {args.out}: is a file; expected a folder for the PNG frames")
    # --frames N: N pictures, the initial state and N - 1 frames after it
    scene = load_scene(resolve_scene(args.scene), device=args.device,
                       frames=None if args.frames is None else max(args.frames - 1, 1))
    pictures = scene.settings.frames + 1 if args.frames is None else args.frames
    if video:
        check_outputs(scene_inputs(scene), {"--out": out})
    # the automatic camera frames the whole run: every picture is drawn once the run is simulated
    bars = [progress(pictures, 0, "frame", f"{scene.name}: simulate", args.quiet)]

    def on_draw(k: int) -> None:
        if len(bars) == 1:
            bars[0].close()
            bars.append(progress(pictures, 0, "frame", f"{scene.name}: draw", args.quiet))
        bars[-1].update()

    try:
        result = render_scene(scene, out, pictures, args.size, backend=args.backend,
                              on_frame=lambda k: bars[0].update(), on_draw=on_draw)
    finally:
        for bar in bars:
            bar.close()
    if not args.quiet:
        where = out.resolve() if video else out.resolve() / "frame_0000.png ..."
        print(f"{scene.name}: {result.pictures} pictures of {args.size[0]}x{args.size[1]} in {result.seconds:.2f} s")
        print(f"  drawn by: {result.note}")
        print(f"  {'video' if video else 'frames'}: {where}")
    return EXIT_OK
