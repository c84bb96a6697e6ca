// simkit CPU thread pool (part of runtime.cpp, not of the kernel headers).
//
// A dispatch is a number of chunks, each run exactly once by whichever thread claims it:
// the calling thread claims chunks like the workers, and the dispatch is over when every
// chunk is done, not when every worker has checked in. So a worker the OS has not
// scheduled (another process has its core) never stalls a launch: the caller runs its
// chunks instead. What can still stall one is a worker preempted in the middle of a chunk.
// The pool watches for the signs of a busy machine: the calling thread got much less CPU
// time than wall time while it ran its chunks (more threads want the cores than there
// are), it waited long for a worker's chunk after running out of chunks to claim, or a
// worker that was spinning for work found every chunk taken (it was spinning without a
// core). Then it runs launches on the calling thread alone for a while, its workers
// asleep, and tries them again later. Where the system's count of runnable threads is
// about this process's cores, the calling thread also looks at it every few milliseconds
// and goes alone, before any stall, while more threads want a core than there are.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#ifdef __linux__
#include <fcntl.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>
#endif
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define SK_MXCSR 1
#endif

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

inline void cpu_relax() {
#ifdef SK_MXCSR
    _mm_pause();
#endif
}

// The work of one chunk of a dispatch.
typedef void (*chunk_fn)(void* ctx, int64_t chunk);

// A growable 64-byte-aligned scratch block (private accumulator copies). `zero`: how many
// bytes from its start are known to be zero (a launch's copies are zeroed as they are
// summed, so the next launch need not clear them again).
struct Scratch {
    std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
    size_t size = 0;
    size_t zero = 0;
    char* reserve(size_t bytes) {
        if (bytes > size) {
            size = (bytes + 4095) & ~size_t(4095);
            data.reset(static_cast<char*>(std::aligned_alloc(64, size)));
            zero = 0;
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

using Clock = std::chrono::steady_clock;

// Threads runnable on the whole system at this instant, the caller included (the fourth
// field of /proc/loadavg, "running/total"), or -1 where the system does not tell. About
// 10 us: read every LOOK_EVERY at most.
inline int runnable_threads() {
#ifdef __linux__
    const int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[128];
    const ssize_t got = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (got <= 0) return -1;
    buf[got] = 0;
    int fields = 0;
    for (const char* c = buf; *c; ++c) {
        if (*c == ' ' && ++fields == 3) return std::atoi(c + 1);
    }
#endif
    return -1;
}

// Whether the system-wide count of runnable threads is about this process's cores: only
// when it may run on every CPU of the system (not a container pinned to a few of a large
// host's, whose other CPUs' threads would count).
inline bool load_is_ours() {
#ifdef __linux__
    return runnable_threads() > 0 && get_nprocs() == usable_cores();
#else
    return false;
#endif
}

// CPU time the calling thread has run, in nanoseconds (0 where the system cannot tell).
inline int64_t thread_cpu_ns() {
#ifdef __linux__
    timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0) return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
#endif
    return 0;
}

// Workers spin for a while after a dispatch before they sleep: on a virtual machine waking
// a sleeping thread takes ~100 us, and a simulation step's launches follow each other
// within microseconds. They do not spin while the pool runs launches alone (the machine is
// busy: spinning would take a core from a thread with work), nor when the pool has more
// threads than the process has cores.
constexpr auto SPIN_FOR = std::chrono::microseconds(300);
// After two stalled dispatches in a row (one alone can be a hiccup: a page fault storm,
// the hypervisor) the pool runs alone for this long, doubling on each further stall up to
// the maximum; it halves back only after TRUST_AFTER dispatches in a row that did not
// stall (a busy machine comes and goes: trusting the workers again too soon costs a
// stall, milliseconds, each time).
constexpr auto ALONE_FIRST = std::chrono::milliseconds(20);
constexpr auto ALONE_MAX = std::chrono::milliseconds(1000);
constexpr int TRUST_AFTER = 64;
constexpr auto MISSED_AFTER = std::chrono::microseconds(50);
// How often the calling thread counts the system's runnable threads: when more want a
// core than there are, without the pool's workers, a worker would wait for one, and its
// chunk would hold up the launch for a scheduler slice (ms). When two looks in a row
// found it so, the pool runs alone for ALONE_FIRST without waiting to be stalled first (a
// busy-loop process beside a 2-thread cloth step made it 1.1-1.3x slower than one thread
// through such stalls).
constexpr auto LOOK_EVERY = std::chrono::milliseconds(4);

class Pool {
  public:
    explicit Pool(int workers) : load_known_(load_is_ours()) { resize(workers); }
    ~Pool() { stop(); }

    int size() const { return int(threads_.size()) + 1; }

    // Whether the pool goes alone on a busy machine (off: it always splits, for tests that
    // check how launches split and for measurements of the split itself).
    void set_adaptive(bool on) {
        if (on == adaptive_) return;
        adaptive_ = on;
        alone_until_.store(Clock::time_point{}, std::memory_order_relaxed);
        next_look_ = Clock::time_point{};
        crowded_looks_ = 0;
        alone_for_ = Clock::duration(0);
        strikes_ = clean_ = 0;
        alone_would_take_ = split_took_ = 0.0;
    }

    void resize(int workers) {
        stop();
        quit_ = false;
        usable_cores_ = usable_cores();
        spin_ = workers + 1 <= usable_cores_;
        // A new thread waits for the next dispatch, not one that ran before it existed.
        const uint64_t now = generation_.load();
        for (int i = 0; i < workers; ++i) threads_.emplace_back([this, now] { loop(now); });
        scratch_.resize(size_t(workers) + 1);
    }

    Scratch& scratch(int64_t k) { return scratch_[size_t(k)]; }

    // False while the pool runs launches on the calling thread alone (after a stall, or
    // while the machine has no core free for a worker). Called by the calling thread only.
    bool workers_welcome() {
        if (threads_.empty()) return false;
        const auto now = Clock::now();
        if (now < alone_until_.load(std::memory_order_relaxed)) return false;
        if (adaptive_ && load_known_ && now >= next_look_) {
            next_look_ = now + LOOK_EVERY;
            // twice in a row: a kernel thread is runnable now and then on an idle machine;
            // once more after a crowded spell alone, so a lasting load never gets a split
            crowded_looks_ = crowded() ? crowded_looks_ + 1 : 0;
            if (crowded_looks_ >= 2) {
                crowded_looks_ = 1;
                alone_until_.store(now + ALONE_FIRST, std::memory_order_relaxed);
                return false;
            }
        }
        return true;
    }

    // Run chunks 0..count-1 of `fn`, each exactly once, on the calling thread and the
    // workers; returns when all are done.
    void run(chunk_fn fn, void* ctx, int64_t count) {
        fn_.store(fn, std::memory_order_relaxed);
        ctx_.store(ctx, std::memory_order_relaxed);
        count_.store(count, std::memory_order_relaxed);
        done_.store(0, std::memory_order_relaxed);
        const uint64_t gen = generation_.load(std::memory_order_relaxed) + 1;
        started_.store(Clock::now(), std::memory_order_relaxed);
        ticket_.store(gen << 32, std::memory_order_release);
        generation_.store(gen);  // seq_cst, as the sleepers_ load below: no wakeup is lost
        if (sleepers_.load() > 0) {
            std::lock_guard<std::mutex> lock(m_);
            wake_.notify_all();
        }
        const auto start = Clock::now();
        const int64_t cpu_start = thread_cpu_ns();
        const int64_t mine = claim(gen);
        const int64_t cpu = thread_cpu_ns() - cpu_start;
        const auto claimed_all = Clock::now();
        for (int spins = 0; done_.load(std::memory_order_acquire) != count; ++spins) {
            if (spins < 4096) cpu_relax();
            else std::this_thread::yield();
        }
        judge(start, claimed_all, Clock::now(), cpu, mine, count);
    }

  private:
    // More runnable threads than cores once the workers join: the count includes the
    // caller (running) and the workers not asleep (spinning for work, or ending a chunk),
    // which are this pool's own. A pool larger than the cores (the user's choice) counts
    // as one thread per core.
    bool crowded() const {
        const int running = runnable_threads();
        if (running < 0) return false;
        const int awake = int(threads_.size()) - sleepers_.load(std::memory_order_relaxed);
        return running - 1 - awake + std::min(size(), usable_cores_) > usable_cores_;
    }

    // Claim and run chunks of dispatch `gen` until none is left; how many this thread ran.
    // The ticket packs the dispatch's generation with the next chunk, so a worker waking
    // late never claims a chunk of a later dispatch with an earlier one's function.
    int64_t claim(uint64_t gen) {
        int64_t ran = 0;
        uint64_t t = ticket_.load(std::memory_order_acquire);
        for (;;) {
            if ((t >> 32) != (gen & 0xffffffffu)) return ran;
            const int64_t k = int64_t(t & 0xffffffffu);
            chunk_fn fn = fn_.load(std::memory_order_relaxed);
            void* ctx = ctx_.load(std::memory_order_relaxed);
            if (k >= count_.load(std::memory_order_relaxed)) return ran;
            // Winning the exchange proves dispatch `gen` still had chunk k unclaimed, so the
            // caller is still waiting for it and fn/ctx read above are that dispatch's.
            if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire))
                continue;
            fn(ctx, k);
            done_.fetch_add(1, std::memory_order_release);
            ++ran;
            t = ticket_.load(std::memory_order_acquire);
        }
    }

    // A dispatch stalled when the caller ran its chunks with under 3/4 of a core (more
    // threads want the cores than there are), when, out of chunks to claim, it waited for a
    // worker's chunk much longer than its own chunks took (that worker lost its core
    // mid-chunk), or when a worker spinning for work missed a dispatch. Two stalls in a row
    // send the pool alone; so does a losing split: the time the caller alone would have
    // taken (its time per chunk times every chunk) over the time the dispatches took, summed
    // over the recent ones (decaying by 7/8 a dispatch), below 1. One worker losing its core
    // for a scheduler slice (milliseconds) costs more than dozens of 50 us dispatches gain,
    // however rarely it happens: with one other busy process on two cores that was every few
    // dispatches, too seldom twice in a row, and the cloth step ran 1.2-1.9x slower than on
    // one thread.
    void judge(Clock::time_point start, Clock::time_point claimed_all, Clock::time_point end, int64_t cpu_ns,
               int64_t mine, int64_t count) {
        const int64_t wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(claimed_all - start).count();
        if (!adaptive_) return;
        bool stalled = missed_.exchange(false, std::memory_order_relaxed) ||
                       (cpu_ns > 0 && wall_ns > 20000 && 4 * cpu_ns < 3 * wall_ns);
        if (!stalled && mine == count) return;  // the workers ran nothing: nothing to learn
        const auto own = (claimed_all - start) / std::max<int64_t>(mine, 1);
        stalled = stalled || end - claimed_all > 4 * own + std::chrono::microseconds(50);
        alone_would_take_ = alone_would_take_ * 0.875 + double(own.count()) * double(count);
        split_took_ = split_took_ * 0.875 + double((end - start).count());
        using D = Clock::duration;
        strikes_ = stalled ? strikes_ + 1 : 0;
        if (strikes_ >= 2 || alone_would_take_ < split_took_) {
            alone_for_ = alone_for_.count() ? std::min(2 * alone_for_, D(ALONE_MAX)) : D(ALONE_FIRST);
            alone_until_.store(end + alone_for_, std::memory_order_relaxed);
            clean_ = strikes_ = 0;
            alone_would_take_ = split_took_ = 0.0;  // the next split is judged afresh
        } else if (++clean_ >= TRUST_AFTER) {
            alone_for_ = alone_for_ > D(ALONE_FIRST) ? alone_for_ / 2 : D(0);
            clean_ = 0;
        }
    }

    void loop(uint64_t seen) {
        flush_subnormals ftz;
        for (;;) {
            bool spun = false;
            const uint64_t now = wait_for_work(seen, spun);
            if (quit_.load()) return;
            seen = now;
            // Spinning, it should have seen the dispatch within microseconds: finding every
            // chunk taken long after it began means this thread had no core.
            if (claim(now) == 0 && spun && Clock::now() - started_.load(std::memory_order_relaxed) > MISSED_AFTER)
                missed_.store(true, std::memory_order_relaxed);
        }
    }

    uint64_t wait_for_work(uint64_t seen, bool& spun) {
        if (spin_ && Clock::now() >= alone_until_.load(std::memory_order_relaxed)) {
            const auto until = Clock::now() + SPIN_FOR;
            for (int spins = 1;; ++spins) {
                const uint64_t now = generation_.load(std::memory_order_acquire);
                if (now != seen || quit_.load(std::memory_order_relaxed)) {
                    spun = true;
                    return now;
                }
                cpu_relax();
                if (spins % 256 == 0 && Clock::now() > until) break;
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
    std::atomic<uint64_t> ticket_{0};
    std::atomic<chunk_fn> fn_{nullptr};
    std::atomic<void*> ctx_{nullptr};
    std::atomic<int64_t> count_{0};
    std::atomic<int64_t> done_{0};
    std::atomic<int> sleepers_{0};
    std::atomic<bool> quit_{false};
    std::atomic<bool> missed_{false};  // a spinning worker found a dispatch's chunks all taken
    bool spin_ = true;
    const bool load_known_;  // runnable_threads() counts this process's cores (load_is_ours)
    int usable_cores_ = 1;
    Clock::time_point next_look_{};  // when the caller next counts the runnable threads
    int crowded_looks_ = 0;  // looks in a row that found more runnable threads than cores
    bool adaptive_ = true;
    // Written by the calling thread after a dispatch, read by workers deciding to spin: a
    // stale read only makes one worker spin or sleep once more.
    std::atomic<Clock::time_point> alone_until_{Clock::time_point{}};
    std::atomic<Clock::time_point> started_{Clock::time_point{}};  // when the last dispatch began
    Clock::duration alone_for_{0};
    int strikes_ = 0;  // stalled dispatches in a row
    int clean_ = 0;  // dispatches in a row that did not stall
    // Decaying sums over the recent split dispatches (clock ticks): how long the caller alone
    // would have taken, and how long they took (judge).
    double alone_would_take_ = 0.0;
    double split_took_ = 0.0;
};

}  // namespace
