// gsort-ips4o: In-place Parallel Super Scalar Samplesort (Debian
// libips4o-dev, header-only C++) timed the way gsort-bench times a host
// candidate, so that bench/bench-host.py can set it beside the host radix,
// vqsort and numpy (issue 19 asks for the three side by side). It is a
// benchmark, not a candidate: measured, it never won (docs/PERFORMANCE.md),
// so the daemon does not carry it. Keys only (ips4o sorts with a
// comparator: no payload, no float total order for NaNs), every result
// checked. Integer keys are random bits, as gsort-bench's; float keys are
// uniform in (-1e6, 1e6), where gsort-bench's random bits include NaNs.
//
//     bench/gsort-ips4o [--dtype u32|i32|f32|u64|i64|f64] [--min-log2 20]
//                       [--max-log2 24] [--reps 5] [--params threads=N] [--csv]
#include "config.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <ips4o.hpp>

extern "C" {
#include "benchutil.h"
}

namespace {

struct opts {
    std::string dtype = "u32";
    int lo = 20, hi = 24, reps = 5, threads = 0;
    bool csv = false;
};

template <class T> T random_key(uint64_t *s)
{
    uint64_t r = bu_splitmix(s);
    if constexpr (std::is_floating_point<T>::value)
        return (T)((double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0) * (T)1e6;
    else
        return (T)r;
}

// Median ms of `reps` sorts of n random keys; false if one came out unsorted.
template <class T> bool run(const opts &o, size_t n, double *ms)
{
    std::vector<T> in(n), a(n);
    uint64_t s = 0x9e3779b97f4a7c15ULL ^ n;
    for (auto &x : in)
        x = random_key<T>(&s);
    std::vector<double> t;
    for (int r = 0; r < o.reps; r++) {
        std::memcpy(a.data(), in.data(), n * sizeof(T));
        double t0 = gs_now_ms();
        if (o.threads > 1)
            ips4o::parallel::sort(a.begin(), a.end(), std::less<T>(), o.threads);
        else
            ips4o::sort(a.begin(), a.end(), std::less<T>());
        t.push_back(gs_now_ms() - t0);
        if (!std::is_sorted(a.begin(), a.end()))
            return false;
    }
    *ms = bu_median(t.data(), t.size());
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    opts o;
    o.threads = (int)std::thread::hardware_concurrency();
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> const char * { return i + 1 < argc ? argv[++i] : ""; };
        if (a == "--dtype")
            o.dtype = next();
        else if (a == "--min-log2")
            o.lo = std::atoi(next());
        else if (a == "--max-log2")
            o.hi = std::atoi(next());
        else if (a == "--reps")
            o.reps = std::atoi(next());
        else if (a == "--params") {
            std::string p = next();
            if (p.rfind("threads=", 0) != 0 || std::atoi(p.c_str() + 8) < 1) {
                std::fprintf(stderr, "gsort-ips4o: --params takes threads=N only, not '%s'\n",
                             p.c_str());
                return 2;
            }
            o.threads = std::atoi(p.c_str() + 8);
        } else if (a == "--csv")
            o.csv = true;
        else {
            std::fprintf(stderr, "usage: gsort-ips4o [--dtype T] [--min-log2 A] [--max-log2 B] "
                         "[--reps R] [--params threads=N] [--csv]\n");
            return 2;
        }
    }
    if (o.lo < 1 || o.hi > 34 || o.lo > o.hi || o.reps < 1 || o.threads < 1) {
        std::fprintf(stderr, "gsort-ips4o: bad sizes, reps or threads\n");
        return 2;
    }
    if (o.csv)
        std::printf("device,algo,params,dtype,payload,n,kernel_ms,wall_ms,gkeys_per_s,note\n");
    else
        std::printf("%-8s %-6s %-12s %-4s %11s %10s %8s\n", "device", "algo", "params", "type",
                    "n", "wall_ms", "Gkeys/s");
    for (int lg = o.lo; lg <= o.hi; lg++) {
        size_t n = (size_t)1 << lg;
        double ms = 0;
        bool ok;
        const std::string &d = o.dtype;
        if (d == "u32")
            ok = run<uint32_t>(o, n, &ms);
        else if (d == "i32")
            ok = run<int32_t>(o, n, &ms);
        else if (d == "f32")
            ok = run<float>(o, n, &ms);
        else if (d == "u64")
            ok = run<uint64_t>(o, n, &ms);
        else if (d == "i64")
            ok = run<int64_t>(o, n, &ms);
        else if (d == "f64")
            ok = run<double>(o, n, &ms);
        else {
            std::fprintf(stderr, "gsort-ips4o: unknown dtype '%s'\n", d.c_str());
            return 2;
        }
        const char *note = ok ? "ok" : "UNSORTED";
        if (o.csv)
            std::printf("\"host\",ips4o,\"threads=%d\",%s,none,%zu,%.4f,%.4f,%.4f,%s\n",
                        o.threads, d.c_str(), n, ms, ms, n / ms / 1e6, note);
        else
            std::printf("%-8s %-6s threads=%-4d %-4s %11zu %10.4f %8.3f %s\n", "host", "ips4o",
                        o.threads, d.c_str(), n, ms, n / ms / 1e6, note);
        if (!ok)
            return 1;
    }
    return 0;
}
