#pragma once
// Project mode's path arithmetic: every path is compared in canonical form (symlinks
// resolved), so that an in-root, out-root or build directory reached through a link is
// still recognised.

#include <llvm/ADT/StringRef.h>

#include <string>

namespace accel {

// P made absolute against Base (the current directory when Base is empty), dots removed.
std::string absolute(llvm::StringRef P, llvm::StringRef Base = "");
// The real path; for a path that does not exist yet, the real path of its nearest existing
// ancestor plus the rest.
std::string canonical(llvm::StringRef P);
bool isUnder(llvm::StringRef P, llvm::StringRef Root);         // P is Root or lies inside it
std::string relative(llvm::StringRef P, llvm::StringRef Root); // P must be under Root
bool isHeaderName(llvm::StringRef P);
// Copies the content and the permissions; on failure Err says why.
bool copyFile(const std::string& From, const std::string& To, std::string& Err);

} // namespace accel
