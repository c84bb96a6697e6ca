"""OpenGL drawing of :mod:`~simkit.render.drawables` with pyglet 2: two small GLSL programs
(Blinn-Phong meshes and lines; points as shaded sphere impostors), vertex buffers kept per
drawable key, an off-screen renderer and the interactive window.

This module imports pyglet's GL at import time, which needs a display (or pyglet's headless
EGL mode): import it only through :mod:`simkit.render.viewer`, which picks the backend and
turns a missing display into a clear error.

Example::

    from simkit.render import viewer
    image = viewer.render_frame(model, model.state())     # goes through this module
"""

from __future__ import annotations

import ctypes
import math
from typing import Any, Callable

import numpy as np
import pyglet
from pyglet import gl
from pyglet.graphics.shader import Shader, ShaderProgram
from pyglet.math import Mat3, Mat4, Vec3
from pyglet.window import key, mouse

from .camera import Camera
from .drawables import BACKGROUND, LIGHT_VIEW as _LIGHT_VIEW, Drawable, scene_bounds

SAMPLES = 4

_SHADE = """
vec3 shade(vec3 base, vec3 n, vec3 to_eye, vec3 to_light) {
    float diffuse = max(dot(n, to_light), 0.0);
    float facing = max(dot(n, to_eye), 0.0);
    float specular = pow(max(dot(n, normalize(to_light + to_eye)), 0.0), 48.0);
    return base * (0.28 + 0.62 * diffuse + 0.15 * facing) + vec3(0.18 * specular);
}
"""

_MESH_VERTEX = """#version 330 core
layout(location = 0) in vec3 position;
layout(location = 1) in vec3 color;
layout(location = 2) in vec3 normal;
uniform mat4 u_model;
uniform mat3 u_normal_matrix;
uniform mat4 u_view;
uniform mat4 u_projection;
out vec3 v_world;
out vec3 v_normal;
out vec3 v_color;
void main() {
    vec4 world = u_model * vec4(position, 1.0);
    v_world = world.xyz;
    v_normal = u_normal_matrix * normal;
    v_color = color;
    gl_Position = u_projection * u_view * world;
}
"""

_MESH_FRAGMENT = """#version 330 core
in vec3 v_world;
in vec3 v_normal;
in vec3 v_color;
uniform vec3 u_eye;
uniform vec3 u_light;
uniform int u_lit;
out vec4 frag_color;
""" + _SHADE + """
void main() {
    if (u_lit == 0) {
        frag_color = vec4(v_color, 1.0);
        return;
    }
    vec3 to_eye = normalize(u_eye - v_world);
    vec3 n = normalize(v_normal);
    if (dot(n, to_eye) < 0.0) n = -n;      // both sides of cloth are lit
    frag_color = vec4(shade(v_color, n, to_eye, u_light), 1.0);
}
"""

_POINT_VERTEX = """#version 330 core
layout(location = 0) in vec3 position;
layout(location = 1) in vec3 color;
layout(location = 2) in float radius;
uniform mat4 u_model;
uniform mat4 u_view;
uniform mat4 u_projection;
uniform float u_point_scale;
out vec3 v_center;
out vec3 v_color;
out float v_radius;
void main() {
    vec4 center = u_view * u_model * vec4(position, 1.0);
    v_center = center.xyz;
    v_color = color;
    v_radius = radius;
    gl_Position = u_projection * center;
    gl_PointSize = max(2.0 * radius * u_point_scale / gl_Position.w, 1.0);
}
"""

_POINT_FRAGMENT = """#version 330 core
in vec3 v_center;
in vec3 v_color;
in float v_radius;
uniform mat4 u_projection;
uniform vec3 u_light_view;
out vec4 frag_color;
""" + _SHADE + """
void main() {
    vec2 c = gl_PointCoord * 2.0 - 1.0;
    float r2 = dot(c, c);
    if (r2 > 1.0) discard;
    vec3 n = vec3(c.x, -c.y, sqrt(1.0 - r2));       // the sphere's normal, view coordinates
    vec3 surface = v_center + v_radius * n;
    vec4 clip = u_projection * vec4(surface, 1.0);
    gl_FragDepth = 0.5 * clip.z / clip.w + 0.5;
    frag_color = vec4(shade(v_color, n, normalize(-surface), u_light_view), 1.0);
}
"""


def _mat4(m: np.ndarray) -> Mat4:
    return Mat4(*(float(v) for v in np.asarray(m, dtype=np.float64).T.ravel()))


def _mat3(m: np.ndarray) -> Mat3:
    return Mat3(*(float(v) for v in np.asarray(m, dtype=np.float64).T.ravel()))


class _Buffers:
    """A vertex array object with one float32 buffer per attribute (``sizes`` components
    each, at locations 0, 1, ...) and, if ``indexed``, a uint32 element buffer. Uploads are
    skipped when the array is the object uploaded last time."""

    def __init__(self, sizes: tuple[int, ...], indexed: bool):
        self.vao = gl.GLuint()
        gl.glGenVertexArrays(1, ctypes.byref(self.vao))
        gl.glBindVertexArray(self.vao)
        self.vbos = []
        for location, size in enumerate(sizes):
            vbo = gl.GLuint()
            gl.glGenBuffers(1, ctypes.byref(vbo))
            gl.glBindBuffer(gl.GL_ARRAY_BUFFER, vbo)
            gl.glEnableVertexAttribArray(location)
            gl.glVertexAttribPointer(location, size, gl.GL_FLOAT, gl.GL_FALSE, 0, None)
            self.vbos.append(vbo)
        self.ebo = None
        if indexed:
            self.ebo = gl.GLuint()
            gl.glGenBuffers(1, ctypes.byref(self.ebo))
            gl.glBindBuffer(gl.GL_ELEMENT_ARRAY_BUFFER, self.ebo)
        gl.glBindVertexArray(0)
        self.uploaded: list[Any] = [None] * (len(sizes) + 1)
        self.vertex_count = 0
        self.index_count = 0

    def upload(self, slot: int, array: np.ndarray) -> None:
        """Upload ``array`` to attribute ``slot`` (the element buffer is the last slot)."""
        if self.uploaded[slot] is array:
            return
        is_index = slot == len(self.vbos)
        data = np.ascontiguousarray(array, dtype=np.uint32 if is_index else np.float32)
        gl.glBindVertexArray(self.vao)
        target = gl.GL_ELEMENT_ARRAY_BUFFER if is_index else gl.GL_ARRAY_BUFFER
        gl.glBindBuffer(target, self.ebo if is_index else self.vbos[slot])
        gl.glBufferData(target, data.nbytes, data.ctypes.data if data.nbytes else None, gl.GL_DYNAMIC_DRAW)
        gl.glBindVertexArray(0)
        self.uploaded[slot] = array
        if is_index:
            self.index_count = data.size
        elif slot == 0:
            self.vertex_count = len(data.reshape(-1, 3))

    def delete(self) -> None:
        for vbo in self.vbos + ([self.ebo] if self.ebo is not None else []):
            gl.glDeleteBuffers(1, ctypes.byref(vbo))
        gl.glDeleteVertexArrays(1, ctypes.byref(self.vao))


class Renderer:
    """Draws lists of drawables into the current framebuffer of the current GL context,
    keeping one set of vertex buffers per drawable key. Call :meth:`release` before the
    context goes away.

    Example::

        renderer = Renderer()
        renderer.draw(source.frame(state), camera, 640, 480)
        renderer.release()
    """

    def __init__(self) -> None:
        self.mesh_program = ShaderProgram(Shader(_MESH_VERTEX, "vertex"), Shader(_MESH_FRAGMENT, "fragment"))
        self.point_program = ShaderProgram(Shader(_POINT_VERTEX, "vertex"), Shader(_POINT_FRAGMENT, "fragment"))
        self._buffers: dict[str, tuple[str, _Buffers]] = {}

    def _buffers_for(self, d: Drawable) -> _Buffers:
        known = self._buffers.get(d.key)
        if known is not None and known[0] == d.primitive:
            return known[1]
        if known is not None:
            known[1].delete()
        sizes = {"triangles": (3, 3, 3), "points": (3, 3, 1), "lines": (3, 3)}[d.primitive]
        buffers = _Buffers(sizes, indexed=d.primitive == "triangles")
        self._buffers[d.key] = (d.primitive, buffers)
        return buffers

    def draw(self, drawables: list[Drawable], camera: Camera, width: int, height: int) -> None:
        """Clear to the background and draw ``drawables`` seen by ``camera`` into a
        ``width`` x ``height`` viewport. Buffers of keys no longer drawn are freed."""
        gl.glViewport(0, 0, width, height)
        gl.glClearColor(*BACKGROUND, 1.0)
        gl.glClear(gl.GL_COLOR_BUFFER_BIT | gl.GL_DEPTH_BUFFER_BIT)
        gl.glEnable(gl.GL_DEPTH_TEST)
        gl.glDepthFunc(gl.GL_LESS)
        gl.glDisable(gl.GL_CULL_FACE)
        gl.glDisable(gl.GL_BLEND)
        gl.glEnable(gl.GL_PROGRAM_POINT_SIZE)
        view, projection = camera.view_matrix(), camera.projection_matrix(width / max(height, 1))
        light_world = view[:3, :3].T @ _LIGHT_VIEW

        mesh, points = self.mesh_program, self.point_program
        mesh.use()
        mesh["u_view"], mesh["u_projection"] = _mat4(view), _mat4(projection)
        mesh["u_eye"], mesh["u_light"] = Vec3(*map(float, camera.eye)), Vec3(*map(float, light_world))
        points.use()
        points["u_view"], points["u_projection"] = _mat4(view), _mat4(projection)
        points["u_point_scale"] = float(projection[1, 1] * height / 2.0)
        points["u_light_view"] = Vec3(*map(float, _LIGHT_VIEW))

        seen = set()
        for d in drawables:
            seen.add(d.key)
            buffers = self._buffers_for(d)
            buffers.upload(0, d.positions)
            buffers.upload(1, d.colors)
            if d.primitive == "points":
                buffers.upload(2, d.radii)
                points.use()
                points["u_model"] = _mat4(d.matrix)
                gl.glBindVertexArray(buffers.vao)
                gl.glDrawArrays(gl.GL_POINTS, 0, buffers.vertex_count)
                continue
            mesh.use()
            mesh["u_model"] = _mat4(d.matrix)
            if d.primitive == "lines":
                mesh["u_lit"] = 0
                gl.glBindVertexArray(buffers.vao)
                gl.glDrawArrays(gl.GL_LINES, 0, buffers.vertex_count)
                continue
            buffers.upload(2, d.normals)
            buffers.upload(3, d.indices)
            linear = d.matrix[:3, :3]
            det = np.linalg.det(linear)
            mesh["u_normal_matrix"] = _mat3(np.linalg.inv(linear).T if abs(det) > 1e-30 else linear)
            mesh["u_lit"] = 1
            gl.glBindVertexArray(buffers.vao)
            gl.glDrawElements(gl.GL_TRIANGLES, buffers.index_count, gl.GL_UNSIGNED_INT, None)
        gl.glBindVertexArray(0)
        gl.glUseProgram(0)
        for gone in set(self._buffers) - seen:
            self._buffers.pop(gone)[1].delete()

    def release(self) -> None:
        """Free every buffer and both programs."""
        for _, buffers in self._buffers.values():
            buffers.delete()
        self._buffers.clear()
        self.mesh_program.delete()
        self.point_program.delete()


def open_window(window_class: type = pyglet.window.Window, *, error: str, **kwargs: Any) -> Any:
    """A ``window_class`` window (``kwargs`` as for ``pyglet.window.Window``), with a 4x
    multisampled, 24-bit depth OpenGL 3.3 config when the display has one. A failure to open
    it is a RuntimeError that starts with ``error``."""
    configs = [gl.Config(double_buffer=True, depth_size=24, sample_buffers=1, samples=SAMPLES,
                         major_version=3, minor_version=3), None]
    last: Exception | None = None
    for config in configs:
        try:
            return window_class(config=config, **kwargs)
        except pyglet.window.NoSuchConfigException as e:
            last = e
        except Exception as e:
            raise RuntimeError(f"{error} ({type(e).__name__}: {e})") from e
    raise RuntimeError(f"{error} (no OpenGL 3.3 config: {last})")


class Offscreen:
    """A hidden window's context with a multisampled framebuffer object of ``width`` x
    ``height``, kept for many frames: :meth:`draw` renders one and reads it back. Call
    :meth:`release` when done. A failure to get a context is a RuntimeError starting with
    ``error``.

    Example::

        target = Offscreen(320, 240, error="no display")
        image = target.draw(drawables, camera)
        target.release()
    """

    def __init__(self, width: int, height: int, error: str):
        self.width, self.height = width, height
        self.window = open_window(error=error, width=16, height=16, visible=False)
        self.renderer: Renderer | None = None
        self.names: dict[str, Any] = {}
        try:
            self._build()
        except BaseException:
            self.release()
            raise

    def _build(self) -> None:
        width, height, names = self.width, self.height, self.names
        self.window.switch_to()
        self.renderer = Renderer()
        samples = min(SAMPLES, _get_int(gl.GL_MAX_SAMPLES))
        for name, fmt, ms in (("ms_color", gl.GL_RGBA8, True), ("ms_depth", gl.GL_DEPTH_COMPONENT24, True),
                              ("color", gl.GL_RGBA8, False)):
            rb = gl.GLuint()
            gl.glGenRenderbuffers(1, ctypes.byref(rb))
            gl.glBindRenderbuffer(gl.GL_RENDERBUFFER, rb)
            if ms and samples > 1:
                gl.glRenderbufferStorageMultisample(gl.GL_RENDERBUFFER, samples, fmt, width, height)
            else:
                gl.glRenderbufferStorage(gl.GL_RENDERBUFFER, fmt, width, height)
            names[name] = rb
        for name, attachments in (("ms_fbo", (("ms_color", gl.GL_COLOR_ATTACHMENT0),
                                              ("ms_depth", gl.GL_DEPTH_ATTACHMENT))),
                                  ("fbo", (("color", gl.GL_COLOR_ATTACHMENT0),))):
            fbo = gl.GLuint()
            gl.glGenFramebuffers(1, ctypes.byref(fbo))
            gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, fbo)
            names[name] = fbo
            for rb, attachment in attachments:
                gl.glFramebufferRenderbuffer(gl.GL_FRAMEBUFFER, attachment, gl.GL_RENDERBUFFER, names[rb])
            status = gl.glCheckFramebufferStatus(gl.GL_FRAMEBUFFER)
            if status != gl.GL_FRAMEBUFFER_COMPLETE:
                raise RuntimeError(f"render_frame: the off-screen framebuffer is incomplete (status {status:#x})")
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)

    def draw(self, drawables: list[Drawable], camera: Camera) -> np.ndarray:
        """Draw one frame and read it back: an (height, width, 3) uint8 RGB array, top row first."""
        width, height, names = self.width, self.height, self.names
        self.window.switch_to()
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, names["ms_fbo"])
        self.renderer.draw(drawables, camera, width, height)
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, names["ms_fbo"])
        gl.glBindFramebuffer(gl.GL_DRAW_FRAMEBUFFER, names["fbo"])
        gl.glBlitFramebuffer(0, 0, width, height, 0, 0, width, height, gl.GL_COLOR_BUFFER_BIT, gl.GL_NEAREST)
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, names["fbo"])
        pixels = np.empty((height, width, 4), dtype=np.uint8)
        gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 1)
        gl.glReadPixels(0, 0, width, height, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE, pixels.ctypes.data)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
        return np.ascontiguousarray(pixels[::-1, :, :3])

    def release(self) -> None:
        """Free the buffers, the programs and the hidden window; a second call does nothing."""
        if self.window is None:
            return
        self.window.switch_to()
        if self.renderer is not None:
            self.renderer.release()
            self.renderer = None
        for name, handle in self.names.items():
            if name.endswith("fbo"):
                gl.glDeleteFramebuffers(1, ctypes.byref(handle))
            else:
                gl.glDeleteRenderbuffers(1, ctypes.byref(handle))
        self.names = {}
        self.window.close()
        self.window = None


def render_offscreen(drawables: list[Drawable], camera: Camera, width: int, height: int, error: str) -> np.ndarray:
    """Draw one frame into a multisampled framebuffer object of a hidden window's context and
    read it back: an (height, width, 3) uint8 RGB array, top row first."""
    target = Offscreen(width, height, error)
    try:
        return target.draw(drawables, camera)
    finally:
        target.release()


def _get_int(name: int) -> int:
    value = gl.GLint()
    gl.glGetIntegerv(name, ctypes.byref(value))
    return value.value


HELP = "space: pause   right: step   R: reset   F: frame all   drag: orbit   shift-drag / right-drag: pan   wheel: zoom"


class ViewerWindow(pyglet.window.Window):
    """The interactive viewer: draws ``frame(playback.current)``, advances ``playback``
    ``fps`` times a second, and maps keys and the mouse to the playback and the camera (see
    ``HELP``); ``status()`` is the first line of the overlay. Closing it (or Escape) frees its
    GL resources and, as the last window, ends ``pyglet.app.run``."""

    def __init__(self, playback: Any, frame: Callable[[Any], list[Drawable]], up_axis: str, fps: float,
                 status: Callable[[], str], **kwargs: Any):
        self.renderer: Renderer | None = None
        self.hud: pyglet.text.Label | None = None
        super().__init__(**kwargs)
        self.playback = playback
        self._frame = frame
        self._status = status
        self._up_axis = up_axis
        self._drawables = frame(playback.current)
        self._version = playback.version
        self.camera = self._framing()
        self.renderer = Renderer()
        self.hud = pyglet.text.Label("", x=10, y=10, multiline=True, width=max(self.width - 20, 100),
                                     font_size=10, color=(235, 235, 235, 255), anchor_y="bottom")
        pyglet.clock.schedule_interval(self._tick, 1.0 / fps)

    def _framing(self) -> Camera:
        w, h = self.get_framebuffer_size()
        return Camera.framing(*scene_bounds(self._drawables), up_axis=self._up_axis, aspect=w / max(h, 1))

    def _tick(self, dt: float) -> None:
        self.playback.tick()

    def on_draw(self) -> None:
        if self.playback.version != self._version:
            self._drawables = self._frame(self.playback.current)
            self._version = self.playback.version
        w, h = self.get_framebuffer_size()
        self.renderer.draw(self._drawables, self.camera, w, h)
        gl.glDisable(gl.GL_DEPTH_TEST)
        self.hud.text = f"{self._status()}\n{HELP}"
        self.hud.draw()

    def on_key_press(self, symbol: int, modifiers: int) -> Any:
        names = {key.SPACE: "space", key.RIGHT: "right", key.R: "r"}
        if symbol in names:
            self.playback.key(names[symbol])
            return pyglet.event.EVENT_HANDLED
        if symbol == key.F:
            self.camera = self._framing()
            return pyglet.event.EVENT_HANDLED
        return super().on_key_press(symbol, modifiers)

    def on_mouse_drag(self, x: int, y: int, dx: int, dy: int, buttons: int, modifiers: int) -> None:
        if buttons & (mouse.RIGHT | mouse.MIDDLE) or (buttons & mouse.LEFT and modifiers & key.MOD_SHIFT):
            self.camera.pan(-dx / max(self.height, 1), -dy / max(self.height, 1))
        elif buttons & mouse.LEFT:
            self.camera.orbit(-0.3 * dx, -0.3 * dy)

    def on_mouse_scroll(self, x: int, y: int, scroll_x: float, scroll_y: float) -> None:
        self.camera.zoom(0.9 ** scroll_y)

    def on_resize(self, width: int, height: int) -> None:
        super().on_resize(width, height)
        if self.hud is not None:
            self.hud.width = max(width - 20, 100)

    def close(self) -> None:
        """Stop the playback clock, free the GL resources and close the window."""
        pyglet.clock.unschedule(self._tick)
        if self.renderer is not None:
            self.switch_to()
            self.renderer.release()
            self.renderer = None
        super().close()


def run_window(playback: Any, frame: Callable[[Any], list[Drawable]], up_axis: str, fps: float,
               status: Callable[[], str], title: str, error: str) -> None:
    """Open a :class:`ViewerWindow` and run pyglet's event loop until it closes."""
    window = open_window(ViewerWindow, error=error, playback=playback, frame=frame, up_axis=up_axis, fps=fps,
                         status=status, width=1024, height=768, caption=title, resizable=True)
    try:
        pyglet.app.run(1.0 / 60.0)
    finally:
        if window.renderer is not None:
            window.close()
