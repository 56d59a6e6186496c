#ifndef ACTIVESPEAKER_CREDIS_SHIM_H
#define ACTIVESPEAKER_CREDIS_SHIM_H
// hiredis (0.14 on Debian 12): the synchronous API only. Every byte sent to or read from Redis goes
// through it; the Redis module never writes the protocol itself.
#include <hiredis/hiredis.h>
#endif
