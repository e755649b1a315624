// accelerate-per-sample-randomness: dropout and noise drawn per sample (in a model's
// forward(), a loop over the batches, a data set's get()). Nothing to rewrite,
// but a difference the user must know about (issue #29, item 1): on one process the migrated
// program draws what the original draws (the prepared loader keeps the original's order and
// leaves the default generator where the original leaves it), while on N processes each
// process draws a dropout mask or a noise tensor for its share of every batch only. The runs
// then agree statistically, not bit for bit, and no rewrite can change that. So the rule
// leaves a note (never a comment, never a --check finding: migrated code still checks
// clean), once per migrated file, at the first place in that file, with the lines of the
// others. Places in the program's own headers count too: a model whose forward() calls
// torch::dropout is often defined in a header the migrated file includes, and the file's
// training differs on N processes all the same.

#include "analyses/RuleSupport.h"

#include <llvm/Support/Path.h>

#include <algorithm>
#include <vector>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo PerSampleRandomnessInfo = {
    "accelerate-per-sample-randomness",
    "dropout and noise drawn per sample: a note that N processes agree statistically",
    "on 1 process the migrated program computes what the original computes; on N processes "
    "each process draws for its share of the batch, so the runs agree statistically, not bit "
    "for bit (docs/data-loader.md, 'Random order')"};

namespace {

// A place that draws per sample, and what it is ("a torch::nn::Dropout module").
struct Site {
  SourceLocation Loc;
  std::string What;
};

bool hasName(const CXXRecordDecl* RD, std::initializer_list<StringRef> Names) {
  std::string N = RD->getQualifiedNameAsString();
  return std::find(Names.begin(), Names.end(), StringRef(N)) != Names.end();
}

// The dropout module class RD is or derives from, as the user names it
// ("torch::nn::Dropout"), or "". Holders and their Impl classes both count: the module
// draws a mask at every forward call in training mode.
std::string dropoutClass(const CXXRecordDecl* RD) {
  if (!RD || !RD->hasDefinition())
    return "";
  RD = RD->getDefinition();
  for (StringRef M : {"Dropout", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"})
    if (hasName(RD, {("torch::nn::" + M).str(), ("torch::nn::" + M + "Impl").str()}))
      return ("torch::nn::" + M).str();
  for (const CXXBaseSpecifier& B : RD->bases())
    if (std::string N = dropoutClass(B.getType()->getAsCXXRecordDecl()); !N.empty())
      return N;
  return "";
}

std::string dropoutModule(QualType T) { return dropoutClass(pointeeRecord(T)); }

// LibTorch's loaders and the runtime's prepared one (a migrated program iterates that).
bool isLoaderClass(const CXXRecordDecl* RD) {
  if (!RD || !RD->hasDefinition())
    return false;
  RD = RD->getDefinition();
  if (hasName(RD, {"torch::data::StatelessDataLoader", "torch::data::StatefulDataLoader",
                   "torch::data::DataLoaderBase", "accelerate::PreparedDataLoader"}))
    return true;
  for (const CXXBaseSpecifier& B : RD->bases())
    if (isLoaderClass(B.getType()->getAsCXXRecordDecl()))
      return true;
  return false;
}

bool isLoaderExpr(const Expr* E) { return E && isLoaderClass(pointeeRecord(E->getType())); }

// Calls that apply a dropout mask wherever they are written: they only act on activations.
bool isDropoutCall(StringRef Name) {
  StringRef Base = Name;
  if (Base.consume_front("torch::nn::functional::"))
    return Base == "dropout" || Base == "dropout2d" || Base == "dropout3d" ||
           Base == "alpha_dropout" || Base == "feature_alpha_dropout";
  if (!Base.consume_front("at::") && !Base.consume_front("torch::"))
    return false;
  Base.consume_back("_");
  return Base == "dropout" || Base == "alpha_dropout" || Base == "feature_dropout" ||
         Base == "feature_alpha_dropout";
}

// `torch::dropout(x, p, /*train=*/false)`: a dropout call that never draws (a variant of a
// program with dropout switched off, pe-mnist-nodropout of test/public).
bool switchedOff(const CallExpr* Call) {
  if (Call->getNumArgs() < 3)
    return false;
  const auto* B = dyn_cast<CXXBoolLiteralExpr>(Call->getArg(2)->IgnoreParenImpCasts());
  return B && !B->getValue();
}

// `register_module(name, m)`: it makes no module; m is judged where it is made (a
// construction) or declared (a member that is only registered draws nothing).
bool registers(const CallExpr* Call) {
  const FunctionDecl* FD = Call->getDirectCallee();
  return FD && FD->getDeclName().isIdentifier() && FD->getName() == "register_module";
}

// A class that is (or derives from) LibTorch's data set base: its get() runs once per
// sample the loader fetches.
bool isDatasetClass(const CXXRecordDecl* RD) {
  if (!RD || !RD->hasDefinition())
    return false;
  RD = RD->getDefinition();
  if (hasName(RD, {"torch::data::datasets::BatchDataset", "torch::data::datasets::Dataset"}))
    return true;
  for (const CXXBaseSpecifier& B : RD->bases())
    if (isDatasetClass(B.getType()->getAsCXXRecordDecl()))
      return true;
  return false;
}

// A data set's get(index) / get_batch(indices): the loader calls it for the samples of each
// batch, on N processes for this process's share only.
bool isDatasetGet(const FunctionDecl* FD) {
  const auto* MD = dyn_cast_or_null<CXXMethodDecl>(FD);
  return MD && MD->getDeclName().isIdentifier() &&
         (MD->getName() == "get" || MD->getName() == "get_batch") &&
         isDatasetClass(MD->getParent());
}

// Calls that draw random numbers: per sample where they run once per batch.
bool isRandomDraw(const CallExpr* Call) {
  MemberCall M;
  if (getMemberCall(Call, M)) // in-place draws into a tensor: mask.bernoulli_(p)
    return isTensor(M.Object->getType()) && (M.Name == "bernoulli" || M.Name == "bernoulli_" ||
                                             M.Name == "normal_" || M.Name == "uniform_");
  std::string Name = calleeName(Call);
  StringRef Base = Name;
  if (!Base.consume_front("at::") && !Base.consume_front("torch::"))
    return false;
  return Base == "rand" || Base == "randn" || Base == "randint" || Base == "rand_like" ||
         Base == "randn_like" || Base == "randint_like" || Base == "randperm" ||
         Base == "bernoulli" || Base == "normal" || Base == "multinomial";
}

// Whether S (a loop's header) steps a data loader's iterator: `it = loader->begin()`,
// `it != loader->end()`.
bool stepsLoader(const Stmt* S) {
  return anyOf(S, [](const Stmt* X) {
    MemberCall M;
    const auto* C = dyn_cast<CallExpr>(X);
    return C && getMemberCall(C, M) && (M.Name == "begin" || M.Name == "end") &&
           isLoaderExpr(M.Object);
  });
}

class Finder {
 public:
  Finder(MigrationContext& Ctx) : Ctx(Ctx) {}
  void collect();
  void report(const RuleInfo& Info);

 private:
  void add(SourceLocation Loc, std::string What);
  void collectModules();
  void collectCalls();
  void collectHeaders();
  const char* perBatchPlace(const CallExpr* Call) const;
  bool drawsSomewhere(const ValueDecl* D);
  const char* loopPlace(const Stmt* Loop, const Stmt* Child) const;

  MigrationContext& Ctx;
  std::vector<Site> Sites;
};

void Finder::add(SourceLocation Loc, std::string What) {
  // A NOLINT(accelerate-per-sample-randomness) on a line keeps that place out; the note then
  // goes to the next one, as for any finding.
  SourceLocation L = Ctx.SM.getExpansionLoc(Loc);
  if (!inProgramCode(Ctx, L) ||
      isSuppressedByNolint(Ctx.SM.getBufferData(Ctx.SM.getFileID(L)), Ctx.SM.getFileOffset(L),
                           PerSampleRandomnessInfo.Id))
    return;
  Sites.push_back({L, std::move(What)});
}

// Dropout modules: members, locals, globals and parameters by their type, and modules made
// in expressions (registered, in a Sequential, given to push_back) by theirs.
void Finder::collectModules() {
  for (const VarDecl* V : userVars(Ctx))
    if (std::string N = dropoutModule(V->getType()); !N.empty() && drawsSomewhere(V))
      add(V->getLocation(), "a " + N + " module");
  for (const auto& M : match(fieldDecl(unless(isInstantiated())).bind("f"), Ctx.AST)) {
    const auto* F = M.getNodeAs<FieldDecl>("f");
    if (std::string N = dropoutModule(F->getType()); !N.empty() && drawsSomewhere(F))
      add(F->getLocation(), "a " + N + " module");
  }
  // Written constructions only: `torch::nn::Dropout(0.5)`, `torch::nn::Dropout()`; copies
  // and the implicit constructions of a class's members make no new module.
  auto Made =
      expr(ast_matchers::anyOf(cxxTemporaryObjectExpr(), cxxFunctionalCastExpr(), cxxNewExpr()),
           unless(isInTemplateInstantiation()))
          .bind("e");
  for (const auto& M : match(Made, Ctx.AST)) {
    const auto* E = M.getNodeAs<Expr>("e");
    if (std::string N = dropoutModule(E->getType()); !N.empty())
      add(E->getBeginLoc(), "a " + N + " module");
  }
}

// Whether the dropout module D is used for anything but being registered: a member that
// is only handed to register_module (pytorch/examples' mnist with the call of conv2_drop
// taken out) draws nothing. Uses are counted in the migrated file and the program's
// headers, which have no parent map: all references against those inside register_module.
bool Finder::drawsSomewhere(const ValueDecl* D) {
  auto Ref =
      expr(ast_matchers::anyOf(memberExpr(member(equalsNode(D))), declRefExpr(to(equalsNode(D)))),
           unless(isInTemplateInstantiation()))
          .bind("u");
  auto Registered = callExpr(callee(functionDecl(ast_matchers::hasName("register_module"))),
                             forEachDescendant(Ref));
  size_t All = match(Ref, Ctx.AST).size(), Regs = match(Registered, Ctx.AST).size();
  for (const Decl* H : programHeaderDecls(Ctx)) {
    All += match(decl(forEachDescendant(Ref)), *H, Ctx.AST).size();
    Regs += match(decl(forEachDescendant(Registered)), *H, Ctx.AST).size();
  }
  return All > Regs;
}

// How the user wrote Call's callee, for the note: `torch::randn_like`, `Tensor::bernoulli_`.
std::string writtenCallee(MigrationContext& Ctx, const CallExpr* Call) {
  MemberCall M;
  if (getMemberCall(Call, M))
    return "Tensor::" + M.Name.str();
  std::string Written = Ctx.text(calleeNameRange(Call));
  return Written.empty() ? calleeName(Call) : Written;
}

void Finder::collectCalls() {
  for (const CallExpr* Call : userCalls(Ctx)) {
    if (isDropoutCall(calleeName(Call))) {
      if (!switchedOff(Call))
        add(Call->getBeginLoc(), "a call to " + writtenCallee(Ctx, Call));
    } else if (std::string N = dropoutModule(Call->getType()); !N.empty() && !registers(Call))
      add(Call->getBeginLoc(), "a " + N + " module"); // make_shared
    else if (isRandomDraw(Call))
      if (const char* Where = perBatchPlace(Call))
        add(Call->getBeginLoc(), writtenCallee(Ctx, Call) + " in " + Where);
  }
}

// The program's headers lie outside the AST's traversal scope (Migration.cpp: the migrated
// file's declarations only) and have no parent map, so each of their declarations is matched
// on its own: dropout modules (members, made in expressions) and calls, and random draws in a
// module's forward(). A draw in a loop over a loader written in a header is not seen
// (docs/rules.md says so).
void Finder::collectHeaders() {
  for (const Decl* D : programHeaderDecls(Ctx)) {
    auto Calls = callExpr(unless(isInTemplateInstantiation())).bind("c");
    for (const auto& M : match(decl(forEachDescendant(Calls)), *D, Ctx.AST)) {
      const auto* Call = M.getNodeAs<CallExpr>("c");
      if (isDropoutCall(calleeName(Call))) {
        if (!switchedOff(Call))
          add(Call->getBeginLoc(), "a call to " + writtenCallee(Ctx, Call));
      } else if (std::string N = dropoutModule(Call->getType()); !N.empty() && !registers(Call))
        add(Call->getBeginLoc(), "a " + N + " module");
    }
    for (const auto& M : match(decl(forEachDescendant(fieldDecl().bind("f"))), *D, Ctx.AST)) {
      const auto* F = M.getNodeAs<FieldDecl>("f");
      if (std::string N = dropoutModule(F->getType()); !N.empty() && drawsSomewhere(F))
        add(F->getLocation(), "a " + N + " module");
    }
    auto Method = cxxMethodDecl(ast_matchers::hasAnyName("forward", "get", "get_batch"),
                                forEachDescendant(Calls))
                      .bind("m");
    for (const auto& M : match(decl(forEachDescendant(Method)), *D, Ctx.AST)) {
      const auto* Call = M.getNodeAs<CallExpr>("c");
      const auto* MD = M.getNodeAs<CXXMethodDecl>("m");
      if (!isRandomDraw(Call))
        continue;
      if (MD->getName() == "forward" && isModuleClass(MD->getParent()))
        add(Call->getBeginLoc(), writtenCallee(Ctx, Call) + " in a module's forward()");
      else if (isDatasetGet(MD))
        add(Call->getBeginLoc(),
            writtenCallee(Ctx, Call) + " in a data set's " + MD->getName().str() + "()");
    }
  }
}

// Why Child, directly under Loop, runs once per batch, or nullptr: it is the body of a loop
// over a data loader (range-for, or a loop stepping the loader's iterator) or of a hand-cut
// batch loop that accelerate-manual-batching shares out.
const char* Finder::loopPlace(const Stmt* Loop, const Stmt* Child) const {
  if (const auto* R = dyn_cast<CXXForRangeStmt>(Loop))
    return Child == R->getBody() && isLoaderExpr(R->getRangeInit()) ? "a loop over a data loader"
                                                                    : nullptr;
  if (const auto* F = dyn_cast<ForStmt>(Loop)) {
    if (Child != F->getBody())
      return nullptr;
    if (stepsLoader(F->getInit()) || stepsLoader(F->getCond()))
      return "a loop over a data loader";
    return Ctx.need<ShardedBatches>().Loops.count(F) ? "a loop over hand-cut batches" : nullptr;
  }
  if (const auto* W = dyn_cast<WhileStmt>(Loop))
    return Child == W->getBody() && stepsLoader(W->getCond()) ? "a loop over a data loader"
                                                              : nullptr;
  if (const auto* D = dyn_cast<DoStmt>(Loop))
    return Child == D->getBody() && stepsLoader(D->getCond()) ? "a loop over a data loader"
                                                              : nullptr;
  return nullptr;
}

// Where Call runs once per batch: inside the body of a loop over the data (at any depth in
// its function), in a module's forward(), which the loop calls, or in a data set's get(),
// which the loader calls for each sample (on N processes for this process's share only, so
// each draws other numbers for other samples). nullptr elsewhere: noise drawn once to make
// synthetic data, weights initialised in a constructor.
const char* Finder::perBatchPlace(const CallExpr* Call) const {
  auto Place = Ctx.walkAncestors(
      DynTypedNode::create(*Call),
      [&](const DynTypedNode& P, const DynTypedNode& Below) -> std::optional<const char*> {
        if (const auto* FD = P.get<FunctionDecl>()) {
          const auto* MD = dyn_cast<CXXMethodDecl>(FD);
          bool Forward = MD && MD->getDeclName().isIdentifier() && MD->getName() == "forward" &&
                         isModuleClass(MD->getParent());
          if (Forward)
            return "a module's forward()";
          return isDatasetGet(FD) ? "a data set's get()" : nullptr;
        }
        const Stmt* Child = Below.get<Stmt>();
        if (const Stmt* S = P.get<Stmt>(); S && Child && isLoop(S))
          if (const char* Where = loopPlace(S, Child))
            return Where;
        return std::nullopt;
      });
  return Place.value_or(nullptr);
}

void Finder::collect() {
  collectModules();
  collectCalls();
  collectHeaders();
  // The migrated file's places first: the note stands in the file the user migrates when it
  // can; a header's place leads only when the file itself has none.
  std::stable_sort(Sites.begin(), Sites.end(), [this](const Site& A, const Site& B) {
    bool MainA = Ctx.inMainFile(A.Loc), MainB = Ctx.inMainFile(B.Loc);
    if (MainA != MainB)
      return MainA;
    return Ctx.SM.isBeforeInTranslationUnit(A.Loc, B.Loc);
  });
}

// A header's place as the note names it: "model.h:12".
std::string placeName(const MigrationContext& Ctx, SourceLocation L) {
  return llvm::sys::path::filename(Ctx.SM.getFilename(L)).str() + ":" +
         std::to_string(Ctx.SM.getExpansionLineNumber(L));
}

// One note at the first place, naming the lines of the others (at most five).
void Finder::report(const RuleInfo& Info) {
  if (Sites.empty())
    return;
  const Site& First = Sites.front();
  std::vector<std::string> Others; // "12" in the migrated file, "model.h:12" in a header
  for (const Site& S : Sites) {
    std::string Place = Ctx.inMainFile(S.Loc) ? std::to_string(Ctx.SM.getExpansionLineNumber(S.Loc))
                                              : placeName(Ctx, S.Loc);
    bool FirstLine =
        Ctx.SM.getFileID(S.Loc) == Ctx.SM.getFileID(First.Loc) &&
        Ctx.SM.getExpansionLineNumber(S.Loc) == Ctx.SM.getExpansionLineNumber(First.Loc);
    if (!FirstLine && std::find(Others.begin(), Others.end(), Place) == Others.end())
      Others.push_back(std::move(Place));
  }
  std::string Also;
  for (size_t I = 0; I < Others.size() && I < 5; ++I)
    Also += (Also.empty() ? "" : ", ") + Others[I];
  if (Others.size() > 5)
    Also += " and " + std::to_string(Others.size() - 5) + " more";
  if (!Also.empty())
    Also = " (also line" + std::string(Others.size() > 1 ? "s " : " ") + Also + ")";
  // A diagnostic stands in the migrated file (an offset in it): a header's place is named in
  // the text, and the note stands at the #include through which the file reaches it.
  SourceLocation At = First.Loc;
  std::string Here = " here";
  if (!Ctx.inMainFile(At)) {
    Here = " at " + placeName(Ctx, First.Loc) + " (included here)";
    while (At.isValid() && !Ctx.inMainFile(At))
      At = Ctx.SM.getIncludeLoc(Ctx.SM.getFileID(At));
    if (At.isInvalid())
      return;
  }
  MigrationContext::Match Matched(Ctx, At);
  Ctx.note(At, Info.Id,
           "per-sample randomness (dropout / noise drawn per batch row): " + First.What + Here +
               Also + ": " + Info.Explanation);
}

} // namespace

void runPerSampleRandomness(MigrationContext& Ctx, const RuleInfo& Info) {
  Finder F(Ctx);
  F.collect();
  F.report(Info);
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule PerSampleRandomnessRuleEntry({
    PerSampleRandomnessInfo,
    runPerSampleRandomness,
    /*Needs=*/{AnalysisId::ShardedBatches},
    /*Provides=*/{},
    /*Rank=*/140,
});

} // namespace accel
