#include "accel/rewriters/analyses/TorchTypes.h"

#include <clang/AST/DeclTemplate.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/StmtVisitor.h>

using namespace clang;

namespace accel {

bool inLibraryCode(const SourceManager& SM, SourceLocation L) {
  L = SM.getExpansionLoc(L);
  if (L.isInvalid() || SM.isInSystemHeader(L))
    return true;
  StringRef Path = SM.getFilename(L);
  for (StringRef Dir : {"/torch/csrc/", "/ATen/", "/c10/", "/caffe2/"})
    if (Path.contains(Dir))
      return true;
  return Path.empty();
}

static const CXXRecordDecl* recordOf(QualType T) {
  if (T.isNull())
    return nullptr;
  T = T.getNonReferenceType().getCanonicalType();
  return T->getAsCXXRecordDecl();
}

static bool hasQualName(const NamedDecl* D, StringRef Name) {
  return D && D->getQualifiedNameAsString() == Name;
}

bool isTensor(QualType T) {
  const auto* RD = recordOf(T);
  return RD && (hasQualName(RD, "at::Tensor") || hasQualName(RD, "torch::autograd::Variable"));
}
bool isDevice(QualType T) { return hasQualName(recordOf(T), "c10::Device"); }
bool isTensorOptions(QualType T) { return hasQualName(recordOf(T), "c10::TensorOptions"); }
bool isDeviceTypeEnum(QualType T) {
  if (T.isNull())
    return false;
  const auto* ET = T.getNonReferenceType().getCanonicalType()->getAs<EnumType>();
  return ET && hasQualName(ET->getDecl(), "c10::DeviceType");
}

static bool derivesFrom(const CXXRecordDecl* RD, StringRef Base) {
  if (!RD || !RD->hasDefinition())
    return false;
  RD = RD->getDefinition();
  if (hasQualName(RD, Base))
    return true;
  for (const auto& B : RD->bases())
    if (derivesFrom(B.getType()->getAsCXXRecordDecl(), Base))
      return true;
  return false;
}

bool isModuleClass(const CXXRecordDecl* RD) { return derivesFrom(RD, "torch::nn::Module"); }
bool isModuleHolderClass(const CXXRecordDecl* RD) {
  return derivesFrom(RD, "torch::nn::ModuleHolder");
}
bool isOptimizerClass(const CXXRecordDecl* RD) {
  return derivesFrom(RD, "torch::optim::Optimizer");
}
bool isSchedulerClass(const CXXRecordDecl* RD) {
  return derivesFrom(RD, "torch::optim::LRScheduler");
}

const CXXRecordDecl* pointeeRecord(QualType T) {
  if (T.isNull())
    return nullptr;
  T = T.getNonReferenceType().getCanonicalType();
  if (const auto* PT = T->getAs<PointerType>())
    return recordOf(PT->getPointeeType());
  const auto* RD = T->getAsCXXRecordDecl();
  if (const auto* Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RD)) {
    std::string N = Spec->getQualifiedNameAsString();
    if ((N == "std::shared_ptr" || N == "std::unique_ptr") && Spec->getTemplateArgs().size() > 0 &&
        Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type)
      return recordOf(Spec->getTemplateArgs()[0].getAsType());
  }
  return RD;
}

ObjectKind classifyPreparable(QualType T) {
  const CXXRecordDecl* RD = pointeeRecord(T);
  if (!RD)
    return ObjectKind::None;
  if (isModuleHolderClass(RD) || isModuleClass(RD))
    return ObjectKind::Model;
  if (isOptimizerClass(RD))
    return ObjectKind::Optimizer;
  if (isSchedulerClass(RD))
    return ObjectKind::Scheduler;
  return ObjectKind::None;
}

bool getMemberCall(const CallExpr* Call, MemberCall& Out) {
  if (!Call)
    return false;
  const Expr* Callee = Call->getCallee()->IgnoreParens();
  if (const auto* ME = dyn_cast<MemberExpr>(Callee)) {
    if (!ME->getMemberDecl()->getDeclName().isIdentifier())
      return false;
    Out = {ME->getMemberDecl()->getName(), ME->getBase(), ME->isArrow(), ME->getMemberLoc(),
           ME->getOperatorLoc()};
    return true;
  }
  if (const auto* DE = dyn_cast<CXXDependentScopeMemberExpr>(Callee)) {
    if (DE->isImplicitAccess() || !DE->getMember().isIdentifier())
      return false;
    Out = {DE->getMember().getAsIdentifierInfo()->getName(), DE->getBase(), DE->isArrow(),
           DE->getMemberLoc(), DE->getOperatorLoc()};
    return true;
  }
  if (const auto* UE = dyn_cast<UnresolvedMemberExpr>(Callee)) {
    if (UE->isImplicitAccess() || !UE->getMemberName().isIdentifier())
      return false;
    Out = {UE->getMemberName().getAsIdentifierInfo()->getName(), UE->getBase(), UE->isArrow(),
           UE->getMemberLoc(), UE->getOperatorLoc()};
    return true;
  }
  return false;
}

std::string calleeName(const CallExpr* Call) {
  if (!Call || isa<CXXMemberCallExpr>(Call))
    return "";
  if (const FunctionDecl* FD = Call->getDirectCallee())
    return FD->getQualifiedNameAsString();
  const Expr* Callee = Call->getCallee()->IgnoreParenImpCasts();
  if (const auto* UL = dyn_cast<UnresolvedLookupExpr>(Callee)) {
    std::string Q;
    if (auto* NNS = UL->getQualifier()) {
      llvm::raw_string_ostream OS(Q);
      NNS->print(OS, PrintingPolicy(LangOptions()));
    }
    return Q + UL->getName().getAsString();
  }
  return "";
}

const Expr* ignoreImplicit(const Expr* E) {
  while (E) {
    const Expr* Next = E->IgnoreImplicit()->IgnoreParens();
    if (const auto* CE = dyn_cast<CXXConstructExpr>(Next))
      if (CE->getNumArgs() == 1 && !isa<CXXTemporaryObjectExpr>(CE) &&
          CE->getParenOrBraceRange().isInvalid())
        Next = CE->getArg(0);
    if (const auto* MT = dyn_cast<MaterializeTemporaryExpr>(Next))
      Next = MT->getSubExpr();
    if (const auto* BT = dyn_cast<CXXBindTemporaryExpr>(Next))
      Next = BT->getSubExpr();
    if (Next == E)
      return E;
    E = Next;
  }
  return E;
}

const ValueDecl* referencedDecl(const Expr* E) {
  E = ignoreImplicit(E);
  if (!E)
    return nullptr;
  if (const auto* DR = dyn_cast<DeclRefExpr>(E))
    return DR->getDecl();
  if (const auto* ME = dyn_cast<MemberExpr>(E)) // this->x, x, obj.x, ptr->x
    if (isa<FieldDecl>(ME->getMemberDecl()))
      return ME->getMemberDecl();
  if (const auto* UO = dyn_cast<UnaryOperator>(E))
    if (UO->getOpcode() == UO_Deref)
      return referencedDecl(UO->getSubExpr());
  if (const auto* OC = dyn_cast<CXXOperatorCallExpr>(E))
    if ((OC->getOperator() == OO_Star || OC->getOperator() == OO_Arrow) && OC->getNumArgs() == 1)
      return referencedDecl(OC->getArg(0));
  if (const auto* MC = dyn_cast<CXXMemberCallExpr>(E)) // model.get(), ptr.get()
    if (MC->getMethodDecl() && MC->getMethodDecl()->getName() == "get")
      return referencedDecl(MC->getImplicitObjectArgument());
  return nullptr;
}

bool isCudaSelector(const Stmt* S) {
  if (!S)
    return false;
  if (const auto* DR = dyn_cast<DeclRefExpr>(S)) {
    const ValueDecl* D = DR->getDecl();
    if (D->getName() == "kCUDA")
      return true;
    if (const auto* EC = dyn_cast<EnumConstantDecl>(D))
      return EC->getName() == "CUDA" &&
             hasQualName(cast<EnumDecl>(EC->getDeclContext()), "c10::DeviceType");
    return false;
  }
  if (const auto* C = dyn_cast<CallExpr>(S)) {
    std::string N = calleeName(C);
    return N == "torch::cuda::is_available" || N == "torch::cuda::cudnn_is_available";
  }
  if (const auto* SL = dyn_cast<StringLiteral>(S))
    return SL->getCharByteWidth() == 1 && SL->getString().starts_with("cuda");
  return false;
}

bool mentionsCuda(const Stmt* S) {
  if (!S)
    return false;
  if (isCudaSelector(S))
    return true;
  for (const Stmt* C : S->children())
    if (mentionsCuda(C))
      return true;
  return false;
}

} // namespace accel
