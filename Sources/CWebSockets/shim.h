#ifndef ACTIVESPEAKER_CWEBSOCKETS_SHIM_H
#define ACTIVESPEAKER_CWEBSOCKETS_SHIM_H
#include <libwebsockets.h>

/// The headroom libwebsockets needs in front of every buffer given to `lws_write` (`LWS_PRE`,
/// a macro expression Swift cannot import).
static inline size_t activespeaker_lws_pre(void) { return LWS_PRE; }

#endif
