// Random numbers in kernels (Warp's rand_init, randi, randu, randf, randn, sample_*): a 32-bit
// state stepped by an LCG (full period 2^32) and each draw the PCG-RXS-M-XS output
// permutation of the stepped state (Jarzynski & Olano, "Hash Functions for GPU Rendering",
// 2020). A builtin reads draws 1..k after its state; the frontend then advances the caller's
// state local by k steps (core/calls.py), so successive calls differ. Every sampler takes a fixed
// number of draws (no rejection loops). The streams are simkit's own, not Warp's bit for bit.
#pragma once
#include "simkit.h"

namespace sk {

SK_FUNC uint32_t rand_step_(uint32_t s) { return s * 747796405u + 2891336453u; }
SK_FUNC uint32_t rand_mix_(uint32_t s) {
    uint32_t w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}
// The state after n steps.
SK_FUNC uint32_t rand_advance_(uint32_t s, int n) {
    for (int i = 0; i < n; ++i) s = rand_step_(s);
    return s;
}
// Draw k (1, 2, ...) after state s.
SK_FUNC uint32_t rand_draw_(uint32_t s, int k) { return rand_mix_(rand_advance_(s, k)); }
// Distinct offsets give distinct states for one seed: the offset times an odd constant is a
// bijection of uint32, and so is the output permutation.
SK_FUNC uint32_t rand_init_(int32_t seed, int32_t offset) {
    return rand_mix_(rand_mix_(uint32_t(seed)) + uint32_t(offset) * 2654435769u);
}
// A float in [0, 1): the draw's top 24 bits, a multiple of 2^-24.
SK_FUNC float rand_unit_(uint32_t s, int k) { return float(rand_draw_(s, k) >> 8) * (1.0f / 16777216.0f); }
SK_FUNC float randn_(uint32_t s) {
    float u1 = 1.0f - rand_unit_(s, 1), u2 = rand_unit_(s, 2);  // u1 in (0, 1]: its log is finite
    return m::sqrt(-2.0f * m::log(u1)) * m::cos(6.283185307179586f * u2);
}
// A uniform direction from two draws: z uniform in [-1, 1] (Archimedes), the azimuth uniform.
SK_FUNC vec_t<3, float> rand_direction_(uint32_t s, float z) {
    float r = m::sqrt(max_(0.0f, 1.0f - z * z)), phi = 6.283185307179586f * rand_unit_(s, 2);
    return vec_t<3, float>{{r * m::cos(phi), r * m::sin(phi), z}};
}
SK_FUNC vec_t<3, float> sample_sphere_surface_(uint32_t s) { return rand_direction_(s, 1.0f - 2.0f * rand_unit_(s, 1)); }
SK_FUNC vec_t<3, float> sample_hemisphere_surface_(uint32_t s) { return rand_direction_(s, 1.0f - rand_unit_(s, 1)); }
// Inside the ball: the radius cbrt(u), so the volume below radius r grows as r^3.
SK_FUNC vec_t<3, float> sample_sphere_(uint32_t s) { return sample_sphere_surface_(s) * m::cbrt(rand_unit_(s, 3)); }
SK_FUNC vec_t<3, float> sample_hemisphere_(uint32_t s) { return sample_hemisphere_surface_(s) * m::cbrt(rand_unit_(s, 3)); }
SK_FUNC vec_t<2, float> sample_disk_(uint32_t s) {
    float r = m::sqrt(rand_unit_(s, 1)), phi = 6.283185307179586f * rand_unit_(s, 2);
    return vec_t<2, float>{{r * m::cos(phi), r * m::sin(phi)}};
}
SK_FUNC vec_t<2, float> sample_ring_(uint32_t s) {
    float phi = 6.283185307179586f * rand_unit_(s, 1);
    return vec_t<2, float>{{m::cos(phi), m::sin(phi)}};
}
// Barycentrics (u, v) uniform in the triangle u, v >= 0, u + v <= 1: a point of the unit square
// beyond the diagonal is reflected onto the other half.
SK_FUNC vec_t<2, float> sample_triangle_(uint32_t s) {
    float u = rand_unit_(s, 1), v = rand_unit_(s, 2);
    if (u + v > 1.0f) { u = 1.0f - u; v = 1.0f - v; }
    return vec_t<2, float>{{u, v}};
}

}  // namespace sk
