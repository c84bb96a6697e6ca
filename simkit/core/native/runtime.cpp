// simkit CPU runtime: splits a kernel launch's grid over the thread pool (pool.h). Small
// grids run inline on the calling thread, so a launch of a few elements costs one
// function call and never wakes a worker.
//
// A kernel entry is fn(args, start, end, exclusive): it runs elements [start, end), and
// `exclusive` says that this call alone adds into every array it accumulates into, so
// its adds are plain read-modify-writes instead of atomics (see sk::plain_adds).
//
// Ctrl-C: while a launch runs, SIGINT sets the launch's error code to INTERRUPTED instead
// of reaching Python (whose handler could only run once the launch returned, which a
// kernel stuck in `while True` never does). Every range runs in slices of ~10 ms
// (run_sliced), and no further slice or chunk starts once the code is set; generated entries
// leave within 32 elements and `while` loops at their next iteration (SK_STOPPING in
// array.h), and Python raises KeyboardInterrupt after the launch (launch.py). Outside
// launches SIGINT goes on to Python's handler (sk_catch_interrupts).
#include <cstring>

#include "pool.h"

#if defined(__unix__) || defined(__APPLE__)
#include <csignal>
#include <unistd.h>
#define SK_SIGINT 1
#endif

#define SK_EXPORT extern "C" __attribute__((visibility("default")))


typedef void (*entry_t)(const void* args, int64_t start, int64_t end, bool exclusive);

// An array a kernel accumulates into from any thread's elements (forces, gradients), found
// by simkit.core.private: the array header at `offset` in the args struct, its data or
// (grad != 0) its gradient, of `ndim` dimensions and `elem_bytes`-byte elements made of
// scalars of kind `scalar` (0 float32, 1 float64, 2 32-bit int, 3 64-bit int).
struct private_t {
    int64_t offset;
    int32_t grad;
    int32_t ndim;
    int32_t scalar;
    int32_t elem_bytes;
};

// A launch described once per kernel: the grid size is read from the args struct,
// whose first member is sk::launch_t (shape[4], ndim, pad, size).
struct job_t {
    entry_t fn;
    const void* args;
    int64_t args_size;
    int64_t grain;        // grids smaller than this run inline
    int64_t min_threads;  // threads from which an atomic split pays (when npriv < 0)
    const private_t* priv;
    int64_t npriv;        // -1: some accumulation cannot be made private; it needs atomics
    int32_t* error;       // sk::error_t of the kernel's module: a nonzero code stops the launch
    // (dim word, shape word) pairs of int64 words of the args struct: every thread indexes an
    // array axis whose extent is the shape word by the thread-index component whose extent is
    // the dim word, so a grid wider than the array is refused before it runs (launch.py).
    const int64_t* extents;
    int64_t nextents;
    const char* name;     // "kernel 'name' (file)", for the crash report (or null)
};

// Error codes the runtime leaves in a kernel module's record (sk::error_t in array.h).
constexpr int32_t INTERRUPTED = 4;   // Ctrl-C stopped the launch
constexpr int32_t EXTENT_ERROR = 5;  // refused: extents[2 * dim + 1] < extents[2 * dim]; nothing ran

// Refuse a grid larger than an array its threads index: false, and the error record names
// the failing pair in its `dim` field (code, line, dim: the record's first three int32s).
bool extents_fit(const job_t& job) {
    const int64_t* words = static_cast<const int64_t*>(job.args);
    for (int64_t k = 0; k < job.nextents; ++k) {
        if (words[job.extents[2 * k + 1]] < words[job.extents[2 * k]]) {
            job.error[2] = int32_t(k);
            __atomic_store_n(job.error, EXTENT_ERROR, __ATOMIC_RELEASE);
            return false;
        }
    }
    return true;
}

namespace {

Pool* pool() {
    static Pool p(usable_cores() - 1);
    return &p;
}

// One launch runs at a time even when Python threads launch concurrently: a launch then
// owns its memory and the pool's scratch, and the pool is never resized under it.
std::mutex launching;

// The error code of the launch running now, where SIGINT leaves INTERRUPTED.
std::atomic<int32_t*> stop_target{nullptr};

// The kernel running now, named in the report of a fatal signal (on_fatal_signal).
std::atomic<const char*> running_kernel{nullptr};

// Marks the launch of `job` as the one Ctrl-C stops and a crash names, for its duration.
struct stoppable {
    explicit stoppable(const job_t& job) {
        running_kernel.store(job.name, std::memory_order_relaxed);
        stop_target.store(job.error, std::memory_order_release);
    }
    ~stoppable() {
        stop_target.store(nullptr, std::memory_order_release);
        running_kernel.store(nullptr, std::memory_order_relaxed);
    }
};

#ifdef SK_SIGINT
// -- crashes in release mode ----------------------------------------------------------
// Release mode does not check array accesses, so an index out of range can kill the
// process with SIGSEGV (or SIGBUS). Dying inside a kernel, the process first says which
// kernel and how to find the line, with write(2) only (async-signal-safe), then does what
// the handler it replaced did: Python's faulthandler when enabled (it prints the Python
// stack and re-raises), else the default action, so the exit status stays a crash.
constexpr int FATAL_SIGNALS[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr int NFATAL = sizeof(FATAL_SIGNALS) / sizeof(FATAL_SIGNALS[0]);
struct sigaction saved_fatal[NFATAL];

// Appends `text` to the report at `at` (bounded by `end`).
char* put(char* at, const char* end, const char* text) {
    while (*text && at < end) *at++ = *text++;
    return at;
}

// Set by the first thread that crashes: the others wait for it to end the process, so the
// report comes out once and whole.
std::atomic<bool> crashing{false};

extern "C" void on_fatal_signal(int sig, siginfo_t* info, void* context) {
    int k = 0;
    while (k < NFATAL - 1 && FATAL_SIGNALS[k] != sig) ++k;
    if (crashing.exchange(true)) {
        const timespec nap{0, 100000000};
        for (int i = 0; i < 50; ++i) nanosleep(&nap, nullptr);  // the first one's report ends the process
    }
    const char* name = running_kernel.load(std::memory_order_relaxed);
    if (name != nullptr) {
        const char* what = sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : "SIGILL";
        char report[4096];
        const char* end = report + sizeof(report) - 1;
        char* at = put(report, end, "\nsimkit: ");
        at = put(at, end, name);
        at = put(at, end, " crashed with ");
        at = put(at, end, what);
        at = put(at, end, " (release mode does not check array accesses; an index out of range is the usual "
                          "cause): rerun with SIMKIT_DEBUG=1 to get the index and line\n");
        for (const char* from = report; from < at;) {
            const ssize_t wrote = write(2, from, size_t(at - from));
            if (wrote <= 0) break;
            from += wrote;
        }
    }
    const struct sigaction& before = saved_fatal[k];
    if (before.sa_flags & SA_SIGINFO) {
        before.sa_sigaction(sig, info, context);
    } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
        before.sa_handler(sig);
    } else {
        signal(sig, SIG_DFL);  // returning re-runs the faulting instruction, now fatal
        if (info == nullptr || info->si_code <= 0) raise(sig);  // sent by kill(): send it again
    }
}
#endif

#ifdef SK_SIGINT
// What SIGINT did before simkit's handler (Python's handler): it still does it outside launches.
struct sigaction saved_sigint;

extern "C" void on_sigint(int sig, siginfo_t* info, void* context) {
    int32_t* code = stop_target.load(std::memory_order_acquire);
    if (code != nullptr) {
        int32_t none = 0;
        __atomic_compare_exchange_n(code, &none, INTERRUPTED, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        return;
    }
    if (saved_sigint.sa_flags & SA_SIGINFO) saved_sigint.sa_sigaction(sig, info, context);
    else if (saved_sigint.sa_handler != SIG_IGN && saved_sigint.sa_handler != SIG_DFL) saved_sigint.sa_handler(sig);
}
#endif
// -- slices: Ctrl-C reaches a launch within tens of milliseconds, whatever its size --------
// A kernel entry looks at the error code every STOP_EVERY elements (codegen.py) and leaves
// once it is set; between calls the code is read here too. A long range is run in slices
// sized by time, so that no chunk of the pool starts after the code is set: the first is
// SLICE_FIRST elements; each next one aims at SLICE_NS from the time the last one took,
// growing at most SLICE_GROWTH-fold (a first slice in cold caches runs slow). A clock read
// per slice of milliseconds costs nothing measurable, and a range of at most SLICE_FIRST
// elements (a simulation step's launches) is one call: an entry call costs a copy of the
// arguments and the dense loop's overlap checks, a microsecond for a kernel of many arrays.
// Elements run in the same order as one call would run them, so results do not change.
constexpr int64_t SLICE_FIRST = 4096;
constexpr int64_t SLICE_NS = 10000000;
constexpr int64_t SLICE_GROWTH = 8;

void run_sliced(entry_t fn, const void* args, int64_t start, int64_t end, bool exclusive, const int32_t* error) {
    if (end - start <= SLICE_FIRST) {
        fn(args, start, end, exclusive);
        return;
    }
    int64_t slice = SLICE_FIRST;
    while (start < end) {
        const int64_t stop = end - start > slice ? start + slice : end;
        const auto began = Clock::now();
        fn(args, start, stop, exclusive);
        const int64_t took = std::max<int64_t>(
            1, std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - began).count());
        start = stop;
        if (__atomic_load_n(error, __ATOMIC_RELAXED) != 0) return;  // stopped (Ctrl-C or an error)
        const double aim = double(slice) * double(SLICE_NS) / double(took);
        slice = int64_t(std::max(1.0, std::min(aim, double(slice) * SLICE_GROWTH)));
    }
}

// How launches ran, for tests and profiles (sk_launch_counts): inline on the calling
// thread; split with nothing shared to accumulate into; split with private accumulators;
// split with atomics. Counted under `launching`.
enum Path { INLINE, SPLIT, PRIVATE, ATOMIC, PATHS };
int64_t path_counts[PATHS] = {};

// -- split with atomics, or with nothing to accumulate: equal chunks, claimed as they come --
struct Chunks {
    entry_t fn;
    const void* args;
    int64_t n, count;
    bool exclusive;
    const int32_t* error;
};

void run_chunk(void* ctx, int64_t k) {
    const Chunks& c = *static_cast<const Chunks*>(ctx);
    if (__atomic_load_n(c.error, __ATOMIC_RELAXED) != 0) return;  // stopped (Ctrl-C)
    run_sliced(c.fn, c.args, c.n * k / c.count, c.n * (k + 1) / c.count, c.exclusive, c.error);
}

// -- split with private accumulators --------------------------------------------------
// The grid is cut into P equal chunks (P: the pool's size), claimed by whichever thread
// comes. Chunk 0 adds into the arrays themselves; every other chunk gets a copy of the
// args whose accumulated arrays point into its own zeroed scratch, summed into the arrays
// in chunk order after the launch. No atomics, and the sums come out the same on every
// run with the same pool size, whichever thread ran which chunk, also when the calling
// thread runs them all (a busy machine, pool.h).

// A private copy costs a zeroing and a summing pass per extra thread: worth it while the
// accumulated scalars are at most this many per grid element.
constexpr int64_t MAX_PRIVATE_SCALARS_PER_ELEMENT = 16;
constexpr int MAX_TARGETS = 32;

struct Target {
    char* array;      // the accumulated memory (data or gradient)
    int64_t bytes;
    int64_t at;       // its copy's byte offset in each chunk's scratch
    int32_t scalar;
    int32_t header;   // offset of the array header in the args struct
    int32_t grad;
};

struct Private {
    entry_t fn;
    int64_t n;
    int parts;
    const int32_t* error;
    Target targets[MAX_TARGETS];
    int count;
    int64_t copy_bytes;   // every target's copy, laid out one after another
    const void* args[64];
    char* copies[64];
    int64_t dirty_from[64];  // chunk k's copies are zero below this offset already
};

void run_private(void* ctx, int64_t k) {
    const Private& p = *static_cast<const Private*>(ctx);
    if (k > 0 && p.dirty_from[k] < p.copy_bytes)  // summed in even when stopped
        std::memset(p.copies[k] + p.dirty_from[k], 0, size_t(p.copy_bytes - p.dirty_from[k]));
    if (__atomic_load_n(p.error, __ATOMIC_RELAXED) != 0) return;
    run_sliced(p.fn, p.args[k], p.n * k / p.parts, p.n * (k + 1) / p.parts, true, p.error);
}

struct ArrayHeader {
    char* data;
    char* grad;
    int64_t shape[4];
    int64_t strides[4];
};

int64_t scalar_bytes(int32_t scalar) { return scalar == 0 || scalar == 2 ? 4 : 8; }

// Adds a copy into its array and clears the copy for the next launch: one pass over the
// copy instead of a clearing pass before the launch and a summing pass after it (on a busy
// machine, where the calling thread runs every chunk, both passes were its own).
template <typename T> void add_into(char* dst, char* src, int64_t count) {
    T* d = reinterpret_cast<T*>(dst);
    T* s = reinterpret_cast<T*>(src);
    for (int64_t i = 0; i < count; ++i) {
        d[i] += s[i];
        s[i] = T(0);
    }
}

void sum_into(const Target& t, char* copy) {
    const int64_t count = t.bytes / scalar_bytes(t.scalar);
    switch (t.scalar) {
        case 0: add_into<float>(t.array, copy, count); break;
        case 1: add_into<double>(t.array, copy, count); break;
        case 2: add_into<uint32_t>(t.array, copy, count); break;
        default: add_into<uint64_t>(t.array, copy, count); break;
    }
}

// Plan the targets of a launch: false when one is strided, overlaps another without
// being the same memory, or the copies would cost more than they save.
bool plan_targets(const job_t& job, int64_t n, Private& p) {
    if (job.npriv > MAX_TARGETS) return false;
    int64_t scalars = 0;
    p.count = 0;
    p.copy_bytes = 0;
    for (int64_t i = 0; i < job.npriv; ++i) {
        const private_t& d = job.priv[i];
        const ArrayHeader* h = reinterpret_cast<const ArrayHeader*>(static_cast<const char*>(job.args) + d.offset);
        char* mem = d.grad ? h->grad : h->data;
        if (mem == nullptr) continue;  // no gradient: nothing lands there
        int64_t expect = d.elem_bytes;
        for (int k = d.ndim - 1; k >= 0; --k) {
            if (h->shape[k] > 1 && h->strides[k] != expect) return false;
            expect *= h->shape[k];
        }
        if (expect == 0) continue;  // an empty array
        bool same = false;
        for (int k = 0; k < p.count; ++k) {
            const Target& o = p.targets[k];
            if (o.array == mem && o.bytes == expect) {
                same = true;  // the same array through two parameters: one copy serves both
            } else if (mem < o.array + o.bytes && o.array < mem + expect) {
                return false;
            }
        }
        Target& t = p.targets[p.count++];
        t = Target{mem, expect, 0, d.scalar, int32_t(d.offset), d.grad};
        if (same) {
            t.bytes = 0;  // marked: patched like its twin, summed once
            continue;
        }
        t.at = (p.copy_bytes + 63) & ~int64_t(63);
        p.copy_bytes = t.at + expect;
        scalars += expect / scalar_bytes(d.scalar);
    }
    return scalars <= MAX_PRIVATE_SCALARS_PER_ELEMENT * n;
}

bool run_privately(Pool* pool, const job_t& job, int64_t n) {
    Private p;
    if (!plan_targets(job, n, p)) return false;
    p.fn = job.fn;
    p.n = n;
    p.parts = std::min(pool->size(), 64);
    p.error = job.error;
    p.args[0] = job.args;
    for (int k = 1; k < p.parts; ++k) {
        Scratch& s = pool->scratch(k);
        const int64_t args_at = (p.copy_bytes + 63) & ~int64_t(63);
        char* base = s.reserve(size_t(args_at + job.args_size));
        p.dirty_from[k] = std::min<int64_t>(int64_t(s.zero), p.copy_bytes);
        // After the launch the copies are zero again (sum_into), the args are not.
        s.zero = size_t(std::min<int64_t>(std::max<int64_t>(int64_t(s.zero), p.copy_bytes), args_at));
        char* args = base + args_at;
        std::memcpy(args, job.args, size_t(job.args_size));
        for (int i = 0; i < p.count; ++i) {
            const Target& t = p.targets[i];
            char* mem = base + t.at;
            if (t.bytes == 0) {  // the twin of an earlier target: point at its copy
                for (int j = 0; j < i; ++j)
                    if (p.targets[j].array == t.array && p.targets[j].bytes) mem = base + p.targets[j].at;
            }
            ArrayHeader* h = reinterpret_cast<ArrayHeader*>(args + t.header);
            (t.grad ? h->grad : h->data) = mem;
        }
        p.copies[k] = base;
        p.args[k] = args;
    }
    if (pool->workers_welcome()) {
        pool->run(run_private, &p, p.parts);
    } else {
        for (int k = 0; k < p.parts; ++k) run_private(&p, k);  // the same chunks, the same sums
    }
    for (int i = 0; i < p.count; ++i) {
        const Target& t = p.targets[i];
        if (t.bytes == 0) continue;
        for (int k = 1; k < p.parts; ++k) sum_into(t, p.copies[k] + t.at);
    }
    return true;
}

// Run a job over [0, n): inline below its grain or without workers; split with private
// accumulators where the kernel allows it; else split with atomics where enough threads
// make that pay, else inline. While the pool runs alone (a busy machine, pool.h) a split
// launch runs inline; a private one runs its chunks on the calling thread (same sums).
// The caller holds `launching`.
void parallel_for(const job_t& job, int64_t n) {
    Pool* p = pool();
    flush_subnormals ftz;
    stoppable stop(job);
    if (n < job.grain || p->size() == 1) {
        ++path_counts[INLINE];
        run_sliced(job.fn, job.args, 0, n, true, job.error);
        return;
    }
    if (job.npriv > 0 && run_privately(p, job, n)) {
        ++path_counts[PRIVATE];
        return;
    }
    const bool exclusive = job.npriv == 0;  // only its own elements' memory: plain adds are safe
    if ((!exclusive && p->size() < job.min_threads) || !p->workers_welcome()) {
        ++path_counts[INLINE];
        run_sliced(job.fn, job.args, 0, n, true, job.error);
        return;
    }
    ++path_counts[exclusive ? SPLIT : ATOMIC];
    const int64_t parts = int64_t(p->size()) * 4;
    const int64_t chunk = std::max((n + parts - 1) / parts, job.grain / 4);
    Chunks c{job.fn, job.args, n, (n + chunk - 1) / chunk, exclusive, job.error};
    p->run(run_chunk, &c, c.count);
}

int64_t grid_size(const job_t& job) { return reinterpret_cast<const int64_t*>(job.args)[5]; }

}  // namespace

SK_EXPORT void sk_launch(const job_t* job) {
    const int64_t n = grid_size(*job);
    if (job->nextents && n && !extents_fit(*job)) return;
    std::lock_guard<std::mutex> lock(launching);
    parallel_for(*job, n);
}

// Route SIGINT through simkit's handler, which stops the running launch and otherwise does
// what the handler it replaces did (Python's, which raises KeyboardInterrupt). Installed
// once, not per launch: two sigaction calls would add a third to a small launch's cost.
// A program that later sets its own handler (signal.signal) replaces it until the next
// kernel module loads and calls this again. Returns whether it is installed; a process
// that ignores SIGINT or dies of it (no handler) is left as it is.
SK_EXPORT int sk_catch_interrupts() {
#ifdef SK_SIGINT
    std::lock_guard<std::mutex> lock(launching);
    struct sigaction now;
    if (sigaction(SIGINT, nullptr, &now) != 0) return 0;
    if (now.sa_flags & SA_SIGINFO) {
        if (now.sa_sigaction == on_sigint) return 1;
    } else if (now.sa_handler == SIG_IGN || now.sa_handler == SIG_DFL) {
        return 0;
    }
    saved_sigint = now;
    struct sigaction mine = now;
    mine.sa_sigaction = on_sigint;
    mine.sa_flags = now.sa_flags | SA_SIGINFO;
    return sigaction(SIGINT, &mine, nullptr) == 0;
#else
    return 0;
#endif
}

// Report crashes inside kernels (on_fatal_signal). Once per process: the handlers it
// replaces (Python's faulthandler's, if enabled) still run after the report. Returns
// whether they are installed.
SK_EXPORT int sk_catch_crashes() {
#ifdef SK_SIGINT
    std::lock_guard<std::mutex> lock(launching);
    static bool done = false;
    if (done) return 1;
    for (int k = 0; k < NFATAL; ++k) {
        struct sigaction mine;
        std::memset(&mine, 0, sizeof(mine));
        mine.sa_sigaction = on_fatal_signal;
        mine.sa_flags = SA_SIGINFO | SA_ONSTACK;  // on Python's alternate stack where it has one
        sigemptyset(&mine.sa_mask);
        if (sigaction(FATAL_SIGNALS[k], &mine, &saved_fatal[k]) != 0) return 0;
    }
    done = true;
    return 1;
#else
    return 0;
#endif
}

// A captured launch (sk.capture): a job over its own copy of the args struct, and the
// error record of its module, read after the launch as Python reads it after sk_launch.
struct replay_job_t {
    job_t job;
    const int32_t* error;  // sk::error_t::code of the kernel's module
};

// Run captured launches in order, each split over the pool exactly as sk_launch
// would. Stops after the first launch that left an error code and returns its
// index (Python raises the error); -1 when all ran cleanly.
SK_EXPORT int64_t sk_replay(const replay_job_t* jobs, int64_t count) {
    std::lock_guard<std::mutex> lock(launching);
    for (int64_t k = 0; k < count; ++k) {
        const replay_job_t& j = jobs[k];
        const int64_t n = grid_size(j.job);
        if (n == 0) continue;  // an empty grid runs nothing, as in sk_launch
        parallel_for(j.job, n);
        if (__atomic_load_n(j.error, __ATOMIC_ACQUIRE) != 0) return k;
    }
    return -1;
}

// Zero many buffers in one call: a replayed backward clears the gradients of every
// intermediate before it seeds them, hundreds of small arrays a rollout.
SK_EXPORT void sk_clear_many(void* const* ptrs, const int64_t* bytes, int64_t count) {
    for (int64_t k = 0; k < count; ++k) std::memset(ptrs[k], 0, static_cast<size_t>(bytes[k]));
}

SK_EXPORT int sk_get_threads() { return pool()->size(); }

SK_EXPORT void sk_set_adaptive(int on) {
    std::lock_guard<std::mutex> guard(launching);
    pool()->set_adaptive(on != 0);
}

// Launches run so far by each Path, into out[0..3].
SK_EXPORT void sk_launch_counts(int64_t* out) {
    std::lock_guard<std::mutex> guard(launching);
    for (int k = 0; k < PATHS; ++k) out[k] = path_counts[k];
}

SK_EXPORT void sk_set_threads(int n) {
    std::lock_guard<std::mutex> guard(launching);
    pool()->resize(n > 1 ? n - 1 : 0);
}
