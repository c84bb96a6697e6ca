"""simkit.scene: scene configs (TOML) turned into models, runs, USD files and optimizations.

- :func:`load_scene` reads, checks and builds a scene file into a :class:`Scene` (``model``,
  ``integrator``, ``settings``, ``bodies``, ``output``, ``optimize``); every problem with the
  file is one :class:`SceneError` naming the file, the key path and what was expected;
- :func:`run_scene` simulates it and writes USD; :class:`Stepper` runs it frame by frame;
- :class:`Optimization` runs its ``[optimize]`` table with resumable checkpoints;
- :func:`sweep` runs a grid of overrides of its keys as Ray tasks into one table, and
  :func:`multi_start` its ``[optimize]`` table from several perturbed starts, keeping the best
  (``docs/sweeps.md``).

The schema is documented in ``docs/scenes.md``; ``simkit run`` / ``simkit optimize`` are the
command-line front end (:mod:`simkit.cli`).

Example::

    from simkit.scene import load_scene, run_scene

    scene = load_scene("scenes/cloth_drape.toml", frames=20)
    result = run_scene(scene, usd_path="drape.usda")
    print(result.steps / result.seconds, "steps/s")
"""

from .build import Body, Muscle, Scene, Settings, Stepper, build_scene, load_scene
from .optimize import Optimization, SceneLoss, matplotlib_missing, plot_losses
from .run import RunResult, SimulationError, run_scene
from .meshes import load_tet_mesh
from .schema import SceneConfig, read_config
from .validate import SceneError
from .overrides import OverrideError, expand_grid, parse_set
from .sweeps import SweepInterrupted, SweepResult, sweep
from .multistart import MultiStartResult, StartResult, multi_start

__all__ = ["SceneError", "SceneConfig", "Scene", "Settings", "Body", "Muscle", "Stepper", "load_scene",
           "read_config", "build_scene", "load_tet_mesh", "run_scene", "RunResult", "SimulationError",
           "Optimization", "SceneLoss", "matplotlib_missing", "plot_losses", "OverrideError", "expand_grid",
           "parse_set", "sweep", "SweepResult", "SweepInterrupted", "multi_start", "MultiStartResult", "StartResult"]
