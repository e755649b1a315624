#include "ProjectRules.h"

#include "ProjectPaths.h"

#include <llvm/ADT/StringExtras.h>

#include <map>

namespace accel {

// Without this the rules would add an Accelerator to a file for its console output alone.
// Migrated code outside main reaches the Accelerator through Accelerator::current(), which
// throws unless main() constructed one; the rules add it only to a main that uses it.
static bool constructsAccelerator(llvm::StringRef Text) {
  // `accelerate::Accelerator accelerator;`, `... acc(options);`, `... acc{...}`
  const llvm::StringRef Type = "accelerate::Accelerator ";
  for (size_t At = Text.find(Type); At != llvm::StringRef::npos; At = Text.find(Type, At + 1)) {
    llvm::StringRef Rest = Text.substr(At + Type.size()).ltrim();
    size_t Name = 0;
    while (Name < Rest.size() && (llvm::isAlnum(Rest[Name]) || Rest[Name] == '_'))
      ++Name;
    llvm::StringRef After = Rest.substr(Name).ltrim();
    if (Name > 0 && !After.empty() && llvm::StringRef(";({").contains(After[0]))
      return true;
  }
  return false;
}

static llvm::StringRef textOf(const FileResult& R) {
  return R.Parsed ? llvm::StringRef(R.Migrated) : llvm::StringRef();
}

std::vector<std::string> acceleratorWarnings(const ProjectResults& Project) {
  std::vector<std::string> Warnings;
  std::map<std::string, const ProjectUnit*> HeaderByPath;
  for (const ProjectUnit& H : Project.Headers)
    HeaderByPath[H.Real] = &H;
  for (const ProjectUnit& S : Project.Sources) {
    llvm::StringRef Text = textOf(S.Result);
    if (!Text.contains(" main(") || constructsAccelerator(Text))
      continue;
    std::string User = Text.contains("Accelerator::current()") ? S.Rel : "";
    for (const std::string& Inc : S.Result.IncludedFiles) {
      auto It = HeaderByPath.find(canonical(Inc));
      if (User.empty() && It != HeaderByPath.end() &&
          textOf(It->second->Result).contains("Accelerator::current()"))
        User = It->second->Rel;
    }
    if (!User.empty())
      Warnings.push_back(
          S.Rel + ": main() constructs no accelerate::Accelerator, but " + User +
          " uses accelerate::Accelerator::current(), which throws without one: add "
          "`accelerate::Accelerator accelerator;` as the first statement of main()");
  }
  return Warnings;
}

}  // namespace accel
