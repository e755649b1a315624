#include "CMakeMigration.h"

#include "CMakeScan.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Path.h>

#include <algorithm>
#include <set>

namespace accel {
namespace {

using cmake::Arg;
using cmake::Command;
using Vars = std::map<std::string, std::string>;

const char* const kAccelTarget = "Accelerate::accelerate";
// CMAKE_SOURCE_DIR and friends resolve to paths under this marker, so that
// add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/x) can be followed.
const char* const kRoot = "/@in-root@";

bool isTorchItem(llvm::StringRef V) {
  return V == "torch" || V == "torch_cpu" || V == "${TORCH_LIBRARIES}";
}

bool isPackage(const Command& C, llvm::StringRef Name) {
  return C.Name == "find_package" && !C.Args.empty() &&
         llvm::StringRef(C.Args[0].Value).equals_insensitive(Name);
}

struct FileState {
  std::vector<Command> Cmds;
  std::string Dir; // relative to the in-root, "" at the top
  bool FindsTorch = false, FindsAccelerate = false;
  bool Inherited = false; // an ancestor finds the package before add_subdirectory()
  bool Visited = false;
  bool FromTop = false; // reached from the top-level file
  std::vector<CMakeEdit> Edits;
  bool FindPackageAdded = false;
  std::vector<std::string> Linked;
};

struct Site {
  size_t File = 0;
  const Command* Cmd = nullptr;
  std::vector<std::vector<std::string>> Items; // each argument, resolved, split on ';'
};

class CMakeProject {
 public:
  explicit CMakeProject(const CMakeProjectInput& In) : In(In) {}
  CMakeProjectResult run();

 private:
  void walk(size_t F, Vars V, bool Inherited);
  std::string resolve(std::string S, const Vars& V) const;
  bool visible(size_t F) const {
    const FileState& S = Files[F];
    return S.Inherited || S.FindsTorch || S.FindsAccelerate;
  }
  void link(const std::string& Target, const std::string& Why);
  void insert(size_t F, unsigned Offset, std::string Text, std::string Message);
  void addFindPackages();

  size_t Top = 0; // the top-level CMakeLists.txt (== Files.size() when there is none)
  const CMakeProjectInput& In;
  std::vector<FileState> Files;
  std::map<std::string, Site> Defs;               // add_executable / add_library
  std::map<std::string, std::vector<Site>> Links; // target_link_libraries
  std::vector<std::string> Order;                 // targets as CMake meets them
  std::set<size_t> NeedVisibility;                // files with a site that needs the package
  std::vector<std::string> Warnings;
};

std::string CMakeProject::resolve(std::string S, const Vars& V) const {
  for (int Round = 0; Round < 5; ++Round) {
    bool Changed = false;
    for (size_t At = S.find("${"); At != std::string::npos; At = S.find("${", At + 2)) {
      size_t End = S.find('}', At);
      if (End == std::string::npos)
        break;
      auto It = V.find(S.substr(At + 2, End - At - 2));
      if (It == V.end())
        continue; // unknown (${TORCH_LIBRARIES}, say): kept as written
      S.replace(At, End - At + 1, It->second);
      Changed = true;
    }
    if (!Changed)
      break;
  }
  return S;
}

// Runs one CMakeLists.txt the way CMake would, as far as linking is concerned: variables,
// project names, targets, links and subdirectories in order.
void CMakeProject::walk(size_t F, Vars V, bool Inherited) {
  FileState& S = Files[F];
  S.Visited = true;
  S.Inherited = Inherited;
  std::string Here = S.Dir.empty() ? kRoot : std::string(kRoot) + "/" + S.Dir;
  V["CMAKE_CURRENT_SOURCE_DIR"] = V["CMAKE_CURRENT_LIST_DIR"] = Here;
  bool Found = Inherited;
  for (const Command& C : S.Cmds) {
    std::vector<std::vector<std::string>> Items;
    for (const Arg& A : C.Args) {
      Items.emplace_back();
      llvm::SmallVector<llvm::StringRef, 4> Parts;
      std::string R = resolve(A.Value, V);
      llvm::StringRef(R).split(Parts, ';', -1, false);
      for (llvm::StringRef P : Parts)
        Items.back().push_back(P.str());
    }
    auto Name = [&](size_t I) { return I < C.Args.size() ? resolve(C.Args[I].Value, V) : ""; };
    if (C.Name == "project" && !C.Args.empty()) {
      V["PROJECT_NAME"] = Name(0);
      V["PROJECT_SOURCE_DIR"] = V[Name(0) + "_SOURCE_DIR"] = Here;
    } else if (C.Name == "set" && !C.Args.empty()) {
      std::string Value;
      bool Parent = false;
      for (size_t I = 1; I < C.Args.size(); ++I) {
        if (C.Args[I].Value == "CACHE" || C.Args[I].Value == "PARENT_SCOPE") {
          Parent = C.Args[I].Value == "PARENT_SCOPE";
          break;
        }
        Value += (Value.empty() ? "" : ";") + Name(I);
      }
      if (!Parent)
        V[Name(0)] = Value;
    } else if (C.Name == "list" && C.Args.size() >= 2 && C.Args[0].Value == "APPEND") {
      std::string& L = V[Name(1)];
      for (size_t I = 2; I < C.Args.size(); ++I)
        L += (L.empty() ? "" : ";") + Name(I);
    } else if (isPackage(C, "Torch") || isPackage(C, "Accelerate")) {
      Found = true;
    } else if ((C.Name == "add_executable" || C.Name == "add_library") && !C.Args.empty()) {
      bool Imported = std::any_of(C.Args.begin(), C.Args.end(), [](const Arg& A) {
        return A.Value == "IMPORTED" || A.Value == "ALIAS";
      });
      if (!Imported && Defs.emplace(Name(0), Site{F, &C, Items}).second)
        Order.push_back(Name(0));
    } else if (C.Name == "target_link_libraries" && C.Args.size() >= 2) {
      Links[Name(0)].push_back(Site{F, &C, Items});
      if (std::find(Order.begin(), Order.end(), Name(0)) == Order.end())
        Order.push_back(Name(0));
    } else if (C.Name == "add_subdirectory" && !C.Args.empty()) {
      std::string Dir = Name(0);
      llvm::SmallString<256> P;
      if (llvm::StringRef(Dir).starts_with(kRoot))
        P = llvm::StringRef(Dir).drop_front(strlen(kRoot)).ltrim('/');
      else if (!llvm::sys::path::is_absolute(Dir))
        llvm::sys::path::append(P, S.Dir, Dir);
      llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
      llvm::sys::path::append(P, "CMakeLists.txt");
      for (size_t Child = 0; Child < Files.size(); ++Child)
        if (In.Files[Child].Rel == P.str() && !Files[Child].Visited)
          walk(Child, V, Found);
    }
  }
}

void CMakeProject::insert(size_t F, unsigned Offset, std::string Text, std::string Message) {
  CMakeEdit E;
  E.Offset = Offset;
  E.Text = std::move(Text);
  E.Message = std::move(Message);
  Files[F].Edits.push_back(std::move(E));
}

// Accelerate::accelerate for one target: next to its LibTorch item, else in its first
// target_link_libraries() (same signature, so CMake's keyword/plain rule holds), else in a
// new call after its definition.
void CMakeProject::link(const std::string& Target, const std::string& Why) {
  auto L = Links.find(Target);
  std::vector<Site> None;
  const std::vector<Site>& Calls = L == Links.end() ? None : L->second;
  for (const Site& S : Calls)
    for (const auto& Arg : S.Items)
      if (std::count(Arg.begin(), Arg.end(), kAccelTarget))
        return;
  std::string Message = "link " + std::string(kAccelTarget) + " to '" + Target + "' (" + Why +
                        "; migrated code includes <accelerate/accelerate.h>)";
  for (const Site& S : Calls)
    for (size_t I = 1; I < S.Items.size(); ++I)
      if (std::any_of(S.Items[I].begin(), S.Items[I].end(),
                      [](const std::string& V) { return isTorchItem(V); })) {
        insert(S.File, S.Cmd->Args[I].End, std::string(" ") + kAccelTarget, Message);
        Files[S.File].Linked.push_back(Target);
        NeedVisibility.insert(S.File);
        return;
      }
  if (!Calls.empty()) {
    const Site& S = Calls.front();
    llvm::StringRef First = S.Cmd->Args[1].Value;
    bool Keyword = First == "PRIVATE" || First == "PUBLIC" || First == "INTERFACE" ||
                   First == "LINK_PRIVATE" || First == "LINK_PUBLIC";
    insert(S.File, S.Cmd->Args[Keyword ? 1 : 0].End, std::string(" ") + kAccelTarget, Message);
    Files[S.File].Linked.push_back(Target);
    NeedVisibility.insert(S.File);
    return;
  }
  auto D = Defs.find(Target);
  if (D == Defs.end()) {
    Warnings.push_back("target '" + Target + "' " + Why +
                       ", but no CMakeLists.txt of the project defines or links it where the "
                       "tool can see (a function, macro or include file?): link " +
                       kAccelTarget + " to it");
    return;
  }
  const Site& S = D->second;
  llvm::StringRef Text = In.Files[S.File].Text;
  bool Interface = S.Cmd->Args.size() > 1 && S.Cmd->Args[1].Value == "INTERFACE";
  std::string Written = Text.slice(S.Cmd->Args[0].Begin, S.Cmd->Args[0].End).str();
  insert(S.File, cmake::lineEnd(Text, S.Cmd->Close),
         "\n" + cmake::indentOf(Text, S.Cmd->Begin) + "target_link_libraries(" + Written +
             (Interface ? " INTERFACE " : " PRIVATE ") + kAccelTarget + ")",
         Message);
  Files[S.File].Linked.push_back(Target);
  NeedVisibility.insert(S.File);
}

// find_package(Accelerate) after each find_package(Torch) of a file that does not find it
// yet; and, when some target that needs it sits where neither is found (in its directory,
// or in a parent before the add_subdirectory() that leads there), after project() in the
// top-level file, before any add_subdirectory().
void CMakeProject::addFindPackages() {
  std::string Line = "find_package(Accelerate REQUIRED CONFIG" +
                     (In.Hint.empty() ? std::string() : " HINTS \"" + In.Hint + "\"") + ")";
  std::set<size_t> Roots;
  for (size_t F : NeedVisibility)
    if (!visible(F))
      Roots.insert(Files[F].FromTop ? Top : F);
  for (size_t F = 0; F < Files.size(); ++F) {
    llvm::StringRef Text = In.Files[F].Text;
    auto After = [&](const Command& C, const char* Why) {
      insert(F, cmake::lineEnd(Text, C.Close), "\n" + cmake::indentOf(Text, C.Begin) + Line, Why);
      Files[F].FindPackageAdded = true;
    };
    if (Roots.count(F)) {
      const Command* Anchor = nullptr;
      for (const char* Name : {"project", "cmake_minimum_required"})
        for (const Command& C : Files[F].Cmds)
          if (!Anchor && C.Name == Name)
            Anchor = &C;
      if (Anchor) {
        After(*Anchor, "find the Accelerate package (targets below link it)");
      } else {
        size_t Start = Files[F].Cmds.empty() ? 0 : Text.rfind('\n', Files[F].Cmds[0].Begin);
        insert(F, Start == llvm::StringRef::npos ? 0 : Start + (Start > 0 || Text[0] == '\n'),
               Line + "\n", "find the Accelerate package (targets below link it)");
        Files[F].FindPackageAdded = true;
      }
      continue;
    }
    if (Files[F].FindsAccelerate)
      continue;
    for (const Command& C : Files[F].Cmds)
      if (isPackage(C, "Torch"))
        After(C, "find the Accelerate package next to LibTorch");
  }
}

CMakeProjectResult CMakeProject::run() {
  Files.resize(In.Files.size());
  Top = In.Files.size();
  for (size_t F = 0; F < In.Files.size(); ++F) {
    FileState& S = Files[F];
    S.Cmds = cmake::scanCommands(In.Files[F].Text);
    S.Dir = llvm::sys::path::parent_path(In.Files[F].Rel).str();
    for (const Command& C : S.Cmds) {
      S.FindsTorch |= isPackage(C, "Torch");
      S.FindsAccelerate |= isPackage(C, "Accelerate");
    }
    if (In.Files[F].Rel == "CMakeLists.txt")
      Top = F;
  }
  Vars Root = {{"CMAKE_SOURCE_DIR", kRoot}, {"PROJECT_SOURCE_DIR", kRoot}};
  if (Top < Files.size()) {
    walk(Top, Root, false);
    for (FileState& S : Files)
      S.FromTop = S.Visited;
  }
  for (size_t F = 0; F < Files.size(); ++F) // not reached by add_subdirectory()
    if (!Files[F].Visited)
      walk(F, Root, false);

  // Which targets: those compiling migrated code, and every one linking LibTorch (any
  // of them may compile a migrated header).
  std::map<std::string, std::string> Need;
  for (const auto& [Target, Sites] : Links)
    for (const Site& S : Sites)
      for (size_t I = 1; I < S.Items.size(); ++I)
        if (std::any_of(S.Items[I].begin(), S.Items[I].end(),
                        [](const std::string& V) { return isTorchItem(V); }))
          Need.emplace(Target, "it links LibTorch");
  for (const auto& [Target, Why] : In.Targets)
    Need[Target] = Why;
  bool Unresolved = false; // a call through a function parameter (${name}) links LibTorch
  for (const auto& [Target, Why] : Need)
    Unresolved |= Target.find("${") != std::string::npos;
  std::vector<std::string> Targets; // in the order CMake meets them, then the others
  for (const std::string& T : Order)
    if (Need.count(T))
      Targets.push_back(T);
  for (const auto& [Target, Why] : Need)
    if (std::find(Order.begin(), Order.end(), Target) == Order.end())
      Targets.push_back(Target);
  for (const std::string& Target : Targets) {
    size_t Before = Warnings.size();
    link(Target, Need[Target]);
    if (Unresolved && Warnings.size() > Before)
      Warnings.pop_back(); // probably made by that function, which links it
  }
  addFindPackages();

  CMakeProjectResult R;
  R.Warnings = Warnings;
  for (size_t F = 0; F < Files.size(); ++F) {
    CMakeMigration M;
    llvm::StringRef Text = In.Files[F].Text;
    M.Original = Text.str();
    M.Edits = Files[F].Edits;
    std::stable_sort(M.Edits.begin(), M.Edits.end(),
                     [](const CMakeEdit& A, const CMakeEdit& B) { return A.Offset < B.Offset; });
    unsigned Pos = 0;
    for (CMakeEdit& E : M.Edits) {
      cmake::lineColumn(Text, E.Offset, E.Line, E.Column);
      M.Migrated += Text.slice(Pos, E.Offset).str() + E.Text;
      Pos = E.Offset;
    }
    M.Migrated += Text.substr(Pos).str();
    M.FindPackageAdded = Files[F].FindPackageAdded;
    M.LinkedTargets = Files[F].Linked;
    R.Files.push_back(std::move(M));
  }
  return R;
}

} // namespace

CMakeProjectResult migrateCMakeProject(const CMakeProjectInput& In) {
  return CMakeProject(In).run();
}

} // namespace accel
