#include "system/prompter.h"

#include <accelerate/core/error.h>

#include <algorithm>
#include <cctype>
#include <iostream>

namespace accelerate::launcher {

namespace {
std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
// A wrong answer is asked again, but never forever (a script feeding bad answers).
constexpr int kMaxAttempts = 5;
}  // namespace

bool Prompter::read_answer(std::string* answer) {
  out_.flush();
  if (at_end_ || !std::getline(in_, *answer)) {
    if (!at_end_) out_ << "\n(end of input: using the defaults from here on)\n";
    at_end_ = true;
    answer->clear();
    return false;
  }
  *answer = trim(*answer);
  if (echo_) out_ << *answer << "\n";
  return true;
}

std::string Prompter::ask_text(const std::string& question, const std::string& default_value) {
  out_ << question;
  std::string answer;
  read_answer(&answer);
  return answer.empty() ? default_value : answer;
}

int Prompter::ask_int(const std::string& question, int default_value) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    out_ << question;
    std::string answer;
    if (!read_answer(&answer) || answer.empty()) return default_value;
    try {
      size_t used = 0;
      int value = std::stoi(answer, &used);
      if (used == answer.size()) return value;
    } catch (const std::exception&) {
    }
    out_ << "Please enter an integer.\n";
  }
  throw Error(ErrorCode::InvalidArgument, "no valid integer given for: " + trim(question));
}

bool Prompter::ask_yes_no(const std::string& question, bool default_value) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    out_ << question;
    std::string answer;
    if (!read_answer(&answer) || answer.empty()) return default_value;
    answer = lower(answer);
    if (answer == "yes" || answer == "y" || answer == "true") return true;
    if (answer == "no" || answer == "n" || answer == "false") return false;
    out_ << "Please enter yes or no.\n";
  }
  throw Error(ErrorCode::InvalidArgument, "no yes/no answer given for: " + trim(question));
}

size_t Prompter::ask_option(const std::string& question, const std::vector<std::string>& options,
                            size_t default_index) {
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    out_ << question << "\n";
    for (size_t i = 0; i < options.size(); ++i) out_ << "  [" << i << "] " << options[i] << "\n";
    out_ << "Enter a number [" << default_index << "]: ";
    std::string answer;
    if (!read_answer(&answer) || answer.empty()) return default_index;
    for (size_t i = 0; i < options.size(); ++i) {
      if (answer == std::to_string(i) || lower(answer) == lower(options[i])) return i;
    }
    out_ << "Please enter a number between 0 and " << options.size() - 1 << ".\n";
  }
  throw Error(ErrorCode::InvalidArgument, "no valid choice given for: " + question);
}

}  // namespace accelerate::launcher
