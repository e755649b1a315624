// accelerate-prepare: models, optimizers and LR schedulers are prepared after they are
// constructed and before their first training, and again after each statement that makes
// them anew: `accelerator.prepare(model, optimizer, ...)` (in place; any mix of
// ModuleHolders, modules by value, smart and raw pointers). Class members are prepared at
// the end of the class's constructors.

#include "analyses/RuleSupport.h"

#include <map>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo PrepareInfo = {
    "accelerate-prepare", "accelerator.prepare(models, optimizers, schedulers)",
    "prepare moves models to the accelerator's device, makes their parameters identical on "
    "all processes and installs gradient synchronisation; optimizers and schedulers are "
    "wrapped for gradient accumulation and mixed precision"};

namespace {

class PrepareMigration {
 public:
  PrepareMigration(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info) {}

  void run() {
    collectEvidence();
    collectAlreadyPrepared();
    prepareLocals();
    prepareMembers();
    rewriteDevicePointers();
  }

 private:
  // A module counts as a model (not, say, a loss function) when its parameters feed an
  // optimizer or it is placed on a device / switched to training.
  void collectEvidence() {
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

  void collectAlreadyPrepared() {
    for (const CallExpr* Call : userCalls(Ctx)) {
      MemberCall M;
      if (!getMemberCall(Call, M) || M.Name != "prepare")
        continue;
      for (const Expr* A : Call->arguments())
        if (const ValueDecl* D = referencedDecl(A))
          Already.insert(D);
    }
  }

  bool wanted(const ValueDecl* D) {
    ObjectKind K = classifyPreparable(D->getType());
    if (K == ObjectKind::None || D->getType()->isDependentType())
      return false;
    if (K == ObjectKind::Model && !Evidence.count(D))
      return false;
    return true;
  }

  // Locals are prepared in the block that declares them; globals in main.
  void prepareLocals() {
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
    for (const CompoundStmt* Block : Order)
      prepareIn(Block, Groups[Block]);
  }

  void prepareIn(const CompoundStmt* Block, const std::vector<const VarDecl*>& Vars) {
    std::vector<const VarDecl*> Todo;
    for (const VarDecl* V : Vars)
      if (!Already.count(V))
        Todo.push_back(V);
    if (Todo.empty()) {
      for (const VarDecl* V : Vars)
        Ctx.provide<PreparedObjects>().Vars.insert(V);
      return;
    }
    const Stmt* After = lastDefinition(Block, Todo);
    std::vector<const VarDecl*> Ready = readyAt(Block, After, Todo);
    if (Ready.empty())
      return;
    MigrationContext::Match Matched(Ctx, Ready.front()->getLocation());
    // Globals main does not assign: right after the Accelerator (the accelerator rule
    // writes it there, before anything else at the top of main).
    std::vector<const VarDecl*> Early, Made;
    for (const VarDecl* V : Ready)
      (lastDefinition(Block, {V}) ? Made : Early).push_back(V);
    if (!Early.empty()) {
      Ctx.provide<AcceleratorRequests>().MainPrologue.push_back("{acc}.prepare(" +
                                                                prepareArguments(Early) + ");");
      for (const VarDecl* V : Early)
        Ctx.provide<PreparedObjects>().Vars.insert(V);
      Matched.settled(); // accelerate-accelerator writes it
    }
    for (const auto& [At, Part] : preparePoints(Block, Made))
      if (insertPrepareAfter(At, prepareArguments(Part)))
        for (const VarDecl* V : Part)
          Ctx.provide<PreparedObjects>().Vars.insert(V);
  }

  using PreparePoints = std::vector<std::pair<const Stmt*, std::vector<const VarDecl*>>>;

  // Where the objects of Block are prepared: each object before the first statement that
  // trains after it is created, and again after each statement that makes it anew (`net =
  // Net();`, `.reset(new ...)`, `make_shared` again; a `torch::load` into the fresh object
  // right after it moves the point past the load). Objects created between two such points
  // share one prepare call, after the last statement that creates one of them. A
  // re-creation after the object was used (passed to a helper that may train, or trained)
  // starts a new group: the model trained before it must be prepared for that training.
  PreparePoints preparePoints(const CompoundStmt* Block, const std::vector<const VarDecl*>& Ready) {
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
          warnIfRemadeAndTrained(S, V);
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

  bool defines(const Stmt* S, const VarDecl* V) const {
    if (const auto* DS = dyn_cast<DeclStmt>(S))
      for (const Decl* D : DS->decls())
        if (D == V)
          return true;
    return assignsTo(S, V);
  }

  // A loop or branch that makes the object anew and trains it: the prepare call after it
  // comes too late for the training inside, and the tool does not write into the body.
  void warnIfRemadeAndTrained(const Stmt* S, const VarDecl* V) {
    if (isa<DeclStmt>(S) || isa<Expr>(S) || !trains(S) || !WarnedRemade.insert(S).second)
      return;
    Ctx.warn(S->getBeginLoc(), Info.Id,
             "this statement makes '" + V->getName().str() +
                 "' anew and trains it inside: call accelerator.prepare(" + V->getName().str() +
                 ", ...) right after it is made, before its training, or gradients are not "
                 "synchronised across processes");
  }

  static bool loadsInto(const Stmt* S, const VarDecl* V) {
    return anyOf(S, [V](const Stmt* X) {
      const auto* Call = dyn_cast<CallExpr>(X);
      return Call && Call->getNumArgs() >= 1 && calleeName(Call) == "torch::load" &&
             referencedDecl(Call->getArg(0)) == V;
    });
  }

  static bool refersTo(const Stmt* S, const VarDecl* V) {
    return anyOf(S, [V](const Stmt* X) {
      const auto* DR = dyn_cast<DeclRefExpr>(X);
      return DR && DR->getDecl() == V;
    });
  }

  // Whether S trains: a backward, step or zero_grad call in it, or in a function of this
  // file it calls (a `train(model, optimizer, loader)` helper), a few calls deep.
  bool trains(const Stmt* S, int Depth = 0) const {
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

  // `<accel>.prepare(Args);` on its own line after the statement After.
  bool insertPrepareAfter(const Stmt* After, const std::string& Args) {
    Change C(Info.Id, After->getBeginLoc());
    SourceLocation End = After->getEndLoc();
    if (!isa<DeclStmt>(After) && !isa<CompoundStmt>(After) && !isa<IfStmt>(After) &&
        !isa<ForStmt>(After) && !isa<WhileStmt>(After) && !isa<CXXForRangeStmt>(After)) {
      End = nextTokenLoc(Ctx, End, tok::semi);
      if (End.isInvalid())
        return false;
    }
    // An if/else whose last branch has no braces ends with that branch's expression; its
    // semicolon follows (a statement's source range stops before it).
    const Stmt* Tail = After;
    while (const auto* If = dyn_cast<IfStmt>(Tail))
      Tail = If->getElse() ? If->getElse() : If->getThen();
    if (Tail != After && isa<Expr>(Tail)) {
      End = nextTokenLoc(Ctx, End, tok::semi);
      if (End.isInvalid())
        return false;
    }
    C.insertAfter(End, "\n" + Ctx.indentOf(After->getBeginLoc()) + Ctx.accel(After, C) +
                           ".prepare(" + Args + ");");
    return Ctx.commit(C);
  }

  // The last statement of Block that declares or (re)assigns one of Vars (nullptr: none).
  const Stmt* lastDefinition(const CompoundStmt* Block, const std::vector<const VarDecl*>& Vars) {
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

  // Vars whose objects exist after `After`: objects held by pointers must not be null there.
  std::vector<const VarDecl*> readyAt(const CompoundStmt* Block, const Stmt* After,
                                      const std::vector<const VarDecl*>& Vars) {
    std::vector<const VarDecl*> Ready;
    for (const VarDecl* V : Vars) {
      bool Pointer = V->getType()->isPointerType() ||
                     pointeeRecord(V->getType()) != V->getType()->getAsCXXRecordDecl();
      bool Initialised = V->hasInit() && !isNullInit(V->getInit());
      if (Pointer && !Initialised && !(After && assignsTo(After, V)) && !assignedIn(Block, V)) {
        Ctx.warn(V->getLocation(), Info.Id,
                 "this pointer is created later than the tool can see: call "
                 "accelerator.prepare(...) on it after it is constructed");
        continue;
      }
      Ready.push_back(V);
    }
    return Ready;
  }

  // Models first, then optimizers, then schedulers (the order of the runtime's docs).
  std::string prepareArguments(const std::vector<const VarDecl*>& Ready) {
    std::string Args;
    for (ObjectKind K : {ObjectKind::Model, ObjectKind::Optimizer, ObjectKind::Scheduler})
      for (const VarDecl* V : Ready)
        if (classifyPreparable(V->getType()) == K)
          Args += (Args.empty() ? "" : ", ") + (V->hasGlobalStorage() && !V->isStaticLocal()
                                                    ? Ctx.nameFromMain(V)
                                                    : V->getName().str());
    return Args;
  }

  static bool isNullInit(const Expr* E) {
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
  bool assignsTo(const Stmt* S, const ValueDecl* V, int Depth = 0) const {
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
  bool assignedIn(const CompoundStmt* Block, const ValueDecl* V) const {
    for (const Stmt* S : Block->body())
      if (assignsTo(S, V))
        return true;
    return false;
  }

  // Class members: those that exist once the object is constructed are prepared at the end
  // of the constructors; those a member function creates later (compile(), fit(), ...)
  // right after the statement of that function that creates the last of them.
  void prepareMembers() {
    for (const auto& N :
         match(cxxRecordDecl(isDefinition(), unless(isInstantiated())).bind("r"), Ctx.AST)) {
      const auto* RD = N.getNodeAs<CXXRecordDecl>("r");
      if (!Ctx.inMainFile(RD->getLocation()) || isModuleClass(RD) || RD->isLambda())
        continue; // a Module's members are submodules: the model is prepared as a whole
      std::vector<const FieldDecl*> Fields;
      for (const FieldDecl* F : RD->fields())
        if (wanted(F) && !Already.count(F))
          Fields.push_back(F);
      if (Fields.empty())
        continue;
      std::vector<const FieldDecl*> Later;
      for (const FieldDecl* F : Fields)
        if (!existsAfterSomeConstructor(RD, F))
          Later.push_back(F);
      prepareInConstructors(RD, Fields, Later);
      prepareInMethods(RD, Later);
    }
  }

  // Pointers (raw or smart), and holders made with nullptr, are null until code creates them.
  static bool nullable(const FieldDecl* F) {
    QualType T = F->getType();
    if (isModuleHolderClass(T->getAsCXXRecordDecl()))
      return false;
    return T->isPointerType() || pointeeRecord(T) != T->getAsCXXRecordDecl();
  }

  // A holder (`Net model;`, `Net model{}`) constructs its module unless made from nullptr.
  static bool nullInit(const FieldDecl* F, const Expr* Init) {
    if (!isModuleHolderClass(F->getType()->getAsCXXRecordDecl()))
      return isNullInit(Init);
    return anyOf(Init, [](const Stmt* S) { return isa<CXXNullPtrLiteralExpr>(S); });
  }

  // Whether F holds an object at the end of Ctor (nullptr: an implicit constructor).
  bool existsAfter(const CXXConstructorDecl* Ctor, const FieldDecl* F) const {
    const Expr* Init = F->getInClassInitializer();
    bool Null = Init ? nullInit(F, Init) : nullable(F);
    if (Ctor)
      for (const CXXCtorInitializer* I : Ctor->inits())
        if (I->isWritten() && I->getMember() == F)
          Null = nullInit(F, I->getInit());
    if (!Null)
      return true;
    const auto* Body = Ctor ? dyn_cast_or_null<CompoundStmt>(Ctor->getBody()) : nullptr;
    return Body &&
           llvm::any_of(Body->body(), [&](const Stmt* S) { return definitelyAssigns(S, F); });
  }

  // User constructors with a body in this file (delegating ones prepare through their target).
  std::vector<const CXXConstructorDecl*> constructors(const CXXRecordDecl* RD) const {
    std::vector<const CXXConstructorDecl*> Out;
    for (const CXXConstructorDecl* Ctor : RD->ctors())
      if (!Ctor->isImplicit() && !Ctor->isCopyOrMoveConstructor() && Ctor->hasBody() &&
          !Ctor->isDelegatingConstructor() && isa<CompoundStmt>(Ctor->getBody()) &&
          Ctx.inMainFile(Ctor->getBody()->getBeginLoc()))
        Out.push_back(Ctor);
    return Out;
  }

  bool existsAfterSomeConstructor(const CXXRecordDecl* RD, const FieldDecl* F) const {
    std::vector<const CXXConstructorDecl*> Ctors = constructors(RD);
    if (Ctors.empty())
      return existsAfter(nullptr, F);
    return llvm::any_of(Ctors, [&](const CXXConstructorDecl* C) { return existsAfter(C, F); });
  }

  void prepareInConstructors(const CXXRecordDecl* RD, const std::vector<const FieldDecl*>& Fields,
                             const std::vector<const FieldDecl*>& Later) {
    std::vector<const FieldDecl*> Built;
    for (const FieldDecl* F : Fields)
      if (!llvm::is_contained(Later, F))
        Built.push_back(F);
    if (Built.empty())
      return;
    std::vector<const CXXConstructorDecl*> Ctors = constructors(RD);
    if (Ctors.empty()) {
      Ctx.warn(RD->getLocation(), Info.Id,
               "this class holds a model or optimizer but has no constructor to prepare it "
               "in: call accelerate::Accelerator::current().prepare(...) after it is built");
      return;
    }
    // An object of this class that exists before main runs its constructor before the
    // Accelerator exists: there the constructor cannot prepare (main must).
    auto Early = Ctx.staticInstances(RD);
    std::string Guard = Early.empty() ? "" : "if (accelerate::Accelerator::exists()) ";
    for (const auto& In : Early)
      Ctx.warn(In.Var->getBeginLoc(), Info.Id,
               "this object is constructed before main, when no Accelerator exists: its "
               "constructor cannot prepare its model and optimizer; construct it in main, "
               "or call accelerator.prepare(...) on them there");
    for (const CXXConstructorDecl* Ctor : Ctors)
      prepareAtEndOf(Ctor, Built, Guard);
    for (const FieldDecl* F : Built)
      Ctx.provide<PreparedObjects>().Vars.insert(F);
  }

  void prepareAtEndOf(const CXXConstructorDecl* Ctor, const std::vector<const FieldDecl*>& Built,
                      const std::string& Guard) {
    std::vector<const FieldDecl*> Here;
    for (const FieldDecl* F : Built)
      if (existsAfter(Ctor, F))
        Here.push_back(F);
      else // another constructor creates it: this one leaves it null
        Ctx.warn(Ctor->getLocation(), Info.Id,
                 "this constructor leaves '" + F->getName().str() +
                     "' null while another one creates it: call "
                     "accelerate::Accelerator::current().prepare(...) on it once it is created");
    if (Here.empty())
      return;
    const auto* Body = cast<CompoundStmt>(Ctor->getBody());
    Ctx.provide<AcceleratorRequests>().Runtime = true;
    Change C(Info.Id, Ctor->getLocation());
    std::string Text =
        Guard + MigrationContext::current(C) + ".prepare(" + argumentList(Here) + ");";
    if (Ctx.SM.getSpellingLineNumber(Body->getLBracLoc()) ==
        Ctx.SM.getSpellingLineNumber(Body->getRBracLoc()))
      C.insertBefore(Body->getRBracLoc(), " " + Text + " ");
    else
      C.insertBefore(Body->getRBracLoc(), "  " + Text + "\n" + Ctx.indentOf(Body->getRBracLoc()));
    Ctx.commit(C);
  }

  // Members null after construction: prepared in each member function that creates them,
  // after its last statement that does; where no such statement surely runs, a warning.
  void prepareInMethods(const CXXRecordDecl* RD, const std::vector<const FieldDecl*>& Later) {
    if (Later.empty())
      return;
    llvm::SmallPtrSet<const FieldDecl*, 4> Created;
    for (const CXXMethodDecl* M : RD->methods()) {
      const FunctionDecl* Def = M->getDefinition();
      if (isa<CXXConstructorDecl>(M) || isa<CXXDestructorDecl>(M) || M->isStatic() || !Def ||
          !Def->hasBody() || !Ctx.inMainFile(Def->getBody()->getBeginLoc()))
        continue;
      const auto* Body = dyn_cast<CompoundStmt>(Def->getBody());
      if (!Body)
        continue;
      const Stmt* After = nullptr;
      std::vector<const FieldDecl*> Here;
      for (const FieldDecl* F : Later)
        if (const Stmt* S = lastCreation(Body, F, Created)) {
          Here.push_back(F);
          if (!After || Ctx.SM.isBeforeInTranslationUnit(After->getBeginLoc(), S->getBeginLoc()))
            After = S;
        }
      if (Here.empty())
        continue;
      MigrationContext::Match Matched(Ctx, After->getBeginLoc());
      if (insertPrepareAfter(After, argumentList(Here)))
        for (const FieldDecl* F : Here)
          Ctx.provide<PreparedObjects>().Vars.insert(F);
    }
    for (const FieldDecl* F : Later)
      if (!Created.count(F))
        Ctx.warn(F->getLocation(), Info.Id,
                 "this member is null when its class is constructed and no member function of "
                 "the class creates it: call accelerate::Accelerator::current().prepare(...) on "
                 "it after it is created");
  }

  // The last statement of Body that surely creates F (a statement that creates it only on
  // some paths gets a warning and ends the search: the object may not exist after it).
  // Seen: the members this function assigns at all.
  const Stmt* lastCreation(const CompoundStmt* Body, const FieldDecl* F,
                           llvm::SmallPtrSetImpl<const FieldDecl*>& Seen) {
    const Stmt* Last = nullptr;
    for (const Stmt* S : Body->body()) {
      if (!assignsTo(S, F))
        continue;
      Seen.insert(F);
      if (!definitelyAssigns(S, F)) {
        MigrationContext::Match Matched(Ctx, S->getBeginLoc());
        Ctx.warn(S->getBeginLoc(), Info.Id,
                 "this creates the member only on some paths, so it may still be null after "
                 "it: call accelerate::Accelerator::current().prepare(...) on it where it "
                 "surely exists");
        return nullptr;
      }
      Last = S;
    }
    return Last;
  }

  // Whether F is assigned on every path through S (both branches of an if/else; not loops,
  // whose body may not run).
  bool definitelyAssigns(const Stmt* S, const ValueDecl* F) const {
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

  template <typename D> std::string argumentList(const std::vector<const D*>& Decls) const {
    std::string Args;
    for (ObjectKind K : {ObjectKind::Model, ObjectKind::Optimizer, ObjectKind::Scheduler})
      for (const D* X : Decls)
        if (classifyPreparable(X->getType()) == K)
          Args += (Args.empty() ? "" : ", ") + X->getName().str();
    return Args;
  }

  // A device the program holds by pointer (`device = new torch::Device(kCUDA or kCPU)`)
  // must be the device prepare moves the models to: it becomes the accelerator's.
  void rewriteDevicePointers() {
    for (const auto& N :
         match(cxxNewExpr(unless(isInTemplateInstantiation())).bind("n"), Ctx.AST)) {
      const auto* New = N.getNodeAs<CXXNewExpr>("n");
      const auto* Init = dyn_cast_or_null<CXXConstructExpr>(New->getConstructExpr());
      if (!Init || !isDevice(New->getAllocatedType()) || !Ctx.inMainFile(New->getBeginLoc()) ||
          Init->getNumArgs() == 0 || !isConstantDevice(Init))
        continue;
      MigrationContext::Match Matched(Ctx, New->getBeginLoc());
      const auto* Arg = dyn_cast<CXXMemberCallExpr>(Init->getArg(0)->IgnoreImplicit());
      if (Arg && Arg->getMethodDecl() && Arg->getMethodDecl()->getName() == "device" &&
          Arg->getRecordDecl() && Arg->getRecordDecl()->getName() == "Accelerator") {
        Matched.settled(); // migrated already
        continue;
      }
      SourceRange Parens = Init->getParenOrBraceRange();
      if (Parens.isInvalid()) { // `new torch::Device(x)` always has them; kept for safety
        Ctx.warn(New->getBeginLoc(), Info.Id,
                 "make this device the accelerator's: accelerator.device()");
        continue;
      }
      Change C(Info.Id, New->getBeginLoc());
      C.replace(SourceRange(Parens.getBegin(), Parens.getEnd()),
                "(" + Ctx.deviceExpr(DynTypedNode::create(*New), C) + ")");
      Ctx.commit(C);
    }
  }

  // Made from device constants only (kCUDA, kCPU, is_available(), a flag), not from a
  // device the program computed (an index from a variable is custom device logic).
  static bool isConstantDevice(const CXXConstructExpr* Init) {
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

  MigrationContext& Ctx;
  const RuleInfo& Info;
  llvm::SmallPtrSet<const ValueDecl*, 8> Evidence, Already;
  llvm::SmallPtrSet<const Stmt*, 4> WarnedRemade;
};

} // namespace

void runPrepare(MigrationContext& Ctx, const RuleInfo& Info) { PrepareMigration(Ctx, Info).run(); }

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule PrepareRuleEntry({
    PrepareInfo,
    runPrepare,
    /*Needs=*/{},
    /*Provides=*/{AnalysisId::PreparedObjects, AnalysisId::AcceleratorRequests},
    /*Rank=*/50,
});

} // namespace accel
