// accelerate-prepare: models, optimizers and LR schedulers are prepared after they are
// constructed and before their first training, and again after each statement that makes
// them anew: `accelerator.prepare(model, optimizer, ...)` (in place; any mix of
// ModuleHolders, modules by value, smart and raw pointers). Class members are prepared at
// the end of the class's constructors. What the rule asks about the code (which objects
// are wanted, where they are made and trained, whether members exist after construction)
// is analyses/PrepareFacts.cpp; this file decides where the prepare calls go and writes them.

#include "analyses/PrepareFacts.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo PrepareInfo = {
    "accelerate-prepare", "accelerator.prepare(models, optimizers, schedulers)",
    "prepare moves models to the accelerator's device, makes their parameters identical on "
    "all processes and installs gradient synchronisation; optimizers and schedulers are "
    "wrapped for gradient accumulation and mixed precision"};

namespace {

// `<accel>.prepare(Args);` on its own line after the statement After.
bool insertPrepareAfter(MigrationContext& Ctx, const RuleInfo& Info, const Stmt* After,
                        const std::string& Args) {
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
  C.insertAfter(End, "\n" + Ctx.indentOf(After->getBeginLoc()) + Ctx.accel(After, C) + ".prepare(" +
                         Args + ");");
  return Ctx.commit(C);
}

// Local and global objects: prepared in the block that declares them, after the statement
// that last makes them (and again after each statement that makes them anew).
class LocalPreparation {
 public:
  LocalPreparation(MigrationContext& Ctx, const RuleInfo& Info, PrepareFacts& Facts)
      : Ctx(Ctx), Info(Info), Facts(Facts) {}

  // Locals are prepared in the block that declares them; globals in main (objectsByBlock).
  void run() {
    for (const auto& [Block, Vars] : Facts.objectsByBlock())
      prepareIn(Block, Vars);
  }

 private:
  void prepareIn(const CompoundStmt* Block, const std::vector<const VarDecl*>& Vars) {
    std::vector<const VarDecl*> Todo;
    for (const VarDecl* V : Vars)
      if (!Facts.alreadyPrepared(V))
        Todo.push_back(V);
    if (Todo.empty()) {
      for (const VarDecl* V : Vars)
        Ctx.provide<PreparedObjects>().Vars.insert(V);
      return;
    }
    const Stmt* After = Facts.lastDefinition(Block, Todo);
    std::vector<const VarDecl*> Ready = readyAt(Block, After, Todo);
    if (Ready.empty())
      return;
    MigrationContext::Match Matched(Ctx, Ready.front()->getLocation());
    // Globals main does not assign: right after the Accelerator (the accelerator rule
    // writes it there, before anything else at the top of main).
    std::vector<const VarDecl*> Early, Made;
    for (const VarDecl* V : Ready)
      (Facts.lastDefinition(Block, {V}) ? Made : Early).push_back(V);
    if (!Early.empty()) {
      Ctx.provide<AcceleratorRequests>().MainPrologue.push_back("{acc}.prepare(" +
                                                                prepareArguments(Early) + ");");
      for (const VarDecl* V : Early)
        Ctx.provide<PreparedObjects>().Vars.insert(V);
      Matched.settled(); // accelerate-accelerator writes it
    }
    std::vector<std::pair<const Stmt*, const VarDecl*>> Makes;
    PrepareFacts::PreparePoints Points = Facts.preparePoints(Block, Made, Makes);
    for (const auto& [S, V] : Makes)
      warnIfRemadeAndTrained(S, V);
    for (const auto& [At, Part] : Points)
      if (insertPrepareAfter(Ctx, Info, At, prepareArguments(Part)))
        for (const VarDecl* V : Part)
          Ctx.provide<PreparedObjects>().Vars.insert(V);
  }

  // A loop or branch that makes the object anew and trains it: the prepare call after it
  // comes too late for the training inside, and the tool does not write into the body.
  void warnIfRemadeAndTrained(const Stmt* S, const VarDecl* V) {
    if (isa<DeclStmt>(S) || isa<Expr>(S) || !Facts.trains(S) || !WarnedRemade.insert(S).second)
      return;
    Ctx.warn(S->getBeginLoc(), Info.Id,
             "this statement makes '" + V->getName().str() +
                 "' anew and trains it inside: call accelerator.prepare(" + V->getName().str() +
                 ", ...) right after it is made, before its training, or gradients are not "
                 "synchronised across processes");
  }

  // Vars whose objects exist after `After`: objects held by pointers must not be null there.
  std::vector<const VarDecl*> readyAt(const CompoundStmt* Block, const Stmt* After,
                                      const std::vector<const VarDecl*>& Vars) {
    std::vector<const VarDecl*> Ready;
    for (const VarDecl* V : Vars) {
      bool Pointer = V->getType()->isPointerType() ||
                     pointeeRecord(V->getType()) != V->getType()->getAsCXXRecordDecl();
      bool Initialised = V->hasInit() && !Facts.isNullInit(V->getInit());
      if (Pointer && !Initialised && !(After && Facts.assignsTo(After, V)) &&
          !Facts.assignedIn(Block, V)) {
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

  MigrationContext& Ctx;
  const RuleInfo& Info;
  PrepareFacts& Facts;
  llvm::SmallPtrSet<const Stmt*, 4> WarnedRemade;
};

// Class members: prepared at the end of the constructors, or in the member function that
// creates them later.
class MemberPreparation {
 public:
  MemberPreparation(MigrationContext& Ctx, const RuleInfo& Info, PrepareFacts& Facts)
      : Ctx(Ctx), Info(Info), Facts(Facts) {}

  // Class members (membersByClass): those that exist once the object is constructed are
  // prepared at the end of the constructors; those a member function creates later
  // (compile(), fit(), ...) right after the statement of that function that creates the
  // last of them.
  void run() {
    for (const auto& M : Facts.membersByClass()) {
      prepareInConstructors(M.Class, M.Fields, M.Later);
      prepareInMethods(M.Class, M.Later);
    }
  }

 private:
  void prepareInConstructors(const CXXRecordDecl* RD, const std::vector<const FieldDecl*>& Fields,
                             const std::vector<const FieldDecl*>& Later) {
    std::vector<const FieldDecl*> Built;
    for (const FieldDecl* F : Fields)
      if (!llvm::is_contained(Later, F))
        Built.push_back(F);
    if (Built.empty())
      return;
    std::vector<const CXXConstructorDecl*> Ctors = Facts.constructors(RD);
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
      if (Facts.existsAfter(Ctor, F))
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
      if (insertPrepareAfter(Ctx, Info, After, argumentList(Here)))
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
      if (!Facts.assignsTo(S, F))
        continue;
      Seen.insert(F);
      if (!Facts.definitelyAssigns(S, F)) {
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

  template <typename D> std::string argumentList(const std::vector<const D*>& Decls) const {
    std::string Args;
    for (ObjectKind K : {ObjectKind::Model, ObjectKind::Optimizer, ObjectKind::Scheduler})
      for (const D* X : Decls)
        if (classifyPreparable(X->getType()) == K)
          Args += (Args.empty() ? "" : ", ") + X->getName().str();
    return Args;
  }

  MigrationContext& Ctx;
  const RuleInfo& Info;
  PrepareFacts& Facts;
};

// A device the program holds by pointer (`device = new torch::Device(kCUDA or kCPU)`)
// must be the device prepare moves the models to: it becomes the accelerator's.
void rewriteDevicePointers(MigrationContext& Ctx, const RuleInfo& Info, PrepareFacts& Facts) {
  for (const auto& N : match(cxxNewExpr(unless(isInTemplateInstantiation())).bind("n"), Ctx.AST)) {
    const auto* New = N.getNodeAs<CXXNewExpr>("n");
    const auto* Init = dyn_cast_or_null<CXXConstructExpr>(New->getConstructExpr());
    if (!Init || !isDevice(New->getAllocatedType()) || !Ctx.inMainFile(New->getBeginLoc()) ||
        Init->getNumArgs() == 0 || !Facts.isConstantDevice(Init))
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

} // namespace

void runPrepare(MigrationContext& Ctx, const RuleInfo& Info) {
  PrepareFacts Facts(Ctx);
  LocalPreparation(Ctx, Info, Facts).run();
  MemberPreparation(Ctx, Info, Facts).run();
  rewriteDevicePointers(Ctx, Info, Facts);
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule PrepareRuleEntry({
    PrepareInfo,
    runPrepare,
    /*Needs=*/{},
    /*Provides=*/{AnalysisId::PreparedObjects, AnalysisId::AcceleratorRequests},
    /*Rank=*/50,
});

} // namespace accel
