// What accelerate-device finds before it edits (DeviceSelection.h): the selected device
// variables, the CUDA devices passed as arguments, the "CUDA or exit" checks, the calls of
// custom device logic.

#include "analyses/DeviceSelection.h"

#include <clang/Basic/Builtins.h>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

bool isDeviceLike(QualType T) {
  if (T.isNull() || T->isReferenceType() || T->isPointerType())
    return false;
  return isDevice(T) || isDeviceTypeEnum(T);
}

const Expr* deviceInitOf(const ValueDecl* D) {
  if (const auto* V = dyn_cast<VarDecl>(D))
    return V->getInit();
  if (const auto* F = dyn_cast<FieldDecl>(D))
    return F->getInClassInitializer();
  return nullptr;
}

std::vector<const Expr*> ctorInitsOf(const FieldDecl* F) {
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

// The initialiser as the user wrote it. Conversions are not written: before C++17,
// `Device d = kCPU;` is an elided copy of a converted temporary, and the conversion's
// source range starts at the variable's name (replacing it gave
// `torch::Device accelerator.device();`).
const Expr* writtenInit(const Expr* E) {
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

bool alreadyAccelerated(const Expr* E) {
  return anyOf(E, [](const Stmt* S) {
    const auto* C = dyn_cast<CallExpr>(S);
    MemberCall M;
    if (!C || !getMemberCall(C, M) || M.Name != "device")
      return false;
    const auto* RD = M.Object->getType()->getAsCXXRecordDecl();
    return RD && RD->getQualifiedNameAsString() == "accelerate::Accelerator";
  });
}

DeviceSelection::DeviceSelection(MigrationContext& Ctx) : Ctx(Ctx) {
  collectCandidates();
  selectVariables();
}

bool DeviceSelection::isConstantDeviceExpr(const Expr* E) const {
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

void DeviceSelection::collectCandidates() {
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
  for (const auto& N :
       match(binaryOperator(isAssignmentOperator(), unless(isInTemplateInstantiation())).bind("b"),
             Ctx.AST)) {
    const auto* B = N.getNodeAs<BinaryOperator>("b");
    if (B->getOpcode() != BO_Assign || !Ctx.inMainFile(B->getBeginLoc()))
      continue;
    if (const ValueDecl* D = referencedDecl(B->getLHS()); D && Candidates.count(D))
      Assignments.push_back({D, B->getRHS(), B});
  }
}

void DeviceSelection::selectVariables() {
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
      Check(deviceInitOf(D));
      if (const auto* F = dyn_cast<FieldDecl>(D))
        for (const Expr* E : ctorInitsOf(F))
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

namespace {

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

} // namespace

std::vector<CudaRequirement> cudaRequirements(MigrationContext& Ctx) {
  std::vector<CudaRequirement> Out;
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
      if (leavesProgram(Missing, Main))
        Out.push_back({Cond, Call, Loc});
      return false;
    });
  }
  return Out;
}

std::vector<CudaArgument> cudaArguments(MigrationContext& Ctx) {
  std::vector<const Expr*> Selectors;
  for (const auto& N : match(declRefExpr(unless(isInTemplateInstantiation())).bind("e"), Ctx.AST))
    Selectors.push_back(N.getNodeAs<Expr>("e"));
  for (const auto& N : match(stringLiteral(unless(isInTemplateInstantiation())).bind("e"), Ctx.AST))
    Selectors.push_back(N.getNodeAs<Expr>("e"));
  std::vector<CudaArgument> Out;
  for (const Expr* S : Selectors) {
    if (!Ctx.inMainFile(S->getBeginLoc()) || !isCudaSelector(S))
      continue;
    auto [Root, Written, ToDevice] = constructionAround(Ctx, S);
    if (!ToDevice)
      continue;
    // Only where the value is consumed as an argument (not stored: that is the variable
    // logic, nor compared).
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
    bool ComputedIndex = false;
    if (const auto* CE = dyn_cast<CXXConstructExpr>(Written))
      ComputedIndex = CE->getNumArgs() >= 2 && !isa<CXXDefaultArgExpr>(CE->getArg(1)) &&
                      !CE->getArg(1)->isIntegerConstantExpr(Ctx.AST);
    Out.push_back({S, Written, ComputedIndex});
  }
  return Out;
}

std::vector<const CallExpr*> customDeviceCalls(MigrationContext& Ctx) {
  std::vector<const CallExpr*> Out;
  for (const CallExpr* Call : userCalls(Ctx)) {
    std::string N = calleeName(Call);
    if (N == "torch::cuda::device_count" || N == "c10::cuda::set_device" || N == "cudaSetDevice" ||
        N == "c10::cuda::device_count")
      Out.push_back(Call);
  }
  return Out;
}

} // namespace accel
