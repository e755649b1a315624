#include "CMakeMigration.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>

namespace accel {
namespace {

struct Arg {
  std::string Value;  // without quotes
  unsigned Begin = 0, End = 0;
};

struct Command {
  std::string Name;  // lower case
  unsigned Begin = 0, Close = 0;  // name start; the closing parenthesis
  std::vector<Arg> Args;
};

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

// Every command invocation (CMake's grammar: an identifier, spaces, a parenthesised
// argument list; arguments are quoted, bracket or unquoted, nested parentheses allowed).
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

bool isPackage(const Command& C, llvm::StringRef Name) {
  return C.Name == "find_package" && !C.Args.empty() &&
         llvm::StringRef(C.Args[0].Value).equals_insensitive(Name);
}

bool isTorchItem(llvm::StringRef V) {
  return V == "torch" || V == "torch_cpu" || V == "${TORCH_LIBRARIES}";
}

const char* kAccelTarget = "Accelerate::accelerate";

bool linksTorch(const Command& C) {
  if (C.Name != "target_link_libraries" || C.Args.size() < 2)
    return false;
  return std::any_of(C.Args.begin() + 1, C.Args.end(),
                     [](const Arg& A) { return isTorchItem(A.Value); });
}

bool linksAccelerate(const Command& C) {
  return C.Name == "target_link_libraries" &&
         std::any_of(C.Args.begin(), C.Args.end(),
                     [](const Arg& A) { return A.Value == kAccelTarget; });
}

size_t lineEnd(llvm::StringRef T, size_t I) {
  size_t E = T.find('\n', I);
  return E == llvm::StringRef::npos ? T.size() : E;
}

// Leading blanks of the line holding offset I.
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

}  // namespace

void scanCMakeLists(llvm::StringRef Text, CMakeProjectFacts& Facts) {
  for (const Command& C : scanCommands(Text)) {
    Facts.FindsTorch |= isPackage(C, "Torch");
    Facts.FindsAccelerate |= isPackage(C, "Accelerate");
    Facts.LinksTorch |= linksTorch(C);
    if (linksAccelerate(C))
      Facts.TargetsLinkingAccelerate.insert(C.Args[0].Value);
  }
}

CMakeMigration migrateCMakeLists(llvm::StringRef Text, bool TopLevel,
                                 const CMakeProjectFacts& Facts,
                                 std::set<std::string>& LinkedSoFar) {
  CMakeMigration M;
  M.Original = Text.str();
  std::vector<Command> Cmds = scanCommands(Text);
  bool FindsAccelerate = std::any_of(Cmds.begin(), Cmds.end(), [](const Command& C) {
    return isPackage(C, "Accelerate");
  });
  const std::string FindLine = "find_package(Accelerate REQUIRED CONFIG)";
  auto AddFind = [&](const Command& After, const char* Why) {
    size_t At = lineEnd(Text, After.Close);
    CMakeEdit E;
    E.Offset = At;
    E.Text = "\n" + indentOf(Text, After.Begin) + FindLine;
    E.Message = Why;
    M.Edits.push_back(std::move(E));
    M.FindPackageAdded = true;
  };
  if (!FindsAccelerate) {
    for (const Command& C : Cmds)
      if (isPackage(C, "Torch"))
        AddFind(C, "find the Accelerate package next to LibTorch");
    if (TopLevel && !Facts.FindsTorch && !Facts.FindsAccelerate && Facts.LinksTorch) {
      const Command* Anchor = nullptr;
      for (const char* Name : {"project", "cmake_minimum_required"}) {
        for (const Command& C : Cmds)
          if (!Anchor && C.Name == Name)
            Anchor = &C;
      }
      if (Anchor) {
        AddFind(*Anchor, "find the Accelerate package (targets link LibTorch)");
      } else {
        // Before the first command, after the file's leading comments.
        CMakeEdit E;
        if (!Cmds.empty()) {
          size_t LineStart = Text.rfind('\n', Cmds.front().Begin);
          E.Offset = LineStart == llvm::StringRef::npos ? 0 : LineStart + 1;
        }
        E.Text = FindLine + "\n";
        E.Message = "find the Accelerate package (targets link LibTorch)";
        M.Edits.push_back(std::move(E));
        M.FindPackageAdded = true;
      }
    }
  }
  for (const Command& C : Cmds) {
    if (!linksTorch(C))
      continue;
    const std::string& Target = C.Args[0].Value;
    if (Facts.TargetsLinkingAccelerate.count(Target) || !LinkedSoFar.insert(Target).second)
      continue;
    auto Torch = std::find_if(C.Args.begin() + 1, C.Args.end(),
                              [](const Arg& A) { return isTorchItem(A.Value); });
    CMakeEdit E;
    E.Offset = Torch->End;
    E.Text = std::string(" ") + kAccelTarget;
    E.Message = "link " + std::string(kAccelTarget) + " to '" + Target +
                "' (it links LibTorch; migrated code includes <accelerate/accelerate.h>)";
    M.Edits.push_back(std::move(E));
    M.LinkedTargets.push_back(Target);
  }
  std::stable_sort(M.Edits.begin(), M.Edits.end(),
                   [](const CMakeEdit& A, const CMakeEdit& B) { return A.Offset < B.Offset; });
  std::string Out;
  unsigned Pos = 0;
  for (CMakeEdit& E : M.Edits) {
    lineColumn(Text, E.Offset, E.Line, E.Column);
    Out += Text.slice(Pos, E.Offset).str();
    Out += E.Text;
    Pos = E.Offset;
  }
  Out += Text.substr(Pos).str();
  M.Migrated = std::move(Out);
  return M;
}

}  // namespace accel
