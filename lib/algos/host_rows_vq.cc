// Highway's vqsort for the host sort's rows (host_rows.c), behind a C
// interface: ascending sorts of 32- and 64-bit words and of 128-bit words
// given as (low, high) pairs (how the rows sort a key with its index in
// the row). Compiled here from Highway's header for every target it
// dispatches to at run time, rather than called through hwy::Sorter,
// because the library's entry point costs a row ~0.6 us before it sorts
// anything (Highway 1.0.3: a getrandom() system call to seed the pivot
// sampling, and 8 KiB of buffer zeroed, on every call): at 64 keys that is
// most of the time, and a sixth of it at 1024. Here a sorter keeps its
// buffer, and the seed comes from a counter: the pivots need not be secret
// (an adversary's input makes a sort fall back to heapsort, N log N).
// Built without exceptions or RTTI, as gs_vqsort.cc.
#include "config.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "host_rows_vq.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/sort/traits-inl.h"
#include "hwy/contrib/sort/traits128-inl.h"
#include "hwy/contrib/sort/vqsort-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gs_rows {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if VQSORT_ENABLED
// hn::Sort without its per-call seeding and zeroed buffer.
template <class D, class Traits, typename T>
static void SortWith(D d, Traits st, T *keys, size_t num, T *buf, uint64_t seed)
{
    if (hn::detail::HandleSpecialCases(d, st, keys, num))
        return;
    hn::detail::Generator rng(seed);
    const size_t max_levels = 2 * hwy::CeilLog2(num) + 4;
    hn::detail::Recurse(d, st, keys, keys + num, num, buf, rng, max_levels);
}

void SortU32(uint32_t *keys, size_t n, void *buf, uint64_t seed)
{
    hn::SortTag<uint32_t> d;
    hn::detail::SharedTraits<hn::detail::TraitsLane<hn::detail::OrderAscending<uint32_t>>> st;
    SortWith(d, st, keys, n, static_cast<uint32_t *>(buf), seed);
}

void SortU64(uint64_t *keys, size_t n, void *buf, uint64_t seed)
{
    hn::SortTag<uint64_t> d;
    hn::detail::SharedTraits<hn::detail::TraitsLane<hn::detail::OrderAscending<uint64_t>>> st;
    SortWith(d, st, keys, n, static_cast<uint64_t *>(buf), seed);
}

void SortU128(uint64_t *pairs, size_t n, void *buf, uint64_t seed)
{
    hn::SortTag<uint64_t> d;
    hn::detail::SharedTraits<hn::detail::Traits128<hn::detail::OrderAscending128>> st;
    SortWith(d, st, pairs, 2 * n, static_cast<uint64_t *>(buf), seed);
}
#else
// A target without vqsort (no SSSE3): the C library's qsort.
static int CmpU32(const void *a, const void *b)
{
    uint32_t x = *static_cast<const uint32_t *>(a), y = *static_cast<const uint32_t *>(b);
    return (x > y) - (x < y);
}

static int CmpU64(const void *a, const void *b)
{
    uint64_t x = *static_cast<const uint64_t *>(a), y = *static_cast<const uint64_t *>(b);
    return (x > y) - (x < y);
}

static int CmpU128(const void *a, const void *b)
{
    const uint64_t *x = static_cast<const uint64_t *>(a), *y = static_cast<const uint64_t *>(b);
    return x[1] != y[1] ? (x[1] > y[1]) - (x[1] < y[1]) : (x[0] > y[0]) - (x[0] < y[0]);
}

void SortU32(uint32_t *keys, size_t n, void *, uint64_t)
{
    qsort(keys, n, sizeof *keys, CmpU32);
}

void SortU64(uint64_t *keys, size_t n, void *, uint64_t)
{
    qsort(keys, n, sizeof *keys, CmpU64);
}

void SortU128(uint64_t *pairs, size_t n, void *, uint64_t)
{
    qsort(pairs, n, 2 * sizeof *pairs, CmpU128);
}
#endif

}  // namespace HWY_NAMESPACE
}  // namespace gs_rows
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
extern "C" {
#include "host_rows.h"
}

// The best target this CPU runs, chosen once (Highway's own dispatch
// lives in libhwy, which the programs linking this do not link).
typedef void (*sort32_fn)(uint32_t *, size_t, void *, uint64_t);
typedef void (*sort64_fn)(uint64_t *, size_t, void *, uint64_t);
struct vq_fns {
    sort32_fn u32;
    sort64_fn u64, u128;
};
#define VQ_FNS(NS) vq_fns{ &gs_rows::NS::SortU32, &gs_rows::NS::SortU64, &gs_rows::NS::SortU128 }

static vq_fns pick(void)
{
    __builtin_cpu_init();
#if HWY_TARGETS & HWY_AVX3
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw"))
        return VQ_FNS(N_AVX3);
#endif
#if HWY_TARGETS & HWY_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
        __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
        return VQ_FNS(N_AVX2);
#endif
#if HWY_TARGETS & HWY_SSE4
    if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul") &&
        __builtin_cpu_supports("aes"))
        return VQ_FNS(N_SSE4);
#endif
#if HWY_TARGETS & HWY_SSSE3
    if (__builtin_cpu_supports("ssse3"))
        return VQ_FNS(N_SSSE3);
#endif
    return VQ_FNS(HWY_NAMESPACE);      // the baseline, compiled last
}

// pthread_once, not a function's static: that needs the C++ runtime
static vq_fns chosen;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    chosen = pick();
}

static const vq_fns &fns(void)
{
    pthread_once(&chosen_once, choose);
    return chosen;
}

// Highway's sorts take up to 8 KiB of buffer (vqsort-inl.h); twice that.
#define ROWS_VQ_BUF 16384

struct gs_rows_vq {
    void *buf;
    uint64_t calls;
};

static uint64_t next_seed(gs_rows_vq *s)
{
    uint64_t x = ++s->calls * UINT64_C(0x9e3779b97f4a7c15) ^ (uintptr_t)s;
    return x ^ (x >> 29);
}

// malloc, not new: the programs linking this are C programs, linked
// without the C++ runtime's operators.
void *gs_rows_vq_new(void)
{
    gs_rows_vq *s = static_cast<gs_rows_vq *>(malloc(sizeof *s));
    if (!s)
        return nullptr;
    s->calls = 0;
    s->buf = aligned_alloc(64, ROWS_VQ_BUF);
    if (!s->buf) {
        free(s);
        return nullptr;
    }
    return s;
}

void gs_rows_vq_free(void *p)
{
    gs_rows_vq *s = static_cast<gs_rows_vq *>(p);
    if (s) {
        free(s->buf);
        free(s);
    }
}

void gs_rows_vq_u32(void *p, uint32_t *keys, size_t n)
{
    gs_rows_vq *s = static_cast<gs_rows_vq *>(p);
    fns().u32(keys, n, s->buf, next_seed(s));
}

void gs_rows_vq_u64(void *p, uint64_t *keys, size_t n)
{
    gs_rows_vq *s = static_cast<gs_rows_vq *>(p);
    fns().u64(keys, n, s->buf, next_seed(s));
}

void gs_rows_vq_u128(void *p, uint64_t *pairs, size_t n)
{
    gs_rows_vq *s = static_cast<gs_rows_vq *>(p);
    fns().u128(pairs, n, s->buf, next_seed(s));
}
#endif  // HWY_ONCE
