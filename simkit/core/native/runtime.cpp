// simkit CPU runtime: a persistent thread pool that splits a kernel launch's
// grid into chunks. Small grids run inline on the calling thread, so a launch of
// a few elements costs one function call and never wakes a worker.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#define SK_EXPORT extern "C" __attribute__((visibility("default")))

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define SK_MXCSR 1
#endif

typedef void (*entry_t)(const void* args, int64_t start, int64_t end);

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

struct Job {
    entry_t fn = nullptr;
    const void* args = nullptr;
    int64_t n = 0;
    int64_t chunk = 1;
    std::atomic<int64_t> next{0};
};

class Pool {
  public:
    explicit Pool(int workers) { resize(workers); }
    ~Pool() { stop(); }

    int size() const { return int(threads_.size()) + 1; }

    void resize(int workers) {
        stop();
        quit_ = false;
        for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { loop(); });
    }

    void run(entry_t fn, const void* args, int64_t n, int64_t chunk) {
        job_.fn = fn;
        job_.args = args;
        job_.n = n;
        job_.chunk = chunk;
        job_.next.store(0, std::memory_order_relaxed);
        {
            std::lock_guard<std::mutex> lock(m_);
            busy_ = int(threads_.size());
            ++generation_;
        }
        wake_.notify_all();
        work();
        std::unique_lock<std::mutex> lock(m_);
        done_.wait(lock, [this] { return busy_ == 0; });
    }

  private:
    void work() {
        for (;;) {
            int64_t s = job_.next.fetch_add(job_.chunk, std::memory_order_relaxed);
            if (s >= job_.n) return;
            int64_t e = s + job_.chunk < job_.n ? s + job_.chunk : job_.n;
            job_.fn(job_.args, s, e);
        }
    }

    void loop() {
        flush_subnormals ftz;
        uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(m_);
                wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
                if (quit_) return;
                seen = generation_;
            }
            work();
            std::lock_guard<std::mutex> lock(m_);
            if (--busy_ == 0) done_.notify_one();
        }
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
    std::mutex m_;
    std::condition_variable wake_, done_;
    uint64_t generation_ = 0;
    int busy_ = 0;
    bool quit_ = false;
    Job job_;
};

Pool* pool() {
    static Pool p(int(std::thread::hardware_concurrency() > 1 ? std::thread::hardware_concurrency() - 1 : 0));
    return &p;
}

}  // namespace

// Run fn over [0, n): inline below `grain` elements or on a pool of fewer than
// `min_threads` threads, else across the pool. One launch runs at a time even when
// Python threads launch concurrently: a launch that one call runs whole then owns its
// memory, and its kernels accumulate without atomics.
SK_EXPORT void sk_parallel_for(entry_t fn, const void* args, int64_t n, int64_t grain, int64_t min_threads) {
    Pool* p = pool();
    static std::mutex one_launch_at_a_time;
    std::lock_guard<std::mutex> guard(one_launch_at_a_time);
    flush_subnormals ftz;
    if (n < grain || p->size() < min_threads || p->size() == 1) {
        fn(args, 0, n);
        return;
    }
    int64_t parts = int64_t(p->size()) * 4;
    int64_t chunk = (n + parts - 1) / parts;
    p->run(fn, args, n, chunk < grain / 4 ? grain / 4 : chunk);
}

// A launch described once per kernel: the grid size is read from the args struct,
// whose first member is sk::launch_t (shape[4], ndim, pad, size).
struct job_t {
    entry_t fn;
    const void* args;
    int64_t grain;
    int64_t min_threads;
};

SK_EXPORT void sk_launch(const job_t* job) {
    const int64_t n = reinterpret_cast<const int64_t*>(job->args)[5];
    sk_parallel_for(job->fn, job->args, n, job->grain, job->min_threads);
}

// A captured launch (sk.capture): its own copy of the args struct, and the error
// record of its module, read after the launch as Python reads it after sk_launch.
struct replay_job_t {
    entry_t fn;
    const void* args;
    int64_t grain;
    int64_t min_threads;
    const int32_t* error;  // sk::error_t::code of the kernel's module
};

// Run captured launches in order, each split over the pool exactly as sk_launch
// would. Stops after the first launch that left an error code and returns its
// index (Python raises the error); -1 when all ran cleanly.
SK_EXPORT int64_t sk_replay(const replay_job_t* jobs, int64_t count) {
    for (int64_t k = 0; k < count; ++k) {
        const replay_job_t& j = jobs[k];
        const int64_t n = reinterpret_cast<const int64_t*>(j.args)[5];
        if (n == 0) continue;  // an empty grid runs nothing, as in sk_launch
        sk_parallel_for(j.fn, j.args, n, j.grain, j.min_threads);
        if (__atomic_load_n(j.error, __ATOMIC_ACQUIRE) != 0) return k;
    }
    return -1;
}

SK_EXPORT int sk_get_threads() { return pool()->size(); }

SK_EXPORT void sk_set_threads(int n) { pool()->resize(n > 1 ? n - 1 : 0); }
