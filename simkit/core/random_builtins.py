"""Random numbers in kernels, Warp's names (:mod:`simkit.core.builtins` table entries, C++ in
``native/random.h``): ``rand_init`` makes a ``uint32`` state; ``randi``, ``randu``, ``randf``,
``randn`` and the ``sample_*`` builtins read the draws after it, and, called on a local, advance
that local in place (``STATE_DRAWS``: how many draws each takes), so successive calls differ.
None carries a gradient. Deterministic per (seed, offset) on every device, but not Warp's
numbers bit for bit.

Example::

    rng = sk.rand_init(seed, i)              # in a kernel: one stream per thread
    x = sk.randf(rng, -1.0, 1.0)             # rng has moved on
    n = sk.randn(rng)
"""

from .builtins import _, EXAMPLES, STATE_DRAWS

_("rand_init", "seed: int32", "uint32", "return rand_init_(seed, 0);", None,
  doc="A random state from a seed (the same as rand_init(seed, 0)).")
_("rand_init", "seed: int32, offset: int32", "uint32", "return rand_init_(seed, offset);", None,
  doc="A random state from a seed and an offset (a thread index): distinct offsets, distinct streams.")
_("randi", "state: uint32", "int32", "return int32_t(rand_draw_(state, 1));", None,
  doc="A uniform int32 in [-2^31, 2^31); advances state.")
_("randi", "state: uint32, low: int32, high: int32", "int32",
  "uint32_t n = uint32_t(high) - uint32_t(low); return n ? int32_t(uint32_t(low) + rand_draw_(state, 1) % n) : low;",
  None, doc="A uniform int32 in [low, high); advances state.")
_("randu", "state: uint32", "uint32", "return rand_draw_(state, 1);", None,
  doc="A uniform uint32 in [0, 2^32); advances state.")
_("randu", "state: uint32, low: uint32, high: uint32", "uint32",
  "uint32_t n = high - low; return n ? low + rand_draw_(state, 1) % n : low;", None,
  doc="A uniform uint32 in [low, high); advances state.")
_("randf", "state: uint32", "float32", "return rand_unit_(state, 1);", None,
  doc="A uniform float in [0, 1), a multiple of 2^-24; advances state.")
_("randf", "state: uint32, low: float32, high: float32", "float32",
  "return low + (high - low) * rand_unit_(state, 1);", None,
  doc="A uniform float in [low, high); advances state.")
_("randn", "state: uint32", "float32", "return randn_(state);", None,
  doc="A standard normal float (mean 0, variance 1; Box-Muller of two draws); advances state.")
for _name, _ret, _body, _doc in (
        ("sample_unit_sphere", "vec(3,float32)", "sample_sphere_(state)", "A uniform point of the unit ball."),
        ("sample_unit_sphere_surface", "vec(3,float32)", "sample_sphere_surface_(state)",
         "A uniform point of the unit sphere (unit length)."),
        ("sample_unit_hemisphere", "vec(3,float32)", "sample_hemisphere_(state)",
         "A uniform point of the unit half ball z >= 0."),
        ("sample_unit_hemisphere_surface", "vec(3,float32)", "sample_hemisphere_surface_(state)",
         "A uniform point of the unit half sphere z >= 0 (unit length)."),
        ("sample_unit_square", "vec(2,float32)",
         "vec_t<2, float>{{rand_unit_(state, 1) - 0.5f, rand_unit_(state, 2) - 0.5f}}",
         "A uniform point of the square [-0.5, 0.5)^2."),
        ("sample_unit_cube", "vec(3,float32)",
         "vec_t<3, float>{{rand_unit_(state, 1) - 0.5f, rand_unit_(state, 2) - 0.5f, rand_unit_(state, 3) - 0.5f}}",
         "A uniform point of the cube [-0.5, 0.5)^3."),
        ("sample_unit_disk", "vec(2,float32)", "sample_disk_(state)", "A uniform point of the unit disk."),
        ("sample_unit_ring", "vec(2,float32)", "sample_ring_(state)", "A uniform point of the unit circle."),
        ("sample_triangle", "vec(2,float32)", "sample_triangle_(state)",
         "Uniform barycentrics (u, v) of a triangle: the point u a + v b + (1 - u - v) c.")):
    _(_name, "state: uint32", _ret, f"return {_body};", None, doc=_doc + " Advances state.")

# Draws each builtin reads after its state (and so how far a call advances a state local).
STATE_DRAWS.update({"randi": 1, "randu": 1, "randf": 1, "randn": 2, "sample_unit_sphere": 3,
                    "sample_unit_sphere_surface": 2, "sample_unit_hemisphere": 3,
                    "sample_unit_hemisphere_surface": 2, "sample_unit_square": 2, "sample_unit_cube": 3,
                    "sample_unit_disk": 2, "sample_unit_ring": 1, "sample_triangle": 2})

EXAMPLES.update({
    "rand_init": """
rng = sk.rand_init(seed, sk.tid())         # seed: an int kernel argument; one stream per thread
""",
    "randf": """
rng = sk.rand_init(seed, i)
u = sk.randf(rng)                          # in [0, 1); rng moves on
x = sk.randf(rng, -1.0, 1.0)               # in [-1, 1)
""",
    "randn": """
rng = sk.rand_init(seed, i)
noise = 0.1 * sk.randn(rng)                # mean 0, standard deviation 0.1
""",
    "sample_unit_sphere_surface": """
rng = sk.rand_init(seed, i)
n = sk.sample_unit_sphere_surface(rng)     # a uniform unit direction
""",
})
