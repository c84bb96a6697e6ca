// simkit CPU runtime: a persistent thread pool that splits a kernel launch's
// grid over threads. Small grids run inline on the calling thread, so a launch of
// a few elements costs one function call and never wakes a worker.
//
// A kernel entry is fn(args, start, end, exclusive): it runs elements [start, end), and
// `exclusive` says that this call alone adds into every array it accumulates into, so
// its adds are plain read-modify-writes instead of atomics (see sk::plain_adds).
//
// Ctrl-C: while a launch runs, SIGINT sets the launch's error code to INTERRUPTED instead
// of reaching Python (whose handler could only run once the launch returned, which a
// kernel stuck in `while True` never does). The pool takes no further chunks once the
// code is set, generated `while` loops leave at their next iteration (SK_STOPPING in
// array.h), and Python raises KeyboardInterrupt after the launch (launch.py). Outside
// launches SIGINT goes on to Python's handler (sk_catch_interrupts).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <csignal>
#define SK_SIGINT 1
#endif

#ifdef __linux__
#include <sched.h>
#endif

#define SK_EXPORT extern "C" __attribute__((visibility("default")))

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define SK_MXCSR 1
#endif

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

// Kernels run with subnormal floats flushed to zero (FTZ) and read as zero (DAZ), as on
// a GPU: a body sliding to rest under friction otherwise decays through subnormal
// speeds, where every operation takes ~100 cycles (a resting ball's contact step got
// 5x slower). Set for the duration of a launch on the calling thread, and for good on
// the pool's own threads.
struct flush_subnormals {
#ifdef SK_MXCSR
    unsigned int saved;
    flush_subnormals() : saved(_mm_getcsr()) { _mm_setcsr(saved | 0x8040u); }
    ~flush_subnormals() { _mm_setcsr(saved); }
#endif
};

// Work every thread of the pool runs once per dispatch; slot 0 is the calling thread.
typedef void (*task_t)(void* ctx, int slot);

// A growable 64-byte-aligned scratch block, one per pool slot.
struct Scratch {
    std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
    size_t size = 0;
    char* reserve(size_t bytes) {
        if (bytes > size) {
            size = (bytes + 4095) & ~size_t(4095);
            data.reset(static_cast<char*>(std::aligned_alloc(64, size)));
        }
        return data.get();
    }
};

// Cores this process may run on: its CPU affinity where the system tells (a container
// pinned to 2 of 64 cores gets 2), else every core.
int usable_cores() {
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    const unsigned n = std::thread::hardware_concurrency();
    return n > 0 ? int(n) : 1;
}

// Workers wait for work spinning for a while before they sleep, and the caller spins
// until they are done: on a virtual machine, waking a sleeping thread takes ~100 us
// (a 160 us triangle kernel split over two threads took 180 us when its worker slept
// between launches). A simulation step's launches follow each other within
// microseconds, so the worker is still spinning at the next one. Spinning is off when
// the pool has more threads than the machine has cores: there it would steal the
// time of the threads doing the work.
constexpr auto SPIN_FOR = std::chrono::microseconds(300);

inline void cpu_relax() {
#ifdef SK_MXCSR
    _mm_pause();
#endif
}

class Pool {
  public:
    explicit Pool(int workers) { resize(workers); }
    ~Pool() { stop(); }

    int size() const { return int(threads_.size()) + 1; }

    void resize(int workers) {
        stop();
        quit_ = false;
        spin_ = workers + 1 <= usable_cores();
        // A new thread waits for the next dispatch, not one that ran before it existed.
        const uint64_t now = generation_.load();
        for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i, now] { loop(i + 1, now); });
        scratch_.resize(size_t(workers) + 1);
    }

    Scratch& scratch(int slot) { return scratch_[size_t(slot)]; }

    void run(task_t task, void* ctx) {
        task_ = task;
        ctx_ = ctx;
        busy_.store(int(threads_.size()));
        generation_.fetch_add(1);  // seq_cst, as the sleepers_ load below: no wakeup is lost
        if (sleepers_.load() > 0) {
            std::lock_guard<std::mutex> lock(m_);
            wake_.notify_all();
        }
        task(ctx, 0);
        for (int spins = 0; busy_.load(std::memory_order_acquire) != 0; ++spins) {
            if (spin_ && spins < 1 << 20) cpu_relax();
            else std::this_thread::yield();
        }
    }

  private:
    void loop(int slot, uint64_t seen) {
        flush_subnormals ftz;
        for (;;) {
            uint64_t now = wait_for_work(seen);
            if (quit_.load()) return;
            seen = now;
            task_(ctx_, slot);
            busy_.fetch_sub(1, std::memory_order_release);
        }
    }

    uint64_t wait_for_work(uint64_t seen) {
        if (spin_) {
            const auto until = std::chrono::steady_clock::now() + SPIN_FOR;
            for (int spins = 1;; ++spins) {
                const uint64_t now = generation_.load(std::memory_order_acquire);
                if (now != seen || quit_.load(std::memory_order_relaxed)) return now;
                cpu_relax();
                if (spins % 256 == 0 && std::chrono::steady_clock::now() > until) break;
            }
        }
        std::unique_lock<std::mutex> lock(m_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return quit_.load() || generation_.load() != seen; });
        sleepers_.fetch_sub(1);
        return generation_.load();
    }

    void stop() {
        {
            std::lock_guard<std::mutex> lock(m_);
            quit_ = true;
        }
        wake_.notify_all();
        for (auto& t : threads_) t.join();
        threads_.clear();
    }

    std::vector<std::thread> threads_;
    std::vector<Scratch> scratch_;
    std::mutex m_;
    std::condition_variable wake_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> busy_{0};
    std::atomic<int> sleepers_{0};
    std::atomic<bool> quit_{false};
    bool spin_ = true;
    task_t task_ = nullptr;
    void* ctx_ = nullptr;
};

Pool* pool() {
    static Pool p(usable_cores() - 1);
    return &p;
}

// One launch runs at a time even when Python threads launch concurrently: a launch then
// owns its memory and the pool's scratch, and the pool is never resized under it.
std::mutex launching;

// The error code of the launch running now, where SIGINT leaves INTERRUPTED.
std::atomic<int32_t*> stop_target{nullptr};

// Marks the launch of `job` as the one Ctrl-C stops, for its duration.
struct stoppable {
    explicit stoppable(const job_t& job) { stop_target.store(job.error, std::memory_order_release); }
    ~stoppable() { stop_target.store(nullptr, std::memory_order_release); }
};

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
// How launches ran, for tests and profiles (sk_launch_counts): inline on the calling
// thread; split with nothing shared to accumulate into; split with private accumulators;
// split with atomics. Counted under `launching`.
enum Path { INLINE, SPLIT, PRIVATE, ATOMIC, PATHS };
int64_t path_counts[PATHS] = {};

// -- split with atomics, or with nothing to accumulate: threads take chunks as they come --
struct Chunks {
    entry_t fn;
    const void* args;
    int64_t n, chunk;
    bool exclusive;
    const int32_t* error;
    std::atomic<int64_t> next{0};
};

void run_chunks(void* ctx, int) {
    Chunks& c = *static_cast<Chunks*>(ctx);
    for (;;) {
        int64_t s = c.next.fetch_add(c.chunk, std::memory_order_relaxed);
        if (s >= c.n || __atomic_load_n(c.error, __ATOMIC_RELAXED) != 0) return;
        c.fn(c.args, s, std::min(s + c.chunk, c.n), c.exclusive);
    }
}

// -- split with private accumulators --------------------------------------------------
// Thread k runs the k-th of P equal parts of the grid. Thread 0 adds into the arrays
// themselves; every other thread gets a copy of the args whose accumulated arrays point
// into its own zeroed scratch, summed into the arrays after the launch. No atomics, and
// the sums come out the same on every run with the same thread count.

// A private copy costs a zeroing and a summing pass per extra thread: worth it while the
// accumulated scalars are at most this many per grid element.
constexpr int64_t MAX_PRIVATE_SCALARS_PER_ELEMENT = 16;
constexpr int MAX_TARGETS = 32;

struct Target {
    char* array;      // the accumulated memory (data or gradient)
    int64_t bytes;
    int64_t at;       // its copy's byte offset in each thread's scratch
    int32_t scalar;
    int32_t header;   // offset of the array header in the args struct
    int32_t grad;
};

struct Private {
    entry_t fn;
    int64_t n;
    int parts;
    Target targets[MAX_TARGETS];
    int count;
    int64_t copy_bytes;   // every target's copy, laid out one after another
    const void* args[64];
    char* copies[64];
};

void run_private(void* ctx, int slot) {
    Private& p = *static_cast<Private*>(ctx);
    if (slot >= p.parts) return;
    if (slot > 0) std::memset(p.copies[slot], 0, size_t(p.copy_bytes));
    const int64_t start = p.n * slot / p.parts, end = p.n * (slot + 1) / p.parts;
    p.fn(p.args[slot], start, end, true);
}

struct ArrayHeader {
    char* data;
    char* grad;
    int64_t shape[4];
    int64_t strides[4];
};

int64_t scalar_bytes(int32_t scalar) { return scalar == 0 || scalar == 2 ? 4 : 8; }

template <typename T> void add_into(char* dst, const char* src, int64_t count) {
    T* d = reinterpret_cast<T*>(dst);
    const T* s = reinterpret_cast<const T*>(src);
    for (int64_t i = 0; i < count; ++i) d[i] += s[i];
}

void sum_into(const Target& t, const char* copy) {
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
    p.args[0] = job.args;
    for (int slot = 1; slot < p.parts; ++slot) {
        Scratch& s = pool->scratch(slot);
        const int64_t args_at = (p.copy_bytes + 63) & ~int64_t(63);
        char* base = s.reserve(size_t(args_at + job.args_size));
        char* args = base + args_at;
        std::memcpy(args, job.args, size_t(job.args_size));
        for (int k = 0; k < p.count; ++k) {
            const Target& t = p.targets[k];
            char* mem = base + t.at;
            if (t.bytes == 0) {  // the twin of an earlier target: point at its copy
                for (int j = 0; j < k; ++j)
                    if (p.targets[j].array == t.array && p.targets[j].bytes) mem = base + p.targets[j].at;
            }
            ArrayHeader* h = reinterpret_cast<ArrayHeader*>(args + t.header);
            (t.grad ? h->grad : h->data) = mem;
        }
        p.copies[slot] = base;
        p.args[slot] = args;
    }
    pool->run(run_private, &p);
    for (int k = 0; k < p.count; ++k) {
        const Target& t = p.targets[k];
        if (t.bytes == 0) continue;
        for (int slot = 1; slot < p.parts; ++slot) sum_into(t, p.copies[slot] + t.at);
    }
    return true;
}

// Run a job over [0, n): inline below its grain or without workers; split with private
// accumulators where the kernel allows it; else split with atomics where enough threads
// make that pay, else inline.
// The caller holds `launching`.
void parallel_for(const job_t& job, int64_t n) {
    Pool* p = pool();
    flush_subnormals ftz;
    stoppable stop(job);
    if (n < job.grain || p->size() == 1) {
        ++path_counts[INLINE];
        job.fn(job.args, 0, n, true);
        return;
    }
    if (job.npriv > 0 && run_privately(p, job, n)) {
        ++path_counts[PRIVATE];
        return;
    }
    const bool exclusive = job.npriv == 0;  // only its own elements' memory: plain adds are safe
    if (!exclusive && p->size() < job.min_threads) {
        ++path_counts[INLINE];
        job.fn(job.args, 0, n, true);
        return;
    }
    ++path_counts[exclusive ? SPLIT : ATOMIC];
    const int64_t parts = int64_t(p->size()) * 4;
    const int64_t chunk = (n + parts - 1) / parts;
    Chunks c{job.fn, job.args, n, std::max(chunk, job.grain / 4), exclusive, job.error};
    p->run(run_chunks, &c);
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

SK_EXPORT int sk_get_threads() { return pool()->size(); }

// Launches run so far by each Path, into out[0..3].
SK_EXPORT void sk_launch_counts(int64_t* out) {
    std::lock_guard<std::mutex> guard(launching);
    for (int k = 0; k < PATHS; ++k) out[k] = path_counts[k];
}

SK_EXPORT void sk_set_threads(int n) {
    std::lock_guard<std::mutex> guard(launching);
    pool()->resize(n > 1 ? n - 1 : 0);
}
