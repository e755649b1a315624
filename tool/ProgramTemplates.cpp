#include "ProgramTemplates.h"

#include <accel/rewriters/analyses/TorchTypes.h>

#include <clang/AST/Decl.h>
#include <clang/Sema/Sema.h>

using namespace clang;

namespace accel {

namespace {

// The declaration an implicit instantiation is made from; null when it is not one.
const Decl* patternOf(const ValueDecl* D) {
  if (const auto* F = dyn_cast<FunctionDecl>(D))
    return F->getTemplateInstantiationPattern();
  if (const auto* V = dyn_cast<VarDecl>(D))
    return V->getTemplateInstantiationPattern();
  return nullptr;
}

} // namespace

void instantiateProgramTemplates(Sema& S) {
  const SourceManager& SM = S.getSourceManager();
  // Instantiating one body queues what it uses; the loop takes those too, so the program's
  // templates are instantiated through any depth of the program's own calls.
  S.DefineUsedVTables();
  while (!S.PendingInstantiations.empty()) {
    Sema::PendingImplicitInstantiation Next = S.PendingInstantiations.front();
    S.PendingInstantiations.pop_front();
    const Decl* Pattern = patternOf(Next.first);
    if (!Pattern || inLibraryCode(SM, Pattern->getLocation()))
      continue;
    if (auto* F = dyn_cast<FunctionDecl>(Next.first))
      S.InstantiateFunctionDefinition(Next.second, F);
    else if (auto* V = dyn_cast<VarDecl>(Next.first))
      S.InstantiateVariableDefinition(Next.second, V);
    if (S.PendingInstantiations.empty())
      S.DefineUsedVTables();
  }
}

} // namespace accel
