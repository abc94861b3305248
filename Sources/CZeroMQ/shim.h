#ifndef LIMELIGHT_CZEROMQ_SHIM_H
#define LIMELIGHT_CZEROMQ_SHIM_H
// libzmq is linked by name: Debian's libzmq.pc carries flags SwiftPM rejects,
// so this target deliberately names no pkgConfig.
#include <zmq.h>
#include <stddef.h>

// glibc's thread placement calls, which <sched.h> declares only under
// _GNU_SOURCE (not how Swift's Glibc module is built): bound here by their
// symbol names, with the CPU set as the array of longs it is.
extern int limelight_sched_setaffinity(int pid, size_t size, const unsigned long *mask) __asm__("sched_setaffinity");
extern int limelight_sched_getaffinity(int pid, size_t size, unsigned long *mask) __asm__("sched_getaffinity");
extern int limelight_sched_getcpu(void) __asm__("sched_getcpu");
extern int limelight_pthread_setname_np(unsigned long thread, const char *name) __asm__("pthread_setname_np");
extern unsigned long limelight_pthread_self(void) __asm__("pthread_self");

/// Names the calling thread (the kernel keeps 15 bytes): what `top -H`,
/// perf and debuggers show. Foundation's `Thread.name`, set before the
/// thread starts, does not reach the kernel on Linux.
static inline void limelight_name_thread(const char *name) {
    char short_name[16] = {0};
    for (int i = 0; i < 15 && name[i]; i++) short_name[i] = name[i];
    (void)limelight_pthread_setname_np(limelight_pthread_self(), short_name);
}

/// CPUs a placement can name: glibc's CPU_SETSIZE.
#define LIMELIGHT_MAX_CPUS 1024
#define LIMELIGHT_MASK_BITS (8 * sizeof(unsigned long))
#define LIMELIGHT_MASK_WORDS (LIMELIGHT_MAX_CPUS / LIMELIGHT_MASK_BITS)

/// Whether `mask` (a CPU set) holds `cpu`.
static inline int limelight_mask_has(const unsigned long *mask, int cpu) {
    return cpu >= 0 && cpu < LIMELIGHT_MAX_CPUS && ((mask[cpu / LIMELIGHT_MASK_BITS] >> (cpu % LIMELIGHT_MASK_BITS)) & 1);
}

/// Whether the calling thread may run on `cpu` (its affinity mask holds it).
static inline int limelight_thread_may_run_on(int cpu) {
    unsigned long mask[LIMELIGHT_MASK_WORDS] = {0};
    if (limelight_sched_getaffinity(0, sizeof mask, mask) != 0) return 0;
    return limelight_mask_has(mask, cpu);
}

/// The CPUs the calling thread may run on, ascending, into `out` (room for
/// `capacity`): how many there are, or -1.
static inline int limelight_allowed_cpus(int *out, int capacity) {
    unsigned long mask[LIMELIGHT_MASK_WORDS] = {0};
    if (limelight_sched_getaffinity(0, sizeof mask, mask) != 0) return -1;
    int count = 0;
    for (int cpu = 0; cpu < LIMELIGHT_MAX_CPUS && count < capacity; cpu++) {
        if (limelight_mask_has(mask, cpu)) out[count++] = cpu;
    }
    return count;
}

/// Pins the calling thread to `cpu`: 0, or -1 with errno set.
static inline int limelight_pin_thread(int cpu) {
    unsigned long mask[LIMELIGHT_MASK_WORDS] = {0};
    if (cpu < 0 || cpu >= LIMELIGHT_MAX_CPUS) return -1;
    mask[cpu / LIMELIGHT_MASK_BITS] = 1UL << (cpu % LIMELIGHT_MASK_BITS);
    return limelight_sched_setaffinity(0, sizeof mask, mask);
}

/// The CPU the calling thread runs on now (-1 when unknown).
static inline int limelight_current_cpu(void) {
    return limelight_sched_getcpu();
}
#endif
