// What accelerate-prepare asks about the code (PrepareFacts.h).

#include "analyses/PrepareFacts.h"

#include <map>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

PrepareFacts::PrepareFacts(MigrationContext& Ctx) : Ctx(Ctx) {
  collectEvidence();
  collectAlreadyPrepared();
}

// A module counts as a model (not, say, a loss function) when its parameters feed an
// optimizer or it is placed on a device / switched to training.
void PrepareFacts::collectEvidence() {
  for (const CallExpr* Call : userCalls(Ctx)) {
    MemberCall M;
    if (!getMemberCall(Call, M) || !M.Object)
      continue;
    if (M.Name == "parameters" || M.Name == "to" || M.Name == "train" ||
        M.Name == "named_parameters" || M.Name == "cuda")
      if (const ValueDecl* D = referencedDecl(M.Object))
        Evidence.insert(D);
  }
}

void PrepareFacts::collectAlreadyPrepared() {
  for (const CallExpr* Call : userCalls(Ctx)) {
    MemberCall M;
    if (!getMemberCall(Call, M) || M.Name != "prepare")
      continue;
    for (const Expr* A : Call->arguments())
      if (const ValueDecl* D = referencedDecl(A))
        Already.insert(D);
  }
}

bool PrepareFacts::wanted(const ValueDecl* D) const {
  ObjectKind K = classifyPreparable(D->getType());
  if (K == ObjectKind::None || D->getType()->isDependentType())
    return false;
  if (K == ObjectKind::Model && !Evidence.count(D))
    return false;
  return true;
}

bool PrepareFacts::defines(const Stmt* S, const VarDecl* V) const {
  if (const auto* DS = dyn_cast<DeclStmt>(S))
    for (const Decl* D : DS->decls())
      if (D == V)
        return true;
  return assignsTo(S, V);
}

bool PrepareFacts::loadsInto(const Stmt* S, const VarDecl* V) {
  return anyOf(S, [V](const Stmt* X) {
    const auto* Call = dyn_cast<CallExpr>(X);
    return Call && Call->getNumArgs() >= 1 && calleeName(Call) == "torch::load" &&
           referencedDecl(Call->getArg(0)) == V;
  });
}

bool PrepareFacts::refersTo(const Stmt* S, const VarDecl* V) {
  return anyOf(S, [V](const Stmt* X) {
    const auto* DR = dyn_cast<DeclRefExpr>(X);
    return DR && DR->getDecl() == V;
  });
}

// Whether S trains: a backward, step or zero_grad call in it, or in a function of this
// file it calls (a `train(model, optimizer, loader)` helper), a few calls deep.
bool PrepareFacts::trains(const Stmt* S, int Depth) const {
  return anyOf(S, [&](const Stmt* X) {
    const auto* Call = dyn_cast<CallExpr>(X);
    const FunctionDecl* F = Call ? Call->getDirectCallee() : nullptr;
    const IdentifierInfo* Name = F ? F->getIdentifier() : nullptr;
    if (Name && (Name->getName() == "backward" || Name->getName() == "step" ||
                 Name->getName() == "zero_grad"))
      return true;
    const FunctionDecl* Def = F ? F->getDefinition() : nullptr;
    return Depth < 3 && Def && Def->hasBody() && Ctx.inMainFile(Def->getLocation()) &&
           trains(Def->getBody(), Depth + 1);
  });
}

// The last statement of Block that declares or (re)assigns one of Vars (nullptr: none).
const Stmt* PrepareFacts::lastDefinition(const CompoundStmt* Block,
                                         const std::vector<const VarDecl*>& Vars) const {
  const Stmt* After = nullptr;
  for (const Stmt* S : Block->body())
    for (const VarDecl* V : Vars) {
      bool Declares = false;
      if (const auto* DS = dyn_cast<DeclStmt>(S))
        for (const Decl* D : DS->decls())
          Declares |= D == V;
      if (Declares || assignsTo(S, V))
        After = S;
    }
  return After;
}

bool PrepareFacts::isNullInit(const Expr* E) {
  E = E->IgnoreImplicit();
  if (const auto* CE = dyn_cast<CXXConstructExpr>(E)) {
    if (CE->getNumArgs() == 0)
      return true;
    return CE->getNumArgs() == 1 && isa<CXXNullPtrLiteralExpr>(CE->getArg(0)->IgnoreImplicit());
  }
  if (const auto* IL = dyn_cast<InitListExpr>(E)) // `T* p{};`, `T* p{nullptr};`
    return IL->getNumInits() == 0 || (IL->getNumInits() == 1 && isNullInit(IL->getInit(0)));
  if (const auto* L = dyn_cast<IntegerLiteral>(E)) // `T* p = 0;`
    return L->getValue() == 0;
  return isa<CXXNullPtrLiteralExpr>(E) || isa<GNUNullExpr>(E) || isa<ImplicitValueInitExpr>(E);
}

// A global is also assigned by a call to a function of this file that assigns it (a
// helper that builds the global model and optimizer), a few calls deep.
bool PrepareFacts::assignsTo(const Stmt* S, const ValueDecl* V, int Depth) const {
  const auto* Var = dyn_cast<VarDecl>(V);
  bool Global = Var && Var->hasGlobalStorage() && !Var->isStaticLocal();
  return anyOf(S, [&](const Stmt* X) {
    if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(X))
      if (Op->getOperator() == OO_Equal)
        return referencedDecl(Op->getArg(0)) == V;
    if (const auto* B = dyn_cast<BinaryOperator>(X))
      return B->getOpcode() == BO_Assign && referencedDecl(B->getLHS()) == V;
    if (const auto* MC = dyn_cast<CXXMemberCallExpr>(X)) // ptr.reset(new ...)
      if (MC->getMethodDecl() && MC->getMethodDecl()->getName() == "reset")
        return MC->getNumArgs() > 0 && referencedDecl(MC->getImplicitObjectArgument()) == V;
    const auto* Call = dyn_cast<CallExpr>(X);
    const FunctionDecl* Callee = Call ? Call->getDirectCallee() : nullptr;
    const FunctionDecl* Def = Callee ? Callee->getDefinition() : nullptr;
    return Global && Depth < 3 && Def && Def->hasBody() && Ctx.inMainFile(Def->getLocation()) &&
           assignsTo(Def->getBody(), V, Depth + 1);
  });
}

bool PrepareFacts::assignedIn(const CompoundStmt* Block, const ValueDecl* V) const {
  for (const Stmt* S : Block->body())
    if (assignsTo(S, V))
      return true;
  return false;
}

// Pointers (raw or smart), and holders made with nullptr, are null until code creates them.
bool PrepareFacts::nullable(const FieldDecl* F) {
  QualType T = F->getType();
  if (isModuleHolderClass(T->getAsCXXRecordDecl()))
    return false;
  return T->isPointerType() || pointeeRecord(T) != T->getAsCXXRecordDecl();
}

// A holder (`Net model;`, `Net model{}`) constructs its module unless made from nullptr.
bool PrepareFacts::nullInit(const FieldDecl* F, const Expr* Init) {
  if (!isModuleHolderClass(F->getType()->getAsCXXRecordDecl()))
    return isNullInit(Init);
  return anyOf(Init, [](const Stmt* S) { return isa<CXXNullPtrLiteralExpr>(S); });
}

// Whether F holds an object at the end of Ctor (nullptr: an implicit constructor).
bool PrepareFacts::existsAfter(const CXXConstructorDecl* Ctor, const FieldDecl* F) const {
  const Expr* Init = F->getInClassInitializer();
  bool Null = Init ? nullInit(F, Init) : nullable(F);
  if (Ctor)
    for (const CXXCtorInitializer* I : Ctor->inits())
      if (I->isWritten() && I->getMember() == F)
        Null = nullInit(F, I->getInit());
  if (!Null)
    return true;
  const auto* Body = Ctor ? dyn_cast_or_null<CompoundStmt>(Ctor->getBody()) : nullptr;
  return Body && llvm::any_of(Body->body(), [&](const Stmt* S) { return definitelyAssigns(S, F); });
}

// User constructors with a body in this file (delegating ones prepare through their target).
std::vector<const CXXConstructorDecl*> PrepareFacts::constructors(const CXXRecordDecl* RD) const {
  std::vector<const CXXConstructorDecl*> Out;
  for (const CXXConstructorDecl* Ctor : RD->ctors())
    if (!Ctor->isImplicit() && !Ctor->isCopyOrMoveConstructor() && Ctor->hasBody() &&
        !Ctor->isDelegatingConstructor() && isa<CompoundStmt>(Ctor->getBody()) &&
        Ctx.inMainFile(Ctor->getBody()->getBeginLoc()))
      Out.push_back(Ctor);
  return Out;
}

bool PrepareFacts::existsAfterSomeConstructor(const CXXRecordDecl* RD, const FieldDecl* F) const {
  std::vector<const CXXConstructorDecl*> Ctors = constructors(RD);
  if (Ctors.empty())
    return existsAfter(nullptr, F);
  return llvm::any_of(Ctors, [&](const CXXConstructorDecl* C) { return existsAfter(C, F); });
}

// Whether F is assigned on every path through S (both branches of an if/else; not loops,
// whose body may not run).
bool PrepareFacts::definitelyAssigns(const Stmt* S, const ValueDecl* F) const {
  // A path that throws (`else throw std::invalid_argument(...)`, an option with no valid
  // value) or calls a noreturn function never gets past S: it needs no object.
  if (const auto* E = dyn_cast<Expr>(S)) {
    const Expr* X = E->IgnoreImplicit();
    if (isa<CXXThrowExpr>(X))
      return true;
    const auto* Call = dyn_cast<CallExpr>(X);
    if (Call && Call->getDirectCallee() && Call->getDirectCallee()->isNoReturn())
      return true;
  }
  if (const auto* If = dyn_cast<IfStmt>(S))
    return If->getElse() && definitelyAssigns(If->getThen(), F) &&
           definitelyAssigns(If->getElse(), F);
  if (const auto* CS = dyn_cast<CompoundStmt>(S))
    return llvm::any_of(CS->body(), [&](const Stmt* X) { return definitelyAssigns(X, F); });
  if (isa<ForStmt>(S) || isa<WhileStmt>(S) || isa<CXXForRangeStmt>(S) || isa<DoStmt>(S) ||
      isa<SwitchStmt>(S) || isa<CXXTryStmt>(S))
    return false;
  return assignsTo(S, F);
}

// Made from device constants only (kCUDA, kCPU, is_available(), a flag), not from a
// device the program computed (an index from a variable is custom device logic).
bool PrepareFacts::isConstantDevice(const CXXConstructExpr* Init) {
  return !anyOf(Init, [](const Stmt* S) {
    if (const auto* DR = dyn_cast<DeclRefExpr>(S)) {
      const ValueDecl* D = DR->getDecl();
      if (isa<EnumConstantDecl>(D) || isa<FunctionDecl>(D))
        return false;
      if (const auto* V = dyn_cast<VarDecl>(D))
        return !(V->isConstexpr() || V->getType()->isBooleanType());
      return true;
    }
    return isa<MemberExpr>(S) && !isa<CXXMethodDecl>(cast<MemberExpr>(S)->getMemberDecl());
  });
}

// Where the objects of Block are prepared: each object before the first statement that
// trains after it is created, and again after each statement that makes it anew (`net =
// Net();`, `.reset(new ...)`, `make_shared` again; a `torch::load` into the fresh object
// right after it moves the point past the load). Objects created between two such points
// share one prepare call, after the last statement that creates one of them. A
// re-creation after the object was used (passed to a helper that may train, or trained)
// starts a new group: the model trained before it must be prepared for that training.
PrepareFacts::PreparePoints
PrepareFacts::preparePoints(const CompoundStmt* Block, const std::vector<const VarDecl*>& Ready,
                            std::vector<std::pair<const Stmt*, const VarDecl*>>& Makes) const {
  PreparePoints Out;
  std::vector<const VarDecl*> Pending;
  llvm::SmallPtrSet<const VarDecl*, 4> UsedSince; // pending objects used since created
  const Stmt* PendingAt = nullptr;
  auto Flush = [&]() {
    if (!Pending.empty())
      Out.push_back({PendingAt, Pending});
    Pending.clear();
    UsedSince.clear();
  };
  for (const Stmt* S : Block->body()) {
    bool Remade = llvm::any_of(
        Pending, [&](const VarDecl* V) { return UsedSince.count(V) && defines(S, V); });
    if (trains(S) || Remade)
      Flush();
    for (const VarDecl* V : Ready) {
      bool IsPending = llvm::is_contained(Pending, V);
      if (defines(S, V)) {
        Makes.push_back({S, V});
        if (!IsPending)
          Pending.push_back(V);
        UsedSince.erase(V);
        PendingAt = S;
      } else if (IsPending && loadsInto(S, V)) {
        PendingAt = S; // the fresh object's values come from the file: prepare after
      } else if (IsPending && refersTo(S, V)) {
        UsedSince.insert(V);
      }
    }
  }
  Flush();
  return Out;
}

std::vector<PrepareFacts::BlockObjects> PrepareFacts::objectsByBlock() const {
  std::map<const CompoundStmt*, std::vector<const VarDecl*>> Groups;
  std::vector<const CompoundStmt*> Order;
  auto Add = [&](const CompoundStmt* Block, const VarDecl* V) {
    if (!Groups.count(Block))
      Order.push_back(Block);
    Groups[Block].push_back(V);
  };
  for (const VarDecl* V : userVars(Ctx)) {
    if (isa<ParmVarDecl>(V) || V->getType()->isReferenceType() || !wanted(V))
      continue;
    if (V->hasGlobalStorage() && !V->isStaticLocal())
      continue; // globals: see below
    if (const CompoundStmt* Block = Ctx.declaringBlock(V))
      Add(Block, V);
  }
  // Globals are prepared in main (with main's objects when main (re)assigns them, else
  // right after the Accelerator), also those only helpers use: a program whose free
  // functions reach a global model and optimizer trains them too.
  const auto* MainBody = Ctx.MainFn ? dyn_cast<CompoundStmt>(Ctx.MainFn->getBody()) : nullptr;
  for (const VarDecl* V : MainBody ? userVars(Ctx) : std::vector<const VarDecl*>{})
    if (V->hasGlobalStorage() && !V->isStaticLocal() && !isa<ParmVarDecl>(V) &&
        !V->isStaticDataMember() && wanted(V))
      Add(MainBody, V);
  std::vector<BlockObjects> Out;
  for (const CompoundStmt* Block : Order)
    Out.push_back({Block, Groups[Block]});
  return Out;
}

std::vector<PrepareFacts::ClassMembers> PrepareFacts::membersByClass() const {
  std::vector<ClassMembers> Out;
  for (const auto& N :
       match(cxxRecordDecl(isDefinition(), unless(isInstantiated())).bind("r"), Ctx.AST)) {
    const auto* RD = N.getNodeAs<CXXRecordDecl>("r");
    if (!Ctx.inMainFile(RD->getLocation()) || isModuleClass(RD) || RD->isLambda())
      continue; // a Module's members are submodules: the model is prepared as a whole
    std::vector<const FieldDecl*> Fields;
    for (const FieldDecl* F : RD->fields())
      if (wanted(F) && !alreadyPrepared(F))
        Fields.push_back(F);
    if (Fields.empty())
      continue;
    std::vector<const FieldDecl*> Later;
    for (const FieldDecl* F : Fields)
      if (!existsAfterSomeConstructor(RD, F))
        Later.push_back(F);
    Out.push_back({RD, Fields, Later});
  }
  return Out;
}

} // namespace accel
