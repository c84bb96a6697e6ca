// simkit CPU runtime: a persistent thread pool that splits a kernel launch's
// grid over threads. Small grids run inline on the calling thread, so a launch of
// a few elements costs one function call and never wakes a worker.
//
// A kernel entry is fn(args, start, end, exclusive): it runs elements [start, end), and
// `exclusive` says that this call alone adds into every array it accumulates into, so
// its adds are plain read-modify-writes instead of atomics (see sk::plain_adds).
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
};

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
    std::atomic<int64_t> next{0};
};

void run_chunks(void* ctx, int) {
    Chunks& c = *static_cast<Chunks*>(ctx);
    for (;;) {
        int64_t s = c.next.fetch_add(c.chunk, std::memory_order_relaxed);
        if (s >= c.n) return;
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
void parallel_for(const job_t& job, int64_t n) {
    Pool* p = pool();
    std::lock_guard<std::mutex> guard(launching);
    flush_subnormals ftz;
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
    Chunks c{job.fn, job.args, n, std::max(chunk, job.grain / 4), exclusive};
    p->run(run_chunks, &c);
}

int64_t grid_size(const job_t& job) { return reinterpret_cast<const int64_t*>(job.args)[5]; }

}  // namespace

SK_EXPORT void sk_launch(const job_t* job) { parallel_for(*job, grid_size(*job)); }

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
