// simkit native base: portability macros, integer types and scalar math.
// Compiles as C++17 (g++/clang++) and as CUDA through NVRTC, which ships no
// standard headers: everything the CUDA branch needs is declared here.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define SK_CUDA 1
#define SK_FUNC __device__ inline
// A large user function stays out of line on the GPU too (its forward as well as its
// derivatives, below): inlined, the body contact's shape dispatch (spheres, boxes,
// capsules, meshes, convex hulls) made NVRTC take 615 s on open_contacts' forward and
// adjoint module in CI; out of line 224 s (tangent 243 s -> 168 s). Small functions
// (codegen.INLINE_STATEMENTS) still inline through SK_FUNC.
#define SK_USER_FUNC __device__ __noinline__
// The adjoint or tangent of a large user function stays out of line on the GPU: NVRTC
// inlines every device function it can, and the adjoint of a contact function (which
// replays its forward and calls the adjoints of the functions it calls) grew the body
// contact module into one that took 100 s to compile per float type (its tangent module
// 60 s); out of line, 13 s (4 s). The forward stays inline.
#define SK_DERIVED_FUNC __device__ __noinline__
// The float16 conversions (base.h, below): the GPU inlines them as it likes.
#define SK_HALF_CONV __device__ inline
#define SK_GLOBAL_ATTR __device__
#define SK_UNROLL _Pragma("unroll")
#if defined(__CUDACC_RTC__)
// NVRTC: no standard headers at all. The CUDA math API (sinf, pow, ...), the
// atomics, __threadfence and device printf are built in; the fixed-width integer
// types are declared here with the sizes the CPU side uses (int64 is 8 bytes).
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
// nvcc: the host toolchain's headers exist and already declare these types.
#include <cstdint>
#include <cstdio>
#endif
#else
#define SK_CPU 1
// The builtins and each kernel's body inline into the kernel's entry loop: left to
// itself g++ keeps a large kernel body out of line and passes its small vector/matrix
// temporaries through the stack (the 16^3 soft grid's tet kernel ran 2x slower than
// warp's; forced inline, on par). Small user functions get SK_FUNC too; large ones and
// their adjoints are SK_USER_FUNC, g++'s choice (codegen.INLINE_STATEMENTS says why).
#define SK_FUNC inline __attribute__((always_inline))
#define SK_USER_FUNC inline
#define SK_DERIVED_FUNC inline
// Loops over a vector's or matrix's components unroll before anything else looks at
// them: every component access then has a constant index, so the composite lives in
// registers rather than on the stack.
#define SK_UNROLL _Pragma("GCC unroll 16")
// A kernel entry's dense loop (codegen.cpu_entry): optimized apart from its strided loop.
#define SK_NOINLINE __attribute__((noinline))
// The float16 conversions stay out of line on the CPU: forced inline at every operation of a
// half kernel, their branches (subnormals, rounding, inf and NaN) made g++ -O3 take 43 s on one
// kernel of Warp's matrix tests (its float32 twin 0.7 s), and a module of them 20 minutes;
// out of line 1.6 s.
#define SK_HALF_CONV inline __attribute__((noinline))
// Hidden: kernels reach their error record without a GOT load (a `while` loop checks it
// every iteration); Python reaches it through sk_get_error.
#define SK_GLOBAL_ATTR __attribute__((visibility("hidden")))
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#endif

#if defined(_WIN32)
#define SK_EXPORT extern "C" __declspec(dllexport)
#else
#define SK_EXPORT extern "C" __attribute__((visibility("default")))
#endif

namespace sk {

// Scalar math, spelled once for float and double so generated code never
// depends on which math library the target provides.
namespace m {
#define SK_UNARY(name)                                        \
    SK_FUNC float name(float x) { return ::name##f(x); }     \
    SK_FUNC double name(double x) { return ::name(x); }
SK_UNARY(sin) SK_UNARY(cos) SK_UNARY(tan) SK_UNARY(asin) SK_UNARY(acos) SK_UNARY(atan)
SK_UNARY(sqrt) SK_UNARY(exp) SK_UNARY(log) SK_UNARY(floor) SK_UNARY(ceil) SK_UNARY(round)
SK_UNARY(fabs) SK_UNARY(sinh) SK_UNARY(cosh) SK_UNARY(tanh) SK_UNARY(log2) SK_UNARY(log10)
SK_UNARY(trunc) SK_UNARY(erf) SK_UNARY(erfc) SK_UNARY(cbrt) SK_UNARY(rint)
#undef SK_UNARY
SK_FUNC float atan2(float y, float x) { return ::atan2f(y, x); }
SK_FUNC double atan2(double y, double x) { return ::atan2(y, x); }
SK_FUNC float pow(float x, float y) { return ::powf(x, y); }
SK_FUNC double pow(double x, double y) { return ::pow(x, y); }
SK_FUNC float fmod(float x, float y) { return ::fmodf(x, y); }
SK_FUNC double fmod(double x, double y) { return ::fmod(x, y); }
}  // namespace m

template <typename T> SK_FUNC T min_(T a, T b) { return a < b ? a : b; }
template <typename T> SK_FUNC T max_(T a, T b) { return a > b ? a : b; }
template <typename T> SK_FUNC T abs_(T a) { return a < T(0) ? -a : a; }
template <typename T> SK_FUNC T sign_(T a) { return a > T(0) ? T(1) : (a < T(0) ? T(-1) : T(0)); }

// Python's integer // and % round toward negative infinity; C++ truncates.
// Defined for every operand, alike on both targets: a zero divisor gives 0 (x86 would trap
// with SIGFPE and kill the process; PTX leaves the result unspecified), and the one
// overflowing quotient, the most negative value // -1, wraps to itself (x86 traps there
// too) with remainder 0. Debug mode reports a zero divisor (exprs.py, error code 3).
template <typename T> SK_FUNC bool minus_one_(T b) { return T(-1) < T(0) && b == T(-1); }
template <typename T> SK_FUNC T floordiv_(T a, T b) {
    if (b == T(0)) return T(0);
    if (minus_one_(b)) return T(uint64_t(0) - uint64_t(a));  // -a, wrapping: no signed overflow
    T q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> SK_FUNC T mod_(T a, T b) {
    if (b == T(0) || minus_one_(b)) return T(0);
    T r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
SK_FUNC float mod_(float a, float b) { float r = m::fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
SK_FUNC double mod_(double a, double b) { double r = m::fmod(a, b); return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
SK_FUNC float floordiv_(float a, float b) { return m::floor(a / b); }
SK_FUNC double floordiv_(double a, double b) { return m::floor(a / b); }

// The first value of reversed(range(start, end, step)): the last of range(start, end, step),
// or start - step when that range is empty (so the reversed loop from it to start - step runs none).
template <typename T> SK_FUNC T reversed_first_(T start, T end, T step) {
    T n = step > T(0) ? (end > start ? (end - start + step - T(1)) / step : T(0))
                      : (start > end ? (start - end - step - T(1)) / -step : T(0));
    return start + (n - T(1)) * step;
}

// Infinity and quiet NaN without <limits> (unavailable under NVRTC); constant
// bit patterns, so no volatile trick that would cost a memory round trip.
#ifdef SK_CUDA
SK_FUNC double inf_() { return __longlong_as_double(0x7ff0000000000000LL); }
SK_FUNC double nan_() { return __longlong_as_double(0x7ff8000000000000LL); }
#else
SK_FUNC double inf_() { return __builtin_huge_val(); }
SK_FUNC double nan_() { return __builtin_nan(""); }
#endif

template <typename To, typename From> SK_FUNC To cast(From x) { return To(x); }

// float16 (sk.float16): IEEE half-precision storage, float32 arithmetic. Every operation
// converts to float, computes, and rounds the result back to the nearest half (ties to
// even), so a chain of operations rounds after each step. Plain C++ on both targets: no
// cuda_fp16.h under NVRTC, and no compiler extension on the CPU.
SK_FUNC uint32_t f32_bits_(float f) {
#ifdef SK_CUDA
    return __float_as_uint(f);
#else
    uint32_t x; memcpy(&x, &f, 4); return x;
#endif
}
SK_FUNC float f32_of_bits_(uint32_t x) {
#ifdef SK_CUDA
    return __uint_as_float(x);
#else
    float f; memcpy(&f, &x, 4); return f;
#endif
}
SK_HALF_CONV uint16_t half_bits_(float f) {
    uint32_t x = f32_bits_(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));  // inf, NaN
    if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds past 65504: inf
    if (ax <= 0x33000000u) return uint16_t(sign);             // at most 2^-25: rounds to zero
    uint32_t e = ax >> 23, mant = (ax & 0x7fffffu) | 0x800000u;
    if (e < 113) {  // below 2^-14: a subnormal half, in units of 2^-24
        uint32_t shift = 126 - e, r = mant >> shift, rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (r & 1u))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = ((e - 112) << 10) | ((ax >> 13) & 0x3ffu), rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;  // a carry moves into the exponent, as it should
    return uint16_t(sign | r);
}
SK_HALF_CONV float half_to_float_(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (e == 0x1fu) return f32_of_bits_(sign | 0x7f800000u | (mant << 13));
    if (e == 0) {
        float v = float(mant) * 5.9604644775390625e-08f;  // mant * 2^-24
        return sign ? -v : v;
    }
    return f32_of_bits_(sign | ((e + 112) << 23) | (mant << 13));
}
// Built-in arithmetic types only convert to half implicitly: a converting constructor open
// to every type would make other types' operators (hvp's dual numbers) ambiguous.
template <typename T> struct is_arith_ { static constexpr bool value = false; };
#define SK_ARITH(T) template <> struct is_arith_<T> { static constexpr bool value = true; };
SK_ARITH(bool) SK_ARITH(float) SK_ARITH(double) SK_ARITH(signed char) SK_ARITH(unsigned char) SK_ARITH(short)
SK_ARITH(unsigned short) SK_ARITH(int) SK_ARITH(unsigned) SK_ARITH(long) SK_ARITH(unsigned long) SK_ARITH(long long)
SK_ARITH(unsigned long long)
#undef SK_ARITH
template <bool B> struct enable_if_ {};
template <> struct enable_if_<true> { typedef int type; };
// bfloat16 (sk.bfloat16): float32's exponent with 7 stored mantissa bits; converted by rounding
// float32's pattern to its upper 16 bits, ties to even (a NaN stays a quiet NaN).
SK_FUNC uint16_t bf16_bits_(float f) {
    uint32_t x = f32_bits_(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
    return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
SK_FUNC float bf16_to_float_(uint16_t b) { return f32_of_bits_(uint32_t(b) << 16); }
// A 16-bit float H stored as its pattern, computed in float: every operation converts to float,
// computes, and rounds the result back to H. With a float or double it computes in that type.
#define SK_SMALL_FLOAT(H, TO_BITS, TO_FLOAT)                                                             \
    struct H {                                                                                           \
        uint16_t bits;                                                                                   \
        H() = default;                                                                                   \
        template <typename T, typename enable_if_<is_arith_<T>::value>::type = 0>                        \
        SK_FUNC H(T x) : bits(TO_BITS(float(x))) {}                                                      \
        SK_FUNC operator float() const { return TO_FLOAT(bits); }                                        \
        SK_FUNC H operator-() const { H r; r.bits = uint16_t(bits ^ 0x8000u); return r; }                \
        SK_FUNC H operator+() const { return *this; }                                                    \
    };                                                                                                   \
    SK_SMALL_FLOAT_OP(H, +) SK_SMALL_FLOAT_OP(H, -) SK_SMALL_FLOAT_OP(H, *) SK_SMALL_FLOAT_OP(H, /)      \
    SK_SMALL_FLOAT_CMP(H, <) SK_SMALL_FLOAT_CMP(H, <=) SK_SMALL_FLOAT_CMP(H, >) SK_SMALL_FLOAT_CMP(H, >=) \
    SK_SMALL_FLOAT_CMP(H, ==) SK_SMALL_FLOAT_CMP(H, !=)
#define SK_SMALL_FLOAT_OP(H, op)                                                                         \
    SK_FUNC H operator op(H a, H b) { return H(float(a) op float(b)); }                                  \
    SK_FUNC float operator op(H a, float b) { return float(a) op b; }                                    \
    SK_FUNC float operator op(float a, H b) { return a op float(b); }                                    \
    SK_FUNC double operator op(H a, double b) { return double(float(a)) op b; }                          \
    SK_FUNC double operator op(double a, H b) { return a op double(float(b)); }                          \
    SK_FUNC H operator op(H a, int b) { return H(float(a) op float(b)); }                                \
    SK_FUNC H operator op(int a, H b) { return H(float(a) op float(b)); }                                \
    SK_FUNC H& operator op##=(H& a, H b) { a = a op b; return a; }                                       \
    SK_FUNC H& operator op##=(H& a, float b) { a = H(float(a) op b); return a; }
#define SK_SMALL_FLOAT_CMP(H, op)                                                                        \
    SK_FUNC bool operator op(H a, H b) { return float(a) op float(b); }                                  \
    SK_FUNC bool operator op(H a, float b) { return float(a) op b; }                                     \
    SK_FUNC bool operator op(float a, H b) { return a op float(b); }                                     \
    SK_FUNC bool operator op(H a, int b) { return float(a) op float(b); }                                \
    SK_FUNC bool operator op(int a, H b) { return float(a) op float(b); }
SK_SMALL_FLOAT(half, half_bits_, half_to_float_)
SK_SMALL_FLOAT(bfloat16, bf16_bits_, bf16_to_float_)
#undef SK_SMALL_FLOAT
#undef SK_SMALL_FLOAT_OP
#undef SK_SMALL_FLOAT_CMP
namespace m {
#define SK_UNARY(name)                                                            \
    SK_FUNC half name(half x) { return half(name(float(x))); }                    \
    SK_FUNC bfloat16 name(bfloat16 x) { return bfloat16(name(float(x))); }
SK_UNARY(sin) SK_UNARY(cos) SK_UNARY(tan) SK_UNARY(asin) SK_UNARY(acos) SK_UNARY(atan)
SK_UNARY(sqrt) SK_UNARY(exp) SK_UNARY(log) SK_UNARY(floor) SK_UNARY(ceil) SK_UNARY(round)
SK_UNARY(fabs) SK_UNARY(sinh) SK_UNARY(cosh) SK_UNARY(tanh) SK_UNARY(log2) SK_UNARY(log10)
SK_UNARY(trunc)
#undef SK_UNARY
#define SK_BINARY(name)                                                                              \
    SK_FUNC half name(half x, half y) { return half(name(float(x), float(y))); }                     \
    SK_FUNC bfloat16 name(bfloat16 x, bfloat16 y) { return bfloat16(name(float(x), float(y))); }
SK_BINARY(atan2) SK_BINARY(pow) SK_BINARY(fmod)
#undef SK_BINARY
}  // namespace m
// The 16-bit floats: stored as their pattern, so atomics work on the 16-bit word.
template <typename T> struct is_half_ { static constexpr bool value = false; };
template <> struct is_half_<half> { static constexpr bool value = true; };
template <> struct is_half_<bfloat16> { static constexpr bool value = true; };
SK_FUNC half mod_(half a, half b) { return half(mod_(float(a), float(b))); }
SK_FUNC half floordiv_(half a, half b) { return half(floordiv_(float(a), float(b))); }
SK_FUNC bfloat16 mod_(bfloat16 a, bfloat16 b) { return bfloat16(mod_(float(a), float(b))); }
SK_FUNC bfloat16 floordiv_(bfloat16 a, bfloat16 b) { return bfloat16(floordiv_(float(a), float(b))); }

}  // namespace sk
