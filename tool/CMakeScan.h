#pragma once
// A small scanner of CMake's command syntax (comments, quoted, bracket and unquoted
// arguments, nested parentheses) for project mode's CMakeLists.txt migration: it finds the
// commands and where their arguments lie, so that edits can be plain insertions.

#include <llvm/ADT/StringRef.h>

#include <string>
#include <vector>

namespace accel::cmake {

struct Arg {
  std::string Value; // without quotes
  unsigned Begin = 0, End = 0;
};

struct Command {
  std::string Name;              // lower case
  unsigned Begin = 0, Close = 0; // name start; the closing parenthesis
  std::vector<Arg> Args;
};

// Every command invocation of a CMake file, in order.
std::vector<Command> scanCommands(llvm::StringRef Text);

// Offset of the end of the line holding offset I (its '\n', or the end of the text).
size_t lineEnd(llvm::StringRef Text, size_t I);
// Leading blanks of the line holding offset I.
std::string indentOf(llvm::StringRef Text, size_t I);
void lineColumn(llvm::StringRef Text, unsigned Offset, unsigned& Line, unsigned& Col);

} // namespace accel::cmake
