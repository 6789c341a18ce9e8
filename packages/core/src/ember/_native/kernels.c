/* Ember's fused float32 CPU kernels (ember._native compiles this file with the machine's C
 * compiler on first use and calls it through ctypes; see __init__.py).
 *
 * Each kernel is one pass over contiguous float32 rows doing what the NumPy formulation does
 * in many (one ufunc call per arithmetic step): exact GELU and its derivative, layer norm's
 * rows, an LSTM time step's gate arithmetic and its backward. The loops are branch-free so
 * that the compiler vectorizes them (-O3 -march=native); no -ffast-math: NaN and infinities
 * come out as IEEE arithmetic makes them, and nothing is reassociated except the row sums
 * marked `omp simd reduction` (lane-wise partial sums, as NumPy's own pairwise sums).
 *
 * exp_f32 and tanh_f32 are Cephes' float32 polynomials (S. Moshier), written here without
 * branches; GELU's normal CDF is the same weighted minimax polynomial as the NumPy kernel
 * (ember/ops/_special.py, _GELU_H) written as Phi = 1 / (1 + exp(-2 g(x))).
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

typedef ptrdiff_t idx;

/* GCC vectorises at 256 bits on AVX-512 cores unless told otherwise (-mprefer-vector-width):
 * the loops marked WIDE take all 512 (the LSTM gate passes: 10 -> 8 us a step of 16x512 on
 * an AVX-512 Xeon; the same per-element arithmetic, so the same bits). */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__)
#define WIDE __attribute__((target("prefer-vector-width=512")))
#else
#define WIDE
#endif

/* A pool of worker threads for the kernels that split their own work (the direct
 * convolutions): pool_for(fn, ctx, n, grain, threads) runs fn(ctx, i, b, e) over up to `threads`
 * contiguous chunks of [0, n) (at least `grain` items each, split as ember._parallel's
 * parallel_for splits), the calling thread taking the first. ember._parallel's Python pool
 * costs ~70 us a handoff on a 2-core VM, where a woken thread must take the GIL and
 * CPython's timed condition waits wake slowly (an untimed pthread wait: ~5 us); these
 * workers never touch Python: they spin for POOL_SPIN_NS after a job, then sleep on an
 * untimed condition variable. A training step's next split job comes after a few other ops,
 * and a sleeping worker is slow to wake on a VM (a 512x128 by 128x128 product on two threads:
 * 54 us back to back, 135-170 us after 50-250 us of other work with a 50 us spin), so they
 * spin for 2 ms (OpenBLAS's and OpenMP's threads spin for 100-200 ms); every 64 spins they
 * yield (sched_yield), so that another thread on their core (another process's) runs
 * meanwhile. With the products on this pool too (sgemm below): a Transformer layer's step
 * 5.9 -> 4.4 ms, an MLP's 2.6 -> 2.4, LeNet's 3.9 -> 3.1 (10 ms spins were no faster, and
 * slower where OpenBLAS's threads also ran). One job at a time: a caller that finds the
 * pool busy (another Python thread's job) runs serially. A forked child starts workers of
 * its own. */
#define POOL_MAX 64
#define POOL_SPIN_NS 2000000L

typedef void (*pool_job)(void *ctx, idx chunk, idx b, idx e);

static struct {
    pthread_mutex_t mu;  /* guards the sleepers' waits */
    pthread_cond_t wake;
    pthread_mutex_t busy;  /* held by the caller of the job in flight */
    int workers;  /* started (under busy) */
    atomic_uint gen;  /* bumped per job */
    atomic_int sleepers;
    atomic_int pending;  /* workers yet to finish the job in flight, chunk or none */
    atomic_long jobs;  /* split jobs run in this process (for tests) */
    unsigned start_gen[POOL_MAX];
    pool_job fn;
    void *ctx;
    idx chunks, bounds[POOL_MAX + 1];
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

static long pool_ns_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

static inline void pool_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *pool_worker(void *arg) {
    int me = (int)(intptr_t)arg;  /* runs chunk me + 1 */
    unsigned seen = pool.start_gen[me];
    for (;;) {
        unsigned g;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (long spins = 1; (g = atomic_load(&pool.gen)) == seen; spins++) {
            if (spins % 64 == 0) sched_yield();
            if (spins % 256 == 0 && pool_ns_since(&t0) > POOL_SPIN_NS) {
                pthread_mutex_lock(&pool.mu);
                atomic_fetch_add(&pool.sleepers, 1);
                while ((g = atomic_load(&pool.gen)) == seen)
                    pthread_cond_wait(&pool.wake, &pool.mu);
                atomic_fetch_sub(&pool.sleepers, 1);
                pthread_mutex_unlock(&pool.mu);
                break;
            }
            pool_relax();
        }
        seen = g;
        /* the job's fields stay put until every worker has counted itself off */
        if (me + 1 < pool.chunks) pool.fn(pool.ctx, me + 1, pool.bounds[me + 1], pool.bounds[me + 2]);
        atomic_fetch_sub(&pool.pending, 1);
    }
    return NULL;
}

static void pool_after_fork(void) {
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
    pthread_mutex_init(&pool.busy, NULL);
    pool.workers = 0;
    atomic_store(&pool.sleepers, 0);
    atomic_store(&pool.pending, 0);
    atomic_store(&pool.jobs, 0);
}

static void pool_register_fork(void) { pthread_atfork(NULL, NULL, pool_after_fork); }

/* at least k workers started (the caller holds busy); 0 where a thread could not start */
static int pool_start(int k) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, pool_register_fork);
    while (pool.workers < k) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pool.start_gen[pool.workers] = atomic_load(&pool.gen);
        int err = pthread_create(&t, &attr, pool_worker, (void *)(intptr_t)pool.workers);
        pthread_attr_destroy(&attr);
        if (err) return 0;
        pool.workers++;
    }
    return 1;
}

static void pool_for(pool_job fn, void *ctx, idx n, idx grain, idx threads) {
    if (n <= 0) return;
    idx chunks = n / (grain > 1 ? grain : 1);
    if (threads > POOL_MAX) threads = POOL_MAX;
    if (chunks > threads) chunks = threads;
    if (chunks < 2 || pthread_mutex_trylock(&pool.busy) != 0) {
        fn(ctx, 0, 0, n);
        return;
    }
    if (!pool_start((int)chunks - 1)) {
        pthread_mutex_unlock(&pool.busy);
        fn(ctx, 0, 0, n);
        return;
    }
    pool.fn = fn;
    pool.ctx = ctx;
    pool.chunks = chunks;
    for (idx i = 0; i <= chunks; i++) pool.bounds[i] = n * i / chunks;
    atomic_store(&pool.pending, pool.workers);
    atomic_fetch_add(&pool.jobs, 1);
    atomic_fetch_add(&pool.gen, 1);
    if (atomic_load(&pool.sleepers) > 0) {
        pthread_mutex_lock(&pool.mu);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.mu);
    }
    fn(ctx, 0, pool.bounds[0], pool.bounds[1]);
    for (long spins = 1; atomic_load(&pool.pending) > 0; spins++) {
        if (spins % 4096 == 0) sched_yield();  /* a worker that lost its core */
        else pool_relax();
    }
    pthread_mutex_unlock(&pool.busy);
}

/* For tests: how many workers the pool has started in this process, how many jobs it split. */
int ember_pool_workers(void) { return pool.workers; }
long ember_pool_jobs(void) { return atomic_load(&pool.jobs); }

/* ember_split: another kernel of this file called over the pool, the way ember._native's
 * by_rows and chunks call it over Ember's Python pool. Pointer argument a (k of them, up to
 * SPLIT_MAX) is passed as p[a] + b * row[a] + chunk * per_chunk[a] bytes for the chunk's
 * rows [b, e) (NULL stays NULL), then the count e - b, then the scalars that `sig` names:
 *   SPLIT_NONE (), SPLIT_F (float), SPLIT_N_F (idx, float), SPLIT_N_I (idx, int),
 *   SPLIT_N (idx), SPLIT_I_F7 (int, 7 floats), SPLIT_N_N (idx, idx),
 *   SPLIT_N_N_I_I (idx, idx, int, int), SPLIT_N4 (4 idx), SPLIT_N10 (10 idx);
 * or, for the kernels that take their range last (batch norm's channels), every argument
 * fixed and (b, e) appended: SPLIT_RANGE_BN (6 pointers, idx, idx, idx, float, then b, e)
 * and SPLIT_RANGE_BN_BW (8 pointers, idx, idx, idx, then b, e). ember._native derives `sig`
 * from the kernel's ctypes argument types, so a call never reaches a prototype other than
 * the kernel's own. Returns 0 for a signature it does not know (the caller then splits in
 * Python). */
#define SPLIT_MAX 8
enum { SPLIT_NONE, SPLIT_F, SPLIT_N_F, SPLIT_N_I, SPLIT_N, SPLIT_I_F7, SPLIT_N_N,
       SPLIT_N_N_I_I, SPLIT_RANGE_BN, SPLIT_RANGE_BN_BW, SPLIT_N4, SPLIT_N10 };

typedef struct {
    void (*fn)(void);
    int sig, k;
    char *p[SPLIT_MAX];
    idx row[SPLIT_MAX], per_chunk[SPLIT_MAX], n[10];
    int i[2];
    float f[7];
} split_job;

#define SP(a) (j->p[a] ? j->p[a] + b * j->row[a] + chunk * j->per_chunk[a] : NULL)
#define PT1 void *
#define PT2 PT1, void *
#define PT3 PT2, void *
#define PT4 PT3, void *
#define PT5 PT4, void *
#define PT6 PT5, void *
#define PT7 PT6, void *
#define PT8 PT7, void *
#define PA1 SP(0)
#define PA2 PA1, SP(1)
#define PA3 PA2, SP(2)
#define PA4 PA3, SP(3)
#define PA5 PA4, SP(4)
#define PA6 PA5, SP(5)
#define PA7 PA6, SP(6)
#define PA8 PA7, SP(7)
#define SPLIT_UNPAREN(...) __VA_ARGS__
/* ET, EA: the scalars' types and values, each a parenthesised list that starts with a comma */
#define SPLIT_CALL(K, ET, EA) \
    ((void (*)(PT##K, idx SPLIT_UNPAREN ET))j->fn)(PA##K, e - b SPLIT_UNPAREN EA)
#define SPLIT_BY_K(ET, EA) switch (j->k) { \
    case 1: SPLIT_CALL(1, ET, EA); break; case 2: SPLIT_CALL(2, ET, EA); break; \
    case 3: SPLIT_CALL(3, ET, EA); break; case 4: SPLIT_CALL(4, ET, EA); break; \
    case 5: SPLIT_CALL(5, ET, EA); break; case 6: SPLIT_CALL(6, ET, EA); break; \
    case 7: SPLIT_CALL(7, ET, EA); break; default: SPLIT_CALL(8, ET, EA); break; }

static void split_run(void *ctx, idx chunk, idx b, idx e) {
    split_job *j = ctx;
    const float *f = j->f;
    const idx *n = j->n;
    const int *i = j->i;
    switch (j->sig) {
    case SPLIT_NONE: SPLIT_BY_K((), ()) break;
    case SPLIT_F: SPLIT_BY_K((, float), (, f[0])) break;
    case SPLIT_N_F: SPLIT_BY_K((, idx, float), (, n[0], f[0])) break;
    case SPLIT_N_I: SPLIT_BY_K((, idx, int), (, n[0], i[0])) break;
    case SPLIT_N: SPLIT_BY_K((, idx), (, n[0])) break;
    case SPLIT_I_F7:
        SPLIT_BY_K((, int, float, float, float, float, float, float, float),
                   (, i[0], f[0], f[1], f[2], f[3], f[4], f[5], f[6]))
        break;
    case SPLIT_N_N: SPLIT_BY_K((, idx, idx), (, n[0], n[1])) break;
    case SPLIT_N_N_I_I: SPLIT_BY_K((, idx, idx, int, int), (, n[0], n[1], i[0], i[1])) break;
    case SPLIT_N4: SPLIT_BY_K((, idx, idx, idx, idx), (, n[0], n[1], n[2], n[3])) break;
    case SPLIT_N10:
        SPLIT_BY_K((, idx, idx, idx, idx, idx, idx, idx, idx, idx, idx),
                   (, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9]))
        break;
    case SPLIT_RANGE_BN:
        ((void (*)(PT6, idx, idx, idx, float, idx, idx))j->fn)(
            j->p[0], j->p[1], j->p[2], j->p[3], j->p[4], j->p[5], n[0], n[1], n[2], f[0], b, e);
        break;
    case SPLIT_RANGE_BN_BW:
        ((void (*)(PT8, idx, idx, idx, idx, idx))j->fn)(
            j->p[0], j->p[1], j->p[2], j->p[3], j->p[4], j->p[5], j->p[6], j->p[7], n[0], n[1],
            n[2], b, e);
        break;
    }
}

int ember_split(void (*fn)(void), int sig, int k, void *const *p, const idx *row,
                const idx *per_chunk, idx rows, idx grain, idx threads, const idx *n,
                const int *ints, const float *floats) {
    if (sig < SPLIT_NONE || sig > SPLIT_N10 || k < 1 || k > SPLIT_MAX) return 0;
    split_job j;
    memset(&j, 0, sizeof j);
    j.fn = fn;
    j.sig = sig;
    j.k = k;
    for (int a = 0; a < k; a++) {
        j.p[a] = p[a];
        j.row[a] = row[a];
        j.per_chunk[a] = per_chunk[a];
    }
    memcpy(j.n, n, sizeof j.n);
    memcpy(j.i, ints, sizeof j.i);
    memcpy(j.f, floats, sizeof j.f);
    pool_for(split_run, &j, rows, grain, threads);
    return 1;
}

/* ember_ufunc_split: one of NumPy's own ufunc inner loops (PyUFuncObject.functions[i], the
 * public C-API's PyUFuncGenericFunction: args, dimensions, steps, data) over chunks of n
 * elements on the pool. Its k arguments (inputs then the output, k <= 3) start at p0, p1, p2
 * and step s0, s1, s2 bytes an element (0: a scalar that every chunk reads). The loops touch
 * no Python object for the numeric types ember._native hands over, so they run without the
 * GIL, and each element gets the very operations NumPy's own call gives it: the same bits,
 * whatever the split. Returns 0 for a bad k. */
typedef void (*ufunc_loop)(char **args, const idx *dims, const idx *steps, void *data);
typedef struct {
    ufunc_loop fn;
    void *data;
    int k;
    char *p[3];
    idx step[3];
} ufunc_job;

static void ufunc_run(void *ctx, idx chunk, idx b, idx e) {
    (void)chunk;
    const ufunc_job *j = ctx;
    char *args[3];
    idx steps[3], n = e - b;
    for (int a = 0; a < j->k; a++) args[a] = j->p[a] + b * j->step[a], steps[a] = j->step[a];
    if (n > 0) j->fn(args, &n, steps, j->data);
}

int ember_ufunc_split(void *fn, void *data, int k, void *p0, void *p1, void *p2, idx s0,
                      idx s1, idx s2, idx n, idx grain, idx threads) {
    if (k < 2 || k > 3 || fn == NULL) return 0;
    ufunc_job j = {(ufunc_loop)fn, data, k, {p0, p1, p2}, {s0, s1, s2}};
    pool_for(ufunc_run, &j, n, grain, threads);
    return 1;
}

static inline float bits_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t float_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* e^r for xc = n ln2 + r, |r| <= ln2/2 (Cephes' degree-5 polynomial), n into *n: the
 * shared core of the two exps below, which differ in how they apply 2^n. */
static inline float exp_reduced(float xc, uint32_t *n) {
    float t = xc * 1.44269504088896341f + 12582912.0f; /* + 1.5 * 2^23 rounds to an integer */
    *n = float_bits(t) - 0x4B400000u;
    float fn = t - 12582912.0f;
    float r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * (r * r) + r + 1.0f;
}

/* exp_reduced with its polynomial evaluated by Estrin's scheme (pairs, then pairs of
 * pairs), not Horner's, for GELU (as normal_cdf_f32's own polynomial): a vectorised loop of
 * these is bound by its dependency chain (the core keeps only so many waiting instructions),
 * and Estrin's is half as long (exact GELU of 1M floats on one thread, with the blocks of
 * ember_gelu_f32: 1.50 -> 0.78 ms on an AVX-512 Xeon). Its last bit differs from
 * exp_reduced's now and then, so the other kernels keep exp_reduced: their bits are what
 * seeded runs were checked with (a test's actor-critic learns CartPole by its seed). */
static inline float exp_reduced_estrin(float xc, uint32_t *n) {
    float t = xc * 1.44269504088896341f + 12582912.0f;
    *n = float_bits(t) - 0x4B400000u;
    float fn = t - 12582912.0f;
    float r = xc - fn * 0.693359375f;
    r = r - fn * -2.12194440e-4f;
    float r2 = r * r;
    float p01 = 1.6666665459e-1f * r + 5.0000001201e-1f;
    float p23 = 8.3334519073e-3f * r + 4.1665795894e-2f;
    float p45 = 1.9875691500e-4f * r + 1.3981999507e-3f;
    float p = (p23 * r2 + p01) + p45 * (r2 * r2);
    return p * r2 + (r + 1.0f);
}

/* exp(x), 2^n applied in two halves so that overflow to inf and gradual underflow to 0
 * come out of the multiplications themselves. NaN propagates (the clamps compare false). */
static inline float exp_f32_with(float x, int estrin) {
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    uint32_t n;
    float y = estrin ? exp_reduced_estrin(xc, &n) : exp_reduced(xc, &n);
    int32_t ni = (int32_t)n;
    int32_t n1 = ni / 2, n2 = ni - n1;
    y *= bits_float((uint32_t)(n1 + 127) << 23);
    return y * bits_float((uint32_t)(n2 + 127) << 23);
}

/* exp(x) with 2^n added to the exponent bits directly (cheaper than exp_f32's two scalings),
 * so results stay normal: x below -87 gives ~1.6e-38 instead of a subnormal or 0, which is
 * harmless where the result is added to 1 (sigmoid); above float32's range it is inf. */
static inline float exp_normal_with(float x, int estrin) {
    float xc = x > 88.0f ? 88.0f : x;
    xc = xc < -87.0f ? -87.0f : xc;
    uint32_t n;
    float y = estrin ? exp_reduced_estrin(xc, &n) : exp_reduced(xc, &n);
    float e = bits_float(float_bits(y) + (n << 23));
    e = x > 88.72284f ? INFINITY : e; /* past float32's largest exp: inf, as exp_f32 */
    return xc == xc ? e : xc; /* a NaN's payload bits must not reach the exponent sum */
}

static inline float exp_f32(float x) { return exp_f32_with(x, 0); }
static inline float exp_normal_f32(float x) { return exp_normal_with(x, 0); }

/* tanh(x): Cephes' odd polynomial below |x| = 0.625, 1 - 2 / (e^2|x| + 1) with x's sign
 * above (both computed, one selected: no branch). */
static inline float tanh_f32(float x) {
    float z = x * x;
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z
                    + 1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float ax = fabsf(x);
    float big = 1.0f - 2.0f / (exp_f32(2.0f * ax) + 1.0f);
    big = copysignf(big, x);
    return ax < 0.625f ? small : big;
}

/* 1 / (1 + e^-x): no cancellation anywhere (e^-x overflowing gives exactly 0). */
static inline float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_normal_f32(-x)); }

/* Phi(x) = (1 + tanh(g)) / 2 = 1 / (1 + e^(-2g)), g(x) = x h(x^2). */
static inline float normal_cdf_f32(float x, float z) {
    /* Past |x| = 14 the sigmoid saturates (2 |x| h >= 2e6): z held there keeps Estrin's
     * terms from overflowing to inf - inf (NaN), where Horner's leading term took over.
     * NaN passes (the comparison is false). */
    z = z > 200.0f ? 200.0f : z;
    float z2 = z * z;
    float h01 = 0.036333084412767114f * z + 0.797884941489105f;
    float h23 = -5.530631422802009e-05f * z - 3.2594749802310294e-05f;
    float h46 = (1.7562759871638681e-09f * z2 - 1.322662317424106e-07f * z)
        + 3.964772623463722e-06f;
    float h = (h23 * z2 + h01) + h46 * (z2 * z2);
    return 1.0f / (1.0f + exp_normal_with(-2.0f * x * h, 1)); /* sigmoid(2g) */
}

#define INV_SQRT_2PI 0.3989422804014327f

static inline float gelu_one(float v) { return v * normal_cdf_f32(v, v * v); }

static inline float gelu_grad_one(float v, float p) {
    return p + v * (exp_f32_with(-0.5f * (v * v), 1) * INV_SQRT_2PI);
}

/* The GELU loops run WIDE, in blocks of GELU_BLOCK elements whose inner loop has a fixed
 * count: GCC unrolls it into several independent vectors, which the core overlaps (one
 * vector's chain at a time it cannot: 0.98 -> 0.78 ms for 1M floats). */
#define GELU_BLOCK 64

/* y = gelu(x) (exact form). */
WIDE void ember_gelu_f32(const float *restrict x, float *restrict y, idx n) {
    idx i = 0;
    for (; i + GELU_BLOCK <= n; i += GELU_BLOCK)
        for (int j = 0; j < GELU_BLOCK; j++) y[i + j] = gelu_one(x[i + j]);
    for (; i < n; i++) y[i] = gelu_one(x[i]);
}

/* y = gelu(x) and d = gelu'(x) = Phi(x) + x phi(x) (exact form). */
WIDE void ember_gelu_with_grad_f32(const float *restrict x, float *restrict y,
                                   float *restrict d, idx n) {
    idx i = 0;
    for (; i + GELU_BLOCK <= n; i += GELU_BLOCK)
        for (int j = 0; j < GELU_BLOCK; j++) {
            float v = x[i + j], p = normal_cdf_f32(v, v * v);
            y[i + j] = v * p;
            d[i + j] = gelu_grad_one(v, p);
        }
    for (; i < n; i++) {
        float v = x[i], p = normal_cdf_f32(v, v * v);
        y[i] = v * p;
        d[i] = gelu_grad_one(v, p);
    }
}

/* x = gelu(x + b) in place over `rows` contiguous rows of n, b (n) added to every row: a
 * linear layer's bias and exact GELU in one pass over its fresh output (inference). */
WIDE void ember_bias_gelu_inplace_f32(float *x, const float *restrict b, idx rows, idx n) {
    for (idx r = 0; r < rows; r++) {
        float *restrict xr = x + r * n;
        idx i = 0;
        for (; i + GELU_BLOCK <= n; i += GELU_BLOCK)
            for (int j = 0; j < GELU_BLOCK; j++) xr[i + j] = gelu_one(xr[i + j] + b[i + j]);
        for (; i < n; i++) xr[i] = gelu_one(xr[i] + b[i]);
    }
}

/* out = g * gelu'(x) (exact form). */
WIDE void ember_gelu_backward_f32(const float *restrict x, const float *restrict g,
                                  float *restrict out, idx n) {
    idx i = 0;
    for (; i + GELU_BLOCK <= n; i += GELU_BLOCK)
        for (int j = 0; j < GELU_BLOCK; j++) {
            float v = x[i + j];
            out[i + j] = g[i + j] * gelu_grad_one(v, normal_cdf_f32(v, v * v));
        }
    for (; i < n; i++) out[i] = g[i] * gelu_grad_one(x[i], normal_cdf_f32(x[i], x[i] * x[i]));
}

/* Layer norm of `rows` contiguous rows of n: mean and 1/sqrt(var + eps) (biased variance of
 * the centred row, two passes) into mean/rstd, y = (x - mean) * rstd [* w] [+ b]. */
void ember_layer_norm_f32(const float *restrict x, const float *restrict w,
                          const float *restrict b, float *restrict y, float *restrict mean,
                          float *restrict rstd, idx rows, idx n, float eps) {
    for (idx r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (idx i = 0; i < n; i++) s += xr[i];
        float m = s / (float)n;
        float q = 0.0f;
#pragma omp simd reduction(+ : q)
        for (idx i = 0; i < n; i++) {
            float c = xr[i] - m;
            q += c * c;
        }
        float rs = 1.0f / sqrtf(q / (float)n + eps);
        mean[r] = m;
        rstd[r] = rs;
        if (w != NULL && b != NULL) {
            for (idx i = 0; i < n; i++) yr[i] = (xr[i] - m) * rs * w[i] + b[i];
        } else if (w != NULL) {
            for (idx i = 0; i < n; i++) yr[i] = (xr[i] - m) * rs * w[i];
        } else if (b != NULL) {
            for (idx i = 0; i < n; i++) yr[i] = (xr[i] - m) * rs + b[i];
        } else {
            for (idx i = 0; i < n; i++) yr[i] = (xr[i] - m) * rs;
        }
    }
}

/* Layer norm's backward over `rows` contiguous rows of n, from the forward's mean and rstd:
 * gx = rstd * (g*w - mean(g*w) - (x - mean) * rstd^2 * mean(g*w*(x - mean))) into gx, and
 * g*(x - mean)*rstd and g summed over the rows into gw and gb (added to what they hold: the
 * caller zero-fills them, one pair per block of rows). w, gx, gw, gb may be NULL. Two passes
 * over each row, in cache, where the NumPy formulation makes seven over the whole input. */
void ember_layer_norm_backward_f32(const float *restrict g, const float *restrict x,
                                   const float *restrict mean, const float *restrict rstd,
                                   const float *restrict w, float *restrict gx,
                                   float *restrict gw, float *restrict gb, idx rows, idx n) {
    for (idx r = 0; r < rows; r++) {
        const float *gr = g + r * n, *xr = x + r * n;
        float m = mean[r], rs = rstd[r];
        float s1 = 0.0f, s2 = 0.0f;
        if (gw != NULL && gb != NULL && w != NULL) { /* the common case: one pass */
#pragma omp simd reduction(+ : s1, s2)
            for (idx i = 0; i < n; i++) {
                float c = xr[i] - m, gi = gr[i], gwi = gi * w[i];
                gw[i] += gi * c * rs;
                gb[i] += gi;
                s1 += gwi;
                s2 += gwi * c;
            }
        } else {
            if (gw != NULL) {
                for (idx i = 0; i < n; i++) gw[i] += gr[i] * (xr[i] - m) * rs;
            }
            if (gb != NULL) {
                for (idx i = 0; i < n; i++) gb[i] += gr[i];
            }
            if (gx == NULL) continue;
#pragma omp simd reduction(+ : s1, s2)
            for (idx i = 0; i < n; i++) {
                float gwi = w != NULL ? gr[i] * w[i] : gr[i];
                s1 += gwi;
                s2 += gwi * (xr[i] - m);
            }
        }
        if (gx == NULL) continue;
        float *gxr = gx + r * n;
        float a = s1 / (float)n, b = s2 * (rs * rs) / (float)n;
        if (w != NULL) {
            for (idx i = 0; i < n; i++) gxr[i] = (gr[i] * w[i] - a - (xr[i] - m) * b) * rs;
        } else {
            for (idx i = 0; i < n; i++) gxr[i] = (gr[i] - a - (xr[i] - m) * b) * rs;
        }
    }
}

/* Attention's softmax parts, in place over `rows` score rows of n (row stride n), in
 * groups of `length` rows: e = exp(s) and its row sum into z (float sums), the
 * max not subtracted (the caller checks the sums' range and redoes a batch the safe way).
 * With `causal`, row i of a group keeps columns 0..i (PyTorch's top-left aligned mask): the
 * rest are written 0 and never read, so the caller need not add a mask or compute the scores
 * there. One pass per row, in cache, where NumPy made three over the scores (mask, exp,
 * sum) and exponentiated the masked half. The exp is GELU's (Estrin's scheme) and keeps its
 * results normal (a score under -87 gives ~1.6e-38, not 0: nothing beside a row's sum of at
 * least e^-40, below which the caller redoes the row the exact way anyway). */
WIDE void ember_attention_exp_f32(float *s, float *restrict z, idx rows, idx n, idx length,
                                  int causal) {
    for (idx r = 0; r < rows; r++) {
        float *sr = s + r * n;
        idx keep = causal ? r % length + 1 : n;
        keep = keep < n ? keep : n;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (idx j = 0; j < keep; j++) {
            float v = exp_normal_with(sr[j], 1);
            sr[j] = v;
            sum += v;
        }
        for (idx j = keep; j < n; j++) sr[j] = 0.0f;
        z[r] = sum;
    }
}

/* Attention's score gradient in place over `rows` rows of n (groups of `length` rows, as
 * ember_attention_exp_f32): ds = e * (ds * keep - d[row]) (keep, dropout's multipliers of
 * ds's shape, may be NULL). With `causal`, the columns past each row's keys are written 0
 * and not read (the caller computed no gradient there). One pass where NumPy made two or
 * three. */
WIDE void ember_attention_ds_f32(float *ds, const float *restrict e, const float *restrict keep,
                                 const float *restrict d, idx rows, idx n, idx length,
                                 int causal) {
    for (idx r = 0; r < rows; r++) {
        float *sr = ds + r * n;
        const float *er = e + r * n;
        idx last = causal ? r % length + 1 : n;
        last = last < n ? last : n;
        float dr = d[r];
        if (keep != NULL) {
            const float *kr = keep + r * n;
            for (idx j = 0; j < last; j++) sr[j] = er[j] * (sr[j] * kr[j] - dr);
        } else {
            for (idx j = 0; j < last; j++) sr[j] = er[j] * (sr[j] - dr);
        }
        for (idx j = last; j < n; j++) sr[j] = 0.0f;
    }
}

/* exp(x - m) of a row into er and the sum of those, as the log-softmax kernels take it */
static inline __attribute__((always_inline)) float
log_softmax_row_sum(const float *restrict xr, float *restrict er, idx n, float m) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (idx i = 0; i < n; i++) {
        float v = exp_f32(xr[i] - m);
        er[i] = v;
        s += v;
    }
    return s;
}

/* Softmax over `rows` contiguous rows of n: y = exp(x - max) / sum(exp(x - max)). With
 * `log`, y = (x - max) - log(sum) instead, exp(x - max) into e and the sums into z (both
 * kept for the backward; NULL when not wanted). A row holding NaN or +inf, or only -inf,
 * gives NaN as the NumPy formulation does (the max skips a NaN, whose exp then makes the
 * sum NaN; inf - inf is NaN). One row's passes run in cache; NumPy's maximum
 * along a short last axis loops per row (16 columns: ~80 ns a row). */
void ember_softmax_f32(const float *restrict x, float *restrict y, float *restrict e,
                       float *restrict z, idx rows, idx n, int log) {
    for (idx r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (idx i = 0; i < n; i++) m = xr[i] > m ? xr[i] : m;
        float s = 0.0f;
        if (!log) {
#pragma omp simd reduction(+ : s)
            for (idx i = 0; i < n; i++) {
                float v = exp_f32(xr[i] - m);
                yr[i] = v;
                s += v;
            }
            for (idx i = 0; i < n; i++) yr[i] = yr[i] / s;
            continue;
        }
        s = log_softmax_row_sum(xr, e != NULL ? e + r * n : yr, n, m);
        if (z != NULL) z[r] = s;
        float ls = logf(s);
        for (idx i = 0; i < n; i++) yr[i] = (xr[i] - m) - ls;
    }
}

/* cross_entropy's log-softmax without the log-probabilities (ember.ops.loss): per row of n
 * classes exp(x - max) into e, its sum into z and, at the row's class t[r] (in range), the
 * log-probability (x[t] - max) - log(sum) into picked: the very operations of
 * ember_softmax_f32's log-softmax, so the loss has log_softmax's bits, in one pass set
 * where NumPy made five (2048 x 512 logits: 1.75 -> ~0.3 ms). */
void ember_cross_entropy_f32(const float *restrict x, const int64_t *restrict t,
                             float *restrict e, float *restrict z, float *restrict picked,
                             idx rows, idx n) {
    for (idx r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (idx i = 0; i < n; i++) m = xr[i] > m ? xr[i] : m;
        const float s = log_softmax_row_sum(xr, e + r * n, n, m);
        z[r] = s;
        picked[r] = (xr[t[r]] - m) - logf(s);
    }
}

/* cross_entropy's backward from its forward's e and z (ember.ops.loss): per row of n,
 * gx = e * (a / z), then a added at the row's class t[r] (a = the row's -d loss / d logp at
 * its target: minus_a[r] = -a), each operation NumPy's (a broadcast product, then an indexed
 * add), so the same bits, in one pass. */
void ember_cross_entropy_backward_f32(const float *restrict e, const float *restrict z,
                                      const float *restrict minus_a,
                                      const int64_t *restrict t, float *restrict gx, idx rows,
                                      idx n) {
    for (idx r = 0; r < rows; r++) {
        const float *er = e + r * n;
        float *gr = gx + r * n;
        const float scale = -minus_a[r] / z[r];
        for (idx i = 0; i < n; i++) gr[i] = er[i] * scale;
        gr[t[r]] = gr[t[r]] + minus_a[r];
    }
}

/* Softmax's backward over `rows` contiguous rows of n: out = g*y - y * sum(g*y). */
void ember_softmax_backward_f32(const float *restrict y, const float *restrict g,
                                float *restrict out, idx rows, idx n) {
    for (idx r = 0; r < rows; r++) {
        const float *yr = y + r * n, *gr = g + r * n;
        float *o = out + r * n;
        float s = 0.0f;
#pragma omp simd reduction(+ : s)
        for (idx i = 0; i < n; i++) {
            float v = gr[i] * yr[i];
            o[i] = v;
            s += v;
        }
        for (idx i = 0; i < n; i++) o[i] -= yr[i] * s;
    }
}

/* One LSTM time step's gates for `bs` rows of hidden size H (ember.nn's packed layout):
 * a (bs, 4H) holds the pre-activations i/2, f/2, g, o/2 (the sigmoid gates pre-scaled by one
 * half, as the NumPy kernel keeps them) and is overwritten by the activations
 * sigmoid(i), sigmoid(f), tanh(g), sigmoid(o); then c = f * c_prev + i * g, tc = tanh(c),
 * m = o * tc. Rows of a have stride 4H, the others H. */
WIDE void ember_lstm_gates_f32(float *restrict a, const float *restrict c_prev, float *restrict c,
                          float *restrict tc, float *restrict m, idx bs, idx H) {
    for (idx r = 0; r < bs; r++) {
        float *ar = a + r * 4 * H;
        for (idx k = 0; k < 2 * H; k++) ar[k] = sigmoid_f32(2.0f * ar[k]);
        for (idx k = 2 * H; k < 3 * H; k++) ar[k] = tanh_f32(ar[k]);
        for (idx k = 3 * H; k < 4 * H; k++) ar[k] = sigmoid_f32(2.0f * ar[k]);
        const float *cp = c_prev + r * H;
        float *cr = c + r * H, *tr = tc + r * H, *mr = m + r * H;
        for (idx k = 0; k < H; k++) {
            float cv = ar[H + k] * cp[k] + ar[k] * ar[2 * H + k];
            float t = tanh_f32(cv);
            cr[k] = cv;
            tr[k] = t;
            mr[k] = ar[3 * H + k] * t;
        }
    }
}

/* One LSTM time step backward, rows as ember_lstm_gates_f32's. From the step's activations
 * a = (i, f, g, o) (bs, 4H), tc = tanh(c) and the cell state entering the step c_prev:
 * dm = dh [+ dy]; dcs = dm * o * (1 - tc^2) + dc; the pre-activation gradients
 * dg = (dcs * g * i (1 - i), dcs * c_prev * f (1 - f), dcs * i * (1 - g^2),
 *       dm * tc * o (1 - o)) into dg (bs, 4H); dc = dcs * f. dy may be NULL. */
WIDE void ember_lstm_gates_backward_f32(const float *restrict dh, const float *restrict dy,
                                   const float *restrict a, const float *restrict tc,
                                   const float *restrict c_prev, float *restrict dc,
                                   float *restrict dg, idx bs, idx H) {
    for (idx r = 0; r < bs; r++) {
        const float *dhr = dh + r * H, *ar = a + r * 4 * H, *tr = tc + r * H;
        const float *cp = c_prev + r * H;
        float *dcr = dc + r * H, *dgr = dg + r * 4 * H;
        const float *dyr = dy != NULL ? dy + r * H : NULL;
        for (idx k = 0; k < H; k++) {
            float i = ar[k], f = ar[H + k], g = ar[2 * H + k], o = ar[3 * H + k], t = tr[k];
            float dm = dyr != NULL ? dhr[k] + dyr[k] : dhr[k];
            float dcs = dm * (o * (1.0f - t * t)) + dcr[k];
            dgr[k] = dcs * (g * (i * (1.0f - i)));
            dgr[H + k] = dcs * (cp[k] * (f * (1.0f - f)));
            dgr[2 * H + k] = dcs * (i * (1.0f - g * g));
            dgr[3 * H + k] = dm * (t * (o * (1.0f - o)));
            dcr[k] = dcs * f;
        }
    }
}

/* The AVX-512 register tile of the float32 products: c(mr, up to 32 columns) = init + a b
 * over K, with a(r, k) at a[r * ras + k * kas] (a row-major block: ras = lda, kas = 1; a
 * packed sliver: ras = 1, kas = mr), b a panel of K rows of 32 columns (zero past the last
 * column), 2 * mr accumulators (mr <= 12: 24 of the 32 registers, 2 loads and mr broadcasts
 * per 2 * mr FMAs: FMA-bound). init: zero (acc_c 0), c itself (1), or the row `bias` under
 * every row (2). Masks m0, m1: the columns of a narrower last panel. */
enum { GEMM_MR = 12, GEMM_NR = 32 };

#ifdef __AVX512F__
#define PANEL_GEMM 1
static inline __attribute__((always_inline)) void
gemm_tile(const int mr, idx K, const float *restrict a, idx ras, idx kas,
          const float *restrict bp, float *restrict c, idx ldc, int acc_c,
          const float *restrict bias, __mmask16 m0, __mmask16 m1) {
    __m512 s0[GEMM_MR], s1[GEMM_MR];
    /* a narrower last panel goes through `part`: a masked vector reaching past its columns
     * still takes the cache line there, which may be another thread's */
    const size_t w = (size_t)(__builtin_popcount(m0) + __builtin_popcount(m1));
    float part[32] __attribute__((aligned(64)));
    const __m512 i0 = acc_c == 2 ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
    const __m512 i1 = acc_c == 2 ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
    for (int r = 0; r < mr; r++) {
        if (acc_c != 1) {
            s0[r] = i0, s1[r] = i1;
        } else if (w == 32) {
            s0[r] = _mm512_loadu_ps(c + r * ldc), s1[r] = _mm512_loadu_ps(c + r * ldc + 16);
        } else {
            _mm512_store_ps(part, _mm512_setzero_ps());
            _mm512_store_ps(part + 16, _mm512_setzero_ps());
            memcpy(part, c + r * ldc, w * sizeof(float));
            s0[r] = _mm512_load_ps(part), s1[r] = _mm512_load_ps(part + 16);
        }
    }
    for (idx k = 0; k < K; k++) {
        const __m512 b0 = _mm512_loadu_ps(bp + k * 32), b1 = _mm512_loadu_ps(bp + k * 32 + 16);
        /* the panel streams from L2: ask for it 16 steps ahead (3-4% on 128x784 by 784x256) */
        _mm_prefetch((const char *)(bp + k * 32 + 512), _MM_HINT_T0);
        _mm_prefetch((const char *)(bp + k * 32 + 528), _MM_HINT_T0);
        for (int r = 0; r < mr; r++) {
            const __m512 av = _mm512_set1_ps(a[r * ras + k * kas]);
            s0[r] = _mm512_fmadd_ps(av, b0, s0[r]);
            s1[r] = _mm512_fmadd_ps(av, b1, s1[r]);
        }
    }
    for (int r = 0; r < mr; r++) {
        if (w == 32) {
            _mm512_storeu_ps(c + r * ldc, s0[r]);
            _mm512_storeu_ps(c + r * ldc + 16, s1[r]);
        } else {
            _mm512_store_ps(part, s0[r]);
            _mm512_store_ps(part + 16, s1[r]);
            memcpy(c + r * ldc, part, w * sizeof(float));
        }
    }
}

static inline void panel_masks(idx w, __mmask16 *m0, __mmask16 *m1) {
    *m0 = w >= 16 ? 0xFFFF : (__mmask16)((1u << w) - 1);
    *m1 = w >= 32 ? 0xFFFF : w > 16 ? (__mmask16)((1u << (w - 16)) - 1) : 0;
}

/* c(M, N) = a(M, K) b [+ c], b packed in panels of 32 columns (panel p: K rows of columns
 * 32p..32p+31, zero past N; ember.nn's rnn._packed_blocks makes them): tiles of up to 8 rows
 * of a as it lies (no packing: the LSTM's few rows), summed over K in blocks of 256 (a block
 * of a panel, 32 KB, stays in L1 while every row tile reads it). On the LSTM's per-step
 * shapes it runs at 1.65x OpenBLAS's small-matrix kernel (16x128 by 128x512: 14 us against
 * 23 on an AVX-512 Xeon, one thread), about MKL's speed. Without AVX-512 it is not built
 * (ember_panel_gemm_available() is 0) and the callers use OpenBLAS. */
static void panel_gemm(idx M, idx N, idx K, const float *a, idx lda, const float *bp, float *c,
                       idx ldc, int acc_c) {
    enum { KB = 256 };
    for (idx j = 0; j < N; j += 32) {
        const float *panel = bp + (j / 32) * K * 32;
        __mmask16 m0, m1;
        panel_masks(N - j, &m0, &m1);
        for (idx k0 = 0; k0 < K; k0 += KB) {
            const idx kc = K - k0 < KB ? K - k0 : KB;
            const int acc = acc_c || k0 > 0;
            for (idx i = 0; i < M; i += 8) {
                const float *ai = a + i * lda + k0, *pk = panel + k0 * 32;
                float *ci = c + i * ldc + j;
                switch (M - i < 8 ? M - i : 8) {
#define TILE(n) case n: gemm_tile(n, kc, ai, lda, 1, pk, ci, ldc, acc, NULL, m0, m1); break;
                TILE(8) TILE(7) TILE(6) TILE(5) TILE(4) TILE(3) TILE(2)
                default: gemm_tile(1, kc, ai, lda, 1, pk, ci, ldc, acc, NULL, m0, m1); break;
#undef TILE
                }
            }
        }
    }
}

/* -- sgemm: c(M, N) = a(M, K) b(K, N) [+ c | + bias] for any strides -----------------------
 * NumPy's OpenBLAS runs float32 products on this Xeon at 130-165 GFLOP/s a core where MKL
 * (PyTorch's) runs 175-195: its packing of a transposed weight (x @ w.T) and its threading of
 * mid-sized products cost it 1.3-1.6x on a linear layer's shapes. This is the BLIS scheme with
 * gemm_tile as the micro-kernel: for each block of K (even blocks of up to GEMM_KC steps),
 * b's block of up to GEMM_NC columns is packed into 32-column panels (kept in L2), then a's
 * rows are taken 12 at a time (a sliver, 12 KB, stays in L1 while the tile runs it over every
 * panel): read as they lie where they run along k, else packed (k-major) in blocks of up to
 * GEMM_MC rows. The packing transposes with SSE/AVX shuffles where a layout needs it, and the
 * next block of b is prefetched while the tiles run. Each element of c is one sum over K in
 * order (k-blocks added to c in turn), so a result depends on neither the threads, nor the
 * split, nor the layouts. */
enum { GEMM_KC = 256, GEMM_MC = 192, GEMM_NC = 1024 };

/* a's rows [0, mc) by steps [0, kc), element (i, k) at a[i * rsa + k * csa], into slivers of
 * GEMM_MR rows (the last of mc % GEMM_MR rows, packed at its own height): pa[k * mr + r] */
static void gemm_pack_a(idx mc, idx kc, const float *a, idx rsa, idx csa, float *pa) {
    for (idx i0 = 0; i0 < mc; i0 += GEMM_MR) {
        const idx mr = mc - i0 < GEMM_MR ? mc - i0 : GEMM_MR;
        const float *s = a + i0 * rsa;
        idx r = 0;
        if (rsa == 1) {  /* columns along k (a transposed operand): one masked move a step */
            const __mmask16 m = (__mmask16)((1u << mr) - 1);
            for (idx k = 0; k < kc; k++)
                _mm512_mask_storeu_ps(pa + k * mr, m, _mm512_maskz_loadu_ps(m, s + k * csa));
            r = mr;
        } else if (csa == 1) {  /* rows along k: 4x4 transposes */
            for (; r + 4 <= mr; r += 4) {
                const float *s0 = s + r * rsa;
                idx k = 0;
                for (; k + 4 <= kc; k += 4) {
                    __m128 x0 = _mm_loadu_ps(s0 + k), x1 = _mm_loadu_ps(s0 + rsa + k);
                    __m128 x2 = _mm_loadu_ps(s0 + 2 * rsa + k), x3 = _mm_loadu_ps(s0 + 3 * rsa + k);
                    _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
                    _mm_storeu_ps(pa + k * mr + r, x0);
                    _mm_storeu_ps(pa + (k + 1) * mr + r, x1);
                    _mm_storeu_ps(pa + (k + 2) * mr + r, x2);
                    _mm_storeu_ps(pa + (k + 3) * mr + r, x3);
                }
                for (; k < kc; k++)
                    for (idx q = 0; q < 4; q++) pa[k * mr + r + q] = s0[q * rsa + k];
            }
        }
        for (; r < mr; r++)
            for (idx k = 0; k < kc; k++) pa[k * mr + r] = s[r * rsa + k * csa];
        pa += kc * mr;
    }
}

static inline void transpose8x8(__m256 *r) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* b's steps [0, kc) by columns [0, nc), element (k, j) at b[k * rsb + j * csb], into panels
 * of 32 columns, zero past nc: pb[k * 32 + j] */
static void gemm_pack_b(idx kc, idx nc, const float *b, idx rsb, idx csb, float *pb) {
    for (idx j0 = 0; j0 < nc; j0 += GEMM_NR) {
        const idx w = nc - j0 < GEMM_NR ? nc - j0 : GEMM_NR;
        const float *s = b + j0 * csb;
        if (csb == 1) {
            __mmask16 m0, m1;
            panel_masks(w, &m0, &m1);
            for (idx k = 0; k < kc; k++) {
                _mm512_store_ps(pb + k * 32, _mm512_maskz_loadu_ps(m0, s + k * rsb));
                _mm512_store_ps(pb + k * 32 + 16, _mm512_maskz_loadu_ps(m1, s + k * rsb + 16));
            }
        } else {
            if (w < GEMM_NR) memset(pb, 0, (size_t)kc * GEMM_NR * sizeof(float));
            idx j = 0;
            if (rsb == 1) {  /* columns along k (a transposed weight): 8x8 transposes */
                for (; j + 8 <= w; j += 8) {
                    const float *s0 = s + j * csb;
                    idx k = 0;
                    for (; k + 8 <= kc; k += 8) {
                        __m256 r[8];
                        for (int q = 0; q < 8; q++) r[q] = _mm256_loadu_ps(s0 + q * csb + k);
                        transpose8x8(r);
                        for (int q = 0; q < 8; q++) _mm256_store_ps(pb + (k + q) * 32 + j, r[q]);
                    }
                    for (; k < kc; k++)
                        for (int q = 0; q < 8; q++) pb[k * 32 + j + q] = s0[q * csb + k];
                }
            }
            for (; j < w; j++)
                for (idx k = 0; k < kc; k++) pb[k * 32 + j] = s[j * csb + k * rsb];
        }
        pb += kc * GEMM_NR;
    }
}

/* Prefetches into L2 of the next block of b, a few (per_tile) lines after each tile: `lines`
 * lines of each of `rows` rows `stride` bytes apart from `base`; (r, l) the next one (packing
 * is otherwise a pass that waits on memory: 128x784 by 784x512 took 535 us with b out of
 * cache, 349 in it, 444 with the prefetches) */
typedef struct {
    const char *base;
    idx rows, lines, stride, per_tile, r, l;
} gemm_pf;

static inline void gemm_pf_step(gemm_pf *p) {
    for (idx q = 0; q < p->per_tile && p->r < p->rows; q++) {
        _mm_prefetch(p->base + p->r * p->stride + p->l * 64, _MM_HINT_T1);
        if (++p->l == p->lines) p->l = 0, p->r++;
    }
}

/* the tiles of a block: sliver by sliver (each kept in L1), every panel; a's rows as they
 * lie, lda apart, where lda, else packed slivers */
static void gemm_block(idx mc, idx nc, idx kc, const float *pa, idx lda, const float *pb,
                       float *c, idx ldc, int acc, const float *bias, gemm_pf *pf) {
    for (idx i0 = 0; i0 < mc; i0 += GEMM_MR) {
        const int mr = mc - i0 < GEMM_MR ? (int)(mc - i0) : GEMM_MR;
        const float *a = lda ? pa + i0 * lda : pa + i0 * kc;
        for (idx j0 = 0; j0 < nc; j0 += GEMM_NR) {
            __mmask16 m0, m1;
            panel_masks(nc - j0, &m0, &m1);
            const float *b = pb + j0 * kc, *bj = bias ? bias + j0 : NULL;
            float *ct = c + i0 * ldc + j0;
            if (lda) {
                switch (mr) {
#define TILE(n) case n: gemm_tile(n, kc, a, lda, 1, b, ct, ldc, acc, bj, m0, m1); break;
                TILE(12) TILE(11) TILE(10) TILE(9) TILE(8) TILE(7) TILE(6) TILE(5) TILE(4)
                TILE(3) TILE(2)
                default: gemm_tile(1, kc, a, lda, 1, b, ct, ldc, acc, bj, m0, m1); break;
#undef TILE
                }
            } else {
                switch (mr) {
#define TILE(n) case n: gemm_tile(n, kc, a, 1, n, b, ct, ldc, acc, bj, m0, m1); break;
                TILE(12) TILE(11) TILE(10) TILE(9) TILE(8) TILE(7) TILE(6) TILE(5) TILE(4)
                TILE(3) TILE(2)
                default: gemm_tile(1, kc, a, 1, 1, b, ct, ldc, acc, bj, m0, m1); break;
#undef TILE
                }
            }
            gemm_pf_step(pf);
        }
    }
}

/* a float buffer of at least n per thread, 64-byte aligned, kept for the thread's next call
 * (slot 0: a's slivers, 1: b's panels); NULL where memory ran out */
static float *gemm_buffer(int slot, size_t n) {
    static _Thread_local float *buf[2];
    static _Thread_local size_t size[2];
    if (size[slot] < n) {
        free(buf[slot]);
        size[slot] = 0;
        buf[slot] = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
        if (buf[slot] == NULL) return NULL;
        size[slot] = n;
    }
    return buf[slot];
}

/* c = a b + (c where acc_c, else bias under every row where bias, else 0) */
static int sgemm_serial(idx M, idx N, idx K, const float *a, idx rsa, idx csa, const float *b,
                        idx rsb, idx csb, float *c, idx ldc, int acc_c, const float *bias) {
    if (K == 0) {
        for (idx i = 0; i < M && !acc_c; i++) {
            if (bias) memcpy(c + i * ldc, bias, (size_t)N * sizeof(float));
            else memset(c + i * ldc, 0, (size_t)N * sizeof(float));
        }
        return 1;
    }
    const int first = acc_c ? 1 : bias ? 2 : 0;
    const idx kcap = K < GEMM_KC ? K : GEMM_KC;
    const idx mcap = M < GEMM_MC ? M : GEMM_MC;
    const idx ncap = N < GEMM_NC ? N : GEMM_NC;
    float *pa = gemm_buffer(0, (size_t)(mcap * kcap));
    float *pb = gemm_buffer(1, (size_t)((ncap + GEMM_NR - 1) / GEMM_NR * GEMM_NR * kcap));
    if (pa == NULL || pb == NULL) return 0;
    const int direct_a = csa == 1;  /* rows along k: the tile reads them as they lie */
    const idx kb = (K + GEMM_KC - 1) / GEMM_KC, kstep = (K + kb - 1) / kb;  /* even blocks */
    const idx slivers = (M + GEMM_MR - 1) / GEMM_MR;
    for (idx k0 = 0; k0 < K; k0 += kstep) {
        const idx kc = K - k0 < kstep ? K - k0 : kstep;
        for (idx n0 = 0; n0 < N; n0 += GEMM_NC) {
            const idx nc = N - n0 < GEMM_NC ? N - n0 : GEMM_NC;
            gemm_pack_b(kc, nc, b + k0 * rsb + n0 * csb, rsb, csb, pb);
            /* the next block: (k0, n0 + GEMM_NC), else (k0 + kstep, 0) */
            gemm_pf pf = {NULL, 0, 1, 0, 0, 0, 0};
            const idx nk = n0 + GEMM_NC < N ? k0 : k0 + kstep;
            const idx nn = n0 + GEMM_NC < N ? n0 + GEMM_NC : 0;
            if (nk < K && (csb == 1 || rsb == 1)) {
                const idx kc2 = K - nk < kstep ? K - nk : kstep;
                const idx nc2 = N - nn < GEMM_NC ? N - nn : GEMM_NC;
                const idx along = csb == 1 ? nc2 : kc2;  /* floats a source row holds */
                pf.base = (const char *)(b + nk * rsb + nn * csb);
                pf.rows = csb == 1 ? kc2 : nc2;
                pf.stride = (csb == 1 ? rsb : csb) * (idx)sizeof(float);
                pf.lines = (along * (idx)sizeof(float) + 63) / 64 + 1;
                const idx tiles = slivers * ((nc + GEMM_NR - 1) / GEMM_NR);
                pf.per_tile = (pf.rows * pf.lines + tiles - 1) / tiles;
            }
            for (idx m0 = 0; m0 < M; m0 += GEMM_MC) {
                const idx mc = M - m0 < GEMM_MC ? M - m0 : GEMM_MC;
                const float *am = a + m0 * rsa + k0 * csa;
                float *cm = c + m0 * ldc + n0;
                const int acc = k0 > 0 ? 1 : first;
                const float *bn = bias ? bias + n0 : NULL;
                if (direct_a) {
                    gemm_block(mc, nc, kc, am, rsa, pb, cm, ldc, acc, bn, &pf);
                } else {
                    gemm_pack_a(mc, kc, am, rsa, csa, pa);
                    gemm_block(mc, nc, kc, pa, 0, pb, cm, ldc, acc, bn, &pf);
                }
            }
        }
    }
    return 1;
}

typedef struct {
    idx M, N, K, rsa, csa, rsb, csb, ldc, unit, units, shift;
    const float *a, *b, *bias;
    float *c;
    int acc_c, by_rows;
    atomic_int failed;
} sgemm_job;

static void sgemm_chunk(void *ctx, idx chunk, idx lo, idx hi) {
    (void)chunk;
    sgemm_job *j = ctx;
    const idx size = j->by_rows ? j->M : j->N;
    const idx b = lo ? lo * j->unit - j->shift : 0;
    const idx e = hi == j->units || hi * j->unit - j->shift > size ? size
                                                                   : hi * j->unit - j->shift;
    int ok;
    if (j->by_rows)
        ok = sgemm_serial(e - b, j->N, j->K, j->a + b * j->rsa, j->rsa, j->csa, j->b, j->rsb,
                          j->csb, j->c + b * j->ldc, j->ldc, j->acc_c, j->bias);
    else
        ok = sgemm_serial(j->M, e - b, j->K, j->a, j->rsa, j->csa, j->b + b * j->csb, j->rsb,
                          j->csb, j->c + b, j->ldc, j->acc_c, j->bias ? j->bias + b : NULL);
    if (!ok) atomic_store(&j->failed, 1);
}

/* c = a b + (c where acc_c, else the row `bias` (N floats, or NULL) under every row), strides
 * in elements (c's rows ldc apart, its columns adjacent), on up to `threads` threads of the
 * pool: the columns split in runs of panels (each thread packing its own part of b and
 * reading all of a), the boundaries moved onto a cache line of c, where c's rows all start at
 * one offset in a line; else, or where a has more rows than b columns (then a is the operand
 * two threads should not both read), the rows in runs of slivers (each thread packing all of
 * b). Two threads writing one line pass it between their cores, masked-off lanes included
 * (512x16 by 16x256 into c 16 bytes past a line, split at panels: 31 us on one thread, 45 on
 * two; on a line: 26 and 15): hence the boundaries, and gemm_tile's buffer for a narrower
 * panel. Returns 1, or 0 where it did not run (no AVX-512, no memory for the buffers: the
 * caller takes NumPy's product). */
int ember_sgemm_f32(idx M, idx N, idx K, const float *a, idx rsa, idx csa, const float *b,
                    idx rsb, idx csb, float *c, idx ldc, int acc_c, const float *bias,
                    idx threads) {
    sgemm_job j = {M, N, K, rsa, csa, rsb, csb, ldc, GEMM_NR, 0, 0, a, b, bias, c, acc_c, 0, 0};
    if (M <= 0 || N <= 0) return 1;
    const idx panels = (N + GEMM_NR - 1) / GEMM_NR, slivers = (M + GEMM_MR - 1) / GEMM_MR;
    const int lines = ldc % 16 == 0 || M == 1;  /* every row at c's offset in its line */
    if (threads > 1 && (panels < 2 * threads || !lines || M > N) && slivers >= 2 * threads) {
        j.by_rows = 1;
        j.unit = GEMM_MR;
        j.units = slivers;
        pool_for(sgemm_chunk, &j, slivers, 2, threads);
    } else {
        j.shift = (idx)((uintptr_t)c % 64 / sizeof(float));  /* columns before c's line */
        j.units = panels;
        pool_for(sgemm_chunk, &j, panels, 2, threads);
    }
    return !atomic_load(&j.failed);
}
#else
#define PANEL_GEMM 0
static void panel_gemm(idx M, idx N, idx K, const float *a, idx lda, const float *bp, float *c,
                       idx ldc, int acc_c) {
    (void)M, (void)N, (void)K, (void)a, (void)lda, (void)bp, (void)c, (void)ldc, (void)acc_c;
}

int ember_sgemm_f32(idx M, idx N, idx K, const float *a, idx rsa, idx csa, const float *b,
                    idx rsb, idx csb, float *c, idx ldc, int acc_c, const float *bias,
                    idx threads) {
    (void)M, (void)N, (void)K, (void)a, (void)rsa, (void)csa, (void)b, (void)rsb, (void)csb;
    (void)c, (void)ldc, (void)acc_c, (void)bias, (void)threads;
    return 0;
}
#endif

int ember_panel_gemm_available(void) { return PANEL_GEMM; }

/* For tests: c = a b [+ c] through panel_gemm (bp packed as above). */
void ember_panel_gemm_f32(const float *a, const float *bp, float *c, idx M, idx N, idx K,
                          int acc_c) {
    panel_gemm(M, N, K, a, K, bp, c, N, acc_c);
}

/* A whole LSTM layer's time loop, for a batch that keeps its size (no packed sequence) and no
 * projection, so the loop pays no Python per step. Each step's product of the previous hidden
 * state with the recurrent weights runs through panel_gemm where `gemm` is NULL (w packed in
 * its panels), else through the caller's cblas_sgemm `gemm` (NumPy's OpenBLAS, found by
 * ember._native.blas_sgemm; `ilp64` whether its integers are 64-bit, as scipy-openblas64's):
 * row-major a(bs, 4H) += h(bs, K) w, w given as column blocks of width `bw` (the last
 * narrower), each a row-major (K, width) array packed one after the other, so that each block
 * stays under OpenBLAS's small-matrix bound (ember.ops.linalg.gemm_column_block) as the
 * Python loop's blocks do. The caller's NumPy loop does the same arithmetic, step for step. */
typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *,
                           int64_t, const float *, int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int, int, int, float, const float *, int,
                           const float *, int, float, float *, int);
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };

static void sgemm_rows(void *gemm, int ilp64, idx M, idx N, idx K, const float *a, idx lda,
                       const float *b, idx ldb, float beta, float *c, idx ldc) {
    if (ilp64)
        ((sgemm64_fn)gemm)(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, M, N, K, 1.0f, a,
                           lda, b, ldb, beta, c, ldc);
    else
        ((sgemm32_fn)gemm)(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, (int)M, (int)N,
                           (int)K, 1.0f, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* c(M, N) = a(M, K) w [+ c when beta is 1], w as column blocks (see above), or, where gemm
 * is NULL, as panel_gemm's panels (bw unused). */
static void sgemm_blocks(void *gemm, int ilp64, idx M, idx N, idx K, const float *a,
                         const float *w, idx bw, float beta, float *c) {
    if (gemm == NULL) {
        panel_gemm(M, N, K, a, K, w, c, N, beta != 0.0f);
        return;
    }
    for (idx j = 0; j < N; j += bw) {
        idx width = N - j < bw ? N - j : bw;
        sgemm_rows(gemm, ilp64, M, width, K, a, K, w + j * K, width, beta, c + j, N);
    }
}

/* Forward: x (T*B, 4H) the input projection (with b_ih), b (4H) b_hh or NULL, scale (4H)
 * the gates' scales (0.5 on the sigmoid gates: sigmoid(z) = 0.5 tanh(z / 2) + 0.5), so a
 * step starts from (x + b) * scale as the Python loop's arrays do, wr the packed blocks of
 * (w_hh * scale).T (K = H rows), h0 and c0 (B, H). Writes a (T*B, 4H)
 * the activations, c and tc (T*B, H) the cell states and their tanh, y (T*B, H). Time step
 * t's rows start at row t*B; `reverse` runs the steps from the last (the reverse direction
 * of a bidirectional layer), each step's state entering from the one after it. */
void ember_lstm_sequence_f32(void *gemm, int ilp64, const float *restrict x,
                             const float *restrict b, const float *restrict scale,
                             const float *restrict wr, idx bw, const float *restrict h0,
                             const float *restrict c0, float *restrict a, float *restrict c,
                             float *restrict tc, float *restrict y, idx T, idx B, idx H,
                             int reverse) {
    const idx G = 4 * H;
    for (idx s = 0; s < T; s++) {
        const idx t = reverse ? T - 1 - s : s, p = reverse ? t + 1 : t - 1;
        float *at = a + t * B * G;
        const float *xt = x + t * B * G;
        for (idx r = 0; r < B; r++) {
            float *ar = at + r * G;
            const float *xr = xt + r * G;
            if (b != NULL)
                for (idx k = 0; k < G; k++) ar[k] = (xr[k] + b[k]) * scale[k];
            else
                for (idx k = 0; k < G; k++) ar[k] = xr[k] * scale[k];
        }
        sgemm_blocks(gemm, ilp64, B, G, H, s ? y + p * B * H : h0, wr, bw, 1.0f, at);
        ember_lstm_gates_f32(at, s ? c + p * B * H : c0, c + t * B * H, tc + t * B * H,
                             y + t * B * H, B, H);
    }
}

/* Backward: from the steps' saved a, tc, c (and c0), dy (T*B, H) or NULL, dh and dc (B, H)
 * the gradients of the last hidden and cell states (overwritten with those of h0 and c0),
 * w the packed blocks of w_hh (4H, H) (K = 4H rows; usually one block). Writes dg (T*B, 4H),
 * the pre-activation gradients. The steps run in the opposite order to the forward's. */
void ember_lstm_sequence_backward_f32(void *gemm, int ilp64, const float *restrict dy,
                                      const float *restrict a, const float *restrict tc,
                                      const float *restrict c, const float *restrict c0,
                                      const float *restrict w, idx bw, float *restrict dh,
                                      float *restrict dc, float *restrict dg, idx T, idx B,
                                      idx H, int reverse) {
    const idx G = 4 * H;
    for (idx s = T - 1; s >= 0; s--) {
        const idx t = reverse ? T - 1 - s : s, p = reverse ? t + 1 : t - 1;
        float *dgt = dg + t * B * G;
        ember_lstm_gates_backward_f32(dh, dy != NULL ? dy + t * B * H : NULL, a + t * B * G,
                                      tc + t * B * H, s ? c + p * B * H : c0, dc, dgt, B, H);
        sgemm_blocks(gemm, ilp64, B, H, G, dgt, w, bw, 0.0f, dh);
    }
}

/* One output row of a 2x2, stride-2 max pool: rows r0 and r1 of the input, the max of each
 * window into yr and the offset that holds it (0-3, the first on ties) into wr. AVX2 takes
 * eight windows at a time (the even and odd columns of each row split by shuffles); the
 * scalar loop takes the rest, and all of a row without AVX2. */
static void max_pool_2x2_row(const float *restrict r0, const float *restrict r1,
                             float *restrict yr, unsigned char *restrict wr, idx OW) {
    idx oj = 0;
#ifdef __AVX2__
    const __m256i fix = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
    for (; oj + 8 <= OW; oj += 8) {
        __m256 a = _mm256_loadu_ps(r0 + 2 * oj), b = _mm256_loadu_ps(r0 + 2 * oj + 8);
        __m256 c = _mm256_loadu_ps(r1 + 2 * oj), d = _mm256_loadu_ps(r1 + 2 * oj + 8);
        /* the even and odd columns of each row, in output order after the lane fix-up */
        __m256 v0 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(a, b, 0x88), fix);
        __m256 v1 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(a, b, 0xDD), fix);
        __m256 v2 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(c, d, 0x88), fix);
        __m256 v3 = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(c, d, 0xDD), fix);
        __m256 c1 = _mm256_cmp_ps(v1, v0, _CMP_GT_OQ), c3 = _mm256_cmp_ps(v3, v2, _CMP_GT_OQ);
        __m256 m01 = _mm256_blendv_ps(v0, v1, c1), m23 = _mm256_blendv_ps(v2, v3, c3);
        __m256 cc = _mm256_cmp_ps(m23, m01, _CMP_GT_OQ);
        _mm256_storeu_ps(yr + oj, _mm256_blendv_ps(m01, m23, cc));
        /* offsets 0 + (c1), or 2 + (c3) where the lower row wins (true masks are -1) */
        __m256i i01 = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_castps_si256(c1));
        __m256i i23 = _mm256_sub_epi32(_mm256_set1_epi32(2), _mm256_castps_si256(c3));
        __m256i at = _mm256_blendv_epi8(i01, i23, _mm256_castps_si256(cc));
        __m128i p16 = _mm_packus_epi32(_mm256_castsi256_si128(at),
                                       _mm256_extracti128_si256(at, 1));
        _mm_storel_epi64((__m128i *)(wr + oj), _mm_packus_epi16(p16, p16));
    }
#endif
    for (; oj < OW; oj++) {
        float v0 = r0[2 * oj], v1 = r0[2 * oj + 1], v2 = r1[2 * oj], v3 = r1[2 * oj + 1];
        float best = v0;
        int at = 0;
        if (v1 > best) { best = v1; at = 1; }
        if (v2 > best) { best = v2; at = 2; }
        if (v3 > best) { best = v3; at = 3; }
        yr[oj] = best;
        wr[oj] = (unsigned char)at;
    }
}

/* 2x2, stride-2 max pooling without padding over `planes` contiguous planes, for training
 * (ember.ops.pooling._window_argmax): y (planes, OH, OW) the max of each window of x
 * (planes, H, W) and `which` (uint8) the index of the kernel offset (row-major over 2 x 2)
 * that holds it, the first one on ties (PyTorch's `val > maxval`). The caller has checked
 * that x has no NaN. LeNet's pool of 64x6x28x28: 392 us as NumPy's strided passes (a
 * maximum per offset, then an equality per offset), 53 us in AVX2 (branchy scalar code ran
 * ~260 us on random data: each compare a coin flip for the branch predictor). Other
 * geometries stay NumPy. */
void ember_max_pool2x2_forward_f32(const float *restrict x, float *restrict y,
                                   unsigned char *restrict which, idx planes, idx H, idx W,
                                   idx OH, idx OW) {
    for (idx p = 0; p < planes; p++) {
        for (idx oi = 0; oi < OH; oi++) {
            const float *r0 = x + p * H * W + 2 * oi * W;
            max_pool_2x2_row(r0, r0 + W, y + (p * OH + oi) * OW, which + (p * OH + oi) * OW,
                             OW);
        }
    }
}

/* The adjoint of 2-d max pooling without padding (ember.ops.pooling._window_scatter) over
 * `planes` contiguous planes: gx (planes, H, W) = 0 with each gy (planes, OH, OW) added at
 * its window's picked position, `which` (uint8) the index of the kernel offset (row-major
 * over kh x kw) the forward picked; sums where windows overlap. */
void ember_max_pool2d_backward_f32(const float *restrict gy, const unsigned char *restrict which,
                                   float *restrict gx, idx planes, idx H, idx W, idx OH,
                                   idx OW, idx kh, idx kw, idx sh, idx sw, idx dh, idx dw) {
    memset(gx, 0, (size_t)(planes * H * W) * sizeof(float));
    for (idx p = 0; p < planes; p++) {
        float *gp = gx + p * H * W;
        const float *yp = gy + p * OH * OW;
        const unsigned char *wp = which + p * OH * OW;
        for (idx oi = 0; oi < OH; oi++) {
            for (idx oj = 0; oj < OW; oj++) {
                idx j = wp[oi * OW + oj];
                idx a = j / kw, b = j % kw;
                gp[(oi * sh + a * dh) * W + oj * sw + b * dw] += yp[oi * OW + oj];
            }
        }
    }
}

/* out (m x n, float32) = x (m x k, float32) . w^T (+ bias), w an (n x k) bfloat16 matrix as
 * its 16-bit patterns, every row of x, w and out contiguous: a bfloat16 linear layer's product
 * for a few rows (decoding one token), reading the weight as bfloat16, half float32's bytes,
 * and widening it in registers (a bfloat16 is a float32's upper half, so the widening is
 * exact), where the NumPy formulation copies the whole weight to float32 first (Qwen3's
 * 1024 x 151936 output head: 311 MB read, 622 MB written, 622 MB read again per token). Each
 * output is one sum over k in float32 (the bias, or NULL, added last), the columns split over
 * up to `threads` threads of the pool. */
typedef struct {
    const float *x;
    const uint16_t *w;
    const float *bias;
    float *out;
    idx m, n, k;
} bf16_linear_job;

static void bf16_linear_columns(void *ctx, idx chunk, idx b, idx e) {
    (void)chunk;
    const bf16_linear_job *j = ctx;
    const idx k = j->k;
    for (idx c = b; c < e; c++) {
        const uint16_t *restrict wr = j->w + c * k;
        for (idx i = 0; i < j->m; i++) {
            const float *restrict xr = j->x + i * k;
            float s = 0.0f;
#pragma omp simd reduction(+ : s)
            for (idx t = 0; t < k; t++) {
                uint32_t u = (uint32_t)wr[t] << 16;
                float wf;
                memcpy(&wf, &u, sizeof wf);
                s += xr[t] * wf;
            }
            j->out[i * j->n + c] = j->bias != NULL ? s + j->bias[c] : s;
        }
    }
}

void ember_linear_bf16_f32(const float *x, const uint16_t *w, const float *bias, float *out,
                           idx m, idx n, idx k, idx threads) {
    bf16_linear_job j = {x, w, bias, out, m, n, k};
    /* 256 columns a chunk at least: a wake-up of the pool costs microseconds */
    pool_for(bf16_linear_columns, &j, n, 256, threads);
}

/* One Adam (or AdamW, after its decay) update of n float32 elements in place, in the order
 * of operations of the NumPy formulation (ember.optim.adam._single_tensor_adam) and of
 * torch.optim.Adam's single-tensor form, without contracting a * b + c into FMAs, so each
 * element rounds exactly as there:
 * m = m.lerp(g, w1) (PyTorch's two-sided lerp: low (w1 < 0.5) ? m + (g - m) * w1
 * : g - (g - m) * w1c, w1c = 1 - w1), v = v * beta2 + g * g * b2c, vmax = max(vmax, v) when
 * vmax is given (amsgrad), p -= m / (sqrt(v or vmax) / bc2 + eps) * step_size. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
void ember_adam_f32(float *restrict p, const float *restrict g, float *restrict m,
                    float *restrict v, float *restrict vmax, idx n, int low, float w1,
                    float w1c, float beta2, float b2c, float bc2, float eps, float step_size) {
    for (idx i = 0; i < n; i++) {
        float gi = g[i], mi = m[i];
        float d = gi - mi;
        mi = low ? mi + d * w1 : gi - d * w1c;
        m[i] = mi;
        float vi = v[i] * beta2 + (gi * gi) * b2c;
        v[i] = vi;
        if (vmax != NULL) {
            float u = vmax[i];
            u = (u > vi || u != u) ? u : vi; /* np.maximum: NaN wins */
            vmax[i] = u;
            vi = u;
        }
        float den = sqrtf(vi) / bc2 + eps;
        p[i] = p[i] - (mi / den) * step_size;
    }
}
#pragma GCC pop_options

/* One SGD step of n float32 elements in place, in the order of operations of the NumPy
 * formulation (ember.optim.sgd._single_tensor_sgd) and of torch.optim.SGD's single-tensor
 * form, without FMAs, so each element rounds exactly as there; one pass over p, g and b where
 * the NumPy formulation makes four. flags: 1 maximize, 2 nesterov, 4 dampening (b += g * dampc
 * instead of b += g), 8 weight decay. g = -g (maximize); g = g + wd * p (decay);
 * b = b * momentum + g (b NULL: no momentum, u = g); u = nesterov ? g + momentum * b : b;
 * p = p - u * lr. The three unused floats keep the signature of ember_split's SPLIT_I_F7
 * (Adam's). */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
void ember_sgd_f32(float *restrict p, const float *restrict g, float *restrict b, idx n,
                   int flags, float momentum, float dampc, float wd, float lr, float unused0,
                   float unused1, float unused2) {
    (void)unused0, (void)unused1, (void)unused2;
    const int maximize = flags & 1, nesterov = flags & 2, damp = flags & 4, decay = flags & 8;
    for (idx i = 0; i < n; i++) {
        float gi = maximize ? -g[i] : g[i];
        float pi = p[i];
        if (decay) gi = gi + wd * pi;
        float u = gi;
        if (b != NULL) {
            float bi = b[i] * momentum;
            bi = bi + (damp ? gi * dampc : gi);
            b[i] = bi;
            u = nesterov ? gi + momentum * bi : bi;
        }
        p[i] = pi - u * lr;
    }
}
#pragma GCC pop_options

/* erfinv, computed in double whatever the element type (the NumPy formulation's numbers:
 * ember/ops/_special.py, erfinv_f64): PyTorch's starting point (calc_erfinv's rational
 * approximations), then Newton steps on erf(x) = y for |y| <= 0.7 and on
 * log(erfc(x)) = log(1 - |y|) beyond (1 - |y| is exact there, and the logarithm makes the
 * equation nearly linear). libm's erf/erfc stand in for Cody's rationals. The start is within
 * 6e-6 (relative) and one step brings it within 5e-10, so float32 results take one step, float64
 * two (1-2 ulp of PyTorch's, which also starts there). |y| > 1 gives NaN,
 * +-1 gives +-inf, NaN passes through. Branchy: initialising a model's weights
 * (trunc_normal_) calls it on millions of elements, where one pass in C replaces ~250 NumPy
 * passes in float64. */
static inline double erfinv_one(double y, int steps) {
    const double two_over_sqrt_pi = 1.1283791670955126;
    double a = fabs(y);
    if (!(a <= 1.0)) return y != y ? y : NAN;
    if (a == 1.0) return copysign(INFINITY, y);
    double x;
    if (a <= 0.7) {
        double z = y * y;
        double num = ((-0.140543331 * z + 0.914624893) * z - 1.645349621) * z + 0.886226899;
        double den = (((0.012229801 * z - 0.329097515) * z + 1.442710462) * z - 2.118377725) * z + 1.0;
        x = y * num / den;
        for (int i = 0; i < steps; i++) x -= (erf(x) - y) / (two_over_sqrt_pi * exp(-x * x));
        return x;
    }
    double target = 1.0 - a;
    double t = sqrt(-log(target / 2.0));
    x = (((1.641345311 * t + 3.429567803) * t - 1.624906493) * t - 1.970840454) /
        ((1.637067800 * t + 3.543889200) * t + 1.0);
    for (int i = 0; i < steps; i++) {
        double e = erfc(x);
        x += log(e / target) * e / (two_over_sqrt_pi * exp(-x * x));
    }
    return copysign(x, y);
}

void ember_erfinv_f32(const float *restrict y, float *restrict x, idx n) {
    for (idx i = 0; i < n; i++) x[i] = (float)erfinv_one((double)y[i], 1);
}

void ember_erfinv_f64(const double *restrict y, double *restrict x, idx n) {
    for (idx i = 0; i < n; i++) x[i] = erfinv_one(y[i], 2);
}

/* -- PyTorch's CPU random streams (ember/_torch_rng.py) ------------------------------------
 * normal_fill_16_AVX2 of PyTorch's CPU kernels, lane by lane: Cephes' logf and sincosf as
 * avx_mathfun.h writes them, with the multiply-adds fused where PyTorch's AVX2 build fuses
 * them (fmaf; this file is compiled with contraction off, so nothing else is fused). The
 * results are PyTorch's bit for bit. */
static inline float torch_log256(float x) {
    float invalid = x <= 0.0f ? NAN : 0.0f;
    x = x < 1.17549435e-38f ? 1.17549435e-38f : x;
    uint32_t bits = float_bits(x);
    float e = (float)((int32_t)(bits >> 23) - 0x7f) + 1.0f;
    x = bits_float((bits & ~0x7f800000u) | float_bits(0.5f));
    int small = x < 0.707106781186547524f;
    x = (x - 1.0f) + (small ? x : 0.0f);
    e = e - (small ? 1.0f : 0.0f);
    float z = x * x;
    float y = 7.0376836292e-2f;
    y = fmaf(y, x, -1.1514610310e-1f);
    y = fmaf(y, x, 1.1676998740e-1f);
    y = fmaf(y, x, -1.2420140846e-1f);
    y = fmaf(y, x, 1.4249322787e-1f);
    y = fmaf(y, x, -1.6668057665e-1f);
    y = fmaf(y, x, 2.0000714765e-1f);
    y = fmaf(y, x, -2.4999993993e-1f);
    y = fmaf(y, x, 3.3333331174e-1f);
    y = fmaf(y * x, z, e * -2.12194440e-4f);
    y = fmaf(z, -0.5f, y);
    return fmaf(e, 0.693359375f, x + y) + invalid;
}

static inline void torch_sincos256(float x, float *s, float *c) {
    int sign_sin = signbit(x) != 0;
    x = fabsf(x);
    int32_t j = ((int32_t)(x * 1.27323954473516f) + 1) & ~1;
    float y = (float)j;
    sign_sin ^= (j & 4) != 0;
    int poly = (j & 2) == 0;
    int sign_cos = (~(j - 2) & 4) != 0;
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    float z = x * x;
    float yc = fmaf(2.443315711809948e-05f, z, -1.388731625493765e-03f);
    yc = fmaf(yc, z, 4.166664568298827e-02f);
    yc = fmaf(yc * z, z, -(z * 0.5f)) + 1.0f;
    float ys = fmaf(-1.9515295891e-4f, z, 8.3321608736e-3f);
    ys = fmaf(ys, z, -1.6666654611e-1f);
    ys = fmaf(ys * z, x, x);
    float sv = poly ? ys : yc, cv = poly ? yc : ys;
    *s = sign_sin ? -sv : sv;
    *c = sign_cos ? -cv : cv;
}

/* Rows of 16 float32 uniforms in [0, 1) into normals, in place (normal_fill_AVX2's blocks),
 * one lane at a time: the reference for the AVX2 version below and the kernel where the CPU
 * has no AVX2/FMA. */
void ember_torch_box_muller_f32_scalar(float *d, idx blocks, float mean, float std) {
    for (idx b = 0; b < blocks; b++, d += 16) {
        #pragma omp simd
        for (int j = 0; j < 8; j++) {
            float radius = sqrtf(-2.0f * torch_log256(1.0f - d[j]));
            float s, c;
            torch_sincos256(6.28318530717958647692f * d[j + 8], &s, &c);
            d[j] = fmaf(radius * c, std, mean);
            d[j + 8] = fmaf(radius * s, std, mean);
        }
    }
}

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* log256_ps of avx_mathfun.h with the fusions of torch_log256 above (its lane-wise twin). */
static inline __m256 torch_log256_v(__m256 x) {
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 invalid = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LE_OS);
    x = _mm256_max_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x00800000)));
    __m256i bits = _mm256_castps_si256(x);
    __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(
        _mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(0x7f))), one);
    x = _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_and_si256(bits, _mm256_set1_epi32(~0x7f800000)),
        _mm256_castps_si256(_mm256_set1_ps(0.5f))));
    __m256 small = _mm256_cmp_ps(x, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OS);
    __m256 tmp = _mm256_and_ps(x, small);
    x = _mm256_add_ps(_mm256_sub_ps(x, one), tmp);
    e = _mm256_sub_ps(e, _mm256_and_ps(one, small));
    __m256 z = _mm256_mul_ps(x, x);
    __m256 y = _mm256_set1_ps(7.0376836292e-2f);
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-1.1514610310e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.1676998740e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-1.2420140846e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.4249322787e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-1.6668057665e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(2.0000714765e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(-2.4999993993e-1f));
    y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(3.3333331174e-1f));
    y = _mm256_fmadd_ps(_mm256_mul_ps(y, x), z,
                        _mm256_mul_ps(e, _mm256_set1_ps(-2.12194440e-4f)));
    y = _mm256_fmadd_ps(z, _mm256_set1_ps(-0.5f), y);
    x = _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), _mm256_add_ps(x, y));
    return _mm256_or_ps(x, invalid);
}

/* sincos256_ps of avx_mathfun.h with torch_sincos256's fusions. */
static inline void torch_sincos256_v(__m256 x, __m256 *s, __m256 *c) {
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    __m256 sign_sin = _mm256_and_ps(x, sign);
    x = _mm256_andnot_ps(sign, x);
    __m256i j = _mm256_cvttps_epi32(_mm256_mul_ps(x, _mm256_set1_ps(1.27323954473516f)));
    j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)), _mm256_set1_epi32(~1));
    __m256 y = _mm256_cvtepi32_ps(j);
    const __m256i four = _mm256_set1_epi32(4);
    sign_sin = _mm256_xor_ps(sign_sin, _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_and_si256(j, four), 29)));
    __m256 poly = _mm256_castsi256_ps(_mm256_cmpeq_epi32(
        _mm256_and_si256(j, _mm256_set1_epi32(2)), _mm256_setzero_si256()));
    __m256 sign_cos = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_andnot_si256(
        _mm256_sub_epi32(j, _mm256_set1_epi32(2)), four), 29));
    x = _mm256_fmadd_ps(y, _mm256_set1_ps(-0.78515625f), x);
    x = _mm256_fmadd_ps(y, _mm256_set1_ps(-2.4187564849853515625e-4f), x);
    x = _mm256_fmadd_ps(y, _mm256_set1_ps(-3.77489497744594108e-8f), x);
    __m256 z = _mm256_mul_ps(x, x);
    __m256 yc = _mm256_fmadd_ps(_mm256_set1_ps(2.443315711809948e-05f), z,
                                _mm256_set1_ps(-1.388731625493765e-03f));
    yc = _mm256_fmadd_ps(yc, z, _mm256_set1_ps(4.166664568298827e-02f));
    yc = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(yc, z), z,
                                       _mm256_xor_ps(_mm256_mul_ps(z, _mm256_set1_ps(0.5f)),
                                                     sign)),
                       _mm256_set1_ps(1.0f));
    __m256 ys = _mm256_fmadd_ps(_mm256_set1_ps(-1.9515295891e-4f), z,
                                _mm256_set1_ps(8.3321608736e-3f));
    ys = _mm256_fmadd_ps(ys, z, _mm256_set1_ps(-1.6666654611e-1f));
    ys = _mm256_fmadd_ps(_mm256_mul_ps(ys, z), x, x);
    __m256 sv = _mm256_blendv_ps(yc, ys, poly), cv = _mm256_blendv_ps(ys, yc, poly);
    *s = _mm256_xor_ps(sv, sign_sin);
    *c = _mm256_xor_ps(cv, sign_cos);
}

/* normal_fill_16_AVX2 itself: the block's first 8 uniforms give the radii, its last 8 the
 * angles; the same results as the scalar kernel, bit for bit (tests/core/test_torch_rng_streams
 * compares the two). */
void ember_torch_box_muller_f32(float *d, idx blocks, float mean, float std) {
    const __m256 vmean = _mm256_set1_ps(mean), vstd = _mm256_set1_ps(std);
    for (idx b = 0; b < blocks; b++, d += 16) {
        __m256 u1 = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_loadu_ps(d));
        __m256 u2 = _mm256_loadu_ps(d + 8);
        __m256 radius = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f),
                                                     torch_log256_v(u1)));
        __m256 s, c;
        torch_sincos256_v(_mm256_mul_ps(_mm256_set1_ps(6.28318530717958647692f), u2), &s, &c);
        _mm256_storeu_ps(d, _mm256_fmadd_ps(_mm256_mul_ps(radius, c), vstd, vmean));
        _mm256_storeu_ps(d + 8, _mm256_fmadd_ps(_mm256_mul_ps(radius, s), vstd, vmean));
    }
}
#else
void ember_torch_box_muller_f32(float *d, idx blocks, float mean, float std) {
    ember_torch_box_muller_f32_scalar(d, blocks, mean, std);
}
#endif

/* -- PyTorch's engine over NumPy's MT19937 state --------------------------------------------
 * TorchRNG is a NumPy Generator over numpy.random.MT19937, whose state is NumPy's
 * mt19937_state (numpy/random/src/mt19937/mt19937.h: 624 words, then the position). Drawing
 * through BitGenerator.random_raw costs a function-pointer call per word and a uint64 per
 * word; these kernels advance that same state in place (the reference's mt19937_gen and
 * tempering) and turn the words into samples in the same pass. ember/_torch_rng.py checks
 * once per process that they give random_raw's words from the same state before it uses them,
 * and holds the bit generator's lock around each call. */
typedef struct { uint32_t key[624]; int pos; } np_mt19937;

static void mt_regen(np_mt19937 *st) {
    uint32_t *k = st->key;
    int i;
    for (i = 0; i < 624 - 397; i++) {
        uint32_t y = (k[i] & 0x80000000u) | (k[i + 1] & 0x7fffffffu);
        k[i] = k[i + 397] ^ (y >> 1) ^ (-(y & 1u) & 0x9908b0dfu);
    }
    for (; i < 623; i++) {
        uint32_t y = (k[i] & 0x80000000u) | (k[i + 1] & 0x7fffffffu);
        k[i] = k[i + 397 - 624] ^ (y >> 1) ^ (-(y & 1u) & 0x9908b0dfu);
    }
    uint32_t y = (k[623] & 0x80000000u) | (k[0] & 0x7fffffffu);
    k[623] = k[396] ^ (y >> 1) ^ (-(y & 1u) & 0x9908b0dfu);
    st->pos = 0;
}

/* at::mt19937(seed)'s init_genrand (the reference's seeding, as RandomState's), the next
 * draw regenerating the block. */
void ember_mt_seed(void *state, uint32_t seed) {
    np_mt19937 *st = (np_mt19937 *)state;
    st->key[0] = seed;
    for (int i = 1; i < 624; i++)
        st->key[i] = 1812433253u * (st->key[i - 1] ^ (st->key[i - 1] >> 30)) + (uint32_t)i;
    st->pos = 624;
}

/* Up to n tempered words into w (at most 624: one block's remainder); returns how many. */
static inline idx mt_take(np_mt19937 *st, uint32_t *w, idx n) {
    if (st->pos >= 624) mt_regen(st);
    idx m = 624 - st->pos;
    if (m > n) m = n;
    const uint32_t *k = st->key + st->pos;
    for (idx i = 0; i < m; i++) {
        uint32_t y = k[i];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        w[i] = y ^ (y >> 18);
    }
    st->pos += (int)m;
    return m;
}

/* n words (CPUGeneratorImpl::random) as uint64. */
void ember_mt_words(void *state, uint64_t *out, idx n) {
    uint32_t w[624];
    for (idx done = 0; done < n;) {
        idx m = mt_take((np_mt19937 *)state, w, n - done);
        for (idx i = 0; i < m; i++) out[done + i] = w[i];
        done += m;
    }
}

/* n 64-bit draws (random64: two words, the first the high half). */
void ember_mt_words64(void *state, uint64_t *out, idx n) {
    uint32_t w[624];
    uint64_t hi = 0;
    int have_hi = 0;
    idx done = 0;
    while (done < n) {
        idx m = mt_take((np_mt19937 *)state, w, 2 * (n - done) - have_hi);
        for (idx i = 0; i < m; i++) {
            if (have_hi) { out[done++] = hi << 32 | w[i]; have_hi = 0; }
            else { hi = w[i]; have_hi = 1; }
        }
    }
}

/* uniform_real_distribution<float>: the low 24 bits of a word over 2^24, then (affine)
 * x * range + from fused, as PyTorch's build computes it. */
void ember_torch_uniform_f32(void *state, float *out, idx n, float from, float range,
                             int affine) {
    uint32_t w[624];
    for (idx done = 0; done < n;) {
        idx m = mt_take((np_mt19937 *)state, w, n - done);
        float *o = out + done;
        if (affine) {
            for (idx i = 0; i < m; i++)
                o[i] = fmaf((float)(w[i] & 0xffffffu) * 5.9604644775390625e-8f, range, from);
        } else {
            for (idx i = 0; i < m; i++) o[i] = (float)(w[i] & 0xffffffu) * 5.9604644775390625e-8f;
        }
        done += m;
    }
}

/* uniform_real_distribution<double>: the low 53 bits of a 64-bit draw over 2^53, then
 * (affine) fma(x, range, from). */
void ember_torch_uniform_f64(void *state, double *out, idx n, double from, double range,
                             int affine) {
    ember_mt_words64(state, (uint64_t *)out, n);
    uint64_t *u = (uint64_t *)out;
    for (idx i = 0; i < n; i++) {
        double x = (double)(u[i] & 0x1fffffffffffffull) * 1.1102230246251565e-16;
        out[i] = affine ? fma(x, range, from) : x;
    }
}

/* random_(from, to) and randint: a word (wide: a 64-bit draw) modulo span, plus low. */
void ember_torch_random_from_to(void *state, int64_t *out, idx n, uint64_t span, uint64_t low,
                                int wide) {
    uint64_t *u = (uint64_t *)out;
    if (wide) {
        ember_mt_words64(state, u, n);
        for (idx i = 0; i < n; i++) u[i] = u[i] % span + low;
        return;
    }
    /* below 2^28: w % span of a 32-bit w by Lemire's multiply (exact for 32-bit operands;
     * a hardware division costs ~10x more) */
    uint32_t w[624];
    uint64_t magic = UINT64_MAX / span + 1;
    for (idx done = 0; done < n;) {
        idx m = mt_take((np_mt19937 *)state, w, n - done);
        for (idx i = 0; i < m; i++)
            u[done + i] = (uint64_t)(((unsigned __int128)(magic * w[i]) * span) >> 64) + low;
        done += m;
    }
}

/* normal_fill_16<double> over rows of 16 float64 uniforms, in place (the C library's log,
 * cos and sin, as PyTorch's). */
void ember_torch_box_muller_f64(double *d, idx blocks, double mean, double std) {
    for (idx b = 0; b < blocks; b++, d += 16) {
        for (int j = 0; j < 8; j++) {
            double radius = sqrt(-2.0 * log(1.0 - d[j]));
            double theta = 6.28318530717958647692 * d[j + 8];
            d[j] = fma(radius * cos(theta), std, mean);
            d[j + 8] = fma(radius * sin(theta), std, mean);
        }
    }
}

/* normal_distribution<double>'s pairs: uniforms (u1, u2) into (r cos t, r sin t). */
void ember_torch_normal_pairs_f64(const double *u, double *out, idx pairs) {
    for (idx k = 0; k < pairs; k++) {
        double r = sqrt(-2.0 * log1p(-u[2 * k + 1]));
        double theta = 6.28318530717958647692 * u[2 * k];
        out[2 * k] = r * cos(theta);
        out[2 * k + 1] = r * sin(theta);
    }
}

/* randperm's Fisher-Yates pass: element i swaps with i + draws[i] % (n - i). */
void ember_torch_randperm(int64_t *perm, const uint64_t *draws, idx n) {
    for (idx i = 0; i < n; i++) perm[i] = i;
    for (idx i = 0; i + 1 < n; i++) {
        idx z = i + (idx)(draws[i] % (uint64_t)(n - i));
        int64_t t = perm[i];
        perm[i] = perm[z];
        perm[z] = t;
    }
}

/* The float64 transformations of uniforms (normals for log-normal) of PyTorch's CPU
 * samplers, with the C library's functions as PyTorch's: 0 exponential(a = lambda),
 * 1 cauchy(a = median, b = sigma), 2 log-normal(a = mean, b = std), 3 geometric(a = p). */
void ember_torch_transform_f64(const double *u, double *out, idx n, int kind, double a,
                               double b) {
    switch (kind) {
    case 0: for (idx i = 0; i < n; i++) out[i] = -1.0 / a * log1p(-u[i]); break;
    case 1: for (idx i = 0; i < n; i++) out[i] = fma(b, tan(3.14159265358979323846 * (u[i] - 0.5)), a); break;
    case 2: for (idx i = 0; i < n; i++) out[i] = exp(fma(u[i], b, a)); break;
    default: for (idx i = 0; i < n; i++) out[i] = ceil(log(u[i]) / log(1.0 - a)); break;
    }
}

/* -- PyTorch's rejection samplers (ATen's Distributions.cpp and native/Distributions.h) ------
 * sample_poisson (products of uniforms below 10, Hoermann's PTRS from 10), sample_binomial
 * (inversion below count * p = 10, BTRS above), sample_gamma (Marsaglia and Tsang, boosted
 * below alpha = 1), one element after another, each drawing as many float64 uniforms (53 bits
 * of a 64-bit draw) and normal_distribution<double> samples (Box-Muller pairs whose second
 * half the generator keeps: `cache` is {value, valid}) as it needs. The arithmetic is
 * PyTorch's to the type: scalar_t (the tensor's float or double) where ATen computes in it,
 * double (accscalar_t) elsewhere, the C library's functions, and no contraction into
 * multiply-adds (PyTorch builds that file for the baseline ISA). */
#ifdef __clang__  /* (GCC contracts nothing under -std=c11) */
#pragma STDC FP_CONTRACT OFF
#endif

static inline uint32_t mt_word(np_mt19937 *st) {
    if (st->pos >= 624) mt_regen(st);
    uint32_t y = st->key[st->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

static inline double mt_unit64(np_mt19937 *st) {
    uint64_t hi = mt_word(st);
    uint64_t v = hi << 32 | mt_word(st);
    return (double)(v & 0x1fffffffffffffull) * 1.1102230246251565e-16;
}

static inline double mt_normal64(np_mt19937 *st, double *cache) {
    if (cache[1] != 0.0) {
        cache[1] = 0.0;
        return cache[0];
    }
    double u1 = mt_unit64(st);
    double u2 = mt_unit64(st);
    double r = sqrt(-2.0 * log1p(-u2));
    double theta = 6.28318530717958647692 * u1;
    cache[0] = r * sin(theta);
    cache[1] = 1.0;
    return r * cos(theta);
}

/* (int64_t)x as x86-64's conversion gives it: INT64_MIN for NaN and out-of-range values */
static inline int64_t trunc_i64(double x) {
    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}

static int64_t torch_poisson_one(np_mt19937 *st, double lambda) {
    if (lambda >= 10) {
        double slam = sqrt(lambda), loglam = log(lambda);
        double b = 0.931 + 2.53 * slam;
        double a = -0.059 + 0.02483 * b;
        double invalpha = 1.1239 + 1.1328 / (b - 3.4);
        double vr = 0.9277 - 3.6224 / (b - 2);
        for (;;) {
            double U = mt_unit64(st) - 0.5;
            double V = mt_unit64(st);
            double us = 0.5 - fabs(U);
            int64_t k = trunc_i64(floor((2 * a / us + b) * U + lambda + 0.43));
            if (us >= 0.07 && V <= vr) return k;
            if (k < 0 || (us < 0.013 && V > us)) continue;
            if (log(V) + log(invalpha) - log(a / (us * us) + b) <=
                -lambda + k * loglam - lgamma((double)k + 1))
                return k;
        }
    }
    if (lambda == 0) return 0;
    double enlam = exp(-lambda), prod = 1.0;
    int64_t X = 0;
    for (;;) {
        prod *= mt_unit64(st);
        if (prod > enlam) X += 1;
        else return X;
    }
}

/* torch.poisson: one sample per rate (rates checked >= 0 by the caller). */
void ember_torch_poisson(void *state, const double *lam, int64_t *out, idx n) {
    for (idx i = 0; i < n; i++) out[i] = torch_poisson_one((np_mt19937 *)state, lam[i]);
}

static double stirling_approx_tail(double k) {
    static const double tail[] = {0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                                  0.00833056343336287};
    if (k < 10) return tail[(size_t)k];
    double kp1sq = (k + 1) * (k + 1);
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1);
}

#define TORCH_BINOMIAL_GAMMA(T, SUF, SQRT, LOG1P)                                              \
static T btrs_##SUF(np_mt19937 *st, T count, T prob) {                                     \
    T k;                                                                                    \
    double U, V, us;                                                                        \
    const double stddev = SQRT(count * prob * (1 - prob));                                 \
    const double b = 1.15 + 2.53 * stddev;                                                  \
    const double a = -0.0873 + 0.0248 * b + 0.01 * prob;                                   \
    const double c = count * prob + 0.5;                                                    \
    const double v_r = 0.92 - 4.2 / b;                                                      \
    const double r = prob / (1 - prob);                                                     \
    const double alpha = (2.83 + 5.1 / b) * stddev;                                         \
    const double m = floor((count + 1) * prob);                                             \
    for (;;) {                                                                              \
        U = mt_unit64(st) - 0.5;                                                            \
        V = mt_unit64(st);                                                                  \
        us = 0.5 - fabs(U);                                                                 \
        k = (T)floor((2 * a / us + b) * U + c);                                             \
        if (k < 0 || k > count) continue;                                                   \
        if (us >= 0.07 && V <= v_r) return k;                                               \
        V = log(V * alpha / (a / (us * us) + b));                                           \
        double upperbound =                                                                 \
            ((m + 0.5) * log((m + 1) / (r * (count - m + 1))) +                             \
             (count + 1) * log((count - m + 1) / (count - k + 1)) +                         \
             (k + 0.5) * log(r * (count - k + 1) / (k + 1)) +                               \
             stirling_approx_tail(m) + stirling_approx_tail(count - m) -                    \
             stirling_approx_tail(k) - stirling_approx_tail(count - k));                    \
        if (V <= upperbound) return k;                                                      \
    }                                                                                       \
}                                                                                           \
                                                                                            \
static T binomial_inversion_##SUF(np_mt19937 *st, T count, T prob) {                       \
    double geom_sum = 0;                                                                    \
    T num_geom = 0;                                                                         \
    double logprob = LOG1P(-prob);                                                          \
    for (;;) {                                                                              \
        double U = mt_unit64(st);                                                           \
        double geom = ceil(log(U) / logprob);                                               \
        geom_sum += geom;                                                                   \
        if (geom_sum > count) break;                                                        \
        num_geom = num_geom + 1;                                                            \
    }                                                                                       \
    return num_geom;                                                                        \
}                                                                                           \
                                                                                            \
static T binomial_one_##SUF(np_mt19937 *st, T count, T prob) {                             \
    if (count <= 0.0 || prob <= 0.0) return 0;                                              \
    if (prob >= 1.0) return count;                                                          \
    if (prob <= 0.5) {                                                                      \
        if (count * prob >= 10.0) return btrs_##SUF(st, count, prob);                       \
        return binomial_inversion_##SUF(st, count, prob);                                   \
    }                                                                                       \
    if (prob > 0.5) {                                                                       \
        T qprob = 1.0 - prob;                                                               \
        if (count * qprob >= 10.0) return count - btrs_##SUF(st, count, qprob);             \
        return count - binomial_inversion_##SUF(st, count, qprob);                          \
    }                                                                                       \
    return (T)NAN;                                                                          \
}                                                                                           \
                                                                                            \
/* torch.binomial (NaN counts are the caller's: PyTorch's inversion never ends on them) */  \
void ember_torch_binomial_##SUF(void *state, const T *count, const T *prob, T *out, idx n) { \
    for (idx i = 0; i < n; i++)                                                             \
        out[i] = binomial_one_##SUF((np_mt19937 *)state, count[i], prob[i]);                \
}                                                                                           \
                                                                                            \
static T gamma_one_##SUF(np_mt19937 *st, double *cache, T alpha) {                         \
    double scale = 1.0f;                                                                    \
    if (alpha < 1.0f) {                                                                     \
        if (alpha == 0.f) return 0.f;                                                       \
        scale *= pow(1 - mt_unit64(st), 1.0f / alpha);                                      \
        alpha += 1.0f;                                                                      \
    }                                                                                       \
    const double d = alpha - 1.0f / 3.0f;                                                   \
    const double c = 1.0f / sqrt(9.0f * d);                                                 \
    for (;;) {                                                                              \
        double x, y;                                                                        \
        do {                                                                                \
            x = mt_normal64(st, cache);                                                     \
            y = 1.0f + c * x;                                                               \
        } while (y <= 0);                                                                   \
        const double v = y * y * y;                                                         \
        const double u = 1 - mt_unit64(st);                                                 \
        const double xx = x * x;                                                            \
        if (u < 1.0f - 0.0331f * xx * xx) return (T)(scale * d * v);                        \
        if (log(u) < 0.5f * xx + d * (1.0f - v + log(v))) return (T)(scale * d * v);        \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* _standard_gamma (and _sample_dirichlet's float64 gammas): sample_gamma of each alpha, at \
 * least the type's smallest normal (alphas NaN or below 0 are the caller's: PyTorch's      \
 * loop never ends on them) */                                                              \
void ember_torch_gamma_##SUF(void *state, double *cache, const T *alpha, T *out, idx n,    \
                             T tiny) {                                                      \
    for (idx i = 0; i < n; i++) {                                                           \
        T s = gamma_one_##SUF((np_mt19937 *)state, cache, alpha[i]);                        \
        out[i] = tiny < s ? s : tiny;                                                       \
    }                                                                                       \
}

TORCH_BINOMIAL_GAMMA(float, f32, sqrtf, log1pf)
TORCH_BINOMIAL_GAMMA(double, f64, sqrt, log1p)

/* PyTorch's CPU sort with stable=False (aten/src/ATen/native/cpu/SortingKernel.cpp): std::sort
 * of (key, index) pairs under KeyValueCompAsc/Desc, as libstdc++ (bits/stl_algo.h,
 * stl_heap.h) implements it: introsort (depth limit 2 * floor(log2 n), median of the second,
 * middle and last elements moved to the first, unguarded partition; heapsort past the depth
 * limit) on runs above 16 elements, then one insertion sort (guarded over the first 16,
 * unguarded after). Unstable: equal keys come out in the order these moves leave them, which
 * programs see through sort's indices, so the moves below are libstdc++'s, one for one.
 * Floating keys: NaN is greater than everything ascending and smaller descending (NaNs tie).
 * ember_torch_sort_<t>(keys, index, rows, n, descending) sorts each of `rows` contiguous rows
 * of n keys in place and writes the permutation (0..n-1 before sorting) to `index`. */
#define TORCH_SORT_ONE(NAME, T, LT)                                                          \
static void NAME##_adjust(T *k, int64_t *v, idx hole, idx len, T key, int64_t val) {         \
    const idx top = hole;                                                                    \
    idx child = hole;                                                                        \
    while (child < (len - 1) / 2) {                                                          \
        child = 2 * (child + 1);                                                             \
        if (LT(k[child], k[child - 1])) child--;                                             \
        k[hole] = k[child]; v[hole] = v[child];                                              \
        hole = child;                                                                        \
    }                                                                                        \
    if ((len & 1) == 0 && child == (len - 2) / 2) {                                          \
        child = 2 * (child + 1);                                                             \
        k[hole] = k[child - 1]; v[hole] = v[child - 1];                                      \
        hole = child - 1;                                                                    \
    }                                                                                        \
    idx parent = (hole - 1) / 2;                                                             \
    while (hole > top && LT(k[parent], key)) {                                               \
        k[hole] = k[parent]; v[hole] = v[parent];                                            \
        hole = parent;                                                                       \
        parent = (hole - 1) / 2;                                                             \
    }                                                                                        \
    k[hole] = key; v[hole] = val;                                                            \
}                                                                                            \
static void NAME##_heapsort(T *k, int64_t *v, idx len) {                                     \
    if (len >= 2)                                                                            \
        for (idx parent = (len - 2) / 2;; parent--) {                                        \
            NAME##_adjust(k, v, parent, len, k[parent], v[parent]);                          \
            if (parent == 0) break;                                                          \
        }                                                                                    \
    for (idx last = len; last > 1;) {                                                        \
        last--;                                                                              \
        T key = k[last]; int64_t val = v[last];                                              \
        k[last] = k[0]; v[last] = v[0];                                                      \
        NAME##_adjust(k, v, 0, last, key, val);                                              \
    }                                                                                        \
}                                                                                            \
static inline void NAME##_swap(T *k, int64_t *v, idx i, idx j) {                             \
    T tk = k[i]; k[i] = k[j]; k[j] = tk;                                                     \
    int64_t tv = v[i]; v[i] = v[j]; v[j] = tv;                                               \
}                                                                                            \
/* __unguarded_partition_pivot: the median of three moved to first, then the partition */   \
static idx NAME##_partition_pivot(T *k, int64_t *v, idx first, idx last) {                   \
    idx a = first + 1, b = first + (last - first) / 2, c = last - 1, m;                      \
    if (LT(k[a], k[b])) m = LT(k[b], k[c]) ? b : LT(k[a], k[c]) ? c : a;                     \
    else m = LT(k[a], k[c]) ? a : LT(k[b], k[c]) ? c : b;                                    \
    NAME##_swap(k, v, first, m);                                                             \
    idx lo = first + 1, hi = last;                                                           \
    const T pivot = k[first];                                                                \
    for (;;) {                                                                               \
        while (LT(k[lo], pivot)) lo++;                                                       \
        hi--;                                                                                \
        while (LT(pivot, k[hi])) hi--;                                                       \
        if (!(lo < hi)) return lo;                                                           \
        NAME##_swap(k, v, lo, hi);                                                           \
        lo++;                                                                                \
    }                                                                                        \
}                                                                                            \
static void NAME##_introsort(T *k, int64_t *v, idx first, idx last, idx depth) {             \
    while (last - first > 16) {                                                              \
        if (depth == 0) {                                                                    \
            NAME##_heapsort(k + first, v + first, last - first);                             \
            return;                                                                          \
        }                                                                                    \
        depth--;                                                                             \
        idx lo = NAME##_partition_pivot(k, v, first, last);                                  \
        NAME##_introsort(k, v, lo, last, depth);                                             \
        last = lo;                                                                           \
    }                                                                                        \
}                                                                                            \
static inline void NAME##_linear_insert(T *k, int64_t *v, idx i) {                           \
    T key = k[i]; int64_t val = v[i];                                                        \
    while (LT(key, k[i - 1])) { k[i] = k[i - 1]; v[i] = v[i - 1]; i--; }                     \
    k[i] = key; v[i] = val;                                                                  \
}                                                                                            \
static void NAME(T *k, int64_t *v, idx n) {                                                  \
    if (n < 2) return;                                                                       \
    idx lg = 0;                                                                              \
    while (((idx)1 << (lg + 1)) <= n) lg++;                                                  \
    NAME##_introsort(k, v, 0, n, 2 * lg);                                                    \
    idx guarded = n > 16 ? 16 : n;                                                           \
    for (idx i = 1; i < guarded; i++) {                                                      \
        if (LT(k[i], k[0])) {                                                                \
            T key = k[i]; int64_t val = v[i];                                                \
            memmove(k + 1, k, (size_t)i * sizeof(T));                                        \
            memmove(v + 1, v, (size_t)i * sizeof(int64_t));                                  \
            k[0] = key; v[0] = val;                                                          \
        } else {                                                                             \
            NAME##_linear_insert(k, v, i);                                                   \
        }                                                                                    \
    }                                                                                        \
    for (idx i = guarded; i < n; i++) NAME##_linear_insert(k, v, i);                         \
}

#define SORT_LT(a, b) ((a) < (b))
#define SORT_GT(a, b) ((a) > (b))
#define SORT_LT_NAN(a, b) ((!isnan(a) && isnan(b)) || (a) < (b))
#define SORT_GT_NAN(a, b) ((isnan(a) && !isnan(b)) || (a) > (b))

#define TORCH_SORT(T, SUF, ASC, DESC)                                                        \
TORCH_SORT_ONE(torch_sort_asc_##SUF, T, ASC)                                                 \
TORCH_SORT_ONE(torch_sort_desc_##SUF, T, DESC)                                               \
void ember_torch_sort_##SUF(T *keys, int64_t *index, idx rows, idx n, int descending) {      \
    for (idx r = 0; r < rows; r++) {                                                         \
        T *k = keys + r * n;                                                                 \
        int64_t *v = index + r * n;                                                          \
        for (idx i = 0; i < n; i++) v[i] = i;                                                \
        if (descending) torch_sort_desc_##SUF(k, v, n);                                      \
        else torch_sort_asc_##SUF(k, v, n);                                                  \
    }                                                                                        \
}

TORCH_SORT(float, f32, SORT_LT_NAN, SORT_GT_NAN)
TORCH_SORT(double, f64, SORT_LT_NAN, SORT_GT_NAN)
TORCH_SORT(int64_t, i64, SORT_LT, SORT_GT)
TORCH_SORT(int32_t, i32, SORT_LT, SORT_GT)
TORCH_SORT(int16_t, i16, SORT_LT, SORT_GT)
TORCH_SORT(int8_t, i8, SORT_LT, SORT_GT)
TORCH_SORT(uint8_t, u8, SORT_LT, SORT_GT)
TORCH_SORT(uint16_t, u16, SORT_LT, SORT_GT)
TORCH_SORT(uint32_t, u32, SORT_LT, SORT_GT)
TORCH_SORT(uint64_t, u64, SORT_LT, SORT_GT)

/* PyTorch's CPU topk, kthvalue and mode, whose indices of tied elements are the order these
 * algorithms leave (key, index) pairs in, so the moves are theirs, one for one.
 * topk (aten/src/ATen/native/TopKImpl.h, topk_impl_loop): with k * 64 <= n, libstdc++'s
 * std::partial_sort (__heap_select: a heap of the first k, each later element that compares
 * before its top replaces the top; then __sort_heap); else std::nth_element at k - 1
 * (__introselect: depth limit 2 * floor(log2 n), the median of the second, middle and last
 * elements moved to the first, unguarded partition, heap_select past the depth limit, one
 * insertion sort at 3 elements or fewer), then, if `sorted`, std::sort of the first k - 1. The
 * comparators are sort's (NaN largest), descending for `largest`.
 * ember_torch_topk_<t>(keys, index, rows, n, k, largest, sorted) works on each of `rows`
 * contiguous rows of n keys in place; the first k of each row (keys and their 0..n-1 indices)
 * are the result. The sort kernels above give the heap, swap and insertion steps. */
#define TORCH_SELECT_ONE(NAME, SORT, T, LT)                                                  \
static void NAME##_heap_select(T *k, int64_t *v, idx middle, idx len) {                      \
    if (middle >= 2)                                                                         \
        for (idx parent = (middle - 2) / 2;; parent--) {                                     \
            SORT##_adjust(k, v, parent, middle, k[parent], v[parent]);                       \
            if (parent == 0) break;                                                          \
        }                                                                                    \
    for (idx i = middle; i < len; i++)                                                       \
        if (LT(k[i], k[0])) {                                                                \
            T key = k[i]; int64_t val = v[i];                                                \
            k[i] = k[0]; v[i] = v[0];                                                        \
            SORT##_adjust(k, v, 0, middle, key, val);                                        \
        }                                                                                    \
}                                                                                            \
static void NAME##_partial_sort(T *k, int64_t *v, idx middle, idx len) {                     \
    NAME##_heap_select(k, v, middle, len);                                                   \
    for (idx last = middle; last > 1;) {                                                     \
        last--;                                                                              \
        T key = k[last]; int64_t val = v[last];                                              \
        k[last] = k[0]; v[last] = v[0];                                                      \
        SORT##_adjust(k, v, 0, last, key, val);                                              \
    }                                                                                        \
}                                                                                            \
static void NAME##_nth_element(T *k, int64_t *v, idx nth, idx n) {                           \
    if (nth >= n) return;                                                                    \
    idx lg = 0;                                                                              \
    while (((idx)1 << (lg + 1)) <= n) lg++;                                                  \
    idx first = 0, last = n, depth = 2 * lg;                                                 \
    while (last - first > 3) {                                                               \
        if (depth == 0) {                                                                    \
            NAME##_heap_select(k + first, v + first, nth + 1 - first, last - first);         \
            SORT##_swap(k, v, first, nth);                                                   \
            return;                                                                          \
        }                                                                                    \
        depth--;                                                                             \
        idx lo = SORT##_partition_pivot(k, v, first, last); /* SORT has this LT */           \
        if (lo <= nth) first = lo;                                                           \
        else last = lo;                                                                      \
    }                                                                                        \
    for (idx i = first + 1; i < last; i++) {                                                 \
        if (LT(k[i], k[first])) {                                                            \
            T key = k[i]; int64_t val = v[i];                                                \
            memmove(k + first + 1, k + first, (size_t)(i - first) * sizeof(T));              \
            memmove(v + first + 1, v + first, (size_t)(i - first) * sizeof(int64_t));       \
            k[first] = key; v[first] = val;                                                  \
        } else {                                                                             \
            SORT##_linear_insert(k, v, i);                                                   \
        }                                                                                    \
    }                                                                                        \
}                                                                                            \
static void NAME(T *k, int64_t *v, idx n, idx kk, int sorted) {                              \
    if (kk * 64 <= n) {                                                                      \
        NAME##_partial_sort(k, v, kk, n);                                                    \
    } else {                                                                                 \
        NAME##_nth_element(k, v, kk - 1, n);                                                 \
        if (sorted) SORT(k, v, kk - 1);                                                      \
    }                                                                                        \
}

/* kthvalue (aten/src/ATen/native/Sorting.cpp): TH's quick_select_template, Sedgewick's
 * quickselect (median of three moved to L, L + 1 and R; pivot at L), under "greater, NaN
 * greatest". ember_torch_kthvalue_<t>(keys, index, rows, n, kth) leaves the kth smallest
 * (0-based) of each row at kth. */
#define TORCH_KTHVALUE_ONE(NAME, SORT, T, GT)                                                \
static void NAME(T *k, int64_t *v, idx n, idx kth) {                                         \
    idx L = 0, R = n - 1;                                                                    \
    for (;;) {                                                                               \
        if (R <= L) return;                                                                  \
        if (R == L + 1) {                                                                    \
            if (GT(k[L], k[R])) SORT##_swap(k, v, L, R);                                     \
            return;                                                                          \
        }                                                                                    \
        SORT##_swap(k, v, (L + R) >> 1, L + 1);                                              \
        if (GT(k[L + 1], k[R])) SORT##_swap(k, v, L + 1, R);                                 \
        if (GT(k[L], k[R])) SORT##_swap(k, v, L, R);                                         \
        if (GT(k[L + 1], k[L])) SORT##_swap(k, v, L + 1, L);                                 \
        idx i = L + 1, j = R;                                                                \
        const T piv = k[L];                                                                  \
        for (;;) {                                                                           \
            do i++; while (GT(piv, k[i]));                                                   \
            do j--; while (GT(k[j], piv));                                                   \
            if (j < i) break;                                                                \
            SORT##_swap(k, v, i, j);                                                         \
        }                                                                                    \
        SORT##_swap(k, v, L, j);                                                             \
        if (j <= kth) L = i;                                                                 \
        if (j >= kth) R = j - 1;                                                             \
    }                                                                                        \
}

/* mode (aten/src/ATen/native/cpu/TensorCompareKernel.cpp): std::sort of (value, index) pairs
 * under the plain `a < b` (NaN unordered: each NaN its own run), then the first run of the
 * greatest length wins with the index of its last element in that sorted order.
 * ember_torch_mode_<t>(keys, index, out, rows, n) sorts each row in place and writes the
 * chosen index of row r to out[r]. TORCH_SELECT gives the three for one key type. */
#define TORCH_SELECT(T, SUF, LT, GT, MODE_SORT)                                              \
TORCH_SELECT_ONE(torch_topk_asc_##SUF, torch_sort_asc_##SUF, T, LT)                          \
TORCH_SELECT_ONE(torch_topk_desc_##SUF, torch_sort_desc_##SUF, T, GT)                        \
TORCH_KTHVALUE_ONE(torch_kthvalue_##SUF, torch_sort_desc_##SUF, T, GT)                       \
void ember_torch_topk_##SUF(T *keys, int64_t *index, idx rows, idx n, idx kk, int largest,   \
                            int sorted) {                                                    \
    for (idx r = 0; r < rows; r++) {                                                         \
        T *k = keys + r * n;                                                                 \
        int64_t *v = index + r * n;                                                          \
        for (idx i = 0; i < n; i++) v[i] = i;                                                \
        if (largest) torch_topk_desc_##SUF(k, v, n, kk, sorted);                             \
        else torch_topk_asc_##SUF(k, v, n, kk, sorted);                                      \
    }                                                                                        \
}                                                                                            \
void ember_torch_kthvalue_##SUF(T *keys, int64_t *index, idx rows, idx n, idx kth) {         \
    for (idx r = 0; r < rows; r++) {                                                         \
        T *k = keys + r * n;                                                                 \
        int64_t *v = index + r * n;                                                          \
        for (idx i = 0; i < n; i++) v[i] = i;                                                \
        torch_kthvalue_##SUF(k, v, n, kth);                                                  \
    }                                                                                        \
}                                                                                            \
void ember_torch_mode_##SUF(T *keys, int64_t *index, int64_t *out, idx rows, idx n) {        \
    for (idx r = 0; r < rows; r++) {                                                         \
        T *k = keys + r * n;                                                                 \
        int64_t *v = index + r * n;                                                          \
        for (idx i = 0; i < n; i++) v[i] = i;                                                \
        MODE_SORT(k, v, n);                                                                  \
        int64_t run = 0, longest = 0;                                                        \
        for (idx i = 0; i < n; i++) {                                                        \
            run++;                                                                           \
            if (i == n - 1 || k[i] != k[i + 1]) {                                            \
                if (run > longest) { out[r] = v[i]; longest = run; }                         \
                run = 0;                                                                     \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
}

/* mode's plain `<` on floating keys needs its own std::sort (NaN unordered, not greatest) */
TORCH_SORT_ONE(torch_mode_sort_f32, float, SORT_LT)
TORCH_SORT_ONE(torch_mode_sort_f64, double, SORT_LT)
TORCH_SELECT(float, f32, SORT_LT_NAN, SORT_GT_NAN, torch_mode_sort_f32)
TORCH_SELECT(double, f64, SORT_LT_NAN, SORT_GT_NAN, torch_mode_sort_f64)
TORCH_SELECT(int64_t, i64, SORT_LT, SORT_GT, torch_sort_asc_i64)
TORCH_SELECT(int32_t, i32, SORT_LT, SORT_GT, torch_sort_asc_i32)
TORCH_SELECT(int16_t, i16, SORT_LT, SORT_GT, torch_sort_asc_i16)
TORCH_SELECT(int8_t, i8, SORT_LT, SORT_GT, torch_sort_asc_i8)
TORCH_SELECT(uint8_t, u8, SORT_LT, SORT_GT, torch_sort_asc_u8)
TORCH_SELECT(uint16_t, u16, SORT_LT, SORT_GT, torch_sort_asc_u16)
TORCH_SELECT(uint32_t, u32, SORT_LT, SORT_GT, torch_sort_asc_u32)
TORCH_SELECT(uint64_t, u64, SORT_LT, SORT_GT, torch_sort_asc_u64)

/* median/nanmedian along a dim (aten/src/ATen/native/Sorting.cpp) take std::nth_element of the
 * indices under "value, then index", a total order but for NaNs under nanmedian, which are
 * all equivalent: only a row of NaNs leaves its tie order to the algorithm. That row is
 * nth_element over n equal keys: ember_torch_nth_element_i64(keys, index, rows, n, nth). */
void ember_torch_nth_element_i64(int64_t *keys, int64_t *index, idx rows, idx n, idx nth) {
    for (idx r = 0; r < rows; r++) {
        int64_t *v = index + r * n;
        for (idx i = 0; i < n; i++) v[i] = i;
        torch_topk_asc_i64_nth_element(keys + r * n, v, nth, n);
    }
}

/* col2im in a flat layout (ember.ops._conv_kernels._col2im): for each of `rows` rows,
 * buf[r, offs[j] + p] += cols[r, j, p] for every tap j < ntaps and p < lq, buf (rows, f) set
 * to zero first. One pass over cols with the row's buffer in L1, where NumPy's per-tap adds
 * stream the whole batch once per tap (LeNet's 6 -> 16 conv input gradient: 25 taps). */
void ember_col2im_flat_f32(const float *restrict cols, float *restrict buf,
                           const int64_t *restrict offs, idx rows, idx ntaps, idx lq, idx f) {
    memset(buf, 0, (size_t)(rows * f) * sizeof(float));
    for (idx r = 0; r < rows; r++) {
        float *b = buf + r * f;
        const float *c = cols + r * ntaps * lq;
        for (idx j = 0; j < ntaps; j++) {
            float *bj = b + offs[j];
            const float *cj = c + j * lq;
#pragma omp simd
            for (idx p = 0; p < lq; p++) bj[p] += cj[p];
        }
    }
}

/* Direct 2-d convolution, stride 1, no dilation, one group (ember.ops._conv_kernels, the
 * "direct" path): NumPy's im2col + GEMM copies every input element prod(k) times and runs one
 * small GEMM per sample; these kernels read a sample's zero-padded planes from cache and keep
 * a tile of the result in AVX2 registers (AVX-512 ones where the CPU has them: the *16
 * twins below). Vectors run along an output row (8 or 16 positions a lane each), so the
 * forward's stores and the output gradient's loads are plain rows in PyTorch's layout; a
 * row's last vector is masked. FMA contraction: the sums are a GEMM's
 * (BLAS contracts too), in (c, ky, kx) order per output; the weight gradient sums lane-wise
 * partials over each sample's positions, then the lanes, then the samples in order. Built
 * with AVX2 and FMA only; elsewhere the kernels return 0 and the caller keeps NumPy. */
#if defined(__AVX2__) && defined(__FMA__)
#define CONV_SLACK 32  /* floats after a padded sample: a row's last vectors read past it */

static const int32_t conv_mask_bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                           0, 0, 0, 0, 0, 0, 0, 0};

/* the lanes of a vector with m (0..8) valid positions */
static inline __m256i conv_mask(idx m) {
    return _mm256_loadu_si256((const __m256i *)(conv_mask_bits + 8 - m));
}

/* One sample's planes x (C, H, W) zero-padded into buf (C, Hp, Wp), the input at (ph, pw),
 * and CONV_SLACK zeros after. */
static void conv_pad_sample(const float *restrict x, float *restrict buf, idx C, idx H, idx W,
                            idx Hp, idx Wp, idx ph, idx pw) {
    for (idx c = 0; c < C; c++) {
        float *p = buf + c * Hp * Wp;
        for (idx r = 0; r < Hp; r++) {
            idx i = r - ph;
            float *row = p + r * Wp;
            if (i < 0 || i >= H) {
                memset(row, 0, (size_t)Wp * sizeof(float));
                continue;
            }
            const float *src = x + (c * H + i) * W;
            idx a = pw > 0 ? pw : 0, b = pw + W < Wp ? pw + W : Wp;
            for (idx j = 0; j < a; j++) row[j] = 0.0f;
            if (b > a) memcpy(row + a, src + (a - pw), (size_t)(b - a) * sizeof(float));
            for (idx j = b > a ? b : a; j < Wp; j++) row[j] = 0.0f;
        }
    }
    memset(buf + C * Hp * Wp, 0, CONV_SLACK * sizeof(float));
}

/* The register tiles are written once for both vector widths: V8 (AVX2: 8 floats, 16
 * registers) and V16 (AVX-512: 16 floats, 32 registers), V_T the vector type, V_MT its mask's. */
#define V8_T __m256
#define V8_MT __m256i
#define V8_LOAD(p) _mm256_loadu_ps(p)
#define V8_MASKLOAD(p, m) _mm256_maskload_ps(p, m)
#define V8_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V8_SET1(p) _mm256_broadcast_ss(p)
#define V8_ZERO() _mm256_setzero_ps()
#define V16_T __m512
#define V16_MT __mmask16
#define V16_LOAD(p) _mm512_loadu_ps(p)
#define V16_MASKLOAD(p, m) _mm512_maskz_loadu_ps(m, p)
#define V16_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V16_SET1(p) _mm512_set1_ps(*(p))
#define V16_ZERO() _mm512_setzero_ps()

/* NAME: acc[j * xv + v] = sum over the taps t0 <= t < t1 of x[offs[t] + v * LANES + lane] *
 * w[t][j] (plus bias[j] unless NULL): xv vectors of positions by ob channels (NACC at most);
 * taps in (ky, c, kx) order, so that the taps of the kernel rows inside the input are one
 * run; w packed (KH * C * KW, O) in the same order */
#define DEFINE_CONV_TILE(NAME, V, LANES, NACC) \
static inline __attribute__((always_inline)) void NAME( \
        const float *restrict xb, const idx *restrict offs, idx t0, idx t1, \
        const float *restrict wb, idx O, const float *restrict bias, const int xv, \
        const int ob, V##_T *restrict out) { \
    V##_T acc[NACC]; \
    _Pragma("GCC unroll 24") \
    for (int i = 0; i < xv * ob; i++) acc[i] = bias ? V##_SET1(bias + i / xv) : V##_ZERO(); \
    for (idx t = t0; t < t1; t++) { \
        const float *xr = xb + offs[t]; \
        const float *wr = wb + t * O; \
        V##_T x0 = V##_LOAD(xr); \
        V##_T x1 = xv == 2 ? V##_LOAD(xr + LANES) : x0; \
        _Pragma("GCC unroll 24") \
        for (int j = 0; j < ob; j++) { \
            V##_T b = V##_SET1(wr + j); \
            acc[j * xv] = V##_FMA(x0, b, acc[j * xv]); \
            if (xv == 2) acc[j * xv + 1] = V##_FMA(x1, b, acc[j * xv + 1]); \
        } \
    } \
    _Pragma("GCC unroll 24") \
    for (int i = 0; i < xv * ob; i++) out[i] = acc[i]; \
}

/* NAME: acc[j * kw + k] += g[j, oy, ox + lane] * x[oy + ky, ox + k + lane] over the positions
 * of a sample, g's rows (ob of them, go apart) of OW, the last vector of each masked; ob * kw
 * at most NACC, ob at most NG */
#define DEFINE_WGRAD_TILE(NAME, V, LANES, NACC, NG) \
static inline __attribute__((always_inline)) void NAME( \
        const float *restrict xr0, idx Wp, const float *restrict g0, idx go, idx OH, idx OW, \
        V##_MT tail, const int ob, const int kw, V##_T *restrict out) { \
    V##_T acc[NACC]; \
    _Pragma("GCC unroll 24") \
    for (int i = 0; i < ob * kw; i++) acc[i] = V##_ZERO(); \
    for (idx oy = 0; oy < OH; oy++) { \
        const float *xr = xr0 + oy * Wp; \
        const float *gr = g0 + oy * OW; \
        idx ox = 0; \
        for (; ox + LANES <= OW; ox += LANES) { \
            V##_T gv[NG]; \
            _Pragma("GCC unroll 24") \
            for (int j = 0; j < ob; j++) gv[j] = V##_LOAD(gr + j * go + ox); \
            _Pragma("GCC unroll 24") \
            for (int k = 0; k < kw; k++) { \
                V##_T xk = V##_LOAD(xr + ox + k); \
                _Pragma("GCC unroll 24") \
                for (int j = 0; j < ob; j++) \
                    acc[j * kw + k] = V##_FMA(gv[j], xk, acc[j * kw + k]); \
            } \
        } \
        if (ox < OW) {  /* both operands masked: an infinite input past the row adds no NaN */ \
            V##_T gv[NG]; \
            _Pragma("GCC unroll 24") \
            for (int j = 0; j < ob; j++) gv[j] = V##_MASKLOAD(gr + j * go + ox, tail); \
            _Pragma("GCC unroll 24") \
            for (int k = 0; k < kw; k++) { \
                V##_T xk = V##_MASKLOAD(xr + ox + k, tail); \
                _Pragma("GCC unroll 24") \
                for (int j = 0; j < ob; j++) \
                    acc[j * kw + k] = V##_FMA(gv[j], xk, acc[j * kw + k]); \
            } \
        } \
    } \
    _Pragma("GCC unroll 24") \
    for (int i = 0; i < ob * kw; i++) out[i] = acc[i]; \
}

DEFINE_CONV_TILE(conv_tile, V8, 8, 12)

#define CONV_TILE(XV, OB) conv_tile(xb, offs, t0, t1, wb, O, bias, XV, OB, acc); break

/* the tile of xv (1, 2) vectors of positions by ob channels (1..6 with xv = 2, 1..12) */
static void conv_tile_n(const float *restrict xb, const idx *restrict offs, idx t0, idx t1,
                        const float *restrict wb, idx O, const float *restrict bias, int xv,
                        idx ob, __m256 *restrict acc) {
    if (xv == 2) {
        switch (ob) {
        case 6: CONV_TILE(2, 6); case 5: CONV_TILE(2, 5); case 4: CONV_TILE(2, 4);
        case 3: CONV_TILE(2, 3); case 2: CONV_TILE(2, 2); default: CONV_TILE(2, 1);
        }
    } else {
        switch (ob) {
        case 12: CONV_TILE(1, 12); case 11: CONV_TILE(1, 11); case 10: CONV_TILE(1, 10);
        case 9: CONV_TILE(1, 9); case 8: CONV_TILE(1, 8); case 7: CONV_TILE(1, 7);
        case 6: CONV_TILE(1, 6); case 5: CONV_TILE(1, 5); case 4: CONV_TILE(1, 4);
        case 3: CONV_TILE(1, 3); case 2: CONV_TILE(1, 2); default: CONV_TILE(1, 1);
        }
    }
}

/* The taps' offsets in a padded sample (ky, c, kx order) into offs (KH * C * KW), and for an
 * output row oy the run [*t0, *t1) of taps whose kernel rows lie inside the input (the other
 * rows read padding only). */
static void conv_taps(idx *offs, idx C, idx KH, idx KW, idx cs, idx Wp) {
    idx t = 0;
    for (idx ky = 0; ky < KH; ky++)
        for (idx c = 0; c < C; c++)
            for (idx kx = 0; kx < KW; kx++) offs[t++] = c * cs + ky * Wp + kx;
}

static inline void conv_row_taps(idx oy, idx H, idx ph, idx KH, idx CK, idx *t0, idx *t1) {
    idx a = ph - oy, b = H + ph - oy;
    a = a < 0 ? 0 : a > KH ? KH : a;
    b = b < a ? a : b > KH ? KH : b;
    *t0 = a * CK;
    *t1 = b * CK;
}

/* The workspace of the forward kernels: a padded sample, the tap offsets into it, and which
 * sample it holds. */
typedef struct {
    float *buf;
    idx *offs;
    idx Wp, padded;
} conv_ws;

static int conv_ws_open(conv_ws *s, idx C, idx KH, idx KW, idx OH, idx OW) {
    idx Hp = OH + KH - 1;
    s->Wp = OW + KW - 1;
    s->padded = -1;
    s->buf = malloc((size_t)(C * Hp * s->Wp + CONV_SLACK) * sizeof(float));
    s->offs = malloc((size_t)(KH * C * KW) * sizeof(idx));
    if (!s->buf || !s->offs) {
        free(s->buf);
        free(s->offs);
        return 0;
    }
    conv_taps(s->offs, C, KH, KW, Hp * s->Wp, s->Wp);
    return 1;
}

static void conv_ws_close(conv_ws *s) {
    free(s->buf);
    free(s->offs);
}

/* Output row r = n * OH + oy: its sample padded into the workspace (once per sample), its
 * sample n and its run of taps [t0, t1); returns oy. */
static idx conv_ws_row(conv_ws *s, const float *restrict x, idx r, idx C, idx H, idx W,
                       idx KH, idx KW, idx ph, idx pw, idx OH, idx *n, idx *t0, idx *t1) {
    *n = r / OH;
    idx oy = r % OH;
    if (*n != s->padded) {
        conv_pad_sample(x + *n * C * H * W, s->buf, C, H, W, OH + KH - 1, s->Wp, ph, pw);
        s->padded = *n;
    }
    conv_row_taps(oy, H, ph, KH, C * KW, t0, t1);
    return oy;
}

#ifdef __AVX512F__
/* The AVX-512 twins of conv_tile and wgrad_tile (16 positions a vector, 32 registers): on an
 * AVX-512 core they run in place of the AVX2 ones unless ember_conv_wide(0) turned them off
 * (the tests run both). Same sums in the same order per output in the forward; the weight
 * gradient's lane-wise partials are 16 wide, so its rounding differs from the AVX2 one's. */
#define CONV_WIDE 1
static int conv_wide = 1;

static inline __mmask16 conv_mask16(idx m) {
    return m >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1);
}

DEFINE_CONV_TILE(conv_tile16, V16, 16, 24)

#define CONV_TILE16(XV, OB) conv_tile16(xb, offs, t0, t1, wb, O, bias, XV, OB, acc); break

/* the tile of xv (1, 2) vectors of positions by ob channels (1..12 with xv = 2, 1..24) */
static void conv_tile16_n(const float *restrict xb, const idx *restrict offs, idx t0, idx t1,
                          const float *restrict wb, idx O, const float *restrict bias, int xv,
                          idx ob, __m512 *restrict acc) {
    if (xv == 2) {
        switch (ob) {
        case 12: CONV_TILE16(2, 12); case 11: CONV_TILE16(2, 11); case 10: CONV_TILE16(2, 10);
        case 9: CONV_TILE16(2, 9); case 8: CONV_TILE16(2, 8); case 7: CONV_TILE16(2, 7);
        case 6: CONV_TILE16(2, 6); case 5: CONV_TILE16(2, 5); case 4: CONV_TILE16(2, 4);
        case 3: CONV_TILE16(2, 3); case 2: CONV_TILE16(2, 2); default: CONV_TILE16(2, 1);
        }
    } else {
        switch (ob) {
        case 24: CONV_TILE16(1, 24); case 23: CONV_TILE16(1, 23); case 22: CONV_TILE16(1, 22);
        case 21: CONV_TILE16(1, 21); case 20: CONV_TILE16(1, 20); case 19: CONV_TILE16(1, 19);
        case 18: CONV_TILE16(1, 18); case 17: CONV_TILE16(1, 17); case 16: CONV_TILE16(1, 16);
        case 15: CONV_TILE16(1, 15); case 14: CONV_TILE16(1, 14); case 13: CONV_TILE16(1, 13);
        case 12: CONV_TILE16(1, 12); case 11: CONV_TILE16(1, 11); case 10: CONV_TILE16(1, 10);
        case 9: CONV_TILE16(1, 9); case 8: CONV_TILE16(1, 8); case 7: CONV_TILE16(1, 7);
        case 6: CONV_TILE16(1, 6); case 5: CONV_TILE16(1, 5); case 4: CONV_TILE16(1, 4);
        case 3: CONV_TILE16(1, 3); case 2: CONV_TILE16(1, 2); default: CONV_TILE16(1, 1);
        }
    }
}

/* O channels in tiles of at most obmax, as even as they go (16 = 8 + 8, not 12 + 4) */
static inline idx conv_even_tile(idx O, idx obmax) {
    idx tiles = (O + obmax - 1) / obmax;
    return (O + tiles - 1) / tiles;
}

/* ember_conv2d_f32's row r0 <= r < r1 loop with 16-position vectors */
static void conv2d_rows16(conv_ws *s, const float *restrict x, const float *restrict wt,
                          const float *restrict bias, float *restrict y, idx r0, idx r1, idx C,
                          idx H, idx W, idx O, idx KH, idx KW, idx ph, idx pw, idx OH,
                          idx OW) {
    idx Wp = s->Wp;
    __m512 acc[24];
    for (idx r = r0; r < r1; r++) {
        idx n, t0, t1;
        idx oy = conv_ws_row(s, x, r, C, H, W, KH, KW, ph, pw, OH, &n, &t0, &t1);
        float *yn = y + n * O * OH * OW;
        for (idx ox = 0; ox < OW; ) {
            idx left = OW - ox;
            int xv = left > 16 ? 2 : 1;
            idx obt = conv_even_tile(O, xv == 2 ? 12 : 24);
            idx full = left >= 16 * xv ? 16 * xv : left;
            __mmask16 tail = conv_mask16(full - 16 * (xv - 1));
            for (idx o0 = 0; o0 < O; o0 += obt) {
                idx ob = O - o0 < obt ? O - o0 : obt;
                conv_tile16_n(s->buf + oy * Wp + ox, s->offs, t0, t1, wt + o0, O,
                              bias ? bias + o0 : NULL, xv, ob, acc);
                for (idx j = 0; j < ob; j++) {
                    float *yr = yn + ((o0 + j) * OH + oy) * OW + ox;
                    if (xv == 2) _mm512_storeu_ps(yr, acc[2 * j]);
                    _mm512_mask_storeu_ps(yr + 16 * (xv - 1), tail, acc[j * xv + xv - 1]);
                }
            }
            ox += full;
        }
    }
}

/* every (ob, kw) the switch below instantiates, used or not: 12 x 7 accumulators */
DEFINE_WGRAD_TILE(wgrad_tile16, V16, 16, 12 * 7, 12)

/* channels per 16-lane weight-gradient tile for a kernel kw wide: ob * kw accumulators, ob
 * gradient vectors and an input vector in 32 registers, less where it measured faster (at
 * kw = 3, 8 channels spilled: ResNet's 16 -> 16 3x3 took 0.89 ms where tiles of 6 take 0.75) */
static inline int wgrad_ob16(idx kw) {
    static const int ob[8] = {12, 12, 10, 6, 5, 5, 4, 3};
    return ob[kw < 7 ? kw : 7];
}

#define WGRAD_TILE16(OB, KW) wgrad_tile16(xr, Wp, g0, L, OH, OW, tail, OB, KW, acc)
#define WGRAD_OB16(KW) do { switch (ob) { \
    case 12: WGRAD_TILE16(12, KW); break; case 11: WGRAD_TILE16(11, KW); break; \
    case 10: WGRAD_TILE16(10, KW); break; case 9: WGRAD_TILE16(9, KW); break; \
    case 8: WGRAD_TILE16(8, KW); break; case 7: WGRAD_TILE16(7, KW); break; \
    case 6: WGRAD_TILE16(6, KW); break; case 5: WGRAD_TILE16(5, KW); break; \
    case 4: WGRAD_TILE16(4, KW); break; case 3: WGRAD_TILE16(3, KW); break; \
    case 2: WGRAD_TILE16(2, KW); break; default: WGRAD_TILE16(1, KW); break; } } while (0)

static void wgrad_tile16_n(const float *restrict xr, idx Wp, const float *restrict g0, idx L,
                           idx OH, idx OW, __mmask16 tail, idx ob, idx kw,
                           __m512 *restrict acc) {
    switch (kw) {
    case 1: WGRAD_OB16(1); break;
    case 2: WGRAD_OB16(2); break;
    case 3: WGRAD_OB16(3); break;
    case 4: WGRAD_OB16(4); break;
    case 5: WGRAD_OB16(5); break;
    case 6: WGRAD_OB16(6); break;
    default: WGRAD_OB16(7); break;
    }
}

/* ember_conv2d_wgrad_f32's loop over the samples with 16-position vectors */
static void conv2d_wgrad16(const float *restrict x, const float *restrict gy,
                           float *restrict gw, float *restrict buf, idx N, idx C, idx H, idx W,
                           idx O, idx KH, idx KW, idx ph, idx pw, idx OH, idx OW) {
    idx Hp = OH + KH - 1, Wp = OW + KW - 1, cs = Hp * Wp, L = OH * OW;
    __mmask16 tail = conv_mask16(OW % 16 ? OW % 16 : 16);
    idx obt = conv_even_tile(O, wgrad_ob16(KW));
    __m512 acc[12 * 7];
    for (idx n = 0; n < N; n++) {
        conv_pad_sample(x + n * C * H * W, buf, C, H, W, Hp, Wp, ph, pw);
        const float *gn = gy + n * O * L;
        for (idx o0 = 0; o0 < O; o0 += obt) {
            idx ob = O - o0 < obt ? O - o0 : obt;
            const float *g0 = gn + o0 * L;
            for (idx c = 0; c < C; c++) {
                for (idx ky = 0; ky < KH; ky++) {
                    const float *xr = buf + c * cs + ky * Wp;
                    wgrad_tile16_n(xr, Wp, g0, L, OH, OW, tail, ob, KW, acc);
                    for (idx j = 0; j < ob; j++) {
                        float *dst = gw + (((o0 + j) * C + c) * KH + ky) * KW;
                        for (idx k = 0; k < KW; k++)
                            dst[k] += _mm512_reduce_add_ps(acc[j * KW + k]);
                    }
                }
            }
        }
    }
}
#else
#define CONV_WIDE 0
static const int conv_wide = 0;
#endif

/* Whether the forward and weight-gradient row kernels run 16-position (AVX-512) vectors:
 * `set` 0 or 1 turns them off or on where they were built, -1 only asks. Process-wide (for
 * tests and benchmarks; not to be flipped while kernels run). */
int ember_conv_wide(int set) {
#if CONV_WIDE
    if (set >= 0) conv_wide = set != 0;
#else
    (void)set;
#endif
    return conv_wide;
}

/* Rows r0 <= r < r1 of y (N, O, OH, OW), r = n * OH + oy, of the convolution of x (N, C, H,
 * W), padded by (ph, pw) before and as far as the output needs after, with the packed weight
 * wt (KH * C * KW, O), plus bias (O) unless NULL. The rows of a batch split over threads (by
 * samples, or by rows for a batch of one). */
static int serial_conv2d_f32(const float *restrict x, const float *restrict wt,
                     const float *restrict bias, float *restrict y, idx r0, idx r1, idx C, idx H, idx W, idx O, idx KH, idx KW, idx ph, idx pw,
                     idx OH, idx OW) {
    conv_ws s;
    if (!conv_ws_open(&s, C, KH, KW, OH, OW)) return 0;
#if CONV_WIDE
    if (conv_wide) {
        conv2d_rows16(&s, x, wt, bias, y, r0, r1, C, H, W, O, KH, KW, ph, pw, OH, OW);
        conv_ws_close(&s);
        return 1;
    }
#endif
    idx Wp = s.Wp;
    __m256 acc[12];
    for (idx r = r0; r < r1; r++) {
        idx n, t0, t1;
        idx oy = conv_ws_row(&s, x, r, C, H, W, KH, KW, ph, pw, OH, &n, &t0, &t1);
        float *yn = y + n * O * OH * OW;
        for (idx ox = 0; ox < OW; ) {
            idx left = OW - ox;
            int xv = left > 8 ? 2 : 1;
            idx obmax = xv == 2 ? 6 : 12;
            idx full = left >= 8 * xv ? 8 * xv : left;  /* positions in this tile */
            __m256i tail = conv_mask(full - 8 * (xv - 1));
            for (idx o0 = 0; o0 < O; o0 += obmax) {
                idx ob = O - o0 < obmax ? O - o0 : obmax;
                conv_tile_n(s.buf + oy * Wp + ox, s.offs, t0, t1, wt + o0, O,
                            bias ? bias + o0 : NULL, xv, ob, acc);
                for (idx j = 0; j < ob; j++) {
                    float *yr = yn + ((o0 + j) * OH + oy) * OW + ox;
                    if (xv == 2) _mm256_storeu_ps(yr, acc[2 * j]);
                    _mm256_maskstore_ps(yr + 8 * (xv - 1), tail, acc[j * xv + xv - 1]);
                }
            }
            ox += full;
        }
    }
    conv_ws_close(&s);
    return 1;
}

/* The forward with vectors along the output channels instead (8 or 16 channels, one or two
 * vectors, by up to 6 or 8 positions of a row): better where rows are short and the channels
 * fill whole vectors (LeNet's 6 -> 16 conv: rows of 10). The weight packed (KH * C * KW,
 * Opad) in (ky, c, kx) order as ember_conv2d_f32's, Opad a multiple of 8 with zero columns
 * past O (and the bias, unless NULL, zero-padded to Opad); the tile goes out transposed. */
#define CONV_XB_WIDE 6
#define CONV_XB_NARROW 8

static inline __attribute__((always_inline)) void conv_otile(
        const float *restrict xb, const idx *restrict offs, idx t0, idx t1,
        const float *restrict wb, idx Opad, const float *restrict bias, const int obv,
        const int xb_n, float *restrict tile) {
    __m256 acc[2 * CONV_XB_NARROW];
#pragma GCC unroll 16
    for (int i = 0; i < xb_n * obv; i++)
        acc[i] = bias ? _mm256_loadu_ps(bias + 8 * (i % obv)) : _mm256_setzero_ps();
    for (idx t = t0; t < t1; t++) {
        const float *xr = xb + offs[t];
        __m256 w0 = _mm256_loadu_ps(wb + t * Opad);
        __m256 w1 = obv == 2 ? _mm256_loadu_ps(wb + t * Opad + 8) : w0;
#pragma GCC unroll 16
        for (int i = 0; i < xb_n; i++) {
            __m256 b = _mm256_broadcast_ss(xr + i);
            acc[i * obv] = _mm256_fmadd_ps(b, w0, acc[i * obv]);
            if (obv == 2) acc[i * obv + 1] = _mm256_fmadd_ps(b, w1, acc[i * obv + 1]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < xb_n * obv; i++) _mm256_storeu_ps(tile + 8 * i, acc[i]);
}

#define CONV_OTILE(OBV, XB) conv_otile(xb, offs, t0, t1, wb, Opad, bias, OBV, XB, tile); break

static void conv_otile_n(const float *restrict xb, const idx *restrict offs, idx t0, idx t1,
                         const float *restrict wb, idx Opad, const float *restrict bias,
                         int obv, idx n, float *restrict tile) {
    if (obv == 2) {
        switch (n) {
        case 6: CONV_OTILE(2, 6); case 5: CONV_OTILE(2, 5); case 4: CONV_OTILE(2, 4);
        case 3: CONV_OTILE(2, 3); case 2: CONV_OTILE(2, 2); default: CONV_OTILE(2, 1);
        }
    } else {
        switch (n) {
        case 8: CONV_OTILE(1, 8); case 7: CONV_OTILE(1, 7); case 6: CONV_OTILE(1, 6);
        case 5: CONV_OTILE(1, 5); case 4: CONV_OTILE(1, 4); case 3: CONV_OTILE(1, 3);
        case 2: CONV_OTILE(1, 2); default: CONV_OTILE(1, 1);
        }
    }
}

#if CONV_WIDE
/* conv_otile with 16-channel vectors (obv of them, the last masked to the Opad columns) by up
 * to 12 (obv = 2) or 16 positions */
static inline __attribute__((always_inline)) void conv_otile16(
        const float *restrict xb, const idx *restrict offs, idx t0, idx t1,
        const float *restrict wb, idx Opad, const float *restrict bias, const int obv,
        const int xb_n, __mmask16 m0, __mmask16 m1, float *restrict tile) {
    __m512 acc[24];
    const __m512 bias0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
    const __m512 bias1 = bias && obv == 2 ? _mm512_maskz_loadu_ps(m1, bias + 16) : bias0;
#pragma GCC unroll 24
    for (int i = 0; i < xb_n * obv; i++) acc[i] = i % obv ? bias1 : bias0;
    for (idx t = t0; t < t1; t++) {
        const float *xr = xb + offs[t];
        __m512 w0 = _mm512_maskz_loadu_ps(m0, wb + t * Opad);
        __m512 w1 = obv == 2 ? _mm512_maskz_loadu_ps(m1, wb + t * Opad + 16) : w0;
#pragma GCC unroll 24
        for (int i = 0; i < xb_n; i++) {
            __m512 b = _mm512_set1_ps(xr[i]);
            acc[i * obv] = _mm512_fmadd_ps(b, w0, acc[i * obv]);
            if (obv == 2) acc[i * obv + 1] = _mm512_fmadd_ps(b, w1, acc[i * obv + 1]);
        }
    }
#pragma GCC unroll 24
    for (int i = 0; i < xb_n * obv; i++) _mm512_storeu_ps(tile + 16 * i, acc[i]);
}

#define CONV_OTILE16(OBV, XB) \
    conv_otile16(xb, offs, t0, t1, wb, Opad, bias, OBV, XB, m0, m1, tile); break

static void conv_otile16_n(const float *restrict xb, const idx *restrict offs, idx t0, idx t1,
                           const float *restrict wb, idx Opad, const float *restrict bias,
                           int obv, idx n, __mmask16 m0, __mmask16 m1, float *restrict tile) {
    if (obv == 2) {
        switch (n) {
        case 12: CONV_OTILE16(2, 12); case 11: CONV_OTILE16(2, 11); case 10: CONV_OTILE16(2, 10);
        case 9: CONV_OTILE16(2, 9); case 8: CONV_OTILE16(2, 8); case 7: CONV_OTILE16(2, 7);
        case 6: CONV_OTILE16(2, 6); case 5: CONV_OTILE16(2, 5); case 4: CONV_OTILE16(2, 4);
        case 3: CONV_OTILE16(2, 3); case 2: CONV_OTILE16(2, 2); default: CONV_OTILE16(2, 1);
        }
    } else {
        switch (n) {
        case 16: CONV_OTILE16(1, 16); case 15: CONV_OTILE16(1, 15); case 14: CONV_OTILE16(1, 14);
        case 13: CONV_OTILE16(1, 13); case 12: CONV_OTILE16(1, 12); case 11: CONV_OTILE16(1, 11);
        case 10: CONV_OTILE16(1, 10); case 9: CONV_OTILE16(1, 9); case 8: CONV_OTILE16(1, 8);
        case 7: CONV_OTILE16(1, 7); case 6: CONV_OTILE16(1, 6); case 5: CONV_OTILE16(1, 5);
        case 4: CONV_OTILE16(1, 4); case 3: CONV_OTILE16(1, 3); case 2: CONV_OTILE16(1, 2);
        default: CONV_OTILE16(1, 1);
        }
    }
}

/* ember_conv2d_ovec_f32's row loop with 16-channel vectors */
static void conv2d_ovec16(conv_ws *s, const float *restrict x, const float *restrict wt,
                          const float *restrict bias, float *restrict y, idx r0, idx r1, idx C,
                          idx H, idx W, idx O, idx Opad, idx KH, idx KW, idx ph, idx pw, idx OH,
                          idx OW) {
    idx Wp = s->Wp;
    float tile[32 * 16];
    for (idx r = r0; r < r1; r++) {
        idx n, t0, t1;
        idx oy = conv_ws_row(s, x, r, C, H, W, KH, KW, ph, pw, OH, &n, &t0, &t1);
        float *yn = y + n * O * OH * OW;
        for (idx o0 = 0; o0 < O; o0 += 32) {
            int obv = O - o0 > 16 ? 2 : 1;
            idx cols = Opad - o0;  /* the packed columns from o0: masks stay inside them */
            __mmask16 m0 = conv_mask16(cols), m1 = conv_mask16(cols > 16 ? cols - 16 : 0);
            idx xbmax = obv == 2 ? 12 : 16;
            idx no = O - o0 < 16 * obv ? O - o0 : 16 * obv;
            idx tiles = (OW + xbmax - 1) / xbmax, wide = (OW + tiles - 1) / tiles;
            for (idx ox = 0; ox < OW; ox += wide) {
                idx nb = OW - ox < wide ? OW - ox : wide;
                conv_otile16_n(s->buf + oy * Wp + ox, s->offs, t0, t1, wt + o0, Opad,
                               bias ? bias + o0 : NULL, obv, nb, m0, m1, tile);
                float *yo = yn + (o0 * OH + oy) * OW + ox;
                for (idx j = 0; j < no; j++)
                    for (idx i = 0; i < nb; i++) yo[j * OH * OW + i] = tile[i * 16 * obv + j];
            }
        }
    }
}
#endif

static int serial_conv2d_ovec_f32(const float *restrict x, const float *restrict wt,
                          const float *restrict bias, float *restrict y, idx r0, idx r1, idx C, idx H, idx W, idx O, idx Opad, idx KH, idx KW,
                          idx ph, idx pw, idx OH, idx OW) {
    conv_ws s;
    if (!conv_ws_open(&s, C, KH, KW, OH, OW)) return 0;
#if CONV_WIDE
    if (conv_wide) {
        conv2d_ovec16(&s, x, wt, bias, y, r0, r1, C, H, W, O, Opad, KH, KW, ph, pw, OH, OW);
        conv_ws_close(&s);
        return 1;
    }
#endif
    idx Wp = s.Wp;
    float tile[16 * CONV_XB_NARROW];
    for (idx r = r0; r < r1; r++) {
        idx n, t0, t1;
        idx oy = conv_ws_row(&s, x, r, C, H, W, KH, KW, ph, pw, OH, &n, &t0, &t1);
        float *yn = y + n * O * OH * OW;
        for (idx o0 = 0; o0 < O; o0 += 16) {
            int obv = O - o0 > 8 ? 2 : 1;
            idx xbmax = obv == 2 ? CONV_XB_WIDE : CONV_XB_NARROW;
            idx no = O - o0 < 8 * obv ? O - o0 : 8 * obv;
            idx tiles = (OW + xbmax - 1) / xbmax, wide = (OW + tiles - 1) / tiles;
            for (idx ox = 0; ox < OW; ox += wide) {  /* tiles of even width: 10 = 5 + 5 */
                idx nb = OW - ox < wide ? OW - ox : wide;
                conv_otile_n(s.buf + oy * Wp + ox, s.offs, t0, t1, wt + o0, Opad,
                             bias ? bias + o0 : NULL, obv, nb, tile);
                float *yo = yn + (o0 * OH + oy) * OW + ox;
                for (idx j = 0; j < no; j++)
                    for (idx i = 0; i < nb; i++) yo[j * OH * OW + i] = tile[i * 8 * obv + j];
            }
        }
    }
    conv_ws_close(&s);
    return 1;
}

DEFINE_WGRAD_TILE(wgrad_tile, V8, 8, 42, 6)

/* channels per weight-gradient tile for a kernel kw wide: ob * kw <= 12 accumulators */
static inline int wgrad_ob(idx kw) { return kw >= 6 ? 2 : kw == 5 ? 2 : kw == 4 ? 3 : kw == 3 ? 4 : 6; }

#define WGRAD_TILE(OB, KW) wgrad_tile(xr, Wp, g0, L, OH, OW, tail, OB, KW, acc)
#define WGRAD_OB(KW) do { if (ob >= 6) WGRAD_TILE(6, KW); else if (ob == 5) WGRAD_TILE(5, KW); \
    else if (ob == 4) WGRAD_TILE(4, KW); else if (ob == 3) WGRAD_TILE(3, KW); \
    else if (ob == 2) WGRAD_TILE(2, KW); else WGRAD_TILE(1, KW); } while (0)

/* the tile of ob channels (at most wgrad_ob(kw)) by kw taps */
static void wgrad_tile_n(const float *restrict xr, idx Wp, const float *restrict g0, idx L,
                         idx OH, idx OW, __m256i tail, idx ob, idx kw,
                         __m256 *restrict acc) {
    switch (kw) {
    case 1: WGRAD_OB(1); break;
    case 2: WGRAD_OB(2); break;
    case 3: WGRAD_OB(3); break;
    case 4: WGRAD_OB(4); break;
    case 5: WGRAD_OB(5); break;
    case 6: WGRAD_OB(6); break;
    default: WGRAD_OB(7); break;
    }
}

static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* gw (O, C, KH, KW) += the weight gradient of ember_conv2d_f32 over the samples of x
 * (N, C, H, W) and gy (N, O, OH, OW), the samples in order; KW at most 7. */
static int serial_conv2d_wgrad_f32(const float *restrict x, const float *restrict gy,
                           float *restrict gw, idx N, idx C, idx H, idx W, idx O, idx KH,
                           idx KW, idx ph, idx pw, idx OH, idx OW) {
    if (KW < 1 || KW > 7) return 0;
    idx Hp = OH + KH - 1, Wp = OW + KW - 1, cs = Hp * Wp, L = OH * OW;
    float *buf = malloc((size_t)(C * cs + CONV_SLACK) * sizeof(float));
    if (!buf) return 0;
#if CONV_WIDE
    if (conv_wide) {
        conv2d_wgrad16(x, gy, gw, buf, N, C, H, W, O, KH, KW, ph, pw, OH, OW);
        free(buf);
        return 1;
    }
#endif
    __m256i tail = conv_mask(OW % 8 ? OW % 8 : 8);
    idx obmax = wgrad_ob(KW);
    __m256 acc[42];
    for (idx n = 0; n < N; n++) {
        conv_pad_sample(x + n * C * H * W, buf, C, H, W, Hp, Wp, ph, pw);
        const float *gn = gy + n * O * L;
        for (idx o0 = 0; o0 < O; o0 += obmax) {
            idx ob = O - o0 < obmax ? O - o0 : obmax;
            const float *g0 = gn + o0 * L;
            for (idx c = 0; c < C; c++) {
                for (idx ky = 0; ky < KH; ky++) {
                    const float *xr = buf + c * cs + ky * Wp;
                    wgrad_tile_n(xr, Wp, g0, L, OH, OW, tail, ob, KW, acc);
                    for (idx j = 0; j < ob; j++) {
                        float *dst = gw + (((o0 + j) * C + c) * KH + ky) * KW;
                        for (idx k = 0; k < KW; k++) dst[k] += hsum256(acc[j * KW + k]);
                    }
                }
            }
        }
    }
    free(buf);
    return 1;
}
/* The weight gradient with vectors along the output channels (the better fit where rows are
 * short and the channels fill whole vectors): gw (C * KH * KW, Opad) += over the samples of
 * x (N, C, H, W) and gy (N, O, OH, OW), each sample's gy first copied channels last (zero
 * past O); a tile of kw taps by 8 or 16 channels stays in registers over its positions. */
static inline __attribute__((always_inline)) void wgrad_otile(
        const float *restrict xr0, idx Wp, const float *restrict g0, idx Opad, idx OH, idx OW,
        const int obv, const int kw, float *restrict acc_io) {
    __m256 acc[14];
#pragma GCC unroll 16
    for (int i = 0; i < kw * obv; i++) acc[i] = _mm256_loadu_ps(acc_io + 8 * i);
    for (idx oy = 0; oy < OH; oy++) {
        const float *xr = xr0 + oy * Wp;
        const float *gr = g0 + oy * OW * Opad;
        for (idx ox = 0; ox < OW; ox++) {
            __m256 v0 = _mm256_loadu_ps(gr + ox * Opad);
            __m256 v1 = obv == 2 ? _mm256_loadu_ps(gr + ox * Opad + 8) : v0;
#pragma GCC unroll 16
            for (int k = 0; k < kw; k++) {
                __m256 b = _mm256_broadcast_ss(xr + ox + k);
                acc[k * obv] = _mm256_fmadd_ps(b, v0, acc[k * obv]);
                if (obv == 2) acc[k * obv + 1] = _mm256_fmadd_ps(b, v1, acc[k * obv + 1]);
            }
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kw * obv; i++) _mm256_storeu_ps(acc_io + 8 * i, acc[i]);
}

#define WGRAD_OTILE(OBV, KW) wgrad_otile(xr, Wp, g0, Opad, OH, OW, OBV, KW, acc); break

#if CONV_WIDE
/* wgrad_otile with 16-channel vectors, the last masked to the Opad columns */
static inline __attribute__((always_inline)) void wgrad_otile16(
        const float *restrict xr0, idx Wp, const float *restrict g0, idx Opad, idx OH, idx OW,
        const int obv, const int kw, __mmask16 m0, __mmask16 m1, float *restrict acc_io) {
    __m512 acc[14];
#pragma GCC unroll 16
    for (int i = 0; i < kw * obv; i++) acc[i] = _mm512_loadu_ps(acc_io + 16 * i);
    for (idx oy = 0; oy < OH; oy++) {
        const float *xr = xr0 + oy * Wp;
        const float *gr = g0 + oy * OW * Opad;
        for (idx ox = 0; ox < OW; ox++) {
            __m512 v0 = _mm512_maskz_loadu_ps(m0, gr + ox * Opad);
            __m512 v1 = obv == 2 ? _mm512_maskz_loadu_ps(m1, gr + ox * Opad + 16) : v0;
#pragma GCC unroll 16
            for (int k = 0; k < kw; k++) {
                __m512 b = _mm512_set1_ps(xr[ox + k]);
                acc[k * obv] = _mm512_fmadd_ps(b, v0, acc[k * obv]);
                if (obv == 2) acc[k * obv + 1] = _mm512_fmadd_ps(b, v1, acc[k * obv + 1]);
            }
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < kw * obv; i++) _mm512_storeu_ps(acc_io + 16 * i, acc[i]);
}

#define WGRAD_OTILE16(OBV, KW) wgrad_otile16(xr, Wp, g0, Opad, OH, OW, OBV, KW, m0, m1, acc); \
    break

#endif

#define WGRAD_OTILE_KW(TILE, OBV) switch (KW) { \
    case 7: TILE(OBV, 7); case 6: TILE(OBV, 6); case 5: TILE(OBV, 5); case 4: TILE(OBV, 4); \
    case 3: TILE(OBV, 3); case 2: TILE(OBV, 2); default: TILE(OBV, 1); }

static int serial_conv2d_wgrad_ovec_f32(const float *restrict x, const float *restrict gy,
                                float *restrict gw, idx N, idx C, idx H, idx W, idx O, idx Opad,
                                idx KH, idx KW, idx ph, idx pw, idx OH, idx OW) {
    if (KW < 1 || KW > 7) return 0;
    idx Hp = OH + KH - 1, Wp = OW + KW - 1, cs = Hp * Wp, L = OH * OW;
    float *buf = malloc((size_t)(C * cs + CONV_SLACK + L * Opad) * sizeof(float));
    if (!buf) return 0;
    float *gt = buf + C * cs + CONV_SLACK;
    const idx lanes = conv_wide ? 16 : 8;  /* the tiles' vector width */
    float acc[14 * 16] = {0};
    for (idx n = 0; n < N; n++) {
        conv_pad_sample(x + n * C * H * W, buf, C, H, W, Hp, Wp, ph, pw);
        const float *gn = gy + n * O * L;
        for (idx p = 0; p < L; p++) {
            float *row = gt + p * Opad;
            for (idx o = 0; o < O; o++) row[o] = gn[o * L + p];
            for (idx o = O; o < Opad; o++) row[o] = 0.0f;
        }
        for (idx o0 = 0; o0 < O; o0 += 2 * lanes) {
            int obv = O - o0 > lanes ? 2 : 1;
            idx cols = Opad - o0 < lanes * obv ? Opad - o0 : lanes * obv;  /* in the tile */
            const float *g0 = gt + o0;
            for (idx c = 0; c < C; c++) {
                for (idx ky = 0; ky < KH; ky++) {
                    const float *xr = buf + c * cs + ky * Wp;
                    float *dst = gw + (c * KH + ky) * KW * Opad + o0;
                    for (idx k = 0; k < KW; k++)
                        memcpy(acc + k * lanes * obv, dst + k * Opad, (size_t)cols * 4);
#if CONV_WIDE
                    if (lanes == 16) {
                        __mmask16 m0 = conv_mask16(cols);
                        __mmask16 m1 = conv_mask16(cols > 16 ? cols - 16 : 0);
                        if (obv == 2) WGRAD_OTILE_KW(WGRAD_OTILE16, 2)
                        else WGRAD_OTILE_KW(WGRAD_OTILE16, 1)
                    } else
#endif
                    if (obv == 2) WGRAD_OTILE_KW(WGRAD_OTILE, 2)
                    else WGRAD_OTILE_KW(WGRAD_OTILE, 1)
                    for (idx k = 0; k < KW; k++)
                        memcpy(dst + k * Opad, acc + k * lanes * obv, (size_t)cols * 4);
                }
            }
        }
    }
    free(buf);
    return 1;
}
#else
int ember_conv_wide(int set) {
    (void)set;
    return 0;
}
#endif

/* The entry points of the direct convolutions, their work split over the pool (pool_for).
 * The forward (rows kind or ovec kind): output rows [0, units * unit) of y, handed out in
 * units (a sample's OH rows, or single rows for a small batch), at least `grain` units to a
 * thread. The weight gradient: nb blocks of samples (block i: samples N i / nb to
 * N (i + 1) / nb), block i's gradient into gw + i * block (zeroed by the caller, which sums
 * the blocks in order: the bits do not depend on the threads). 0 where the kernels were not
 * built for this CPU (no AVX2/FMA) or a workspace could not be allocated. */
typedef struct {
    const float *x, *wt, *bias;
    float *y;
    idx unit, C, H, W, O, Opad, KH, KW, ph, pw, OH, OW;
    int ovec;
    atomic_int failed;
} conv_job;

#if defined(__AVX2__) && defined(__FMA__)
static void conv_job_run(void *p, idx chunk, idx b, idx e) {
    (void)chunk;
    conv_job *j = p;
    idx r0 = b * j->unit, r1 = e * j->unit;
    int ok = j->ovec ? serial_conv2d_ovec_f32(j->x, j->wt, j->bias, j->y, r0, r1, j->C, j->H,
                                              j->W, j->O, j->Opad, j->KH, j->KW, j->ph, j->pw,
                                              j->OH, j->OW)
                     : serial_conv2d_f32(j->x, j->wt, j->bias, j->y, r0, r1, j->C, j->H, j->W,
                                         j->O, j->KH, j->KW, j->ph, j->pw, j->OH, j->OW);
    if (!ok) atomic_store(&j->failed, 1);
}

#endif

static int conv_forward(int ovec, const float *x, const float *wt, const float *bias, float *y,
                        idx units, idx unit, idx grain, idx threads, idx C, idx H, idx W, idx O,
                        idx Opad, idx KH, idx KW, idx ph, idx pw, idx OH, idx OW) {
#if defined(__AVX2__) && defined(__FMA__)
    conv_job j = {x, wt, bias, y, unit, C, H, W, O, Opad, KH, KW, ph, pw, OH, OW, ovec, 0};
    pool_for(conv_job_run, &j, units, grain, threads);
    return !atomic_load(&j.failed);
#else
    return 0;  /* not built for this CPU: the caller keeps NumPy */
#endif
}

int ember_conv2d_f32(const float *x, const float *wt, const float *bias, float *y, idx units,
                     idx unit, idx grain, idx threads, idx C, idx H, idx W, idx O, idx KH,
                     idx KW, idx ph, idx pw, idx OH, idx OW) {
    return conv_forward(0, x, wt, bias, y, units, unit, grain, threads, C, H, W, O, O, KH, KW,
                        ph, pw, OH, OW);
}

int ember_conv2d_ovec_f32(const float *x, const float *wt, const float *bias, float *y,
                          idx units, idx unit, idx grain, idx threads, idx C, idx H, idx W,
                          idx O, idx Opad, idx KH, idx KW, idx ph, idx pw, idx OH, idx OW) {
    return conv_forward(1, x, wt, bias, y, units, unit, grain, threads, C, H, W, O, Opad, KH,
                        KW, ph, pw, OH, OW);
}

typedef struct {
    const float *x, *gy;
    float *gw;
    idx N, nb, block, C, H, W, O, Opad, KH, KW, ph, pw, OH, OW;
    int ovec;
    atomic_int failed;
} wgrad_job;

#if defined(__AVX2__) && defined(__FMA__)
static void wgrad_blocks(void *p, idx chunk, idx b, idx e) {
    (void)chunk;
    wgrad_job *j = p;
    for (idx i = b; i < e; i++) {
        idx n0 = j->N * i / j->nb, n1 = j->N * (i + 1) / j->nb;
        const float *x = j->x + n0 * j->C * j->H * j->W, *gy = j->gy + n0 * j->O * j->OH * j->OW;
        float *gw = j->gw + i * j->block;
        int ok = j->ovec ? serial_conv2d_wgrad_ovec_f32(x, gy, gw, n1 - n0, j->C, j->H, j->W,
                                                        j->O, j->Opad, j->KH, j->KW, j->ph,
                                                        j->pw, j->OH, j->OW)
                         : serial_conv2d_wgrad_f32(x, gy, gw, n1 - n0, j->C, j->H, j->W, j->O,
                                                   j->KH, j->KW, j->ph, j->pw, j->OH, j->OW);
        if (!ok) atomic_store(&j->failed, 1);
    }
}
#endif

static int conv_wgrad(int ovec, const float *x, const float *gy, float *gw, idx N, idx nb,
                      idx block, idx threads, idx C, idx H, idx W, idx O, idx Opad, idx KH,
                      idx KW, idx ph, idx pw, idx OH, idx OW) {
#if defined(__AVX2__) && defined(__FMA__)
    if (KW < 1 || KW > 7) return 0;
    wgrad_job j = {x, gy, gw, N, nb, block, C, H, W, O, Opad, KH, KW, ph, pw, OH, OW, ovec, 0};
    pool_for(wgrad_blocks, &j, nb, 1, threads);
    return !atomic_load(&j.failed);
#else
    return 0;  /* not built for this CPU: the caller keeps NumPy */
#endif
}

int ember_conv2d_wgrad_f32(const float *x, const float *gy, float *gw, idx N, idx nb,
                           idx threads, idx C, idx H, idx W, idx O, idx KH, idx KW, idx ph,
                           idx pw, idx OH, idx OW) {
    return conv_wgrad(0, x, gy, gw, N, nb, O * C * KH * KW, threads, C, H, W, O, O, KH, KW, ph,
                      pw, OH, OW);
}

int ember_conv2d_wgrad_ovec_f32(const float *x, const float *gy, float *gw, idx N, idx nb,
                                idx threads, idx C, idx H, idx W, idx O, idx Opad, idx KH,
                                idx KW, idx ph, idx pw, idx OH, idx OW) {
    return conv_wgrad(1, x, gy, gw, N, nb, C * KH * KW * Opad, threads, C, H, W, O, Opad, KH,
                      KW, ph, pw, OH, OW);
}

/* Batch norm's training forward and backward over x (A, C, B) float32, statistics per channel
 * c over a < A and b < B (batch norm: A the batch, B the spatial positions; instance norm:
 * A = 1, C the batch times the channels), for the channels c0 <= c < c1 (the threads split
 * the channels). NumPy's formulation makes five full passes forward and six backward, one
 * ufunc or einsum each; these make three and two, a channel's values in L2 between them.
 * The sums run in double and round once to float32; everything else is the NumPy
 * formulation's float32 arithmetic, in its order, without FMA contraction
 * (ember.ops.normalization._normalize and _disjoint_backward_arrays):
 *   forward:  mean, var = E[(x - mean)^2] (biased), invstd = 1 / sqrt(var + eps),
 *             y = (x - mean) * (invstd * w) + bias (w, bias NULL: 1, 0)
 *   backward: sg = sum g, ghat = invstd * (sum g x - mean * sg), a = invstd * w,
 *             k = -a * invstd * ghat / n, m = -a * sg / n - k * mean, gx = g * a + (x * k + m)
 */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
void ember_batch_norm_f32(const float *restrict x, const float *restrict w,
                          const float *restrict bias, float *restrict y, float *restrict mean,
                          float *restrict var, idx A, idx C, idx B, float eps, idx c0, idx c1) {
    double n = (double)(A * B);
    for (idx c = c0; c < c1; c++) {
        double s = 0.0;
        for (idx a = 0; a < A; a++) {
            const float *p = x + (a * C + c) * B;
#pragma omp simd reduction(+:s)
            for (idx b = 0; b < B; b++) s += p[b];
        }
        float m = (float)(s / n);
        double q = 0.0;
        for (idx a = 0; a < A; a++) {
            const float *p = x + (a * C + c) * B;
#pragma omp simd reduction(+:q)
            for (idx b = 0; b < B; b++) {
                float d = p[b] - m;
                q += (double)(d * d);
            }
        }
        float v = (float)(q / n);
        float invstd = 1.0f / sqrtf(v + eps);
        float scale = w ? invstd * w[c] : invstd;
        float shift = bias ? bias[c] : 0.0f;
        mean[c] = m;
        var[c] = v;
        for (idx a = 0; a < A; a++) {
            const float *p = x + (a * C + c) * B;
            float *o = y + (a * C + c) * B;
            if (bias) {
#pragma omp simd
                for (idx b = 0; b < B; b++) o[b] = (p[b] - m) * scale + shift;
            } else {
#pragma omp simd
                for (idx b = 0; b < B; b++) o[b] = (p[b] - m) * scale;
            }
        }
    }
}

/* sg and ghat per channel into sg_out and ghat_out; gx (NULL: not wanted) the input's
 * gradient. mean and invstd are the forward's (float32, per channel). */
void ember_batch_norm_backward_f32(const float *restrict g, const float *restrict x,
                                   const float *restrict mean, const float *restrict invstd,
                                   const float *restrict w, float *restrict gx,
                                   float *restrict sg_out, float *restrict ghat_out, idx A,
                                   idx C, idx B, idx c0, idx c1) {
    float n = (float)(A * B);
    for (idx c = c0; c < c1; c++) {
        double s = 0.0, t = 0.0;
        for (idx a = 0; a < A; a++) {
            const float *gp = g + (a * C + c) * B, *xp = x + (a * C + c) * B;
#pragma omp simd reduction(+:s, t)
            for (idx b = 0; b < B; b++) {
                s += gp[b];
                t += (double)(gp[b] * xp[b]);
            }
        }
        float sg = (float)s, m = mean[c], is = invstd[c];
        float ghat = is * ((float)t - m * sg);
        sg_out[c] = sg;
        ghat_out[c] = ghat;
        if (!gx) continue;
        float av = w ? w[c] * is : is;
        float k = -av * is * ghat / n;
        float mm = -av * sg / n - k * m;
        for (idx a = 0; a < A; a++) {
            const float *gp = g + (a * C + c) * B, *xp = x + (a * C + c) * B;
            float *o = gx + (a * C + c) * B;
#pragma omp simd
            for (idx b = 0; b < B; b++) o[b] = gp[b] * av + (xp[b] * k + mm);
        }
    }
}
#pragma GCC pop_options

/* tanh's backward from its output y: gx = g * (1 - y * y), each operation rounded as NumPy's
 * three passes round it (no contraction into a fused multiply-add), in one pass. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#define EMBER_TANH_BACKWARD(name, T)                                                          \
    void ember_##name(const T *restrict g, const T *restrict y, T *restrict gx, idx n) {      \
        for (idx i = 0; i < n; i++) gx[i] = g[i] * ((T)1 - y[i] * y[i]);                     \
    }
EMBER_TANH_BACKWARD(tanh_backward_f32, float)
EMBER_TANH_BACKWARD(tanh_backward_f64, double)
#undef EMBER_TANH_BACKWARD
#pragma GCC pop_options

/* Column sums of a (rows, cols) row-major block (rows ld elements apart): out[j] = 0 + g[0][j]
 * + g[1][j] + ... in row order, the order of NumPy's add.reduce over axis 0 of a C-contiguous
 * matrix, so the same bits (a linear layer's bias gradient: 512 x 64 float32 12 -> 2 us). */
#define COLUMN_BLOCK 64
#define EMBER_COLUMN_SUMS(name, T)                                                            \
    WIDE void ember_##name(const T *restrict g, T *restrict out, idx cols, idx rows,          \
                           idx ld) {                                                          \
        idx j0 = 0;                                                                           \
        for (; j0 + COLUMN_BLOCK <= cols; j0 += COLUMN_BLOCK) { /* sums kept in registers */  \
            T s[COLUMN_BLOCK];                                                                \
            for (int j = 0; j < COLUMN_BLOCK; j++) s[j] = (T)0;                               \
            for (idx i = 0; i < rows; i++)                                                    \
                for (int j = 0; j < COLUMN_BLOCK; j++) s[j] += g[i * ld + j0 + j];            \
            for (int j = 0; j < COLUMN_BLOCK; j++) out[j0 + j] = s[j];                        \
        }                                                                                     \
        for (idx j = j0; j < cols; j++) out[j] = (T)0;                                        \
        for (idx i = 0; i < rows && j0 < cols; i++)                                           \
            for (idx j = j0; j < cols; j++) out[j] += g[i * ld + j];                          \
    }
EMBER_COLUMN_SUMS(column_sums_f32, float)
EMBER_COLUMN_SUMS(column_sums_f64, double)
#undef EMBER_COLUMN_SUMS
#undef COLUMN_BLOCK

/* An embedding's weight gradient, summed in float64 as ember.ops.nn_misc's bincount sums it:
 * acc[rows[i]] += g[i] row by row in index order (acc zeroed by the caller, rounded once by it);
 * per element the same float64 additions in the same order, so the same bits. */
void ember_embedding_grad_f32(const int64_t *restrict rows, const float *restrict g,
                              double *restrict acc, idx n, idx dim) {
    for (idx i = 0; i < n; i++) {
        double *restrict a = acc + rows[i] * dim;
        const float *restrict r = g + i * dim;
        for (idx j = 0; j < dim; j++) a[j] += (double)r[j];
    }
}

/* relu's and threshold's backward (ember.ops.pointwise.threshold_backward): gx = x <= t ? 0
 * : g over n float32 elements, one pass (NumPy's formulation is a compare, a negation and a
 * product: three, and a masked infinite or NaN gradient came out NaN there, 0 in PyTorch). */
void ember_threshold_backward_f32(const float *restrict g, const float *restrict x,
                                  float *restrict gx, idx n, float t) {
#pragma omp simd
    for (idx i = 0; i < n; i++) gx[i] = x[i] <= t ? 0.0f : g[i];
}

/* An LSTM cell's step in float64, each operation rounded as the NumPy formulation's passes
 * (ember.nn.modules.rnn._lstm_cell_fwd/_bwd) round it: no contraction into fused
 * multiply-adds, tanh through NumPy's own float64 loop (tanh_fn, tanh_data: the ufunc's inner
 * loop, as ember_ufunc_split takes it), so the same bits in one call where the NumPy
 * formulation makes ten passes (sixteen backward). Rows of a: (i, f, g, o) pre-activations,
 * 4H wide, activated in place: sigmoid(z) = 0.5 * tanh(0.5 * z) + 0.5 on i, f, o, tanh on g
 * (as z * 1.0 -> tanh -> * 1.0 + 0.0). c' = i * g + f * c_prev (c_prev NULL: i * g),
 * tc = tanh(c'), h' = o * tc. */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
static inline void tanh_loop(void *fn, void *data, double *x, double *y, idx n) {
    char *args[2] = {(char *)x, (char *)y};
    idx steps[2] = {sizeof(double), sizeof(double)};
    ((ufunc_loop)fn)(args, &n, steps, data);
}

void ember_lstm_cell_f64(double *restrict a, const double *restrict c_prev,
                         double *restrict c, double *restrict tc, double *restrict h, idx bs,
                         idx H, void *tanh_fn, void *tanh_data) {
    const idx G = 4 * H;
    for (idx r = 0; r < bs; r++) {
        double *ar = a + r * G;
        for (idx k = 0; k < G; k++) ar[k] *= (k >= 2 * H && k < 3 * H) ? 1.0 : 0.5;
    }
    tanh_loop(tanh_fn, tanh_data, a, a, bs * G);
    for (idx r = 0; r < bs; r++) {
        double *ar = a + r * G;
        for (idx k = 0; k < G; k++) {
            const int g = k >= 2 * H && k < 3 * H;
            ar[k] = ar[k] * (g ? 1.0 : 0.5) + (g ? 0.0 : 0.5);
        }
        double *cr = c + r * H;
        if (c_prev != NULL) {
            const double *cp = c_prev + r * H;
            for (idx k = 0; k < H; k++) cr[k] = ar[k] * ar[2 * H + k] + ar[H + k] * cp[k];
        } else {
            for (idx k = 0; k < H; k++) cr[k] = ar[k] * ar[2 * H + k];
        }
    }
    tanh_loop(tanh_fn, tanh_data, c, tc, bs * H);
    for (idx r = 0; r < bs; r++) {
        const double *ar = a + r * G, *tr = tc + r * H;
        double *hr = h + r * H;
        for (idx k = 0; k < H; k++) hr[k] = ar[3 * H + k] * tr[k];
    }
}

/* Its backward from the activated gates a, tc = tanh(c') and c_prev (NULL: none), the
 * gradients dh of h' and dc of c' (either NULL: zero): the pre-activation gradients into da
 * (bs, 4H) and, where c_prev is given, the gradient of c_prev into dc_prev. As the NumPy
 * formulation: dcs = dh * o * (1 - tc * tc) + dc; da = (dcs * g, dcs * c_prev, dcs * i,
 * dh * tc) * ((1 - i) i, (1 - f) f, 1 - g * g, (1 - o) o); dc_prev = dcs * f. */
void ember_lstm_cell_backward_f64(const double *restrict dh, const double *restrict dc,
                                  const double *restrict a, const double *restrict tc,
                                  const double *restrict c_prev, double *restrict da,
                                  double *restrict dc_prev, idx bs, idx H) {
    for (idx r = 0; r < bs; r++) {
        const double *ar = a + r * 4 * H, *tr = tc + r * H;
        double *dr = da + r * 4 * H;
        for (idx k = 0; k < H; k++) {
            const double i = ar[k], f = ar[H + k], g = ar[2 * H + k], o = ar[3 * H + k];
            const double t = tr[k];
            double dcs, d_o;
            if (dh != NULL) {
                const double gh = dh[r * H + k];
                d_o = gh * t;
                dcs = gh * o;
                dcs = dcs * (1.0 - t * t);
                if (dc != NULL) dcs = dcs + dc[r * H + k];
            } else {
                d_o = 0.0;
                dcs = dc != NULL ? dc[r * H + k] : 0.0;
            }
            const double d_f = c_prev != NULL ? dcs * c_prev[r * H + k] : 0.0;
            dr[k] = (dcs * g) * ((1.0 - i) * i);
            dr[H + k] = d_f * ((1.0 - f) * f);
            dr[2 * H + k] = (dcs * i) * (1.0 - g * g);
            dr[3 * H + k] = d_o * ((1.0 - o) * o);
            if (c_prev != NULL) dc_prev[r * H + k] = dcs * f;
        }
    }
}
#pragma GCC pop_options
