#pragma once
// The job token of a job that spans machines (docs/security.md): a secret every machine's
// launcher holds, so that machine 0 admits only this job's launchers and they trust only
// this job's machine 0. The token itself never crosses the network: each side proves that
// it holds it with an HMAC-SHA256 (OpenSSL's libcrypto) over a fresh random nonce chosen by
// the other side, so a recorded exchange cannot be replayed to join a later job.

#include <optional>
#include <string>
#include <vector>

namespace accelerate::launcher {

struct JobToken {
  std::string secret;
  std::string origin;  // "--job_token_file PATH" or the variable (env_names::kJobToken), for messages
  // 8 hex digits of the secret's SHA-256: tells two tokens apart in logs without showing one.
  std::string fingerprint() const;
};

// Shorter secrets can be guessed by a stranger trying many connections.
constexpr size_t kMinJobTokenChars = 16;

// The token from `file` (--job_token_file), else from `env_value` (ACCELERATE_JOB_TOKEN);
// nullopt when neither is given. A file must be a regular file that only its owner can
// read. When `may_create` (machine 0) and the file does not exist yet, a new random token
// is written there (mode 0600; an existing file is never replaced) and a note says so.
// Throws PlanError naming the file or variable when the token cannot be used.
std::optional<JobToken> load_job_token(const std::optional<std::string>& file, const char* env_value, bool may_create,
                                       std::vector<std::string>* notes);

// `bytes` random bytes from the system's generator, as hex.
std::string random_hex(size_t bytes);

// The proof that the holder of `token` wrote `message`: HMAC-SHA256, as hex.
std::string prove(const JobToken& token, const std::string& message);
// True when `proof` is prove(token, message); compared in constant time.
bool proof_matches(const JobToken& token, const std::string& message, const std::string& proof);

}  // namespace accelerate::launcher
