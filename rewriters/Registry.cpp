#include "RuleSupport.h"

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

std::vector<std::unique_ptr<Rule>> makeAllRules() {
  std::vector<std::unique_ptr<Rule>> R;
  // Order matters: loaders, devices and prepared objects are facts later rules read;
  // the accelerator declaration and the include come last.
  R.push_back(std::make_unique<FunctionRule>(DataLoaderInfo, runDataLoader));
  R.push_back(std::make_unique<FunctionRule>(DeviceInfo, runDevice));
  R.push_back(std::make_unique<FunctionRule>(PrepareInfo, runPrepare));
  R.push_back(std::make_unique<FunctionRule>(PlacementInfo, runPlacement));
  R.push_back(std::make_unique<FunctionRule>(BackwardInfo, runBackward));
  R.push_back(std::make_unique<FunctionRule>(ClipGradInfo, runClipGrad));
  // Hand-batched loops it splits between processes are sharded loops for the metrics;
  // reduced metrics are facts for deciding together.
  R.push_back(std::make_unique<FunctionRule>(ManualBatchingInfo, runManualBatching));
  R.push_back(std::make_unique<FunctionRule>(GatherMetricsInfo, runGatherMetrics));
  R.push_back(std::make_unique<FunctionRule>(DecideTogetherInfo, runDecideTogether));
  R.push_back(std::make_unique<FunctionRule>(MainProcessInfo, runMainProcess));
  R.push_back(std::make_unique<FunctionRule>(AcceleratorInfo, runAccelerator));
  R.push_back(std::make_unique<FunctionRule>(IncludeInfo, runInclude));
  return R;
}

const std::vector<RuleInfo>& allRuleInfos() {
  static const std::vector<RuleInfo> All = {
      IncludeInfo,       AcceleratorInfo,   DeviceInfo,         CustomDeviceInfo,
      PlacementInfo,     PrepareInfo,       DataLoaderInfo,     UnpreparedLoaderInfo,
      BackwardInfo,      ClipGradInfo,      GatherMetricsInfo,  MainProcessInfo,
      ManualBatchingInfo, DecideTogetherInfo};
  return All;
}

const RuleInfo* findRuleInfo(const std::string& Id) {
  for (const auto& I : allRuleInfos())
    if (Id == I.Id)
      return &I;
  return nullptr;
}

std::vector<const CallExpr*> userCalls(MigrationContext& Ctx) {
  std::vector<const CallExpr*> Out;
  for (const auto& N : match(callExpr(unless(isInTemplateInstantiation())).bind("c"), Ctx.AST))
    if (const auto* C = N.getNodeAs<CallExpr>("c"))
      if (Ctx.inMainFile(C->getBeginLoc()))
        Out.push_back(C);
  return Out;
}

std::vector<const VarDecl*> userVars(MigrationContext& Ctx) {
  std::vector<const VarDecl*> Out;
  for (const auto& N : match(varDecl(unless(isInstantiated())).bind("v"), Ctx.AST))
    if (const auto* V = N.getNodeAs<VarDecl>("v"))
      if (Ctx.inMainFile(V->getLocation()))
        Out.push_back(V);
  return Out;
}

unsigned writtenArgs(const CallExpr* Call) {
  unsigned N = 0;
  for (const Expr* A : Call->arguments())
    if (!isa<CXXDefaultArgExpr>(A))
      ++N;
  return N;
}

unsigned writtenArgs(const CXXConstructExpr* Construct) {
  unsigned N = 0;
  for (const Expr* A : Construct->arguments())
    if (!isa<CXXDefaultArgExpr>(A))
      ++N;
  return N;
}

SourceLocation editableLoc(MigrationContext& Ctx, SourceLocation Loc) {
  if (Loc.isFileID())
    return Loc;
  // A token of a macro argument is written in the file; one of a macro body is not ours.
  if (Ctx.SM.isMacroArgExpansion(Loc)) {
    SourceLocation S = Ctx.SM.getSpellingLoc(Loc);
    if (S.isFileID())
      return S;
  }
  return {};
}

SourceLocation nextTokenLoc(MigrationContext& Ctx, SourceLocation Loc, tok::TokenKind Kind) {
  Loc = editableLoc(Ctx, Loc);
  if (Loc.isInvalid())
    return {};
  auto T = Lexer::findNextToken(Loc, Ctx.SM, Ctx.AST.getLangOpts());
  if (T && T->is(Kind))
    return T->getLocation();
  return {};
}

SourceRange calleeNameRange(const CallExpr* Call) {
  const Expr* Callee = Call->getCallee()->IgnoreParenImpCasts();
  if (const auto* DR = dyn_cast<DeclRefExpr>(Callee))
    return {DR->getBeginLoc(), DR->getNameInfo().getEndLoc()};
  if (const auto* UL = dyn_cast<UnresolvedLookupExpr>(Callee))
    return {UL->getBeginLoc(), UL->getNameInfo().getEndLoc()};
  return {};
}

bool refersTo(const Stmt* S, const ValueDecl* D) {
  return anyOf(S, [D](const Stmt* X) {
    if (const auto* DR = dyn_cast<DeclRefExpr>(X))
      return DR->getDecl() == D;
    if (const auto* ME = dyn_cast<MemberExpr>(X))
      return ME->getMemberDecl() == D;
    return false;
  });
}

}  // namespace accel
