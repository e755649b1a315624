// The rendezvous roll call (see roll_call.h).
#include "comm/roll_call.h"

#include <accelerate/core/error.h>

#include <unistd.h>

#include <climits>
#include <sstream>

namespace accelerate {
namespace detail {
namespace {

const char* const kRollCallPrefix = "accelerate/roll_call/";

std::string key(int64_t rank) { return kRollCallPrefix + std::to_string(rank); }

std::vector<uint8_t> encode(const Attendee& a) {
  const std::string text = a.host + "\n" + a.address;
  return {text.begin(), text.end()};
}

Attendee decode(int64_t rank, const std::vector<uint8_t>& bytes) {
  const std::string text(bytes.begin(), bytes.end());
  const auto nl = text.find('\n');
  Attendee a;
  a.rank = rank;
  a.host = text.substr(0, nl);
  a.address = nl == std::string::npos ? "" : text.substr(nl + 1);
  return a;
}

// "2, 3" or "2-5, 7".
std::string ranks_text(const std::vector<int64_t>& ranks) {
  std::ostringstream os;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    os << (i ? ", " : "") << ranks[i];
    if (j > i) os << "-" << ranks[j];
    i = j + 1;
  }
  return os.str();
}

}  // namespace

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "?";
  return name;
}

std::string describe_attendees(const std::vector<Attendee>& attendees) {
  // Consecutive ranks on the same host and address are one entry.
  std::string out;
  for (size_t i = 0; i < attendees.size();) {
    size_t j = i;
    std::vector<int64_t> ranks{attendees[i].rank};
    while (j + 1 < attendees.size() && attendees[j + 1].host == attendees[i].host &&
           attendees[j + 1].address == attendees[i].address) {
      ranks.push_back(attendees[++j].rank);
    }
    out += (out.empty() ? "" : ", ") + ranks_text(ranks) + " on " + attendees[i].host;
    if (!attendees[i].address.empty()) out += " (" + attendees[i].address + ")";
    i = j + 1;
  }
  return out;
}

std::vector<Attendee> roll_call(c10d::Store& store, const Attendee& me, int64_t world_size,
                                std::chrono::milliseconds timeout, const std::string& where, bool list_everyone,
                                const std::string& what_to_do) {
  store.set(key(me.rank), encode(me));
  std::vector<std::string> keys;
  for (int64_t r = 0; r < world_size; ++r) keys.push_back(key(r));
  std::string cause;
  try {
    store.wait(keys, timeout);
  } catch (const std::exception& e) {
    cause = e.what();
  }
  if (cause.empty() && !list_everyone) return {};
  std::vector<Attendee> present;
  std::vector<int64_t> missing;
  try {
    for (int64_t r = 0; r < world_size; ++r) {
      if (cause.empty() || store.check({key(r)}))
        present.push_back(decode(r, store.get(key(r))));
      else
        missing.push_back(r);
    }
  } catch (const std::exception& e) {
    if (cause.empty()) cause = e.what();
    missing.clear();  // the store itself is gone: nobody can be named
  }
  if (cause.empty()) return present;
  std::ostringstream os;
  os << "accelerate: rendezvous failed on process " << me.rank << " of " << world_size << " at " << where << ": ";
  if (!missing.empty()) {
    os << "timed out after " << timeout.count() / 1000.0 << "s waiting for process"
       << (missing.size() > 1 ? "es " : " ") << ranks_text(missing)
       << " (never arrived; arrived: " << describe_attendees(present) << "). " << what_to_do;
  } else {
    const auto nl = cause.find('\n');
    os << "the store failed while the processes met (" << cause.substr(0, nl) << "). " << what_to_do;
  }
  throw DistributedError(os.str());
}

}  // namespace detail
}  // namespace accelerate
