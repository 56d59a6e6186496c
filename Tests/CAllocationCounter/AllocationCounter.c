// Interposes the C allocator for the test executable: every allocation made by a thread
// increments that thread's counter, then forwards to glibc's own implementation.
// Linked only into test executables.
#include "AllocationCounter.h"
#include <stddef.h>
#include <errno.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static __thread long allocations;

long allocation_counter_current_thread(void) { return allocations; }

void *malloc(size_t size) { allocations++; return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { allocations++; return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { allocations++; return __libc_realloc(pointer, size); }
void free(void *pointer) { __libc_free(pointer); }
void *memalign(size_t alignment, size_t size) { allocations++; return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { allocations++; return __libc_memalign(alignment, size); }
int posix_memalign(void **result, size_t alignment, size_t size) {
    allocations++;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}
