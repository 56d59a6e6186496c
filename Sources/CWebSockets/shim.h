#ifndef ACTIVESPEAKER_CWEBSOCKETS_SHIM_H
#define ACTIVESPEAKER_CWEBSOCKETS_SHIM_H
#include <libwebsockets.h>
#include <openssl/x509.h>
#include <openssl/ssl.h>
#include <openssl/err.h>

/// Names the server a TLS client connects to (SNI), a macro in OpenSSL.
/// The corresponding C macro is `SSL_set_tlsext_host_name`.
static inline int activespeaker_ssl_set_server_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

/// Refuses TLS versions before 1.2 on a client context, a macro in OpenSSL.
/// The corresponding C macro is `SSL_CTX_set_min_proto_version`.
static inline int activespeaker_ssl_require_tls12(SSL_CTX *context) {
    return (int)SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
}

/// The headroom libwebsockets needs in front of every buffer given to `lws_write` (`LWS_PRE`,
/// a macro expression Swift cannot import).
static inline size_t activespeaker_lws_pre(void) { return LWS_PRE; }

/// The verification error (`X509_V_ERR_*`) of an `X509_STORE_CTX`, as libwebsockets passes it to
/// `LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION`, and the depth in the chain where it
/// occurred (0: the server's own certificate).
/// The corresponding C functions are `X509_STORE_CTX_get_error` and `X509_STORE_CTX_get_error_depth`.
static inline int activespeaker_x509_verify_error(void *store_context, int *depth) {
    *depth = X509_STORE_CTX_get_error_depth((X509_STORE_CTX *)store_context);
    return X509_STORE_CTX_get_error((X509_STORE_CTX *)store_context);
}

/// OpenSSL's text for a verification error ("unable to get local issuer certificate", "hostname mismatch").
/// The corresponding C function is `X509_verify_cert_error_string`.
static inline const char *activespeaker_x509_verify_error_string(int error) {
    return X509_verify_cert_error_string(error);
}

#endif
