#include "CMakeScan.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>

namespace accel::cmake {
namespace {

bool isIdentStart(char C) { return llvm::isAlpha(C) || C == '_'; }
bool isIdent(char C) { return llvm::isAlnum(C) || C == '_'; }

// `[[`, `[=[`, ... at I: the length of the opener, else 0.
unsigned bracketOpen(llvm::StringRef T, size_t I, unsigned& Level) {
  if (I >= T.size() || T[I] != '[')
    return 0;
  size_t J = I + 1;
  while (J < T.size() && T[J] == '=')
    ++J;
  if (J >= T.size() || T[J] != '[')
    return 0;
  Level = J - I - 1;
  return J - I + 1;
}

// Past the end of a bracket argument or comment whose content starts at I.
size_t bracketEnd(llvm::StringRef T, size_t I, unsigned Level) {
  std::string Close = "]" + std::string(Level, '=') + "]";
  size_t E = T.find(Close, I);
  return E == llvm::StringRef::npos ? T.size() : E + Close.size();
}

// Past a comment starting with '#' at I.
size_t skipComment(llvm::StringRef T, size_t I) {
  unsigned Level = 0;
  if (unsigned N = bracketOpen(T, I + 1, Level))
    return bracketEnd(T, I + 1 + N, Level);
  size_t E = T.find('\n', I);
  return E == llvm::StringRef::npos ? T.size() : E;
}

} // namespace

// CMake's grammar: an identifier, spaces, a parenthesised argument list; arguments are
// quoted, bracket or unquoted, nested parentheses allowed.
std::vector<Command> scanCommands(llvm::StringRef T) {
  std::vector<Command> Out;
  size_t I = 0;
  while (I < T.size()) {
    char C = T[I];
    if (C == '#') {
      I = skipComment(T, I);
      continue;
    }
    if (!isIdentStart(C) || (I > 0 && isIdent(T[I - 1]))) {
      ++I;
      continue;
    }
    size_t NameEnd = I;
    while (NameEnd < T.size() && isIdent(T[NameEnd]))
      ++NameEnd;
    size_t P = NameEnd;
    while (P < T.size() && (T[P] == ' ' || T[P] == '\t'))
      ++P;
    if (P >= T.size() || T[P] != '(') {
      I = NameEnd;
      continue;
    }
    Command Cmd;
    Cmd.Name = T.slice(I, NameEnd).lower();
    Cmd.Begin = I;
    unsigned Depth = 1;
    size_t J = P + 1;
    while (J < T.size() && Depth > 0) {
      char D = T[J];
      if (D == ' ' || D == '\t' || D == '\n' || D == '\r') {
        ++J;
      } else if (D == '#') {
        J = skipComment(T, J);
      } else if (D == '(') {
        ++Depth;
        ++J;
      } else if (D == ')') {
        if (--Depth == 0)
          break;
        ++J;
      } else if (D == '"') {
        Arg A;
        A.Begin = J++;
        while (J < T.size() && T[J] != '"') {
          if (T[J] == '\\' && J + 1 < T.size())
            A.Value += T[++J];
          else
            A.Value += T[J];
          ++J;
        }
        A.End = std::min<size_t>(J + 1, T.size());
        J = A.End;
        Cmd.Args.push_back(std::move(A));
      } else {
        Arg A;
        A.Begin = J;
        unsigned Level = 0;
        if (unsigned N = bracketOpen(T, J, Level)) {
          size_t E = bracketEnd(T, J + N, Level);
          A.Value = T.slice(J + N, E - Level - 2).str();
          J = E;
        } else {
          while (J < T.size() && !llvm::StringRef(" \t\r\n()#\"").contains(T[J])) {
            if (T[J] == '\\' && J + 1 < T.size())
              A.Value += T[J++];
            A.Value += T[J++];
          }
        }
        A.End = J;
        Cmd.Args.push_back(std::move(A));
      }
    }
    Cmd.Close = std::min<size_t>(J, T.size());
    I = Cmd.Close + 1;
    Out.push_back(std::move(Cmd));
  }
  return Out;
}

size_t lineEnd(llvm::StringRef T, size_t I) {
  size_t E = T.find('\n', I);
  return E == llvm::StringRef::npos ? T.size() : E;
}

std::string indentOf(llvm::StringRef T, size_t I) {
  size_t B = T.rfind('\n', I);
  B = B == llvm::StringRef::npos ? 0 : B + 1;
  size_t E = B;
  while (E < T.size() && (T[E] == ' ' || T[E] == '\t'))
    ++E;
  return T.slice(B, E).str();
}

void lineColumn(llvm::StringRef T, unsigned Offset, unsigned& Line, unsigned& Col) {
  llvm::StringRef Before = T.take_front(Offset);
  Line = Before.count('\n') + 1;
  size_t NL = Before.rfind('\n');
  Col = NL == llvm::StringRef::npos ? Offset + 1 : Offset - NL;
}

} // namespace accel::cmake
