// accelerate-device: the device a program selects (torch::Device / DeviceType variables,
// `is_available() ? kCUDA : kCPU`, `if (is_available()) device = ...` chains, globals,
// statics, members, hard-coded torch::kCUDA arguments) becomes the accelerator's device;
// a "CUDA or exit" check follows the launcher (stops without CUDA unless --cpu asked for
// the CPU). Device logic the tool cannot map (device counts, explicit device indices from
// variables, set_device) is left alone with a warning under accelerate-custom-device
// (CustomDeviceRule.cpp).

#include "rules/CustomDeviceRule.h"

#include "analyses/RuleSupport.h"

#include <clang/Basic/Builtins.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo DeviceInfo = {
    "accelerate-device", "device selection -> accelerator.device()",
    "each process owns one device, chosen by the launcher: use accelerator.device()"};

namespace {

struct Offsets {
  unsigned B, E;
};

// A program's "CUDA or exit" check: `if (!torch::cuda::is_available()) { ...; return 1; }`,
// `throw`, `std::exit`, TORCH_CHECK(torch::cuda::is_available(), ...). Migrated, it follows
// the launcher: it still stops where the original stopped (no CUDA) unless the run was
// launched with --cpu, which asks for the CPU (docs/rules.md, accelerate-device).

// Whether S leaves the program: a throw, a call of a noreturn function (exit, abort,
// TORCH_CHECK's failure), or a return from main. Lambdas do not count.
bool leavesProgram(const Stmt* S, const FunctionDecl* Main) {
  if (!S || isa<LambdaExpr>(S))
    return false;
  if (isa<CXXThrowExpr>(S))
    return true;
  if (isa<ReturnStmt>(S) && Main)
    return true;
  if (const auto* Call = dyn_cast<CallExpr>(S))
    if (const FunctionDecl* F = Call->getDirectCallee(); F && F->isNoReturn())
      return true;
  for (const Stmt* C : S->children())
    if (leavesProgram(C, Main))
      return true;
  return false;
}

// The truth of Cond when Call returns true (+1), false (-1) or unknown (0): the call under
// parentheses, casts to bool, `!`, `&&`/`||` and `== false`-style comparisons.
int senseOf(MigrationContext& Ctx, const Expr* Cond, const Expr* Call) {
  int Sense = 1;
  auto Visit = [&](const DynTypedNode& Parent, const DynTypedNode& Child) -> std::optional<int> {
    const auto* Below = Child.get<Expr>();
    if (Below == Cond)
      return Sense;
    const auto* P = Parent.get<Expr>();
    if (!P)
      return 0;
    if (const auto* U = dyn_cast<UnaryOperator>(P)) {
      if (U->getOpcode() != UO_LNot)
        return 0;
      Sense = -Sense;
    } else if (const auto* B = dyn_cast<BinaryOperator>(P)) {
      if (B->getOpcode() == BO_EQ || B->getOpcode() == BO_NE) {
        const Expr* Other = B->getLHS()->IgnoreParenImpCasts() == Below->IgnoreParenImpCasts()
                                ? B->getRHS()
                                : B->getLHS();
        const auto* Lit = dyn_cast<CXXBoolLiteralExpr>(Other->IgnoreParenImpCasts());
        if (!Lit)
          return 0;
        if (Lit->getValue() != (B->getOpcode() == BO_EQ))
          Sense = -Sense;
      } else if (!B->isLogicalOp()) {
        return 0;
      }
    } else if (const auto* C = dyn_cast<CallExpr>(P)) {
      // C10_UNLIKELY's __builtin_expect(cond, 0) around TORCH_CHECK's condition.
      if (C->getBuiltinCallee() != Builtin::BI__builtin_expect)
        return 0;
    } else if (!isa<ParenExpr>(P) && !isa<ImplicitCastExpr>(P) && !isa<CastExpr>(P) &&
               !isa<ExprWithCleanups>(P)) {
      return 0;
    }
    return std::nullopt;
  };
  // Its own cap, as before: a condition holds the call under a few operators at most. The
  // visit compares the node below each parent with Cond, so a Call that is Cond answers +1.
  return Ctx
      .walkAncestors(DynTypedNode::create(*Call), Visit, MigrationContext::Ascent::First,
                     /*MaxDepth=*/16)
      .value_or(0);
}

// The device construction around a CUDA selector S, as far as it goes up: Root, its
// outermost node (implicit ones included); Written, the outermost one written in the source;
// ToDevice, whether any of it is a device or tensor options.
struct DeviceConstruction {
  const Expr* Root;
  const Expr* Written;
  bool ToDevice;
};
DeviceConstruction constructionAround(MigrationContext& Ctx, const Expr* S) {
  DeviceConstruction D{S, S, isDevice(S->getType()) || isTensorOptions(S->getType())};
  // Returns whether the construction ends below Parent.
  auto Ends = [&](const DynTypedNode& Parent, const DynTypedNode&) {
    const auto* P = Parent.get<Expr>();
    if (!P)
      return true;
    bool Implicit = isa<ImplicitCastExpr>(P) || isa<MaterializeTemporaryExpr>(P) ||
                    isa<CXXBindTemporaryExpr>(P) || isa<ExprWithCleanups>(P);
    bool Construct = false;
    if (const auto* CE = dyn_cast<CXXConstructExpr>(P)) {
      if (isDevice(CE->getType()) || isTensorOptions(CE->getType())) {
        Construct = true;
        Implicit = !isa<CXXTemporaryObjectExpr>(CE) && CE->getParenOrBraceRange().isInvalid();
      }
    }
    bool Cast = isa<CXXFunctionalCastExpr>(P) && isDevice(P->getType());
    bool Cond = isa<ConditionalOperator>(P) || isa<ParenExpr>(P);
    if (!(Implicit || Construct || Cast || Cond))
      return true;
    if (Implicit && !(isDevice(P->getType()) || isTensorOptions(P->getType()) ||
                      P->getType().getCanonicalType().getUnqualifiedType() ==
                          D.Root->getType().getCanonicalType().getUnqualifiedType()))
      return true;
    D.Root = P;
    if (!Implicit)
      D.Written = P;
    if (isDevice(P->getType()) || isTensorOptions(P->getType()))
      D.ToDevice = true;
    return false;
  };
  // Its own cap, as before: a selector sits under a few conversions and constructions.
  Ctx.findAncestor(DynTypedNode::create(*S), Ends, MigrationContext::Ascent::First,
                   /*MaxDepth=*/12);
  return D;
}

void rewriteCudaRequirements(MigrationContext& Ctx) {
  for (const auto& N : match(ifStmt(unless(isInTemplateInstantiation())).bind("if"), Ctx.AST)) {
    const auto* If = N.getNodeAs<IfStmt>("if");
    const Expr* Cond = If->getCond();
    if (!Cond || If->getConditionVariable())
      continue;
    const FunctionDecl* Main = nullptr;
    if (Ctx.MainFn && encloses(Ctx, Ctx.MainFn->getBody(), If))
      Main = Ctx.MainFn;
    anyOf(Cond, [&](const Stmt* S) {
      const auto* Call = dyn_cast<CallExpr>(S);
      if (!Call || calleeName(Call) != "torch::cuda::is_available")
        return false;
      SourceLocation Loc = editableLoc(Ctx, Call->getBeginLoc());
      if (Loc.isInvalid() || !Ctx.inMainFile(Loc))
        return false;
      int Sense = senseOf(Ctx, Cond, Call);
      // The branch taken when CUDA is missing must leave the program.
      const Stmt* Missing = Sense > 0 ? If->getElse() : Sense < 0 ? If->getThen() : nullptr;
      if (!leavesProgram(Missing, Main))
        return false;
      MigrationContext::Match Matched(Ctx, Loc);
      Change C(DeviceInfo.Id, Loc);
      std::string Acc = Ctx.accel(Call, C);
      std::string Text = Acc + ".device().is_cuda() || " + Acc + ".options().cpu().value()";
      // Parentheses unless the call is the whole condition (`!`, `==` and macros need them).
      if (Call->getBeginLoc().isMacroID() || Cond->IgnoreParenImpCasts() != Call)
        Text = "(" + Text + ")";
      C.replace(Call->getSourceRange(), Text);
      if (Ctx.commit(C))
        Ctx.note(Loc, DeviceInfo.Id,
                 "the program's CUDA requirement now follows the launcher: it stops where "
                 "CUDA is missing, as before, unless `accelerate launch --cpu` asked for the CPU");
      return false;
    });
  }
}

class DeviceMigration {
 public:
  DeviceMigration(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info) {}

  void run() {
    collectCandidates();
    selectVariables();
    for (const ValueDecl* D : Selected)
      rewriteVariable(D);
    rewriteAssignments();
    rewriteLooseExpressions();
    rewriteCudaRequirements(Ctx);
    warnCustomLogic();
  }

 private:
  static bool isDeviceLike(QualType T) {
    if (T.isNull() || T->isReferenceType() || T->isPointerType())
      return false;
    return isDevice(T) || isDeviceTypeEnum(T);
  }

  std::string deviceText(const DynTypedNode& At, QualType T, Change& C) {
    std::string A = Ctx.deviceExpr(At, C);
    return isDeviceTypeEnum(T) ? A + ".type()" : A;
  }

  // A value computed from device constants only (kCUDA, kCPU, DeviceType::X,
  // is_available(), literals, other selected device variables).
  bool isConstantDeviceExpr(const Expr* E) const {
    return !anyOf(E, [this](const Stmt* S) {
      if (const auto* DR = dyn_cast<DeclRefExpr>(S)) {
        const ValueDecl* D = DR->getDecl();
        if (isa<EnumConstantDecl>(D) || isa<FunctionDecl>(D))
          return false;
        if (const auto* V = dyn_cast<VarDecl>(D))
          // `cuda_available ? kCUDA : kCPU`: a flag only chooses between constants.
          if (V->isConstexpr() || Selected.count(V) || Candidates.count(V) ||
              V->getType()->isBooleanType())
            return false;
        return true; // a runtime value: custom logic
      }
      return false;
    });
  }

  void collectCandidates() {
    for (const VarDecl* V : userVars(Ctx))
      if (!isa<ParmVarDecl>(V) && isDeviceLike(V->getType()))
        Candidates.insert(V);
    for (const auto& N : match(fieldDecl(unless(isInstantiated())).bind("f"), Ctx.AST)) {
      const auto* F = N.getNodeAs<FieldDecl>("f");
      if (Ctx.inMainFile(F->getLocation()) && isDeviceLike(F->getType()))
        Candidates.insert(F);
    }
    for (const CallExpr* Call : userCalls(Ctx)) {
      const Expr *L = nullptr, *R = nullptr;
      if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(Call))
        if (Op->getOperator() == OO_Equal && Op->getNumArgs() == 2) {
          L = Op->getArg(0);
          R = Op->getArg(1);
        }
      if (L)
        if (const ValueDecl* D = referencedDecl(L); D && Candidates.count(D))
          Assignments.push_back({D, R, Call});
    }
    for (const auto& N : match(
             binaryOperator(isAssignmentOperator(), unless(isInTemplateInstantiation())).bind("b"),
             Ctx.AST)) {
      const auto* B = N.getNodeAs<BinaryOperator>("b");
      if (B->getOpcode() != BO_Assign || !Ctx.inMainFile(B->getBeginLoc()))
        continue;
      if (const ValueDecl* D = referencedDecl(B->getLHS()); D && Candidates.count(D))
        Assignments.push_back({D, B->getRHS(), B});
    }
  }

  const Expr* initOf(const ValueDecl* D) const {
    if (const auto* V = dyn_cast<VarDecl>(D))
      return V->getInit();
    if (const auto* F = dyn_cast<FieldDecl>(D))
      return F->getInClassInitializer();
    return nullptr;
  }

  std::vector<const Expr*> ctorInits(const FieldDecl* F) const {
    std::vector<const Expr*> Out;
    const auto* RD = dyn_cast<CXXRecordDecl>(F->getParent());
    if (!RD)
      return Out;
    for (const CXXConstructorDecl* C : RD->ctors())
      for (const CXXCtorInitializer* I : C->inits())
        if (I->isWritten() && I->getMember() == F)
          Out.push_back(I->getInit());
    return Out;
  }

  void selectVariables() {
    // A variable is selected when CUDA is named in its initialiser or in an assignment to
    // it, or when it is computed from a selected variable (`Device device(device_type)`).
    bool Changed = true;
    while (Changed) {
      Changed = false;
      for (const ValueDecl* D : Candidates) {
        if (Selected.count(D))
          continue;
        bool Sel = false;
        auto Check = [&](const Expr* E) {
          if (!E)
            return;
          if (mentionsCuda(E))
            Sel = true;
          for (const ValueDecl* S : Selected)
            if (refersTo(E, S))
              Sel = true;
        };
        Check(initOf(D));
        if (const auto* F = dyn_cast<FieldDecl>(D))
          for (const Expr* E : ctorInits(F))
            Check(E);
        for (const auto& A : Assignments)
          if (A.D == D)
            Check(A.RHS);
        if (Sel) {
          Selected.insert(D);
          Changed = true;
        }
      }
    }
  }

  // The initialiser as the user wrote it. Conversions are not written: before C++17,
  // `Device d = kCPU;` is an elided copy of a converted temporary, and the conversion's
  // source range starts at the variable's name (replacing it gave
  // `torch::Device accelerator.device();`).
  static const Expr* writtenInit(const Expr* E) {
    for (int Depth = 0; Depth < 8; ++Depth) {
      E = E->IgnoreImplicit();
      // `DeviceType t{kCUDA};`: the braces stay, their element is the value.
      if (const auto* IL = dyn_cast<InitListExpr>(E);
          IL && IL->getNumInits() == 1 && !IL->getType()->isRecordType()) {
        E = IL->getInit(0);
        continue;
      }
      const auto* CE = dyn_cast<CXXConstructExpr>(E);
      if (!CE || isa<CXXTemporaryObjectExpr>(CE) || CE->getParenOrBraceRange().isValid() ||
          CE->getNumArgs() == 0 || isa<CXXDefaultArgExpr>(CE->getArg(0)))
        return E;
      E = CE->getArg(0);
    }
    return E;
  }

  // Replaces what initialises: the arguments of `Device d(args)` / `d{args}`, or the
  // expression of `d = expr`.
  bool replaceInit(Change& C, const Expr* Init, const std::string& Text) {
    const Expr* E = writtenInit(Init);
    if (const auto* CE = dyn_cast<CXXConstructExpr>(E)) {
      if (!isa<CXXTemporaryObjectExpr>(CE) && CE->getNumArgs() > 0 &&
          CE->getParenOrBraceRange().isValid()) {
        unsigned N = 0;
        for (const Expr* A : CE->arguments())
          if (!isa<CXXDefaultArgExpr>(A))
            ++N;
        if (N == 0)
          return false;
        SourceRange R(CE->getArg(0)->getBeginLoc(), CE->getArg(N - 1)->getEndLoc());
        C.replace(R, Text);
        markHandled(R);
        return true;
      }
    }
    if (const auto* PL = dyn_cast<ParenListExpr>(E)) { // dependent contexts
      if (PL->getNumExprs() == 0)
        return false;
      SourceRange R(PL->getExpr(0)->getBeginLoc(), PL->getExpr(PL->getNumExprs() - 1)->getEndLoc());
      C.replace(R, Text);
      markHandled(R);
      return true;
    }
    SourceRange R = E->getSourceRange();
    if (R.isInvalid())
      return false;
    C.replace(R, Text);
    markHandled(R);
    return true;
  }

  void markHandled(SourceRange R) {
    CharSourceRange CR =
        Lexer::makeFileCharRange(CharSourceRange::getTokenRange(R), Ctx.SM, Ctx.AST.getLangOpts());
    if (CR.isValid())
      Handled.push_back({Ctx.SM.getFileOffset(CR.getBegin()), Ctx.SM.getFileOffset(CR.getEnd())});
  }
  bool isHandled(SourceLocation L) const {
    L = Ctx.SM.getFileLoc(L);
    unsigned O = Ctx.SM.getFileOffset(L);
    for (const auto& H : Handled)
      if (O >= H.B && O < H.E)
        return true;
    return false;
  }

  bool alreadyAccelerated(const Expr* E) const {
    return anyOf(E, [](const Stmt* S) {
      const auto* C = dyn_cast<CallExpr>(S);
      MemberCall M;
      if (!C || !getMemberCall(C, M) || M.Name != "device")
        return false;
      const auto* RD = M.Object->getType()->getAsCXXRecordDecl();
      return RD && RD->getQualifiedNameAsString() == "accelerate::Accelerator";
    });
  }

  void rewriteVariable(const ValueDecl* D) {
    if (const auto* F = dyn_cast<FieldDecl>(D)) {
      rewriteField(F);
      return;
    }
    const auto* V = cast<VarDecl>(D);
    const Expr* Init = V->getInit();
    if (!Init)
      return; // selected by assignments, which are rewritten
    if (alreadyAccelerated(Init))
      return;
    MigrationContext::Match Matched(Ctx, V->getLocation());
    if (V->hasGlobalStorage() && !V->isStaticLocal()) {
      // Initialised before main: no Accelerator exists yet. Start on the CPU and take the
      // accelerator's device as soon as main has created it.
      if (V->getType().isConstQualified() || V->isConstexpr()) {
        Ctx.warn(V->getBeginLoc(), CustomDeviceInfo.Id,
                 "a constant device at namespace scope is fixed before main runs: make it "
                 "non-const (the tool then sets it at the start of main) or use "
                 "accelerate::Accelerator::current().device() where it is used");
        return;
      }
      if (!Ctx.MainFn) {
        Ctx.warn(V->getBeginLoc(), CustomDeviceInfo.Id,
                 "a device at namespace scope is initialised before main, and main is not in "
                 "this file: set it to accelerate::Accelerator::current().device() after the "
                 "Accelerator is created");
        return;
      }
      if (Ctx.provide<AcceleratorRequests>().DeferredGlobals.count(V)) {
        Matched.settled(); // set at the start of main already
        return;
      }
      if (Ctx.nameFromMain(V).empty()) {
        Ctx.warn(V->getBeginLoc(), CustomDeviceInfo.Id,
                 "this device is initialised before main, and main cannot set it (a private "
                 "member): set it to accelerate::Accelerator::current().device() once the "
                 "Accelerator exists");
        return;
      }
      Change C(Info.Id, V->getLocation());
      // torch::kCPU initialises a Device and a DeviceType alike; main assigns the right
      // one (accelerate-accelerator).
      if (replaceInit(C, Init, "torch::kCPU") && Ctx.commit(C))
        Ctx.provide<AcceleratorRequests>().DeferredGlobals.insert(V);
      return;
    }
    Change C(Info.Id, V->getLocation());
    if (replaceInit(C, Init, deviceText(DynTypedNode::create(*Init), V->getType(), C)))
      Ctx.commit(C);
  }

  // A device member: the Accelerator's device when the object is built. An object that
  // exists before main (a global `static Options options;`, a static member, or a member
  // of such) is built before the Accelerator: its initialiser falls back to the CPU then,
  // and main sets the member right after constructing the Accelerator.
  void rewriteField(const FieldDecl* F) {
    const auto* RD = dyn_cast<CXXRecordDecl>(F->getParent());
    auto Instances = Ctx.staticInstances(RD);
    Ctx.provide<AcceleratorRequests>().Runtime = true;
    bool Changed = false;
    if (const Expr* I = F->getInClassInitializer())
      Changed |= rewriteInitExpr(F, I, !Instances.empty());
    for (const Expr* I : ctorInits(F))
      Changed |= rewriteInitExpr(F, I, !Instances.empty());
    if (!Changed)
      return;
    std::string Type = isDeviceTypeEnum(F->getType()) ? ".type()" : "";
    for (const auto& In : Instances) {
      std::string Name = Ctx.MainFn ? Ctx.nameFromMain(In.Var) : "";
      if (Name.empty() || !In.Reachable || In.Var->getType().isConstQualified() ||
          F->getType().isConstQualified() ||
          !(F->getAccess() == AS_public || F->getAccess() == AS_none)) {
        Ctx.warn(In.Var->getBeginLoc(), CustomDeviceInfo.Id,
                 "this object is constructed before main, when no Accelerator exists: its "
                 "device member '" +
                     F->getName().str() +
                     "' starts on the CPU; set it to "
                     "accelerate::Accelerator::current().device() once main has constructed "
                     "the Accelerator");
        continue;
      }
      std::string Set =
          Name + In.Path + "." + F->getName().str() + " = {acc}.device()" + Type + ";";
      std::vector<std::string>& Prologue = Ctx.provide<AcceleratorRequests>().MainPrologue;
      if (std::find(Prologue.begin(), Prologue.end(), Set) == Prologue.end())
        Prologue.push_back(Set);
    }
  }

  // BeforeMain: the member's object can exist before main (rewriteField).
  bool rewriteInitExpr(const ValueDecl* D, const Expr* Init, bool BeforeMain) {
    if (alreadyAccelerated(Init))
      return false;
    MigrationContext::Match Matched(Ctx, Init->getBeginLoc());
    Change C(Info.Id, Init->getBeginLoc());
    std::string Text = BeforeMain ? MigrationContext::deviceBeforeMain(C)
                                  : MigrationContext::current(C) + ".device()";
    if (isDeviceTypeEnum(D->getType()))
      Text += ".type()";
    Ctx.provide<AcceleratorRequests>().Runtime = true;
    return replaceInit(C, Init, Text) && Ctx.commit(C);
  }

  void rewriteAssignments() {
    for (const auto& A : Assignments) {
      if (!Selected.count(A.D) || !A.RHS || alreadyAccelerated(A.RHS))
        continue;
      MigrationContext::Match Matched(Ctx, A.At->getBeginLoc());
      if (!isConstantDeviceExpr(A.RHS)) {
        Ctx.warn(A.At->getBeginLoc(), CustomDeviceInfo.Id,
                 "this device assignment computes the device at run time; replace it with "
                 "accelerator.device()");
        continue;
      }
      // Globals set in main keep their initial assignment out of the way.
      Change C(Info.Id, A.At->getBeginLoc());
      SourceRange R = writtenInit(A.RHS)->getSourceRange();
      C.replace(R, deviceText(DynTypedNode::create(*A.RHS), A.D->getType(), C));
      markHandled(R);
      Ctx.commit(C);
    }
  }

  // A hard-coded CUDA device passed where a Device or TensorOptions is expected:
  // `.to(torch::kCUDA)`, `torch::ones(.., torch::Device(torch::kCUDA, 0))`,
  // `TensorOptions().device(torch::kCUDA)`.
  void rewriteLooseExpressions() {
    std::vector<const Expr*> Selectors;
    for (const auto& N : match(declRefExpr(unless(isInTemplateInstantiation())).bind("e"), Ctx.AST))
      Selectors.push_back(N.getNodeAs<Expr>("e"));
    for (const auto& N :
         match(stringLiteral(unless(isInTemplateInstantiation())).bind("e"), Ctx.AST))
      Selectors.push_back(N.getNodeAs<Expr>("e"));
    llvm::SmallPtrSet<const Expr*, 8> Done;
    for (const Expr* S : Selectors) {
      if (!Ctx.inMainFile(S->getBeginLoc()) || !isCudaSelector(S) || isHandled(S->getBeginLoc()))
        continue;
      auto [Root, Written, ToDevice] = constructionAround(Ctx, S);
      if (!ToDevice || Done.count(Written))
        continue;
      // Only where the value is consumed as an argument (not stored: that is the variable
      // logic above, nor compared).
      const auto* Call = Ctx.parentAs<CallExpr>(Root);
      if (!Call && !Ctx.parentAs<CXXConstructExpr>(Root))
        continue;
      if (Call) {
        MemberCall M;
        if (getMemberCall(Call, M)) {
          const auto* RD = pointeeRecord(M.Object->getType());
          if (RD && (isModuleClass(RD) || isModuleHolderClass(RD)))
            continue; // model->to(kCUDA): the placement rule removes it
          if (RD && RD->getQualifiedNameAsString() == "accelerate::Accelerator")
            continue;
        }
      }
      if (const auto* CE = dyn_cast<CXXConstructExpr>(Written))
        if (CE->getNumArgs() >= 2 && !isa<CXXDefaultArgExpr>(CE->getArg(1)) &&
            !CE->getArg(1)->isIntegerConstantExpr(Ctx.AST)) {
          Ctx.warn(Written->getBeginLoc(), CustomDeviceInfo.Id,
                   "a CUDA device with a computed index is custom multi-GPU logic; the "
                   "launcher assigns one device per process: use accelerator.device()");
          continue;
        }
      Done.insert(Written);
      Change C(Info.Id, Written->getBeginLoc());
      C.replace(Written->getSourceRange(), Ctx.deviceExpr(DynTypedNode::create(*Written), C));
      markHandled(Written->getSourceRange());
      Ctx.commit(C);
    }
  }

  void warnCustomLogic() {
    for (const CallExpr* Call : userCalls(Ctx)) {
      std::string N = calleeName(Call);
      if (N == "torch::cuda::device_count" || N == "c10::cuda::set_device" ||
          N == "cudaSetDevice" || N == "c10::cuda::device_count")
        Ctx.warn(Call->getBeginLoc(), CustomDeviceInfo.Id, CustomDeviceInfo.Explanation);
    }
  }

  struct Assignment {
    const ValueDecl* D;
    const Expr* RHS;
    const Expr* At;
  };
  MigrationContext& Ctx;
  const RuleInfo& Info;
  llvm::SmallPtrSet<const ValueDecl*, 8> Candidates, Selected;
  std::vector<Assignment> Assignments;
  std::vector<Offsets> Handled;
};

} // namespace

void runDevice(MigrationContext& Ctx, const RuleInfo& Info) { DeviceMigration(Ctx, Info).run(); }

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule DeviceRuleEntry({
    DeviceInfo,
    runDevice,
    /*Needs=*/{},
    /*Provides=*/{AnalysisId::AcceleratorRequests},
    /*Rank=*/30,
});

} // namespace accel
