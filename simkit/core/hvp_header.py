"""The C++ of second-order (Hessian-vector product) modules: dual numbers and dual arrays.

A Hessian-vector product is computed forward-over-reverse (simkit/core/codegen_hvp.py):
each kernel's *adjoint* body is compiled a second time with every float replaced by
``sk::dual<float>`` (a value and its tangent), so every statement of the adjoint, the
builtins' adjoint rules and the forward replay included, also computes its directional
derivative. Arrays become ``darray_t``: the array (values in ``data``, adjoints in
``grad``) and, in ``t``, its tangent (``t.data``) and the tangent of its adjoint
(``t.grad``). A load reads a value with its tangent; an adjoint accumulation adds the
adjoint into ``grad`` and its tangent into ``t.grad``.

This text is part of every second-order module (no header of its own), so modules that
never take a Hessian-vector product compile exactly what they compiled before. The scalar
part comes before the builtins header: its templates name ``m::sin`` and the like by
qualified name, which C++ looks up where the template is defined.
"""

DUAL_SCALARS = r"""
#include <type_traits>
#include "base.h"
namespace sk {

// A value and its tangent. Arithmetic differentiates, comparisons look at values only.
template <typename T> struct dual {
    T v, d;
    SK_FUNC dual() : v(), d() {}
    SK_FUNC dual(T x) : v(x), d() {}
    SK_FUNC dual(T x, T dx) : v(x), d(dx) {}
    template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value && !std::is_same<U, T>::value>::type>
    SK_FUNC dual(U x) : v(T(x)), d() {}
    template <typename U> SK_FUNC explicit dual(const dual<U>& o) : v(T(o.v)), d(T(o.d)) {}
    template <typename U, typename = typename std::enable_if<std::is_arithmetic<U>::value>::type>
    SK_FUNC explicit operator U() const { return U(v); }
    friend SK_FUNC dual operator+(const dual& a, const dual& b) { return dual(a.v + b.v, a.d + b.d); }
    friend SK_FUNC dual operator-(const dual& a, const dual& b) { return dual(a.v - b.v, a.d - b.d); }
    friend SK_FUNC dual operator*(const dual& a, const dual& b) { return dual(a.v * b.v, a.d * b.v + a.v * b.d); }
    friend SK_FUNC dual operator/(const dual& a, const dual& b) {
        T q = a.v / b.v;
        return dual(q, (a.d - q * b.d) / b.v);
    }
    friend SK_FUNC dual operator-(const dual& a) { return dual(-a.v, -a.d); }
    friend SK_FUNC dual operator+(const dual& a) { return a; }
    SK_FUNC dual& operator+=(const dual& b) { v += b.v; d += b.d; return *this; }
    SK_FUNC dual& operator-=(const dual& b) { v -= b.v; d -= b.d; return *this; }
    SK_FUNC dual& operator*=(const dual& b) { *this = *this * b; return *this; }
    SK_FUNC dual& operator/=(const dual& b) { *this = *this / b; return *this; }
    friend SK_FUNC bool operator<(const dual& a, const dual& b) { return a.v < b.v; }
    friend SK_FUNC bool operator<=(const dual& a, const dual& b) { return a.v <= b.v; }
    friend SK_FUNC bool operator>(const dual& a, const dual& b) { return a.v > b.v; }
    friend SK_FUNC bool operator>=(const dual& a, const dual& b) { return a.v >= b.v; }
    friend SK_FUNC bool operator==(const dual& a, const dual& b) { return a.v == b.v; }
    friend SK_FUNC bool operator!=(const dual& a, const dual& b) { return a.v != b.v; }
};

template <typename V> struct traits;
template <typename T> struct traits<dual<T>> {
    typedef dual<T> scalar; static constexpr int size = 1;
    SK_FUNC static dual<T>& at(dual<T>& v, int) { return v; }
    SK_FUNC static const dual<T>& at(const dual<T>& v, int) { return v; }
};

namespace m {
#define SK_DUAL_UNARY(name, deriv)                                                            \
    template <typename T> SK_FUNC dual<T> name(const dual<T>& x) {                            \
        const T v = x.v;                                                                      \
        (void)v;                                                                              \
        return dual<T>(name(x.v), (deriv) * x.d);                                             \
    }
SK_DUAL_UNARY(sin, cos(v)) SK_DUAL_UNARY(cos, -sin(v)) SK_DUAL_UNARY(tan, T(1) / (cos(v) * cos(v)))
SK_DUAL_UNARY(asin, T(1) / sqrt(T(1) - v * v)) SK_DUAL_UNARY(acos, -T(1) / sqrt(T(1) - v * v))
SK_DUAL_UNARY(atan, T(1) / (T(1) + v * v)) SK_DUAL_UNARY(sqrt, T(1) / (T(2) * sqrt(v)))
SK_DUAL_UNARY(exp, exp(v)) SK_DUAL_UNARY(log, T(1) / v) SK_DUAL_UNARY(floor, T(0)) SK_DUAL_UNARY(ceil, T(0))
SK_DUAL_UNARY(round, T(0)) SK_DUAL_UNARY(trunc, T(0)) SK_DUAL_UNARY(fabs, v < T(0) ? T(-1) : T(1))
SK_DUAL_UNARY(sinh, cosh(v)) SK_DUAL_UNARY(cosh, sinh(v)) SK_DUAL_UNARY(tanh, T(1) - tanh(v) * tanh(v))
SK_DUAL_UNARY(log2, T(1) / (v * T(0.6931471805599453))) SK_DUAL_UNARY(log10, T(1) / (v * T(2.302585092994046)))
#undef SK_DUAL_UNARY
template <typename T> SK_FUNC dual<T> atan2(const dual<T>& y, const dual<T>& x) {
    return dual<T>(atan2(y.v, x.v), (x.v * y.d - y.v * x.d) / (x.v * x.v + y.v * y.v));
}
template <typename T> SK_FUNC dual<T> pow(const dual<T>& x, const dual<T>& y) {
    const T r = pow(x.v, y.v);
    T d = y.v * pow(x.v, y.v - T(1)) * x.d;
    if (x.v > T(0)) d += log(x.v) * r * y.d;
    return dual<T>(r, d);
}
template <typename T> SK_FUNC dual<T> fmod(const dual<T>& x, const dual<T>& y) {
    return dual<T>(fmod(x.v, y.v), x.d - trunc(x.v / y.v) * y.d);
}
}  // namespace m

template <typename T> SK_FUNC dual<T> floordiv_(const dual<T>& a, const dual<T>& b) { return dual<T>(floordiv_(a.v, b.v)); }
template <typename T> SK_FUNC dual<T> mod_(const dual<T>& a, const dual<T>& b) {
    return dual<T>(mod_(a.v, b.v), a.d - floordiv_(a.v, b.v) * b.d);
}

}  // namespace sk
"""

# After the builtins: dual composites and arrays.
DUAL_ARRAYS = r"""
namespace sk {

// The dual type of a value type (floats and composites of them; others stay) and back.
template <typename T> struct dualize { typedef T type; };
template <> struct dualize<float> { typedef dual<float> type; };
template <> struct dualize<double> { typedef dual<double> type; };
template <int N, typename T> struct dualize<vec_t<N, T>> { typedef vec_t<N, typename dualize<T>::type> type; };
template <int R, int C, typename T> struct dualize<mat_t<R, C, T>> { typedef mat_t<R, C, typename dualize<T>::type> type; };
template <typename T> struct dualize<quat_t<T>> { typedef quat_t<typename dualize<T>::type> type; };
template <typename T> struct dualize<transform_t<T>> { typedef transform_t<typename dualize<T>::type> type; };
template <typename T> struct undual { typedef T type; };
template <typename T> struct undual<dual<T>> { typedef T type; };
template <int N, typename T> struct undual<vec_t<N, T>> { typedef vec_t<N, typename undual<T>::type> type; };
template <int R, int C, typename T> struct undual<mat_t<R, C, T>> { typedef mat_t<R, C, typename undual<T>::type> type; };
template <typename T> struct undual<quat_t<T>> { typedef quat_t<typename undual<T>::type> type; };
template <typename T> struct undual<transform_t<T>> { typedef transform_t<typename undual<T>::type> type; };
template <typename T> using dual_of = typename dualize<T>::type;
template <typename T> constexpr bool is_dualized = !std::is_same<typename undual<T>::type, T>::value;

template <typename T> SK_FUNC dual_of<T> make_dual(const T& v, const T& d) {
    dual_of<T> r;
    SK_UNROLL for (int i = 0; i < traits<T>::size; ++i)
        traits<dual_of<T>>::at(r, i) = typename traits<dual_of<T>>::scalar(traits<T>::at(v, i), traits<T>::at(d, i));
    return r;
}
template <typename T> SK_FUNC T value_of(const dual_of<T>& x) {
    T r;
    SK_UNROLL for (int i = 0; i < traits<T>::size; ++i) traits<T>::at(r, i) = traits<dual_of<T>>::at(x, i).v;
    return r;
}
template <typename T> SK_FUNC T tangent_of(const dual_of<T>& x) {
    T r;
    SK_UNROLL for (int i = 0; i < traits<T>::size; ++i) traits<T>::at(r, i) = traits<dual_of<T>>::at(x, i).d;
    return r;
}
// A value with a zero tangent (a kernel's non-array arguments are constants, as in forward mode).
template <typename T> SK_FUNC dual_of<T> to_dual(const T& v) {
    if constexpr (std::is_same<dual_of<T>, T>::value) return v;
    else return make_dual(v, T{});
}

// A float array in a second-order launch: the array (data: values, grad: adjoints) and in
// t its tangents (t.data) and the tangents of its adjoints (t.grad); null where zero.
template <typename T, int D> struct darray_t : array_t<T, D> {
    array_t<T, D> t;
};
template <typename E, int D> using hvp_array =
    typename std::conditional<is_dualized<E>, darray_t<typename undual<E>::type, D>, array_t<E, D>>::type;

template <typename T, int D> SK_FUNC auto hvp_arg(const array_t<T, D>& p, const array_t<T, D>& t) {
    if constexpr (is_dualized<dual_of<T>>) {
        darray_t<T, D> a;
        static_cast<array_t<T, D>&>(a) = p;
        a.t = t;
        return a;
    } else {
        return p;
    }
}
template <typename T> SK_FUNC dual_of<T> hvp_arg(const T& p, const T&) { return to_dual(p); }

template <bool Dense = false, typename T, int D, typename... I> SK_FUNC dual_of<T> at(const darray_t<T, D>& a, I... idx) {
    const T v = at<Dense>(static_cast<const array_t<T, D>&>(a), idx...);
    return make_dual(v, a.t.data ? at<Dense>(a.t, idx...) : T{});
}
template <bool Dense = false, typename T, int D> SK_FUNC darray_t<T, D - 1> view(const darray_t<T, D>& a, int64_t i) {
    darray_t<T, D - 1> r;
    static_cast<array_t<T, D - 1>&>(r) = view<Dense>(static_cast<const array_t<T, D>&>(a), i);
    r.t = view<Dense>(a.t, i);
    if (!a.t.data) r.t.data = nullptr;
    return r;
}

// An element's adjoint and the adjoint's tangent (null where the array has none).
template <typename T> struct dptr {
    T* g;
    T* t;
    SK_FUNC explicit operator bool() const { return g != nullptr; }
    SK_FUNC dual_of<T> operator*() const { return make_dual(*g, t ? *t : T{}); }
};
template <bool Dense = false, typename T, int D, typename... I> SK_FUNC dptr<T> grad_ptr(const darray_t<T, D>& a, I... idx) {
    return dptr<T>{grad_ptr<Dense>(static_cast<const array_t<T, D>&>(a), idx...), grad_ptr<Dense>(a.t, idx...)};
}
template <typename T> SK_FUNC void accum_grad(const dptr<T>& p, const dual_of<T>& v) {
    accum_grad(p.g, value_of<T>(v));
    accum_grad(p.t, tangent_of<T>(v));
}
template <typename T> SK_FUNC void accum_grad_owned(const dptr<T>& p, const dual_of<T>& v) {
    accum_grad_owned(p.g, value_of<T>(v));
    accum_grad_owned(p.t, tangent_of<T>(v));
}
template <typename T> SK_FUNC void take_grad(const dptr<T>& p, dual_of<T>& adj) {
    T a{}, b{};
    take_grad(p.g, a);
    take_grad(p.t, b);
    adj += make_dual(a, b);
}
template <typename T> SK_FUNC void take_grad_shared(const dptr<T>& p, dual_of<T>& adj) {
    T a{}, b{};
    take_grad_shared(p.g, a);
    take_grad_shared(p.t, b);
    adj += make_dual(a, b);
}
template <typename T> SK_FUNC void take_grad_if_won(const dptr<T>& p, const dual_of<T>& final_value, const dual_of<T>& v, dual_of<T>& adj) {
    T a{}, b{};
    take_grad_if_won(p.g, value_of<T>(final_value), value_of<T>(v), a);
    take_grad_if_won(p.t, value_of<T>(final_value), value_of<T>(v), b);
    adj += make_dual(a, b);
}

}  // namespace sk
"""
