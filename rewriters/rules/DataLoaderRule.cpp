// accelerate-data-loader: torch::data::make_data_loader(...) becomes the runtime's
// prepare_data_loader(...) with the same arguments (it mirrors every overload), which
// shards the data across processes and puts batches on the accelerator's device. A loader
// made before main (a global's initialiser) becomes accelerate::defer_data_loader(...),
// prepared at its first use, after main made the Accelerator.

#include "analyses/DeclaratorGroups.h"

#include <clang/AST/DeclTemplate.h>

#include <map>
#include <set>
#include <vector>

using namespace clang;

namespace accel {

const RuleInfo DataLoaderInfo = {
    "accelerate-data-loader", "make_data_loader -> accelerator.prepare_data_loader",
    "each process must iterate over its own shard of the data: "
    "accelerator.prepare_data_loader takes the same arguments as make_data_loader"};

// For `std::unique_ptr<torch::data::StatelessDataLoader<D, S>>` or
// `std::unique_ptr<torch::data::StatefulDataLoader<D>>` (however spelled: aliases
// included), its template arguments D (and S), fully qualified; empty when T is neither.
static std::vector<std::string> loaderTypeArguments(const ASTContext& AST, QualType T) {
  const auto* RD = T.getCanonicalType()->getAsCXXRecordDecl();
  const auto* UP = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RD);
  if (!UP || UP->getQualifiedNameAsString() != "std::unique_ptr" ||
      UP->getTemplateArgs().size() < 1)
    return {};
  const auto* L = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      UP->getTemplateArgs()[0].getAsType()->getAsCXXRecordDecl());
  if (!L)
    return {};
  std::string Name = L->getQualifiedNameAsString();
  size_t Want = Name == "torch::data::StatelessDataLoader"  ? 2
                : Name == "torch::data::StatefulDataLoader" ? 1
                                                            : 0;
  if (!Want || L->getTemplateArgs().size() != Want)
    return {};
  PrintingPolicy PP(AST.getLangOpts());
  PP.FullyQualifiedName = true;
  PP.SuppressScope = false;
  PP.PrintCanonicalTypes = true;
  // `(anonymous namespace)::Blobs` is not C++: types there are named as written.
  PP.SuppressUnwrittenScope = true;
  std::vector<std::string> Args;
  for (size_t I = 0; I < Want; ++I)
    Args.push_back(L->getTemplateArgs()[I].getAsType().getCanonicalType().getAsString(PP));
  return Args;
}

// The type of the prepared loader that replaces a loader of type T ("" when T is not one
// the tool knows). A stateful loader's prepared type is not spelled: it is left as it is.
static std::string preparedLoaderType(const ASTContext& AST, QualType T) {
  std::vector<std::string> A = loaderTypeArguments(AST, T);
  if (A.size() != 2)
    return "";
  return "decltype(std::declval<accelerate::Accelerator&>().prepare_data_loader<" + A[1] +
         ">(std::declval<" + A[0] + ">(), std::declval<torch::data::DataLoaderOptions>()))";
}

// The type of the deferred loader (a loader made before main, see BeforeMain.cpp) that
// replaces a loader of type T: the arguments prepare_data_loader will be given.
static std::string deferredLoaderType(const ASTContext& AST, QualType T) {
  std::vector<std::string> A = loaderTypeArguments(AST, T);
  if (A.empty())
    return "";
  std::string Args = A[0] + (A.size() == 2 ? ", " + A[1] : "");
  return "accelerate::DeferredDataLoader<" + Args + ", torch::data::DataLoaderOptions>";
}

// `decltype(make_data_loader(...)) loader_;`: the call names a type, which
// retypeDeclaration replaces as a whole when the declaration holds a prepared loader.
static bool inType(MigrationContext& Ctx, const CallExpr* C) {
  using namespace clang::ast_matchers;
  return !match(callExpr(hasAncestor(typeLoc())), *C, Ctx.AST).empty();
}

static bool isMakeDataLoader(const CallExpr* C) {
  std::string N = calleeName(C);
  return N == "torch::data::make_data_loader" ||
         (StringRef(N).ends_with("make_data_loader") && !C->getDirectCallee());
}

using DeclSet = llvm::SmallPtrSet<const DeclaratorDecl*, 4>;

// New types of declarators that share their declaration with others (`T a, b;`): given
// once per declaration, after every call is seen, so that the others keep their type.
using GroupRetypes = std::map<const DeclaratorDecl*, std::string>;

// Retypes DD in C, or records it for its declaration group.
static void retype(MigrationContext& Ctx, const DeclaratorDecl* DD, std::string T, Change& C,
                   GroupRetypes& Groups) {
  if (declaratorGroup(Ctx, DD).size() > 1)
    Groups[DD] = std::move(T);
  else
    C.replace(DD->getTypeSourceInfo()->getTypeLoc().getSourceRange(), T);
}

// A declaration (member or variable) with a spelled-out loader type gets the prepared
// loader's type, once however many calls assign to it.
static bool retypeDeclaration(MigrationContext& Ctx, const RuleInfo& Info, const DeclaratorDecl* DD,
                              Change& C, DeclSet& Retyped, GroupRetypes& Groups) {
  if (DD->getType()->getContainedAutoType())
    return true;
  if (Retyped.count(DD))
    return true;
  std::string T = preparedLoaderType(Ctx.AST, DD->getType());
  if (T.empty()) {
    Ctx.warn(DD->getBeginLoc(), Info.Id,
             "a data loader declared with a spelled-out type cannot hold the prepared "
             "loader: change its type to the type of accelerator.prepare_data_loader(...)");
    return false;
  }
  retype(Ctx, DD, T, C, Groups);
  Retyped.insert(DD);
  return true;
}

// One change per shared declaration: the loaders get the prepared type, the other
// declarators keep theirs (the declaration is split when they differ).
static void retypeGroups(MigrationContext& Ctx, const RuleInfo& Info, const GroupRetypes& Groups) {
  std::set<SourceLocation> Done;
  for (const auto& [D, T] : Groups) {
    auto Group = declaratorGroup(Ctx, D);
    if (!Done.insert(Group.front()->getBeginLoc()).second)
      continue;
    std::vector<std::string> Types;
    for (const DeclaratorDecl* G : Group) {
      auto It = Groups.find(G);
      Types.push_back(It == Groups.end() ? "" : It->second);
    }
    Change C(Info.Id, Group.front()->getBeginLoc());
    if (!retypeGroup(Ctx, C, Group, Types) || (!C.empty() && !Ctx.commit(C)))
      Ctx.warn(Group.front()->getBeginLoc(), Info.Id,
               "this declaration declares a data loader together with other names: declare "
               "the loader on its own, with the type of accelerator.prepare_data_loader(...)");
  }
}

// A loader made before main (the initialiser of a namespace-scope variable or static
// member, or a member of a class that has an object before main): no Accelerator exists
// yet, so it becomes accelerate::defer_data_loader(...) with the same arguments, which
// draws what make_data_loader draws there and prepares the loader at its first use, after
// main made the Accelerator. Returns the declaration that holds it (nullptr: warned).
static const DeclaratorDecl* deferLoader(MigrationContext& Ctx, const RuleInfo& Info,
                                         const CallExpr* Call, Change& C, DeclSet& Retyped,
                                         GroupRetypes& Groups) {
  SourceLocation At = Ctx.SM.getExpansionLoc(Call->getBeginLoc());
  const DeclaratorDecl* D = declInitialisedBy(Ctx, Call);
  if (!D) {
    Ctx.warn(At, Info.Id,
             "this data loader is made before main(), when no Accelerator exists yet, and "
             "does not initialise a variable or member the tool can retype: make it in main() "
             "after the Accelerator, with accelerator.prepare_data_loader(...)");
    return nullptr;
  }
  Ctx.provide<AcceleratorRequests>().Runtime = true; // main must make the Accelerator
  if (D->getType()->getContainedAutoType() || Retyped.count(D))
    return D;
  std::string T = deferredLoaderType(Ctx.AST, D->getType());
  std::vector<const DeclaratorDecl*> Decls = {D};
  if (const auto* V = dyn_cast<VarDecl>(D)) {
    Decls.clear();
    for (const VarDecl* R : V->redecls())
      Decls.push_back(R);
  }
  for (const DeclaratorDecl* R : Decls)
    if (!Ctx.inMainFile(R->getLocation()))
      T.clear();
  if (T.empty()) {
    Ctx.warn(At, Info.Id,
             "this data loader is made before main(), when no Accelerator exists yet, and "
             "its type is spelled where the tool cannot change it: declare it `auto` (or in "
             "main() after the Accelerator, with accelerator.prepare_data_loader(...))");
    return nullptr;
  }
  // A variable declared once takes `auto`; one declared again (a static member, an
  // `extern` declaration) is named the same way everywhere.
  for (const DeclaratorDecl* R : Decls)
    retype(Ctx, R, Decls.size() == 1 && isa<VarDecl>(D) ? "auto" : T, C, Groups);
  Retyped.insert(D);
  return D;
}

void runDataLoader(MigrationContext& Ctx, const RuleInfo& Info) {
  DeclSet Retyped;
  GroupRetypes Groups;
  for (const CallExpr* Call : userCalls(Ctx)) {
    if (!isMakeDataLoader(Call) || inType(Ctx, Call))
      continue;
    MigrationContext::Match Matched(Ctx, Call->getBeginLoc());
    SourceRange Name = calleeNameRange(Call);
    if (Name.isInvalid())
      continue;
    Change C(Info.Id, Call->getBeginLoc());
    if (Ctx.runsBeforeMain(Call)) {
      C.replace(Name, "accelerate::defer_data_loader");
      const DeclaratorDecl* D = deferLoader(Ctx, Info, Call, C, Retyped, Groups);
      if (D && Ctx.commit(C))
        Ctx.provide<PreparedLoaders>().Vars.insert(D);
      continue;
    }
    C.replace(Name, Ctx.accel(Call, C) + ".prepare_data_loader");
    const DeclaratorDecl* D = declInitialisedBy(Ctx, Call);
    if (const auto* V = dyn_cast_or_null<VarDecl>(D)) {
      // A spelled-out loader type names make_data_loader's result type: `auto` takes the
      // prepared loader's type instead.
      if (!V->getType()->getContainedAutoType())
        retype(Ctx, V, "auto", C, Groups);
    } else if (const auto* F = dyn_cast_or_null<FieldDecl>(D)) {
      if (!retypeDeclaration(Ctx, Info, F, C, Retyped, Groups))
        continue;
    } else {
      // Assigned to an existing variable or member whose type names make_data_loader's
      // result: only an unspelled type can take the prepared loader.
      const Expr* Target = assignedBy(Ctx, Call);
      if (Target && !Target->getType()->isDependentType()) {
        const ValueDecl* TD = nullptr;
        if (const auto* ME = dyn_cast<MemberExpr>(ignoreImplicit(Target)))
          TD = ME->getMemberDecl();
        else
          TD = referencedDecl(Target);
        const auto* DD = dyn_cast_or_null<DeclaratorDecl>(TD);
        if (!DD || !Ctx.inMainFile(DD->getLocation()) ||
            !retypeDeclaration(Ctx, Info, DD, C, Retyped, Groups)) {
          Ctx.warn(Call->getBeginLoc(), Info.Id,
                   "the loader is assigned to a variable whose type names make_data_loader's "
                   "result; declare it with the type of accelerator.prepare_data_loader(...) "
                   "and change this call by hand");
          continue;
        }
        D = DD;
      }
    }
    if (Ctx.commit(C) && D)
      Ctx.provide<PreparedLoaders>().Vars.insert(D);
  }
  retypeGroups(Ctx, Info, Groups);

  // Loaders the program already prepared (a second run) count as prepared: variables and
  // members initialised or assigned from prepare_data_loader(...) or defer_data_loader(...).
  for (const CallExpr* Call : userCalls(Ctx)) {
    MemberCall M;
    bool Deferred = calleeName(Call) == "accelerate::defer_data_loader";
    if (!Deferred && (!getMemberCall(Call, M) || M.Name != "prepare_data_loader"))
      continue;
    if (const ValueDecl* D = declHolding(Ctx, Call))
      Ctx.provide<PreparedLoaders>().Vars.insert(D);
  }
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule DataLoaderRuleEntry({
    DataLoaderInfo,
    runDataLoader,
    /*Needs=*/{},
    /*Provides=*/{AnalysisId::PreparedLoaders, AnalysisId::AcceleratorRequests},
    /*Rank=*/10,
});

} // namespace accel
