#pragma once
// The launchers' link protocol as bytes (machine_link.h): a stream cut into lines, each
// line a message "kind key=value ... reason=free text". No sockets here, so that the
// decoding is tested on its own (fuzz/link_message_fuzz.cpp) with what any peer can send.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace accelerate::launcher {

struct Message {
  std::string kind;
  std::map<std::string, std::string> fields;

  std::string text(const std::string& key) const;
  // The field as a number; -1 when it is missing or not a number.
  long long number(const std::string& key) const;
};

// "kind a=1 b=2 reason=free text": `reason` and `cause` take the rest of the line.
Message parse_message(const std::string& line);

// Cuts received bytes into lines. A launcher's longest line is a few hundred bytes; a peer
// that sends kMaxLineBytes without a newline is not a launcher, and keeping its bytes would
// let it grow this process's memory without bound: the decoder stops (overflowed()) and
// the connection is dropped.
class LineDecoder {
 public:
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  // Appends `n` bytes; returns the lines they complete, without their '\n'. Nothing once
  // overflowed.
  std::vector<std::string> feed(const char* data, size_t n);
  bool overflowed() const { return overflowed_; }
  size_t buffered() const { return partial_.size(); }

 private:
  std::string partial_;
  bool overflowed_ = false;
};

}  // namespace accelerate::launcher
