"""Writing rendered frames as PNG files (numpy and zlib only, no imaging library).

Example::

    write_png("frame.png", sk.render.render_frame(model, state))
"""

from __future__ import annotations

import os
import struct
import zlib

import numpy as np
from numpy.typing import ArrayLike


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path: str | os.PathLike, image: ArrayLike) -> None:
    """Write an (H, W, 3) RGB or (H, W, 4) RGBA uint8 image, top row first, as an 8-bit PNG;
    written to a temporary file and renamed onto ``path``.

    Example::

        write_png("out.png", np.zeros((48, 64, 3), np.uint8))      # a black 64 x 48 image
    """
    a = np.asarray(image)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] not in (3, 4) or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"write_png: image must be an (H, W, 3 or 4) uint8 array, got shape {a.shape} of {a.dtype}")
    height, width, channels = a.shape
    rows = np.concatenate([np.zeros((height, 1), np.uint8), np.ascontiguousarray(a).reshape(height, -1)], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2 if channels == 3 else 6, 0, 0, 0)
    data = (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + _chunk(b"IEND", b""))
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def read_png(path: str | os.PathLike) -> np.ndarray:
    """Read back an 8-bit RGB or RGBA PNG without interlacing whose rows all use filter 0
    (what :func:`write_png` writes) as an (H, W, 3 or 4) uint8 array.

    Example::

        assert (read_png("out.png") == image).all()
    """
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"read_png: {os.fspath(path)!r} is not a PNG file")
    pos, header, idat = 8, None, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if header is None or header[2] != 8 or header[3] not in (2, 6) or header[6] != 0:
        raise ValueError(f"read_png: {os.fspath(path)!r} is not an 8-bit, non-interlaced RGB(A) PNG")
    width, height, channels = header[0], header[1], 3 if header[3] == 2 else 4
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(height, 1 + width * channels)
    if rows[:, 0].any():
        raise ValueError(f"read_png: {os.fspath(path)!r} uses row filters, which read_png does not decode")
    return rows[:, 1:].reshape(height, width, channels).copy()
