#include <alsa/asoundlib.h>

// alsa-lib reports errors through a process-wide handler that prints "ALSA lib pcm.c:…" lines to
// standard error. Its type is variadic, which Swift cannot implement, so the silent handler is C.
// SpeakerIO reports every failure itself, with the device name and snd_strerror's text.
static void as_alsa_quiet_error_handler(const char *file, int line, const char *function, int err,
                                        const char *format, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)format;
}

/// Stops alsa-lib from printing its own error lines. The corresponding C function is `snd_lib_error_set_handler`.
static inline int as_alsa_silence_library_errors(void) {
    return snd_lib_error_set_handler(as_alsa_quiet_error_handler);
}
