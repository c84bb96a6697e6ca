"""Triangle meshes (STL, OBJ, ...) of robot files through trimesh, an optional dependency
(``pip install simkit[meshes]``): the mass properties of a mesh geom, and the mesh its
collider uses (the convex hull, as MuJoCo collides mesh geoms)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import RobotFileError


def load_mesh(file: Path, scale, where: str):
    """The trimesh mesh in ``file``, its vertices scaled by ``scale`` (3 factors)."""
    try:
        import trimesh
    except ImportError:
        raise ImportError(f"{where}: mesh geoms need trimesh: pip install simkit[meshes]") from None
    if not Path(file).is_file():
        raise FileNotFoundError(f"{where}: no such mesh file: {file}")
    try:
        mesh = trimesh.load(str(file), force="mesh")
    except Exception as e:   # trimesh raises many kinds on a bad file
        raise RobotFileError(f"{where}: cannot read the mesh {file}: {e}") from None
    mesh.apply_scale(np.asarray(scale, dtype=np.float64))
    return mesh


def mesh_mass(file: Path, scale, density: float, mass: float | None, where: str):
    """(mass, center, inertia about the center) of the solid bounded by the mesh in ``file``
    (mesh coordinates): ``density`` times its volume, or ``mass`` when given."""
    mesh = load_mesh(file, scale, where)
    volume = float(mesh.volume)
    if not volume > 0.0:
        raise RobotFileError(f"{where}: the mesh {file} encloses no volume ({volume}); its mass is undefined")
    mesh.density = 1.0
    m = density * volume if mass is None else float(mass)
    return m, np.array(mesh.center_mass, dtype=np.float64), np.array(mesh.moment_inertia) * (m / volume)


def collider_mesh(file: Path, scale, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The vertices and outward triangles of the convex hull of the mesh in ``file`` (mesh
    coordinates, scaled): what simkit collides, as MuJoCo does, which also keeps a detailed
    visual mesh of tens of thousands of triangles to the few hundred of its hull."""
    mesh = load_mesh(file, scale, where)
    try:
        hull = mesh.convex_hull
    except Exception as e:   # qhull refuses flat or degenerate point sets
        raise RobotFileError(f"{where}: the mesh {file} has no convex hull (flat or degenerate?): {e}") from None
    return np.asarray(hull.vertices, dtype=np.float64), np.asarray(hull.faces, dtype=np.int64)
