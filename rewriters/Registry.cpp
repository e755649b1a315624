#include "RuleSupport.h"

#include "accel/rewriters/ProjectRule.h"
#include "accel/rewriters/RuleOrder.h"

#include <llvm/Support/ErrorHandling.h>

#include <algorithm>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const char* analysisName(AnalysisId Id) {
  switch (Id) {
  case AnalysisId::PreparedLoaders:
    return "prepared-loaders";
  case AnalysisId::PreparedObjects:
    return "prepared-objects";
  case AnalysisId::ShardedBatches:
    return "sharded-batches";
  case AnalysisId::ReducedMetrics:
    return "reduced-metrics";
  case AnalysisId::AcceleratorRequests:
    return "accelerator-requests";
  case AnalysisId::AcceleratorDecision:
    return "accelerator-decision";
  case AnalysisId::Count:
    break;
  }
  return "?";
}

bool RuleEntry::needs(AnalysisId A) const {
  return std::find(Needs.begin(), Needs.end(), A) != Needs.end();
}
bool RuleEntry::provides(AnalysisId A) const {
  return std::find(Provides.begin(), Provides.end(), A) != Provides.end();
}

// The one list of rules. Order here only breaks ties between rules that do not depend on
// each other; it matters where their edits would overlap (the first committed wins).
// Almost every rule edits code that names the Accelerator, so it adds to
// accelerator-requests, which accelerate-accelerator reads last.
const std::vector<RuleEntry>& ruleTable() {
  using A = AnalysisId;
  static const std::vector<RuleEntry> Table = {
      {DataLoaderInfo, runDataLoader, {}, {A::PreparedLoaders, A::AcceleratorRequests}},
      {UnpreparedLoaderInfo, nullptr, {}, {}},
      {DeviceInfo, runDevice, {}, {A::AcceleratorRequests}},
      {CustomDeviceInfo, nullptr, {}, {}},
      {PrepareInfo, runPrepare, {}, {A::PreparedObjects, A::AcceleratorRequests}},
      {PlacementInfo,
       runPlacement,
       {A::PreparedLoaders, A::PreparedObjects},
       {A::AcceleratorRequests}},
      {BackwardInfo, runBackward, {}, {A::AcceleratorRequests}},
      {ClipGradInfo, runClipGrad, {}, {A::AcceleratorRequests}},
      {ManualBatchingInfo,
       runManualBatching,
       {A::PreparedLoaders},
       {A::ShardedBatches, A::AcceleratorRequests}},
      {GatherMetricsInfo,
       runGatherMetrics,
       {A::PreparedLoaders, A::ShardedBatches},
       {A::ReducedMetrics, A::AcceleratorRequests}},
      {DecideTogetherInfo,
       runDecideTogether,
       {A::PreparedLoaders, A::ShardedBatches, A::ReducedMetrics},
       {A::AcceleratorRequests}},
      {MainProcessInfo,
       runMainProcess,
       {A::PreparedLoaders, A::PreparedObjects, A::ShardedBatches, A::ReducedMetrics},
       {A::AcceleratorRequests}},
      {AutogradBackwardInfo, runAutogradBackward, {}, {A::AcceleratorRequests}},
      {PerSampleRandomnessInfo, runPerSampleRandomness, {A::ShardedBatches}, {}},
      {BatchShapeInfo, runBatchShape, {A::PreparedLoaders}, {}},
      {SharedRandomSeedInfo,
       runSharedRandomSeed,
       {A::PreparedLoaders, A::ReducedMetrics, A::ShardedBatches},
       {A::AcceleratorRequests}},
      {SyncBatchNormInfo, runSyncBatchNorm, {}, {A::AcceleratorRequests}},
      {AcceleratorInfo, runAccelerator, {A::AcceleratorRequests}, {A::AcceleratorDecision}},
      {IncludeInfo, runInclude, {A::AcceleratorDecision}, {}},
  };
  return Table;
}

const std::vector<const RuleEntry*>& rulesInOrder() {
  static const std::vector<const RuleEntry*> Ordered = [] {
    std::vector<RuleNode> Nodes;
    for (const RuleEntry& E : ruleTable()) {
      RuleNode N{E.Info.Id, {}, {}};
      for (AnalysisId A : E.Needs)
        N.Needs.push_back(analysisName(A));
      for (AnalysisId A : E.Provides)
        N.Provides.push_back(analysisName(A));
      Nodes.push_back(std::move(N));
    }
    RuleOrdering O = orderRules(Nodes);
    if (!O.Error.empty())
      llvm::report_fatal_error(llvm::Twine("accel-migrate: ") + O.Error, false);
    std::vector<const RuleEntry*> Out;
    for (std::size_t I : O.Order)
      if (ruleTable()[I].Run)
        Out.push_back(&ruleTable()[I]);
    return Out;
  }();
  return Ordered;
}

// Project rules run over the facts of every file (ProjectRule.h), in this order.
const std::vector<ProjectRuleEntry>& projectRuleTable() {
  static const std::vector<ProjectRuleEntry> Table = {
      {ProjectMainInfo, runProjectMain},
      {ProjectLinkInfo, runProjectLink},
  };
  return Table;
}

const std::vector<RuleInfo>& fileRuleInfos() {
  static const std::vector<RuleInfo> All = [] {
    std::vector<RuleInfo> Out;
    for (const RuleEntry& E : ruleTable())
      Out.push_back(E.Info);
    return Out;
  }();
  return All;
}

const std::vector<RuleInfo>& allRuleInfos() {
  static const std::vector<RuleInfo> All = [] {
    std::vector<RuleInfo> Out = fileRuleInfos();
    for (const ProjectRuleEntry& E : projectRuleTable())
      Out.push_back(E.Info);
    return Out;
  }();
  return All;
}

const RuleInfo* findRuleInfo(const std::string& Id) {
  for (const auto& I : allRuleInfos())
    if (Id == I.Id)
      return &I;
  return nullptr;
}

std::string ruleTableMarkdown() {
  auto Names = [](const std::vector<AnalysisId>& As) {
    std::string S;
    for (AnalysisId A : As)
      S += (S.empty() ? "" : ", ") + std::string(analysisName(A));
    return S.empty() ? std::string("-") : S;
  };
  std::string S =
      "| # | rule | summary | needs | provides |\n|--:|------|---------|-------|----------|\n";
  unsigned K = 0;
  for (const RuleEntry* E : rulesInOrder())
    S += "| " + std::to_string(++K) + " | `" + E->Info.Id + "` | " + E->Info.Summary + " | " +
         Names(E->Needs) + " | " + Names(E->Provides) + " |\n";
  for (const RuleEntry& E : ruleTable())
    if (!E.Run)
      S += "| - | `" + std::string(E.Info.Id) + "` | " + E.Info.Summary +
           " (warnings only) | - | - |\n";
  for (const ProjectRuleEntry& E : projectRuleTable())
    S += "| P" + std::to_string(&E - projectRuleTable().data() + 1) + " | `" + E.Info.Id + "` | " +
         E.Info.Summary + " (project mode) | all files' facts | - |\n";
  return S;
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

} // namespace accel
