#include "link/job_token.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include <accelerate/core/detail/env_names.h>

#include "base/errors.h"
#include "core/message_auth.h"

namespace accelerate::launcher {

namespace {

std::string hex(const unsigned char* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

// Spaces and newlines around a token are an editor's or `echo`'s, not part of it.
std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1);
}

JobToken checked(std::string secret, const std::string& origin) {
  secret = trimmed(secret);
  if (secret.size() < kMinJobTokenChars) {
    throw PlanError(origin + " holds a job token of " + std::to_string(secret.size()) + " characters; use at least " +
                    std::to_string(kMinJobTokenChars) +
                    " (a short one can be guessed), best a random one: the one machine 0 writes to a "
                    "--job_token_file that does not exist yet, or `openssl rand -hex 32`");
  }
  return {secret, origin};
}

JobToken read_token_file(const std::string& path);

// A new token in a file that did not exist. It is written whole to a private file beside
// `path` and then linked to `path`: link() never replaces a file, so two launchers racing to
// create it, or a file made meanwhile, are never overwritten (the one that lost reads the
// file), and no reader ever sees `path` empty or half-written (a file created in place is
// visible, empty, before its token is in it: a racing launcher read an empty token).
JobToken create_token_file(const std::string& path, std::vector<std::string>* notes) {
  const std::string partial = path + ".partial-" + random_hex(8);  // this attempt's own
  const int fd = open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    throw PlanError("--job_token_file " + path + ": cannot create it (" + std::strerror(errno) +
                    "; does its directory exist?)");
  }
  const std::string secret = random_hex(32);
  const std::string line = secret + "\n";
  errno = 0;
  const bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size()) && fsync(fd) == 0;
  const int saved = ok ? 0 : (errno != 0 ? errno : EIO);  // a short write sets no errno
  close(fd);
  int linked = ok ? link(partial.c_str(), path.c_str()) : -1;
  int link_errno = errno;
  if (ok && linked != 0 && (link_errno == EPERM || link_errno == EOPNOTSUPP)) {
    // A file system without hard links (FAT, some network ones): rename() would replace a
    // file made meanwhile, so `path` is checked just before (a window of two system calls).
    struct stat st {};
    linked = lstat(path.c_str(), &st) == 0 ? (errno = EEXIST, -1) : rename(partial.c_str(), path.c_str());
    link_errno = errno;
  }
  unlink(partial.c_str());
  if (!ok) throw PlanError("--job_token_file " + path + ": cannot write it (" + std::strerror(saved) + ")");
  if (linked != 0 && link_errno == EEXIST) return read_token_file(path);
  if (linked != 0) {
    throw PlanError("--job_token_file " + path + ": cannot create it (" + std::strerror(link_errno) + ")");
  }
  JobToken token{secret, "--job_token_file " + path};
  notes->push_back("wrote a new job token to " + path + " (fingerprint " + token.fingerprint() +
                   "): give the same file to every other machine's launcher (--job_token_file)");
  return token;
}

// Checked on the open descriptor (fstat), so that the file read is the file checked: not a
// link (O_NOFOLLOW), not a FIFO that would block (O_NONBLOCK, then S_ISREG), owned by this
// user and readable by nobody else, as ssh requires of keys.
JobToken read_token_file(const std::string& path) {
  const std::string origin = "--job_token_file " + path;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    throw PlanError(origin + ": " + std::strerror(errno) +
                    (errno == ENOENT ? "; copy the file machine 0's launcher wrote (it writes one when its "
                                       "--job_token_file does not exist)"
                                     : ""));
  }
  struct stat st {};
  const bool stat_ok = fstat(fd, &st) == 0;
  std::string why;
  if (!stat_ok || !S_ISREG(st.st_mode)) {
    why = ": not a regular file";
  } else if (st.st_uid != geteuid()) {
    why = " belongs to another user (uid " + std::to_string(st.st_uid) + "): a token someone else wrote is theirs";
  } else if ((st.st_mode & 077) != 0) {
    std::ostringstream mode;
    mode << std::oct << (st.st_mode & 0777);
    why = " can be read by other users of this machine (mode 0" + mode.str() + "): run chmod 600 " + path +
          " (a token others can read protects nothing)";
  }
  char text[4096];
  const ssize_t n = why.empty() ? read(fd, text, sizeof(text)) : 0;  // a token is 64 characters
  close(fd);
  if (!why.empty()) throw PlanError(origin + why);
  if (n < 0) throw PlanError(origin + ": cannot read it (" + std::strerror(errno) + ")");
  return checked(std::string(text, static_cast<size_t>(n)), origin);
}

}  // namespace

std::string JobToken::fingerprint() const {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(secret.data(), secret.size(), digest, &n, EVP_sha256(), nullptr);
  return hex(digest, 4);
}

std::optional<JobToken> load_job_token(const std::optional<std::string>& file, const char* env_value, bool may_create,
                                       std::vector<std::string>* notes) {
  if (file) {
    struct stat st {};
    if (may_create && lstat(file->c_str(), &st) != 0 && errno == ENOENT) return create_token_file(*file, notes);
    return read_token_file(*file);
  }
  if (env_value && *env_value) return checked(env_value, env_names::kJobToken);
  return std::nullopt;
}

std::string random_hex(size_t bytes) { return detail::auth::random_hex(bytes); }

std::string prove(const JobToken& token, const std::string& message) {
  return detail::auth::hmac_hex(token.secret, message);
}

bool proof_matches(const JobToken& token, const std::string& message, const std::string& proof) {
  return detail::auth::same_secret(proof, prove(token, message));
}

}  // namespace accelerate::launcher
