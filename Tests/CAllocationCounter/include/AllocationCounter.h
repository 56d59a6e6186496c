#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H
/// Number of heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign)
/// made by the calling thread since the process started. The counter is per thread, so tests
/// running in parallel on other threads do not disturb it.
long allocation_counter_current_thread(void);
#endif
