"""What the robot importers raise and warn: shared by the tree, the mesh loader and both parsers.

Example::

    try:
        builder.add_urdf("robot.urdf")
    except RobotFileError as e:        # the message names the file and the element
        print(e)
"""

from __future__ import annotations


class RobotFileWarning(UserWarning):
    """A part of a robot file that simkit does not use (named with the file and element)."""


class RobotFileError(ValueError):
    """A robot file that cannot be imported: the message names the file and the element."""
