#include "link/link_message.h"

#include <sstream>

namespace accelerate::launcher {

std::string Message::text(const std::string& key) const {
  auto it = fields.find(key);
  return it == fields.end() ? "" : it->second;
}

long long Message::number(const std::string& key) const {
  try {
    return std::stoll(text(key));
  } catch (const std::exception&) {
    return -1;
  }
}

Message parse_message(const std::string& line) {
  Message m;
  std::istringstream in(line);
  in >> m.kind;
  std::string word;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "reason" || key == "cause") {
      std::string rest;
      std::getline(in, rest);
      m.fields[key] = value + rest;
      break;
    }
    m.fields[key] = value;
  }
  return m;
}

std::vector<std::string> LineDecoder::feed(const char* data, size_t n) {
  std::vector<std::string> lines;
  if (overflowed_) return lines;
  // Only the new bytes are searched: a peer sending one byte at a time would otherwise make
  // each receive rescan the whole unfinished line (quadratic in its length).
  size_t start = 0, nl = partial_.size();
  partial_.append(data, n);
  while ((nl = partial_.find('\n', nl)) != std::string::npos) {
    lines.push_back(partial_.substr(start, nl - start));
    start = ++nl;
  }
  partial_.erase(0, start);
  if (partial_.size() > kMaxLineBytes) {
    overflowed_ = true;
    partial_.clear();
    partial_.shrink_to_fit();
  }
  return lines;
}

}  // namespace accelerate::launcher
