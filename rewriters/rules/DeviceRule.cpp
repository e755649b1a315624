// accelerate-device: the device a program selects (torch::Device / DeviceType variables,
// `is_available() ? kCUDA : kCPU`, `if (is_available()) device = ...` chains, globals,
// statics, members, hard-coded torch::kCUDA arguments) becomes the accelerator's device;
// a "CUDA or exit" check follows the launcher (stops without CUDA unless --cpu asked for
// the CPU). Device logic the tool cannot map (device counts, explicit device indices from
// variables, set_device) is left alone with a warning under accelerate-custom-device
// (CustomDeviceRule.cpp). What the rule rewrites is found by analyses/DeviceSelection.cpp;
// this file writes the edits.

#include "rules/CustomDeviceRule.h"

#include "analyses/DeviceSelection.h"

using namespace clang;

namespace accel {

const RuleInfo DeviceInfo = {
    "accelerate-device", "device selection -> accelerator.device()",
    "each process owns one device, chosen by the launcher: use accelerator.device()"};

namespace {

struct Offsets {
  unsigned B, E;
};

// A "CUDA or exit" check (cudaRequirements) follows the launcher: it still stops where the
// original stopped (no CUDA) unless the run was launched with --cpu, which asks for the CPU
// (docs/rules.md, accelerate-device).
void rewriteCudaRequirements(MigrationContext& Ctx) {
  for (const CudaRequirement& R : cudaRequirements(Ctx)) {
    MigrationContext::Match Matched(Ctx, R.Loc);
    Change C(DeviceInfo.Id, R.Loc);
    std::string Acc = Ctx.accel(R.Call, C);
    std::string Text = Acc + ".device().is_cuda() || " + Acc + ".options().cpu().value()";
    // Parentheses unless the call is the whole condition (`!`, `==` and macros need them).
    if (R.Call->getBeginLoc().isMacroID() || R.Cond->IgnoreParenImpCasts() != R.Call)
      Text = "(" + Text + ")";
    C.replace(R.Call->getSourceRange(), Text);
    if (Ctx.commit(C))
      Ctx.note(R.Loc, DeviceInfo.Id,
               "the program's CUDA requirement now follows the launcher: it stops where "
               "CUDA is missing, as before, unless `accelerate launch --cpu` asked for the CPU");
  }
}

class DeviceMigration {
 public:
  DeviceMigration(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info), Sel(Ctx) {}

  void run() {
    for (const ValueDecl* D : Sel.selected())
      rewriteVariable(D);
    rewriteAssignments();
    rewriteLooseExpressions();
    rewriteCudaRequirements(Ctx);
    warnCustomLogic();
  }

 private:
  std::string deviceText(const DynTypedNode& At, QualType T, Change& C) {
    std::string A = Ctx.deviceExpr(At, C);
    return isDeviceTypeEnum(T) ? A + ".type()" : A;
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
    for (const Expr* I : ctorInitsOf(F))
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
    for (const auto& A : Sel.assignments()) {
      if (!Sel.selected().count(A.D) || !A.RHS || alreadyAccelerated(A.RHS))
        continue;
      MigrationContext::Match Matched(Ctx, A.At->getBeginLoc());
      if (!Sel.isConstantDeviceExpr(A.RHS)) {
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

  // A hard-coded CUDA device passed as an argument (cudaArguments) becomes the accelerator's
  // device, unless an edit above covers it already.
  void rewriteLooseExpressions() {
    llvm::SmallPtrSet<const Expr*, 8> Done;
    for (const CudaArgument& A : cudaArguments(Ctx)) {
      if (isHandled(A.Selector->getBeginLoc()) || Done.count(A.Written))
        continue;
      if (A.ComputedIndex) {
        Ctx.warn(A.Written->getBeginLoc(), CustomDeviceInfo.Id,
                 "a CUDA device with a computed index is custom multi-GPU logic; the "
                 "launcher assigns one device per process: use accelerator.device()");
        continue;
      }
      Done.insert(A.Written);
      Change C(Info.Id, A.Written->getBeginLoc());
      C.replace(A.Written->getSourceRange(), Ctx.deviceExpr(DynTypedNode::create(*A.Written), C));
      markHandled(A.Written->getSourceRange());
      Ctx.commit(C);
    }
  }

  void warnCustomLogic() {
    for (const CallExpr* Call : customDeviceCalls(Ctx))
      Ctx.warn(Call->getBeginLoc(), CustomDeviceInfo.Id, CustomDeviceInfo.Explanation);
  }

  MigrationContext& Ctx;
  const RuleInfo& Info;
  DeviceSelection Sel;
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
