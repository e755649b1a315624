// accelerate-prepare: models, optimizers and LR schedulers are prepared once, after they
// are constructed and before they are used: `accelerator.prepare(model, optimizer, ...)`
// (in place; any mix of ModuleHolders, modules by value, smart and raw pointers). Class
// members are prepared at the end of the class's constructors.

#include "RuleSupport.h"

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
        continue;  // globals: see below
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
    std::string Args = prepareArguments(Ready);
    if (!After) {
      // Only globals, which main does not assign: right after the Accelerator (the
      // accelerator rule writes it there, before anything else at the top of main).
      Ctx.provide<AcceleratorRequests>().MainPrologue.push_back("{acc}.prepare(" + Args + ");");
      for (const VarDecl* V : Ready)
        Ctx.provide<PreparedObjects>().Vars.insert(V);
      Matched.settled();  // accelerate-accelerator writes it
      return;
    }
    Change C(Info.Id, After->getBeginLoc());
    SourceLocation End = After->getEndLoc();
    if (!isa<DeclStmt>(After) && !isa<CompoundStmt>(After) && !isa<IfStmt>(After) &&
        !isa<ForStmt>(After) && !isa<WhileStmt>(After) && !isa<CXXForRangeStmt>(After)) {
      End = nextTokenLoc(Ctx, End, tok::semi);
      if (End.isInvalid())
        return;
    }
    C.insertAfter(End, "\n" + Ctx.indentOf(After->getBeginLoc()) + Ctx.accel(After) +
                           ".prepare(" + Args + ");");
    if (Ctx.commit(C))
      for (const VarDecl* V : Ready)
        Ctx.provide<PreparedObjects>().Vars.insert(V);
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
          Args += (Args.empty() ? "" : ", ") +
                  (V->hasGlobalStorage() && !V->isStaticLocal() ? Ctx.nameFromMain(V)
                                                                : V->getName().str());
    return Args;
  }

  static bool isNullInit(const Expr* E) {
    E = E->IgnoreImplicit();
    if (const auto* CE = dyn_cast<CXXConstructExpr>(E)) {
      if (CE->getNumArgs() == 0)
        return true;
      return CE->getNumArgs() == 1 &&
             isa<CXXNullPtrLiteralExpr>(CE->getArg(0)->IgnoreImplicit());
    }
    return isa<CXXNullPtrLiteralExpr>(E) || isa<GNUNullExpr>(E);
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
      if (const auto* MC = dyn_cast<CXXMemberCallExpr>(X))  // ptr.reset(new ...)
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

  void prepareMembers() {
    for (const auto& N : match(cxxRecordDecl(isDefinition(), unless(isInstantiated())).bind("r"),
                               Ctx.AST)) {
      const auto* RD = N.getNodeAs<CXXRecordDecl>("r");
      if (!Ctx.inMainFile(RD->getLocation()) || isModuleClass(RD) || RD->isLambda())
        continue;  // a Module's members are submodules: the model is prepared as a whole
      std::vector<const FieldDecl*> Fields;
      for (const FieldDecl* F : RD->fields())
        if (wanted(F) && !Already.count(F))
          Fields.push_back(F);
      if (Fields.empty())
        continue;
      std::string Args;
      for (ObjectKind K : {ObjectKind::Model, ObjectKind::Optimizer, ObjectKind::Scheduler})
        for (const FieldDecl* F : Fields)
          if (classifyPreparable(F->getType()) == K)
            Args += (Args.empty() ? "" : ", ") + F->getName().str();
      // An object of this class that exists before main runs its constructor before the
      // Accelerator exists: there the constructor cannot prepare (main must).
      auto Early = Ctx.staticInstances(RD);
      std::string Guard = Early.empty() ? "" : "if (accelerate::Accelerator::exists()) ";
      for (const auto& In : Early)
        Ctx.warn(In.Var->getBeginLoc(), Info.Id,
                 "this object is constructed before main, when no Accelerator exists: its "
                 "constructor cannot prepare its model and optimizer; construct it in main, "
                 "or call accelerator.prepare(...) on them there");
      bool Any = false;
      for (const CXXConstructorDecl* Ctor : RD->ctors()) {
        if (Ctor->isImplicit() || Ctor->isCopyOrMoveConstructor() || !Ctor->hasBody())
          continue;
        const auto* Body = dyn_cast<CompoundStmt>(Ctor->getBody());
        if (!Body || !Ctx.inMainFile(Body->getBeginLoc()))
          continue;
        // Delegating constructors prepare through their target.
        if (Ctor->isDelegatingConstructor())
          continue;
        Any = true;
        std::string Indent = Body->body_empty()
                                 ? Ctx.indentOf(Ctor->getBeginLoc()) + "  "
                                 : Ctx.indentOf(Body->body_back()->getBeginLoc());
        Ctx.provide<AcceleratorRequests>().Runtime = true;
        Change C(Info.Id, Ctor->getLocation());
        std::string Text =
            Guard + "accelerate::Accelerator::current().prepare(" + Args + ");";
        if (Ctx.SM.getSpellingLineNumber(Body->getLBracLoc()) ==
            Ctx.SM.getSpellingLineNumber(Body->getRBracLoc()))
          C.insertBefore(Body->getRBracLoc(), " " + Text + " ");
        else
          C.insertBefore(Body->getRBracLoc(),
                         "  " + Text + "\n" + Ctx.indentOf(Body->getRBracLoc()));
        Ctx.commit(C);
      }
      if (!Any) {
        Ctx.warn(RD->getLocation(), Info.Id,
                 "this class holds a model or optimizer but has no constructor to prepare it "
                 "in: call accelerate::Accelerator::current().prepare(...) after it is built");
        continue;
      }
      for (const FieldDecl* F : Fields)
        Ctx.provide<PreparedObjects>().Vars.insert(F);
    }
  }

  MigrationContext& Ctx;
  const RuleInfo& Info;
  llvm::SmallPtrSet<const ValueDecl*, 8> Evidence, Already;
};

}  // namespace

void runPrepare(MigrationContext& Ctx, const RuleInfo& Info) { PrepareMigration(Ctx, Info).run(); }

}  // namespace accel
