#pragma once
// Questions on a terminal or from piped answers. An empty answer takes the default; at
// the end of input every remaining question takes its default, so `accelerate config`
// also works non-interactively (`yes '' | accelerate config`, answer files in scripts).

#include <iosfwd>
#include <string>
#include <vector>

namespace accelerate::launcher {

class Prompter {
 public:
  // echo_answers: repeat each answer after its question, so that a transcript of piped
  // answers reads like a terminal session.
  Prompter(std::istream& in, std::ostream& out, bool echo_answers = false) : in_(in), out_(out), echo_(echo_answers) {}

  std::string ask_text(const std::string& question, const std::string& default_value);
  int ask_int(const std::string& question, int default_value);
  bool ask_yes_no(const std::string& question, bool default_value);
  // Shows numbered options; accepts the number or the option's text.
  size_t ask_option(const std::string& question, const std::vector<std::string>& options, size_t default_index = 0);

 private:
  bool read_answer(std::string* answer);

  std::istream& in_;
  std::ostream& out_;
  bool echo_ = false;
  bool at_end_ = false;
};

}  // namespace accelerate::launcher
