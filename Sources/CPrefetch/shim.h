#ifndef ACTIVESPEAKER_PREFETCH_H
#define ACTIVESPEAKER_PREFETCH_H

/// Asks the CPU to bring `bytes` bytes from `address` on into its caches, for writing, one 64-byte line
/// at a time (`__builtin_prefetch`, which Swift cannot name). A hint only: never faults, never waits.
static inline void activespeaker_prefetch(const void *address, long bytes) {
    const char *p = (const char *)address;
    for (long offset = 0; offset < bytes; offset += 64) {
        __builtin_prefetch(p + offset, 1, 3);
    }
}

#endif
