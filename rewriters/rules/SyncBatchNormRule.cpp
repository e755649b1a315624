// accelerate-sync-batch-norm: torch::nn::BatchNorm1d/2d/3d (and their Impl classes) become
// accelerate::nn::SyncBatchNorm1d/2d/3d wherever the type is written: members
// (`torch::nn::BatchNorm2d bn{nullptr};`), constructions (`register_module("bn",
// torch::nn::BatchNorm2d(64))`, inside a Sequential), template arguments
// (`std::make_shared<torch::nn::BatchNorm2dImpl>`), parameters and return types.
//
// Why: on N processes each process holds a share of the batch, and LibTorch's batch norm
// normalises with the statistics of that share, so the training is not the one-process
// training (outputs, gradients and running statistics differ). The runtime's modules take
// the statistics over the global batch; their options, members and state-dict names are
// LibTorch's, so nothing else in the program changes and checkpoints load either way.
// `accel-migrate --keep-batch-norm` turns the rule off (per-process statistics, no
// communication in batch norm: what PyTorch DDP does without SyncBatchNorm).

#include "analyses/RuleSupport.h"

#include <optional>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo SyncBatchNormInfo = {
    "accelerate-sync-batch-norm",
    "torch::nn::BatchNorm1d/2d/3d -> accelerate::nn::SyncBatchNorm1d/2d/3d (statistics over the "
    "global batch)",
    "on several processes LibTorch's batch norm uses the statistics of each process's share of "
    "the batch; accelerate::nn::SyncBatchNorm computes them over the global batch, so the "
    "training is the one-process training (--keep-batch-norm keeps per-process statistics)"};

namespace {

// The replacement for a written torch::nn::BatchNorm{1,2,3}d[Impl], if T names one.
std::optional<std::string> syncName(QualType T) {
  const auto* RD = T.isNull() ? nullptr : T->getAsCXXRecordDecl();
  if (!RD)
    return std::nullopt;
  const std::string Q = RD->getQualifiedNameAsString();
  for (const char* D : {"1", "2", "3"}) {
    const std::string Torch = std::string("torch::nn::BatchNorm") + D + "d";
    const std::string Sync = std::string("accelerate::nn::SyncBatchNorm") + D + "d";
    if (Q == Torch)
      return Sync;
    if (Q == Torch + "Impl")
      return Sync + "Impl";
  }
  return std::nullopt;
}

struct Spelling {
  SourceRange Range; // qualifier and name as written
  std::string Text;  // what replaces them
};

// Every written batch-norm type in the user's code, outermost spelling only: an elaborated
// `torch::nn::BatchNorm2d` and the record `BatchNorm2d` inside it are one spelling, and a
// template pattern and its instantiations share their locations.
std::vector<Spelling> spellings(MigrationContext& Ctx) {
  auto M = typeLoc(loc(qualType(hasDeclaration(
                       cxxRecordDecl(matchesName("^::torch::nn::BatchNorm[123]d(Impl)?$"))))))
               .bind("t");
  std::vector<Spelling> All;
  for (const auto& B : match(findAll(M), Ctx.AST)) {
    const auto* TL = B.getNodeAs<TypeLoc>("t");
    auto Name = TL ? syncName(TL->getType()) : std::nullopt;
    if (!Name || !Ctx.inMainFile(TL->getBeginLoc()))
      continue;
    All.push_back({TL->getSourceRange(), *Name});
  }
  const SourceManager& SM = Ctx.SM;
  auto Inside = [&](SourceRange In, SourceRange Out) {
    return !SM.isBeforeInTranslationUnit(In.getBegin(), Out.getBegin()) &&
           !SM.isBeforeInTranslationUnit(Out.getEnd(), In.getEnd()) && In != Out;
  };
  std::vector<Spelling> Outer;
  for (const auto& S : All) {
    bool Nested = std::any_of(All.begin(), All.end(),
                              [&](const Spelling& O) { return Inside(S.Range, O.Range); });
    bool Seen = std::any_of(Outer.begin(), Outer.end(),
                            [&](const Spelling& O) { return O.Range == S.Range; });
    if (!Nested && !Seen)
      Outer.push_back(S);
  }
  return Outer;
}

} // namespace

void runSyncBatchNorm(MigrationContext& Ctx, const RuleInfo& Info) {
  if (Ctx.KeepBatchNorm)
    return;
  const std::vector<Spelling> All = spellings(Ctx);
  // One written inside a macro body cannot be edited; converting the others would leave a
  // torch::nn::BatchNorm2d assigned to a SyncBatchNorm2d member, which does not compile:
  // then the file keeps all of them, with the reason.
  auto InMacro = [&](const Spelling& S) {
    return S.Range.getBegin().isMacroID() && editableLoc(Ctx, S.Range.getBegin()).isInvalid();
  };
  auto Blocker = std::find_if(All.begin(), All.end(), InMacro);
  SourceLocation First;
  for (const Spelling& S : All) {
    MigrationContext::Match Matched(Ctx, S.Range.getBegin());
    if (Blocker != All.end()) {
      if (&S == &*Blocker)
        Ctx.warn(S.Range.getBegin(), Info.Id,
                 "batch norm written inside a macro: the batch norms of this file keep "
                 "per-process statistics; replace them by accelerate::nn::SyncBatchNorm by hand");
      else
        Matched.settled(); // the warning above covers the file
      continue;
    }
    Change C(Info.Id, S.Range.getBegin());
    C.replace(S.Range, S.Text);
    if (!Ctx.commit(C))
      continue;
    Ctx.provide<AcceleratorRequests>().Runtime = true; // the include of the runtime
    if (First.isInvalid())
      First = S.Range.getBegin();
  }
  if (First.isValid())
    Ctx.note(First, Info.Id,
             "batch norm now takes its statistics over the global batch on every process "
             "(accelerate::nn::SyncBatchNorm, one small all-reduce per layer in forward and in "
             "backward); accel-migrate --keep-batch-norm keeps per-process statistics");
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule SyncBatchNormRuleEntry({
    SyncBatchNormInfo,
    runSyncBatchNorm,
    /*Needs=*/{},
    /*Provides=*/{AnalysisId::AcceleratorRequests},
    /*Rank=*/170,
});

} // namespace accel
