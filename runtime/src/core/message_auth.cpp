#include "core/message_auth.h"

#include <accelerate/core/error.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace accelerate::detail::auth {
namespace {

std::string hex(const std::string& raw) {
  static const char* const digits = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (const unsigned char c : raw) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

}  // namespace

std::string hmac(const std::string& key, const std::string& message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
       message.size(), mac, &n);
  return std::string(reinterpret_cast<const char*>(mac), n);
}

std::string hmac_hex(const std::string& key, const std::string& message) { return hex(hmac(key, message)); }

bool same_secret(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    throw Error(ErrorCode::Internal, "the system's random generator failed (OpenSSL RAND_bytes)");
  }
  return hex(raw);
}

}  // namespace accelerate::detail::auth
