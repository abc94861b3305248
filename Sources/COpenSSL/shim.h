#ifndef LIMELIGHT_COPENSSL_SHIM_H
#define LIMELIGHT_COPENSSL_SHIM_H
// Only libcrypto's one-shot digests, MAC, AES-GCM and random bytes (Debian: libssl-dev); see Hashing.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#endif
