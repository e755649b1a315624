#include "ProjectPaths.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace accel {

std::string absolute(llvm::StringRef P, llvm::StringRef Base) {
  llvm::SmallString<256> S(P);
  if (!path::is_absolute(S)) {
    if (Base.empty()) {
      fs::make_absolute(S);
    } else {
      llvm::SmallString<256> B(Base);
      path::append(B, S);
      S = B;
    }
  }
  path::remove_dots(S, /*remove_dot_dot=*/true);
  return S.str().str();
}

// The nearest existing ancestor, so that an out-root reached through a link is still
// recognised inside the in-root before it is created.
std::string canonical(llvm::StringRef P) {
  std::string Abs = absolute(P);
  llvm::StringRef Existing = Abs;
  while (!Existing.empty() && !fs::exists(Existing))
    Existing = path::parent_path(Existing);
  llvm::SmallString<256> Real;
  if (Existing.empty() || fs::real_path(Existing, Real))
    return Abs;
  llvm::StringRef Rest = llvm::StringRef(Abs).drop_front(Existing.size());
  if (!Rest.empty()) // appending "" would add a trailing separator
    path::append(Real, Rest);
  return Real.str().str();
}

bool isUnder(llvm::StringRef P, llvm::StringRef Root) {
  return P == Root || (P.starts_with(Root) && P.size() > Root.size() && P[Root.size()] == '/');
}

std::string relative(llvm::StringRef P, llvm::StringRef Root) {
  return P == Root ? "." : P.drop_front(Root.size() + 1).str();
}

bool isHeaderName(llvm::StringRef P) {
  llvm::StringRef Ext = path::extension(P);
  return Ext == ".h" || Ext == ".hh" || Ext == ".hpp" || Ext == ".hxx";
}

bool copyFile(const std::string& From, const std::string& To, std::string& Err) {
  if (auto EC = fs::copy_file(From, To)) {
    Err = "cannot copy " + From + " to " + To + ": " + EC.message();
    return false;
  }
  if (auto Perms = fs::getPermissions(From))
    fs::setPermissions(To, *Perms);
  return true;
}

} // namespace accel
