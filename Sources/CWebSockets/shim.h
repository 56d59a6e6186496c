#ifndef ACTIVESPEAKER_CWEBSOCKETS_SHIM_H
#define ACTIVESPEAKER_CWEBSOCKETS_SHIM_H
#include <libwebsockets.h>
#endif
