/* gpc's own worker threads, and the plan of each large call (src_c/_blas.pxd).
 *
 * Why gpc has threads of its own.  OpenBLAS's threaded routines split their work by
 * their thread count, so their results change in the last bits with it (dpotrf,
 * dtrtri and dgemm at n = 500 do), and their workers spin-wait on each other, which
 * collapses on a machine whose cores are busy with other work.  gpc's tiled
 * routines instead call BLAS on tiles small enough for OpenBLAS to run them in the
 * calling thread; these threads only share out the tiles, each tile computed by
 * the same calls whichever thread runs it, so the results are the same bits for
 * any number of threads, and how many threads a computation gets is gpc's choice
 * (gpc_plan below: LAPACK itself when its threads have free cores, the tiles
 * otherwise).  Not OpenMP: GNU libgomp hangs in a process forked after a parallel
 * region, and Python programs fork.
 *
 * Every extension module that includes this header has a pool of its own.  After
 * a job its workers watch for the next one for GPC_POOL_WATCH seconds, then sleep
 * on a condition variable, so idle pools cost nothing.  A job that finds its
 * module's pool busy (another thread of the process is using it) runs in its
 * calling thread alone.  The code uses POSIX threads and GCC's atomic builtins;
 * without POSIX threads (Windows) everything runs in the calling thread, and the
 * code needs nothing beyond C99 but a thread-local storage class.
 */
#ifndef GPC_POOL_H
#define GPC_POOL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__linux__) || defined(__APPLE__)
#define GPC_HAVE_POOL 1
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#endif
#if defined(__linux__)
#include <dirent.h>
#include <sched.h>
#endif

/* Each thread's own copy of a variable: GCC's and Clang's __thread, MSVC's
 * __declspec(thread). */
#if defined(_MSC_VER) && !defined(__clang__)
#define GPC_THREAD_LOCAL __declspec(thread)
#else
#define GPC_THREAD_LOCAL __thread
#endif

/* A job: fn(ctx, t) for t = 0 .. ntasks - 1, in any order, on any thread. */
typedef void (*gpc_task_fn)(void *ctx, int task);

/* At most this many threads per job (the caller and 63 workers). */
#define GPC_POOL_MAX 64

/* ------------------------------------------------------------------ the pool */

#ifdef GPC_HAVE_POOL

static struct {
    pthread_mutex_t lock;     /* guards everything below but `next` */
    pthread_cond_t wake;      /* a new job (gen changed) */
    pthread_cond_t done;      /* a worker left the job */
    pthread_mutex_t busy;     /* held by the caller of the running job */
    int created;              /* workers alive */
    int atfork;               /* the fork handler is registered */
    unsigned long gen;        /* job counter */
    gpc_task_fn fn;
    void *ctx;
    int ntasks;
    int seats;                /* workers the job still takes */
    int running;              /* workers inside the job */
    int next;                 /* next task to take (atomic) */
} gpc_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
              PTHREAD_COND_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
              0, 0, 0, NULL, NULL, 0, 0, 0, 0};

static void gpc_pool_drain(gpc_task_fn fn, void *ctx, int ntasks) {
    int t;
    while ((t = __atomic_fetch_add(&gpc_pool.next, 1, __ATOMIC_RELAXED)) < ntasks)
        fn(ctx, t);
}

static double gpc_now(void);

/* After a job a worker watches for the next one for this long before it sleeps:
 * the steps of one factorisation follow each other within microseconds, and a
 * wake-up through the condition variable costs tens of them.  (Jobs run on more
 * than one thread only when other processes leave cores free, so the watching
 * takes no core that other work needs.) */
#define GPC_POOL_WATCH 2e-4

static void gpc_pool_pause(void) {
    int i;
    for (i = 0; i < 64; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static void gpc_pool_watch(unsigned long seen) {
    double until = gpc_now() + GPC_POOL_WATCH;
    while (__atomic_load_n(&gpc_pool.gen, __ATOMIC_ACQUIRE) == seen
           && gpc_now() < until)
        gpc_pool_pause();
}

static void *gpc_pool_worker(void *arg) {
    unsigned long seen = (unsigned long) (size_t) arg;
    gpc_task_fn fn;
    void *ctx;
    int ntasks;
    pthread_mutex_lock(&gpc_pool.lock);
    for (;;) {
        if (gpc_pool.gen == seen) {
            pthread_mutex_unlock(&gpc_pool.lock);
            gpc_pool_watch(seen);
            pthread_mutex_lock(&gpc_pool.lock);
        }
        while (gpc_pool.gen == seen)
            pthread_cond_wait(&gpc_pool.wake, &gpc_pool.lock);
        seen = gpc_pool.gen;
        if (gpc_pool.seats <= 0)           /* full, or already over */
            continue;
        gpc_pool.seats--;
        gpc_pool.running++;
        fn = gpc_pool.fn;
        ctx = gpc_pool.ctx;
        ntasks = gpc_pool.ntasks;
        pthread_mutex_unlock(&gpc_pool.lock);
        gpc_pool_drain(fn, ctx, ntasks);
        pthread_mutex_lock(&gpc_pool.lock);
        if (__atomic_sub_fetch(&gpc_pool.running, 1, __ATOMIC_RELEASE) == 0)
            pthread_cond_signal(&gpc_pool.done);
    }
    return NULL;
}

/* In a forked child the workers are gone and the locks may be held by threads
 * that are not there: start again from nothing. */
static void gpc_pool_after_fork(void) {
    pthread_mutex_init(&gpc_pool.lock, NULL);
    pthread_mutex_init(&gpc_pool.busy, NULL);
    pthread_cond_init(&gpc_pool.wake, NULL);
    pthread_cond_init(&gpc_pool.done, NULL);
    gpc_pool.created = 0;
    gpc_pool.seats = 0;
    gpc_pool.running = 0;
}

/* Start workers until `want` exist; the number that do.  Called with the lock. */
static int gpc_pool_grow(int want) {
    pthread_t th;
    pthread_attr_t attr;
    sigset_t all, old;
    if (gpc_pool.created >= want)
        return gpc_pool.created;
    if (!gpc_pool.atfork) {
        if (pthread_atfork(NULL, NULL, gpc_pool_after_fork) != 0)
            return gpc_pool.created;
        gpc_pool.atfork = 1;
    }
    if (pthread_attr_init(&attr) != 0)
        return gpc_pool.created;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);                      /* signals go to the caller's threads */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    while (gpc_pool.created < want) {
        if (pthread_create(&th, &attr, gpc_pool_worker,
                           (void *) (size_t) gpc_pool.gen) != 0)
            break;
        gpc_pool.created++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return gpc_pool.created;
}

/* fn(ctx, t) for every task t, on at most `nthreads` threads including the caller;
 * returns when every task is done. */
static void gpc_pool_run(int nthreads, gpc_task_fn fn, void *ctx, int ntasks) {
    int t, workers;
    double until;
    if (nthreads > ntasks)
        nthreads = ntasks;
    if (nthreads > GPC_POOL_MAX)
        nthreads = GPC_POOL_MAX;
    if (nthreads <= 1 || pthread_mutex_trylock(&gpc_pool.busy) != 0) {
        for (t = 0; t < ntasks; t++)
            fn(ctx, t);
        return;
    }
    pthread_mutex_lock(&gpc_pool.lock);
    workers = gpc_pool_grow(nthreads - 1);
    if (workers > nthreads - 1)
        workers = nthreads - 1;
    gpc_pool.fn = fn;
    gpc_pool.ctx = ctx;
    gpc_pool.ntasks = ntasks;
    __atomic_store_n(&gpc_pool.next, 0, __ATOMIC_RELAXED);
    gpc_pool.seats = workers;
    gpc_pool.running = 0;
    __atomic_store_n(&gpc_pool.gen, gpc_pool.gen + 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&gpc_pool.wake);
    pthread_mutex_unlock(&gpc_pool.lock);
    gpc_pool_drain(fn, ctx, ntasks);
    pthread_mutex_lock(&gpc_pool.lock);
    gpc_pool.seats = 0;                    /* late workers stay out */
    if (gpc_pool.running > 0) {            /* watch, then sleep, as the workers do */
        pthread_mutex_unlock(&gpc_pool.lock);
        until = gpc_now() + GPC_POOL_WATCH;
        while (__atomic_load_n(&gpc_pool.running, __ATOMIC_ACQUIRE) > 0
               && gpc_now() < until)
            gpc_pool_pause();
        pthread_mutex_lock(&gpc_pool.lock);
    }
    while (gpc_pool.running > 0)
        pthread_cond_wait(&gpc_pool.done, &gpc_pool.lock);
    pthread_mutex_unlock(&gpc_pool.lock);
    pthread_mutex_unlock(&gpc_pool.busy);
}

#else

static void gpc_pool_run(int nthreads, gpc_task_fn fn, void *ctx, int ntasks) {
    int t;
    (void) nthreads;
    for (t = 0; t < ntasks; t++)
        fn(ctx, t);
}

#endif

/* ------------------------------------------------------- how many threads */

/* Below this many multiply-adds a computation runs in the calling thread: waking
 * a worker costs tens of microseconds. */
#define GPC_THREAD_MIN_WORK 1e6

/* Set from Python before each computation (gpc._threads): the most threads the
 * calling thread's computations may use (gpc.thread_limit; 0 = no limit; -k =
 * the tiled route on k threads whatever the load, the benchmarks' and tests'
 * hook gpc._threads._tiles) and the thread count of the process's BLAS (0 =
 * unknown). */
static GPC_THREAD_LOCAL int gpc_thread_cap = 0;
static GPC_THREAD_LOCAL int gpc_blas_threads = 0;

static void gpc_set_threads(int cap, int blas) {
    gpc_thread_cap = cap;
    gpc_blas_threads = blas;
}

/* *p <- v if *p is 0 or greater than v (the first failure among tasks). */
#ifdef GPC_HAVE_POOL
static void gpc_atomic_min(int *p, int v) {
    int old = __atomic_load_n(p, __ATOMIC_RELAXED);
    while ((old == 0 || old > v)
           && !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_RELAXED,
                                           __ATOMIC_RELAXED))
        ;
}

static double gpc_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
#else
/* Without the pool every task runs in the calling thread, one after another. */
static void gpc_atomic_min(int *p, int v) {
    if (*p == 0 || *p > v)
        *p = v;
}
#endif

#if defined(__linux__)

/* The cores this process may run on. */
static int gpc_usable_cores(cpu_set_t *set) {
    if (sched_getaffinity(0, sizeof(cpu_set_t), set) != 0) {
        CPU_ZERO(set);
        return 0;
    }
    return CPU_COUNT(set);
}

/* Clock ticks the cores in `set` have been busy since boot (/proc/stat), and
 * those of this process (/proc/self/stat); 0 on failure. */
static int gpc_busy_ticks(const cpu_set_t *set, double *cores, double *self) {
    char line[512];
    FILE *fh;
    int cpu, field;
    unsigned long long v[10];
    *cores = 0.0;
    *self = 0.0;
    if ((fh = fopen("/proc/stat", "r")) == NULL)
        return 0;
    while (fgets(line, sizeof line, fh) != NULL) {
        if (strncmp(line, "cpu", 3) != 0)
            break;
        if (line[3] < '0' || line[3] > '9')
            continue;                      /* the all-cores line */
        memset(v, 0, sizeof v);
        if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu,
                   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 5)
            continue;
        if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, set))
            continue;
        /* user nice system idle iowait irq softirq steal: busy = all but idle,
         * iowait (and steal: time the hypervisor gave to other machines) */
        *cores += (double) (v[0] + v[1] + v[2] + v[5] + v[6]);
    }
    fclose(fh);
    if ((fh = fopen("/proc/self/stat", "r")) == NULL)
        return 0;
    field = 0;
    if (fgets(line, sizeof line, fh) != NULL) {
        char *p = strrchr(line, ')');      /* the name may hold spaces */
        unsigned long long ut = 0, st = 0;
        if (p != NULL && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u"
                                " %llu %llu", &ut, &st) == 2) {
            *self = (double) (ut + st);
            field = 1;
        }
    }
    fclose(fh);
    return field;
}

/* The load estimate's state, one per module.  A forked child starts it again:
 * its lock may be held by a thread that is not there, and its own CPU time is
 * not its parent's. */
static struct {
    pthread_mutex_t lock;
    double t0, busy0, self0, others, hz;
    int ncores, atfork;
    cpu_set_t set;
} gpc_load = {PTHREAD_MUTEX_INITIALIZER, -1.0, 0.0, 0.0, 0.0, 0.0, 0, 0};

static void gpc_load_after_fork(void) {
    pthread_mutex_init(&gpc_load.lock, NULL);
    gpc_load.t0 = -1.0;
}

/* The threads of other processes running or ready to run now: /proc/loadavg's
 * fourth field less this process's threads in that state (its BLAS workers may
 * still be spinning after a call); 0 when it cannot be read. */
static double gpc_runnable_now(void) {
    char path[64], line[512], *p;
    FILE *fh = fopen("/proc/loadavg", "r");
    DIR *dir;
    struct dirent *ent;
    int running = 0, own = 0;
    if (fh == NULL)
        return 0.0;
    if (fscanf(fh, "%*f %*f %*f %d", &running) != 1)
        running = 0;
    fclose(fh);
    if ((dir = opendir("/proc/self/task")) == NULL)
        return 0.0;
    while ((ent = readdir(dir)) != NULL) {
        if (ent->d_name[0] < '0' || ent->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", ent->d_name);
        if ((fh = fopen(path, "r")) == NULL)
            continue;
        if (fgets(line, sizeof line, fh) != NULL && (p = strrchr(line, ')')) != NULL
                && p[1] == ' ' && p[2] == 'R')
            own++;
        fclose(fh);
    }
    closedir(dir);
    return running > own ? (double) (running - own) : 0.0;
}

/* Cores that other processes kept busy, averaged over windows of at least 0.1 s;
 * the first estimate, before a window has passed, is the threads runnable at
 * that moment (the load averages would count work that ended a minute ago). */
static double gpc_others_load(int *usable) {
    double now = gpc_now(), busy, self, others;
    pthread_mutex_lock(&gpc_load.lock);
    if (gpc_load.t0 < 0.0) {
        if (!gpc_load.atfork)
            gpc_load.atfork = pthread_atfork(NULL, NULL, gpc_load_after_fork) == 0;
        gpc_load.ncores = gpc_usable_cores(&gpc_load.set);
        gpc_load.hz = (double) sysconf(_SC_CLK_TCK);
        if (gpc_load.ncores > 0 && gpc_load.hz > 0.0
                && gpc_busy_ticks(&gpc_load.set, &gpc_load.busy0, &gpc_load.self0)) {
            gpc_load.t0 = now;
            gpc_load.others = gpc_runnable_now();
        } else {
            gpc_load.ncores = 0;
            gpc_load.t0 = 1e300;           /* never again */
        }
    } else if (now - gpc_load.t0 >= 0.1
               && gpc_busy_ticks(&gpc_load.set, &busy, &self)) {
        others = ((busy - gpc_load.busy0) - (self - gpc_load.self0))
                 / (gpc_load.hz * (now - gpc_load.t0));
        gpc_load.others = others > 0.0 ? others : 0.0;
        gpc_load.t0 = now;
        gpc_load.busy0 = busy;
        gpc_load.self0 = self;
    }
    *usable = gpc_load.ncores;
    others = gpc_load.others;
    pthread_mutex_unlock(&gpc_load.lock);
    return others;
}

#endif

/* The cores this process may use and those other processes leave free. */
static void gpc_cores(int *usable, int *free_cores) {
#if defined(__linux__)
    double others = gpc_others_load(usable);
    if (*usable > 0) {
        *free_cores = (int) (*usable - others + 0.5);
        return;
    }
#endif
#if defined(GPC_HAVE_POOL)
    *usable = (int) sysconf(_SC_NPROCESSORS_ONLN);
#else
    *usable = 1;
#endif
    *free_cores = *usable;
}

/* From this many multiply-adds, a tiled computation on a busy machine takes its
 * fair share of the cores: all the threads its limit allows, not just the free
 * cores.  Its steps are then long enough (milliseconds) that a thread waiting
 * for a core delays a step by a small fraction, and the other threads take the
 * waiting one's tiles meanwhile.  Measured beside two busy threads on two cores:
 * the tiled Cholesky at n = 2000 took 2.1 times its idle time on two threads
 * against 3.4 times on one; at n = 1000, 2.5 against 1.9 times. */
#define GPC_SHARE_WORK 5e8

/* How a computation of about `work` multiply-adds that LAPACK or BLAS would
 * share out to its threads runs: 0 = call LAPACK or BLAS itself, when every
 * thread it would use has a core that other processes leave free, and the
 * calling thread's limit allows them (idle, its blocked routines are the
 * fastest); else the number of threads for gpc's tiled version: one below
 * GPC_THREAD_MIN_WORK, the free cores (at least one) below GPC_SHARE_WORK, the
 * limit above.  With one BLAS thread, LAPACK runs in the calling thread: 0. */
static int gpc_plan(double work) {
    int usable, free_cores, blas = gpc_blas_threads, cap = gpc_thread_cap;
    if (cap < 0)
        return work < GPC_THREAD_MIN_WORK ? 1 : -cap;
    if (blas == 1)
        return 0;
    gpc_cores(&usable, &free_cores);
    if (usable < 1)
        usable = 1;
    if (blas <= 0 || blas > usable)
        blas = usable;
    if (cap <= 0 || cap > usable)
        cap = usable;
    if (blas <= free_cores && blas <= cap)
        return 0;
    if (work < GPC_THREAD_MIN_WORK)
        return 1;
    if (work < GPC_SHARE_WORK && free_cores < cap)
        cap = free_cores;
    return cap < 1 ? 1 : cap;
}

/* The threads of gpc's tiled version of a computation of about `work`
 * multiply-adds, where it has no LAPACK alternative: gpc_plan's count, or as
 * many as LAPACK would have used. */
static int gpc_threads(double work) {
    int threads = gpc_plan(work), usable, free_cores, cap = gpc_thread_cap;
    if (threads > 0)
        return threads;
    if (work < GPC_THREAD_MIN_WORK)
        return 1;
    gpc_cores(&usable, &free_cores);
    if (cap <= 0 || cap > usable)
        cap = usable;
    if (gpc_blas_threads > 0 && gpc_blas_threads < cap)
        cap = gpc_blas_threads;
    return cap < 1 ? 1 : cap;
}

#endif
