#pragma once
// HMAC-SHA256, constant-time comparison and random nonces (OpenSSL's libcrypto), shared by
// the launchers' link (launcher: the job token) and the processes' store
// (comm/token_store.h): one implementation of the primitives both sides of a proof use.
// Compiled into the launcher too (it does not link the runtime).

#include <cstddef>
#include <string>

namespace accelerate::detail::auth {

// HMAC-SHA256 of `message` with `key`: 32 raw bytes.
std::string hmac(const std::string& key, const std::string& message);
// The same as 64 hex digits.
std::string hmac_hex(const std::string& key, const std::string& message);
// True when `a` and `b` are equal, in time that depends only on their length.
bool same_secret(const std::string& a, const std::string& b);
// `bytes` random bytes from the system's generator, as hex; throws accelerate::Error when
// the generator fails.
std::string random_hex(size_t bytes);

}  // namespace accelerate::detail::auth
