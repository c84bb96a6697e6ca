// simkit native arrays, launch bounds, atomics and runtime error reporting.
// array_t has the same 80-byte layout on CPU and CUDA, and for every ndim, so the
// Python packer writes one header shape for all arrays.
#pragma once
#include "vec.h"

namespace sk {

template <typename T, int D> struct array_t {
    T* data;
    T* grad;              // null when the array does not require grad
    int64_t shape[4];
    int64_t strides[4];   // in bytes
};

struct launch_t {
    int64_t shape[4];
    int32_t ndim;
    int32_t pad_;
    int64_t size;
};

// Component k of the thread index of linear thread id `idx` (row-major grid).
SK_FUNC int32_t tid(const launch_t& L, int64_t idx, int k) {
    if (L.ndim == 1) return int32_t(idx);  // the common case: no division per element
    for (int d = L.ndim - 1; d > k; --d) idx /= L.shape[d];
    return int32_t(idx % L.shape[k]);
}

// First error wins; Python reads it after the launch and raises.
struct error_t {
    int32_t code;  // 0 none, 1 index out of bounds, 2 loop stack overflow, 3 integer division by zero,
                   // 4 interrupted (Ctrl-C: the CPU runtime sets it, runtime.cpp), 5 grid larger
                   // than an array (runtime.cpp refused the launch), 6 component index out of range
    int32_t line;
    int32_t dim;
    int32_t ndim;
    int64_t index[4];
    int64_t shape[4];
};

// Whether the running launch should stop: its module's error record holds a code (an
// error in some thread, or Ctrl-C). Checked at every iteration of a `while` loop on the
// CPU, where an endless loop must stay interruptible; GPU loops do not pay for it.
#ifdef SK_CUDA
#define SK_STOPPING() false
#else
#define SK_STOPPING() (__atomic_load_n(&sk_error.code, __ATOMIC_RELAXED) != 0)
#endif

SK_FUNC bool claim_error(error_t* e) {
#ifdef SK_CUDA
    return atomicCAS(&e->code, 0, -1) == 0;
#else
    int32_t expected = 0;
    return __atomic_compare_exchange_n(&e->code, &expected, -1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
#endif
}

// N > 0: check only the first N indices (those of a sub-array view a[i], see view()).
template <int N = 0, typename T, int D>
SK_FUNC bool check_bounds(error_t* e, int line, const array_t<T, D>& a, int64_t i, int64_t j = 0, int64_t k = 0, int64_t l = 0) {
    const int64_t idx[4] = {i, j, k, l};
    for (int d = 0; d < (N ? N : D); ++d) {
        if (idx[d] < 0 || idx[d] >= a.shape[d]) {
            if (claim_error(e)) {
                e->line = line; e->dim = d; e->ndim = D;
                for (int q = 0; q < 4; ++q) { e->index[q] = idx[q]; e->shape[q] = a.shape[q]; }
#ifdef SK_CUDA
                __threadfence();
                atomicExch(&e->code, 1);
#else
                __atomic_store_n(&e->code, 1, __ATOMIC_RELEASE);
#endif
            }
            return false;
        }
    }
    return true;
}

SK_FUNC void report_error(error_t* e, int code, int line) {
    if (claim_error(e)) {
        e->line = line;
#ifdef SK_CUDA
        __threadfence();
        atomicExch(&e->code, code);
#else
        __atomic_store_n(&e->code, code, __ATOMIC_RELEASE);
#endif
    }
}

template <typename T> SK_FUNC T* offset_(T* base, int64_t bytes) { return (T*)((char*)base + bytes); }

// Element access. Dense = false: any layout, through the byte strides (numpy views,
// transposes, slices with steps). Dense = true: the generated entry checked that every
// array of the launch is row-major without gaps (sk::dense), so the innermost axis has a
// compile-time element stride: the C++ compiler sees unit-stride accesses and vectorizes.
template <bool Dense = false, typename T> SK_FUNC T& at(const array_t<T, 1>& a, int64_t i) {
    if constexpr (Dense) return a.data[i];
    else return *offset_(a.data, i * a.strides[0]);
}
template <bool Dense = false, typename T> SK_FUNC T& at(const array_t<T, 2>& a, int64_t i, int64_t j) {
    if constexpr (Dense) return a.data[i * a.shape[1] + j];
    else return *offset_(a.data, i * a.strides[0] + j * a.strides[1]);
}
template <bool Dense = false, typename T> SK_FUNC T& at(const array_t<T, 3>& a, int64_t i, int64_t j, int64_t k) {
    if constexpr (Dense) return a.data[(i * a.shape[1] + j) * a.shape[2] + k];
    else return *offset_(a.data, i * a.strides[0] + j * a.strides[1] + k * a.strides[2]);
}
template <bool Dense = false, typename T> SK_FUNC T& at(const array_t<T, 4>& a, int64_t i, int64_t j, int64_t k, int64_t l) {
    if constexpr (Dense) return a.data[((i * a.shape[1] + j) * a.shape[2] + k) * a.shape[3] + l];
    else return *offset_(a.data, i * a.strides[0] + j * a.strides[1] + k * a.strides[2] + l * a.strides[3]);
}

// a[i] of a D-dimensional array (D > 1): the (D-1)-dimensional sub-array at index i, sharing
// memory and gradient with `a`. A view of a dense array is dense, so Dense addressing holds.
template <bool Dense = false, typename T, int D> SK_FUNC array_t<T, D - 1> view(const array_t<T, D>& a, int64_t i) {
    int64_t row = int64_t(sizeof(T));
    for (int d = 1; d < D; ++d) row *= a.shape[d];
    const int64_t off = i * (Dense ? row : a.strides[0]);
    array_t<T, D - 1> v;
    v.data = offset_(a.data, off);
    v.grad = a.grad ? offset_(a.grad, off) : nullptr;
    for (int d = 0; d < 4; ++d) {
        v.shape[d] = d + 1 < 4 ? a.shape[d + 1] : 1;
        v.strides[d] = d + 1 < 4 ? a.strides[d + 1] : 0;
    }
    return v;
}

// Whether `a` is row-major without gaps, so that at<true> finds the same elements as
// at<false>. An axis of extent 1 is only ever indexed at 0, so its stride does not matter
// (numpy gives such axes arbitrary strides); an empty array is never indexed. Elements
// whose C++ size differs from the stride numpy gives them are never dense.
template <typename T, int D> SK_FUNC bool dense(const array_t<T, D>& a) {
    int64_t expect = int64_t(sizeof(T));
    for (int d = D - 1; d >= 0; --d) {
        if (a.shape[d] == 0) return true;
        if (a.shape[d] > 1 && a.strides[d] != expect) return false;
        expect *= a.shape[d];
    }
    return true;
}

// The thread index of a kernel instantiated Dense: the entry runs it only on 1-D grids.
template <bool Dense> SK_FUNC int32_t tid(const launch_t& L, int64_t idx, int k) {
    if constexpr (Dense) return int32_t(idx);
    else return tid(L, idx, k);
}

// The gradient buffer shares the data's strides (grads are allocated alike).
template <bool Dense = false, typename T, int D, typename... I> SK_FUNC T* grad_ptr(const array_t<T, D>& a, I... idx) {
    if (!a.grad) return nullptr;
    array_t<T, D> g = a;
    g.data = a.grad;
    return &at<Dense>(g, idx...);
}

// A field of a struct element, through a pointer that may be null (a grad_ptr of an array of
// structs): a[i].x reads and writes that field of a[i] alone, and its gradient alike.
template <typename S, typename F> SK_FUNC F* field_ptr(S* p, F S::*field) { return p ? &(p->*field) : nullptr; }

// ---------------------------------------------------------------------------
// Atomics: scalars natively, composites component by component.
// ---------------------------------------------------------------------------
#ifdef SK_CUDA
SK_FUNC float atomic_add_(float* p, float v) { return atomicAdd(p, v); }
SK_FUNC double atomic_add_(double* p, double v) { return atomicAdd(p, v); }
SK_FUNC int32_t atomic_add_(int32_t* p, int32_t v) { return atomicAdd(p, v); }
SK_FUNC uint32_t atomic_add_(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
SK_FUNC int64_t atomic_add_(int64_t* p, int64_t v) { return (int64_t)atomicAdd((unsigned long long*)p, (unsigned long long)v); }
SK_FUNC uint64_t atomic_add_(uint64_t* p, uint64_t v) { return atomicAdd((unsigned long long*)p, (unsigned long long)v); }
SK_FUNC uint64_t atomic_min_(uint64_t* p, uint64_t v) { return atomicMin((unsigned long long*)p, (unsigned long long)v); }
SK_FUNC uint64_t atomic_max_(uint64_t* p, uint64_t v) { return atomicMax((unsigned long long*)p, (unsigned long long)v); }
SK_FUNC int32_t atomic_min_(int32_t* p, int32_t v) { return atomicMin(p, v); }
SK_FUNC int32_t atomic_max_(int32_t* p, int32_t v) { return atomicMax(p, v); }
SK_FUNC uint32_t atomic_min_(uint32_t* p, uint32_t v) { return atomicMin(p, v); }
SK_FUNC uint32_t atomic_max_(uint32_t* p, uint32_t v) { return atomicMax(p, v); }
SK_FUNC int64_t atomic_min_(int64_t* p, int64_t v) { return atomicMin((long long*)p, (long long)v); }
SK_FUNC int64_t atomic_max_(int64_t* p, int64_t v) { return atomicMax((long long*)p, (long long)v); }
// Floating-point min/max have no hardware atomic: a compare-and-swap loop on the
// bit pattern, leaving memory untouched once it already holds the better value.
SK_FUNC float cas_minmax_(float* p, float v, bool take_min) {
    unsigned int* up = (unsigned int*)p;
    unsigned int old = *up, assumed;
    do {
        assumed = old;
        float cur = __uint_as_float(assumed);
        if (take_min ? !(v < cur) : !(v > cur)) return cur;
        old = atomicCAS(up, assumed, __float_as_uint(v));
    } while (assumed != old);
    return __uint_as_float(old);
}
SK_FUNC double cas_minmax_(double* p, double v, bool take_min) {
    unsigned long long* up = (unsigned long long*)p;
    unsigned long long old = *up, assumed;
    do {
        assumed = old;
        double cur = __longlong_as_double((long long)assumed);
        if (take_min ? !(v < cur) : !(v > cur)) return cur;
        old = atomicCAS(up, assumed, (unsigned long long)__double_as_longlong(v));
    } while (assumed != old);
    return __longlong_as_double((long long)old);
}
// float16, bfloat16: a compare-and-swap loop on the 16-bit pattern (sm_70 and later have a 16-bit atomicCAS).
template <typename H> SK_FUNC H cas_half_(H* p, H v, int op) {  // op 0: add, 1: min, 2: max
    unsigned short* up = (unsigned short*)p;
    unsigned short old = *up, assumed;
    do {
        assumed = old;
        H cur; cur.bits = assumed;
        if ((op == 1 && !(v < cur)) || (op == 2 && !(v > cur))) return cur;
        H next = op == 0 ? cur + v : v;
        old = atomicCAS(up, assumed, next.bits);
    } while (assumed != old);
    H r; r.bits = old; return r;
}
SK_FUNC half atomic_add_(half* p, half v) { return cas_half_(p, v, 0); }
SK_FUNC half atomic_min_(half* p, half v) { return cas_half_(p, v, 1); }
SK_FUNC half atomic_max_(half* p, half v) { return cas_half_(p, v, 2); }
SK_FUNC bfloat16 atomic_add_(bfloat16* p, bfloat16 v) { return cas_half_(p, v, 0); }
SK_FUNC bfloat16 atomic_min_(bfloat16* p, bfloat16 v) { return cas_half_(p, v, 1); }
SK_FUNC bfloat16 atomic_max_(bfloat16* p, bfloat16 v) { return cas_half_(p, v, 2); }
SK_FUNC float atomic_min_(float* p, float v) { return cas_minmax_(p, v, true); }
SK_FUNC float atomic_max_(float* p, float v) { return cas_minmax_(p, v, false); }
SK_FUNC double atomic_min_(double* p, double v) { return cas_minmax_(p, v, true); }
SK_FUNC double atomic_max_(double* p, double v) { return cas_minmax_(p, v, false); }
#else
// True while the running entry call adds alone into every array it accumulates into: it
// runs the whole grid, or its part of a grid whose shared accumulators are private copies
// (runtime.cpp), or the kernel only adds into its own elements. Accumulation is then a
// plain read-modify-write instead of an atomic, which for a float is a compare-and-swap
// loop of ~20 cycles. The runtime runs one launch at a time, so one plain global per
// module serves: a thread_local read from a shared library calls __tls_get_addr, as slow
// as the atomic it would save; relaxed atomic loads and stores are plain moves on x86.
static std::atomic<bool> plain_adds{false};

// Floats have no fetch_add: compare-and-swap on their bit pattern (Bits: same-size unsigned int).
template <typename T, typename Bits> SK_FUNC T cas_add_(T* p, T v) {
    Bits old = __atomic_load_n((Bits*)p, __ATOMIC_RELAXED), next;
    T cur;
    do {
        memcpy(&cur, &old, sizeof(T));
        T sum = cur + v;
        memcpy(&next, &sum, sizeof(T));
    } while (!__atomic_compare_exchange_n((Bits*)p, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return cur;
}
template <typename T> SK_FUNC T atomic_add_(T* p, T v) {
    if (plain_adds.load(std::memory_order_relaxed)) {
        T cur = *p;
        *p = cur + v;
        return cur;
    }
    if constexpr (is_half_<T>::value) return cas_add_<T, uint16_t>(p, v);
    else if constexpr (sizeof(T) == 4 && (T(0.5) != T(0))) return cas_add_<T, uint32_t>(p, v);
    else if constexpr (sizeof(T) == 8 && (T(0.5) != T(0))) return cas_add_<T, uint64_t>(p, v);
    else return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
template <typename T> SK_FUNC T atomic_minmax_(T* p, T v, bool take_min) {
    T cur;
    __atomic_load(p, &cur, __ATOMIC_RELAXED);  // generic form: works for float and double too
    while (take_min ? (v < cur) : (v > cur)) {
        if (__atomic_compare_exchange(p, &cur, &v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;
    }
    return cur;
}
template <typename T> SK_FUNC T atomic_min_(T* p, T v) { return atomic_minmax_(p, v, true); }
template <typename T> SK_FUNC T atomic_max_(T* p, T v) { return atomic_minmax_(p, v, false); }
#endif

// Composite overloads: per component; the returned old value is assembled alike.
#define SK_ATOMIC_COMPOSITE(name)                                                           \
    template <typename V> SK_FUNC V name##_v(V* p, const V& v) {                           \
        V old;                                                                              \
        SK_UNROLL for (int i = 0; i < traits<V>::size; ++i)                                          \
            traits<V>::at(old, i) = name##_(&traits<V>::at(*p, i), traits<V>::at(v, i));   \
        return old;                                                                         \
    }
SK_ATOMIC_COMPOSITE(atomic_add)
SK_ATOMIC_COMPOSITE(atomic_min)
SK_ATOMIC_COMPOSITE(atomic_max)
#undef SK_ATOMIC_COMPOSITE

// The plain_adds test once per composite, not per component: one branch before straight-line
// adds the compiler can vectorize (a vec3 add was three branches, and on one thread the
// 100x100 cloth's spring kernel took 327 us instead of 220 us).
template <typename T> SK_FUNC T atomic_add_any(T* p, const T& v) {
#ifndef SK_CUDA
    if (__builtin_expect(plain_adds.load(std::memory_order_relaxed), 1)) {
        T cur = *p;
        SK_UNROLL for (int i = 0; i < traits<T>::size; ++i) traits<T>::at(*p, i) += traits<T>::at(v, i);
        return cur;
    }
#endif
    if constexpr (traits<T>::size == 1) return atomic_add_(p, v); else return atomic_add_v(p, v);
}
template <typename T> SK_FUNC T atomic_min_any(T* p, const T& v) {
    if constexpr (traits<T>::size == 1) return atomic_min_(p, v); else return atomic_min_v(p, v);
}
template <typename T> SK_FUNC T atomic_max_any(T* p, const T& v) {
    if constexpr (traits<T>::size == 1) return atomic_max_(p, v); else return atomic_max_v(p, v);
}

// Atomic exchange (scalars natively, composites component by component): the adjoint
// of a store another thread may have stored to as well hands its gradient to one thread.
#ifdef SK_CUDA
SK_FUNC float atomic_exchange_(float* p, float v) { return atomicExch(p, v); }
SK_FUNC double atomic_exchange_(double* p, double v) {
    return __longlong_as_double((long long)atomicExch((unsigned long long*)p, (unsigned long long)__double_as_longlong(v)));
}
template <typename H> SK_FUNC H exchange_half_(H* p, H v) {
    unsigned short* up = (unsigned short*)p;
    unsigned short old = *up, assumed;
    do {
        assumed = old;
        old = atomicCAS(up, assumed, v.bits);
    } while (assumed != old);
    H r; r.bits = old; return r;
}
SK_FUNC half atomic_exchange_(half* p, half v) { return exchange_half_(p, v); }
SK_FUNC bfloat16 atomic_exchange_(bfloat16* p, bfloat16 v) { return exchange_half_(p, v); }
#else
template <typename T> SK_FUNC T atomic_exchange_(T* p, T v) {
    T old;
    __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
    return old;
}
#endif

// Adjoint of a store `a[i] = v`: the gradient of the element passes to v and is reset to
// zero, because the value the store replaced no longer influences anything (so an earlier
// write of the same element, in this launch or an earlier one, receives nothing from it).
template <typename T> SK_FUNC void take_grad(T* g, T& adj) {
    if (g) { adj += *g; *g = T{}; }
}
// The same at an element other threads may store to: exactly one of them takes it.
template <typename T> SK_FUNC void take_grad_shared(T* g, T& adj) {
    if (!g) return;
    SK_UNROLL for (int i = 0; i < traits<T>::size; ++i)
        traits<T>::at(adj, i) += atomic_exchange_(&traits<T>::at(*g, i), typename traits<T>::scalar(0));
}
// Adjoint of atomic_min/atomic_max: per component, the contender equal to the final value
// (the winner) takes the gradient; on a tie exactly one of the tied contenders does. When
// no contender won, the gradient stays with the element's earlier value.
template <typename T> SK_FUNC void take_grad_if_won(T* g, const T& final_value, const T& v, T& adj) {
    if (!g) return;
    SK_UNROLL for (int i = 0; i < traits<T>::size; ++i)
        if (traits<T>::at(final_value, i) == traits<T>::at(v, i))
            traits<T>::at(adj, i) += atomic_exchange_(&traits<T>::at(*g, i), typename traits<T>::scalar(0));
}

// Accumulate an adjoint into a gradient buffer; a null buffer (no grad) is skipped.
// The same for an element only this thread touches (indexed by its whole thread index).
template <typename T> SK_FUNC void accum_grad_owned(T* g, const T& v) {
    if (g) *g += v;
}
template <typename T> SK_FUNC void accum_grad(T* g, const T& v) {
    if (g) atomic_add_any(g, v);
}

}  // namespace sk
