#ifndef ACTIVESPEAKER_CCRYPTO_SHIM_H
#define ACTIVESPEAKER_CCRYPTO_SHIM_H
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#endif
