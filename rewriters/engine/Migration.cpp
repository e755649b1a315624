#include "accel/rewriters/engine/Migration.h"

#include "accel/rewriters/engine/Rule.h"

#include <clang/AST/ASTContext.h>
#include <clang/Basic/SourceManager.h>

#include <algorithm>

using namespace clang;

namespace accel {

// The --trace-only pass (TraceOnly.cpp): runs instead of the rules.
void runTraceOnly(MigrationContext& Ctx);

void IncludeCollector::onInclusion(SourceLocation HashLoc, StringRef FileName,
                                   CharSourceRange FilenameRange, OptionalFileEntryRef File) {
  if (HashLoc.isFileID() && !SM.isInSystemHeader(HashLoc))
    Out.push_back({HashLoc, FilenameRange.getEnd(), FileName.str()});
  if (IncludedFiles && File)
    IncludedFiles->push_back(File->getFileEntry().tryGetRealPathName().str());
}

unsigned unacknowledged(const std::vector<MigrationDiagnostic>& Diagnostics) {
  return std::count_if(Diagnostics.begin(), Diagnostics.end(),
                       [](const MigrationDiagnostic& D) { return !D.Acknowledged && !D.IsNote; });
}

UnitResult migrateUnit(ASTContext& AST, std::vector<IncludeSite> AllIncludes,
                       const UnitOptions& Options) {
  SourceManager& SM = AST.getSourceManager();
  FileID Target = Options.Target.isValid() ? Options.Target : SM.getMainFileID();
  UnitResult R;
  R.Original = SM.getBufferData(Target).str();
  collectProgramFacts(AST, Target, R);
  std::vector<IncludeSite> Includes;
  for (IncludeSite& I : AllIncludes)
    if (SM.getFileID(I.HashLoc) == Target)
      Includes.push_back(std::move(I));
  bool NoLibTorch =
      AST.getTranslationUnitDecl()->lookup(DeclarationName(&AST.Idents.get("torch"))).empty();
  if (NoLibTorch && !(Options.ForceAccelerator && R.DefinesMain)) {
    R.Migrated = R.Original;
    R.NoLibTorch = true;
    return R;
  }
  // Only the user's declarations are traversed: the LibTorch headers are most of the TU.
  std::vector<Decl*> Previous = AST.getTraversalScope();
  std::vector<Decl*> Scope;
  for (Decl* D : AST.getTranslationUnitDecl()->decls())
    if (SM.getFileID(SM.getExpansionLoc(D->getLocation())) == Target)
      Scope.push_back(D);
  AST.setTraversalScope(Scope);
  EditSink Sink(SM, AST.getLangOpts(), Target);
  MigrationContext Ctx(AST, Sink, std::move(Includes), Target);
  Ctx.ForceAccelerator = Options.ForceAccelerator;
  Ctx.KeepBatchNorm = Options.KeepBatchNorm;
  Ctx.ProjectMode = Options.ProjectMode;
  if (Options.TraceOnly) {
    runTraceOnly(Ctx);
  } else {
    for (const RuleEntry* Rule : rulesInOrder()) {
      // Without LibTorch only main's Accelerator (and its include) is wanted.
      if (NoLibTorch && !Rule->Info.RunsWithoutLibTorch)
        continue;
      Ctx.setRunningRule(Rule);
      Rule->Run(Ctx, Rule->Info);
      Ctx.setRunningRule(nullptr);
    }
  }
  R.Migrated = Sink.apply();
  R.Findings = Sink.findings();
  R.Rewrites = Sink.rewritesPerRule();
  R.MainConstructsAccelerator = Ctx.need<AcceleratorDecision>().MainHasAccelerator;
  // A fact of the code, not of the text (comments and strings can name current() too): the
  // file's own calls (collectProgramFacts) and those the kept changes wrote.
  for (const AppliedChange& C : Sink.applied())
    R.UsesCurrent |= C.CallsCurrent;
  AST.setTraversalScope(Previous);

  std::vector<const AppliedChange*> Comments;
  for (const AppliedChange& C : Sink.applied()) {
    if (C.isComment()) {
      Comments.push_back(&C);
      continue;
    }
    const RuleInfo* Info = findRuleInfo(C.RuleId);
    R.Diagnostics.push_back({C.RuleId, Info ? Info->Summary : C.RuleId,
                             Info ? Info->Explanation : "", C.Offset, C.Edits, false});
  }
  for (const Finding& F : R.Findings) {
    MigrationDiagnostic D{F.RuleId, F.Message, "", F.Offset, {}, F.Acknowledged, F.IsNote};
    for (const AppliedChange* C : Comments)
      if (C->baseRuleId() == F.RuleId && C->Offset == F.Offset && D.Fixes.empty())
        D.Fixes = C->Edits;
    R.Diagnostics.push_back(std::move(D));
  }
  std::stable_sort(R.Diagnostics.begin(), R.Diagnostics.end(),
                   [](const MigrationDiagnostic& A, const MigrationDiagnostic& B) {
                     return A.Offset < B.Offset;
                   });
  return R;
}

} // namespace accel
