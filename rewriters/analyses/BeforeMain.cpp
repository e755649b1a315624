// Code that runs before main: initialisers of objects with static storage run during static
// initialisation, when no Accelerator can exist yet (main constructs it), so
// `Accelerator::current()` there throws and the program aborts before main starts. The
// rules ask here whether a place runs that early, and take the device there from an
// expression that is safe at that time; main then sets the object once the Accelerator
// exists (MainPrologue).

#include "accel/rewriters/analyses/TorchTypes.h"
#include "accel/rewriters/engine/Context.h"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>

#include <algorithm>
#include <set>

using namespace clang;

namespace accel {
namespace {

bool isLibraryNamespace(const NamespaceDecl* N) {
  StringRef Name = N->getName();
  return Name == "std" || Name == "torch" || Name == "at" || Name == "c10" || Name == "caffe2" ||
         Name == "accelerate" || Name == "__gnu_cxx" || Name == "pybind11";
}

} // namespace

void MigrationContext::collectStaticObjects() {
  if (StaticObjectsCollected)
    return;
  StaticObjectsCollected = true;
  std::set<const VarDecl*> Seen;
  std::vector<const DeclContext*> Todo = {AST.getTranslationUnitDecl()};
  while (!Todo.empty()) {
    const DeclContext* DC = Todo.back();
    Todo.pop_back();
    for (const Decl* D : DC->decls()) {
      if (D->isImplicit() || SM.isInSystemHeader(SM.getExpansionLoc(D->getLocation())))
        continue;
      if (const auto* N = dyn_cast<NamespaceDecl>(D)) {
        if (!isLibraryNamespace(N))
          Todo.push_back(N);
      } else if (const auto* L = dyn_cast<LinkageSpecDecl>(D)) {
        Todo.push_back(L);
      } else if (const auto* RD = dyn_cast<CXXRecordDecl>(D)) {
        if (RD->isThisDeclarationADefinition() && !RD->isDependentContext())
          Todo.push_back(RD);
      } else if (const auto* V = dyn_cast<VarDecl>(D)) {
        if (V->hasGlobalStorage() && !V->isStaticLocal() && !V->getType()->isDependentType() &&
            Seen.insert(V->getCanonicalDecl()).second)
          StaticVars.push_back(V);
      }
    }
  }
}

// Member paths from an object of class R to the objects of class Want inside it (itself,
// its bases, its data members, recursively). A path through a private member is kept
// (the object still exists before main) but marked: main cannot name it.
static void findPaths(const CXXRecordDecl* R, const CXXRecordDecl* Want,
                      MigrationContext::StaticInstance At, int Depth,
                      std::vector<MigrationContext::StaticInstance>& Out) {
  if (!R || !R->hasDefinition() || Depth > 4)
    return;
  R = R->getDefinition();
  if (R->getCanonicalDecl() == Want->getCanonicalDecl()) {
    Out.push_back(At);
    return;
  }
  for (const CXXBaseSpecifier& B : R->bases())
    findPaths(B.getType()->getAsCXXRecordDecl(), Want, At, Depth + 1, Out);
  for (const FieldDecl* F : R->fields()) {
    if (F->getType()->isReferenceType() || F->getType()->isPointerType())
      continue;
    MigrationContext::StaticInstance Next = At;
    Next.Path += "." + F->getName().str();
    Next.Reachable &= F->getAccess() == AS_public || F->getAccess() == AS_none;
    findPaths(F->getType()->getAsCXXRecordDecl(), Want, Next, Depth + 1, Out);
  }
}

std::vector<MigrationContext::StaticInstance>
MigrationContext::staticInstances(const CXXRecordDecl* RD) {
  std::vector<StaticInstance> Out;
  if (!RD)
    return Out;
  collectStaticObjects();
  for (const VarDecl* V : StaticVars)
    findPaths(V->getType()->getAsCXXRecordDecl(), RD, {V, "", true}, 0, Out);
  return Out;
}

std::string MigrationContext::nameFromMain(const VarDecl* V) const {
  std::string Name = V->getName().str();
  for (const DeclContext* DC = V->getDeclContext(); DC; DC = DC->getParent()) {
    if (const auto* N = dyn_cast<NamespaceDecl>(DC)) {
      if (!N->isAnonymousNamespace() && !N->isInline())
        Name = N->getName().str() + "::" + Name;
    } else if (const auto* R = dyn_cast<CXXRecordDecl>(DC)) {
      if (R->getName().empty())
        return "";
      Name = R->getName().str() + "::" + Name;
    } else if (!isa<TranslationUnitDecl>(DC) && !isa<LinkageSpecDecl>(DC)) {
      return "";
    }
  }
  // A private static member (or one in a private nested class) cannot be set from main.
  for (const Decl* D = V; D; D = dyn_cast<Decl>(D->getDeclContext())) {
    if (!isa<CXXRecordDecl>(D->getDeclContext()))
      break;
    if (D->getAccess() == AS_private || D->getAccess() == AS_protected)
      return "";
  }
  return Name;
}

bool MigrationContext::runsBeforeMain(const DynTypedNode& Node, const VarDecl** Var) {
  if (Var)
    *Var = nullptr;
  auto Before = walkAncestors(
      Node,
      [&](const DynTypedNode& P, const DynTypedNode&) -> std::optional<bool> {
        if (P.get<LambdaExpr>() || P.get<TranslationUnitDecl>() || P.get<NamespaceDecl>())
          return false;
        if (const auto* Ctor = P.get<CXXConstructorDecl>())
          return !staticInstances(Ctor->getParent()).empty();
        if (P.get<FunctionDecl>())
          return false;
        if (const auto* F = P.get<FieldDecl>())
          return !staticInstances(dyn_cast<CXXRecordDecl>(F->getParent())).empty();
        if (const auto* V = P.get<VarDecl>()) {
          if (V->hasGlobalStorage() && !V->isStaticLocal() && !isa<ParmVarDecl>(V)) {
            if (Var)
              *Var = V;
            return true;
          }
        }
        return std::nullopt;
      },
      Ascent::OwningDecl);
  return Before.value_or(false);
}

std::string MigrationContext::deviceExpr(const DynTypedNode& Node, Change& C) {
  const VarDecl* V = nullptr;
  if (!runsBeforeMain(Node, &V))
    return accel(Node, C) + ".device()";
  provide<AcceleratorRequests>().Runtime = true;
  if (!V) {
    // A member initialiser or constructor of a class that has an object before main.
    warn(SM.getExpansionLoc(Node.getSourceRange().getBegin()), "accelerate-device",
         "this runs before main for an object that exists before main (a global or static "
         "object of this class), when no Accelerator exists yet: it gets the CPU there; "
         "move the object to accelerator.device() in main()");
  } else {
    // A namespace-scope object: created on the CPU, moved once main has the Accelerator.
    QualType T = V->getType();
    std::string Name = MainFn && !T.isConstQualified() ? nameFromMain(V) : "";
    std::string Set;
    if (!Name.empty() && isTensor(T))
      Set = Name + " = " + Name + ".to({acc}.device());";
    else if (!Name.empty() && isTensorOptions(T))
      Set = Name + " = " + Name + ".device({acc}.device());";
    else if (!Name.empty() && isDevice(T))
      Set = Name + " = {acc}.device();";
    if (!Set.empty()) {
      std::vector<std::string>& Prologue = provide<AcceleratorRequests>().MainPrologue;
      if (std::find(Prologue.begin(), Prologue.end(), Set) == Prologue.end())
        Prologue.push_back(Set);
    } else {
      warn(V->getBeginLoc(), "accelerate-device",
           "this object is created before main(), when no Accelerator exists yet: it is "
           "created on the CPU; create it in main() after the Accelerator, or move it to "
           "accelerator.device() there");
    }
  }
  return deviceBeforeMain(C);
}

std::string MigrationContext::deviceBeforeMain(Change& C) {
  return "(accelerate::Accelerator::exists() ? " + current(C) +
         ".device() : torch::Device(torch::kCPU))";
}

} // namespace accel
