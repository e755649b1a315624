#include "Output.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <vector>

namespace accel {

llvm::Error writeFileAtomically(const std::string& Path, const std::string& Content) {
  llvm::SmallString<256> Dir(Path);
  llvm::sys::path::remove_filename(Dir);
  if (Dir.empty())
    Dir = ".";
  llvm::SmallString<256> Model(Dir);
  llvm::sys::path::append(Model, "." + llvm::sys::path::filename(Path).str() + ".accel-%%%%%%");
  int FD;
  llvm::SmallString<256> Tmp;
  if (auto EC = llvm::sys::fs::createUniqueFile(Model, FD, Tmp))
    return llvm::createStringError(EC, "cannot create a temporary file next to %s: %s",
                                   Path.c_str(), EC.message().c_str());
  {
    llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Content;
    OS.close();
    if (OS.has_error()) {
      llvm::sys::fs::remove(Tmp);
      return llvm::createStringError(OS.error(), "cannot write %s", Tmp.c_str());
    }
  }
  // Keep the permissions of a file being replaced.
  if (auto Perms = llvm::sys::fs::getPermissions(Path))
    llvm::sys::fs::setPermissions(Tmp, *Perms);
  if (auto EC = llvm::sys::fs::rename(Tmp, Path)) {
    llvm::sys::fs::remove(Tmp);
    return llvm::createStringError(EC, "cannot rename to %s: %s", Path.c_str(),
                                   EC.message().c_str());
  }
  return llvm::Error::success();
}

static std::vector<llvm::StringRef> lines(const std::string& S) {
  std::vector<llvm::StringRef> L;
  llvm::StringRef R(S);
  while (!R.empty()) {
    auto [Line, Rest] = R.split('\n');
    L.push_back(Line);
    R = Rest;
  }
  return L;
}

std::string unifiedDiff(const std::string& Path, const std::string& Before,
                        const std::string& After) {
  auto A = lines(Before), B = lines(After);
  size_t N = A.size(), M = B.size();
  // Longest common subsequence over lines: sources are small enough for O(N*M).
  std::vector<std::vector<unsigned>> L(N + 1, std::vector<unsigned>(M + 1, 0));
  for (size_t I = N; I-- > 0;)
    for (size_t J = M; J-- > 0;)
      L[I][J] = A[I] == B[J] ? L[I + 1][J + 1] + 1 : std::max(L[I + 1][J], L[I][J + 1]);
  struct Op {
    char K;
    size_t I, J;
  };
  std::vector<Op> Ops;
  size_t I = 0, J = 0;
  while (I < N || J < M) {
    // Removals before additions, as diff -u prints them.
    if (I < N && J < M && A[I] == B[J])
      Ops.push_back({' ', I++, J++});
    else if (I < N && (J == M || L[I + 1][J] >= L[I][J + 1]))
      Ops.push_back({'-', I++, J});
    else
      Ops.push_back({'+', I, J++});
  }
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  const size_t Ctx = 3;
  size_t K = 0;
  bool Header = false;
  while (K < Ops.size()) {
    if (Ops[K].K == ' ') {
      ++K;
      continue;
    }
    size_t Begin = K >= Ctx ? K - Ctx : 0, End = K;
    // Extend the hunk while changes are within 2*Ctx of each other.
    while (End < Ops.size()) {
      if (Ops[End].K != ' ') {
        ++End;
        continue;
      }
      size_t Run = End;
      while (Run < Ops.size() && Ops[Run].K == ' ')
        ++Run;
      if (Run == Ops.size() || Run - End > 2 * Ctx) {
        End = std::min(End + Ctx, Ops.size());
        break;
      }
      End = Run;
    }
    if (!Header) {
      OS << "--- a/" << Path << "\n+++ b/" << Path << "\n";
      Header = true;
    }
    size_t AStart = Ops[Begin].I, BStart = Ops[Begin].J, ACount = 0, BCount = 0;
    for (size_t X = Begin; X < End; ++X) {
      if (Ops[X].K != '+')
        ++ACount;
      if (Ops[X].K != '-')
        ++BCount;
    }
    OS << "@@ -" << (ACount ? AStart + 1 : AStart) << "," << ACount << " +"
       << (BCount ? BStart + 1 : BStart) << "," << BCount << " @@\n";
    for (size_t X = Begin; X < End; ++X)
      OS << Ops[X].K << (Ops[X].K == '+' ? B[Ops[X].J] : A[Ops[X].I]) << "\n";
    K = End;
  }
  return OS.str();
}

} // namespace accel
