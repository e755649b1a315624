// accelerate-shared-random-seed: C++ random engines (and srand) seeded from values that
// differ between processes (std::random_device, time(), anything that is not a constant)
// and used to decide data order, splits or the data itself (std::shuffle/std::sample over a
// sample list, draws outside the per-batch code). Every process would draw its own order,
// so the shards overlap and some samples are never seen (issue #29, item 4). The seed
// becomes `<accelerator>.shared_seed(<seed>)`: process 0's value on every process, the
// value itself on one process (no communication), so 1 process is the original program.
//
// shared_seed(x) is a collective: the rule wraps only seeds that every process reaches the
// same number of times. It refuses, with a warning at the seed, seeds evaluated before
// main (no Accelerator exists yet), under a condition that can differ between processes
// (a per-process value, is_main_process(), process_index()) and in loops over a process's
// batches. Engines used only per batch (a dataset's get(), a module's forward(), a loop
// over a data loader: per-sample noise) are left alone; an engine handed to code the rule
// cannot follow (a function of the user's, a copy) gets a warning instead of a guess.

#include "analyses/PerProcessValues.h"
#include "analyses/RuleSupport.h"

#include <map>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

const RuleInfo SharedRandomSeedInfo = {
    "accelerate-shared-random-seed",
    "seeds of engines and srand that decide data order -> process 0's seed on every process",
    "a random engine seeded differently on every process (std::random_device, time()) "
    "shuffles the samples differently on every process, so the shards overlap and some "
    "samples are never seen; accelerator.shared_seed(seed) gives every process process 0's "
    "seed (and is the seed itself on one process)"};

namespace {

// What one use of an engine does, from the least to the most telling.
enum class Use { PerSample, Unseen, Data, Order };

// One engine: a variable, a member, a temporary, or the C generator (srand/rand).
struct Engine {
  std::string Name;               // for messages
  std::vector<const Expr*> Seeds; // the arguments it is seeded with
  std::vector<std::pair<Use, SourceLocation>> Uses;
};

bool isStdRecord(const CXXRecordDecl* RD, std::initializer_list<StringRef> Names) {
  if (!RD)
    return false;
  std::string N = RD->getQualifiedNameAsString();
  StringRef S(N);
  if (!S.consume_front("std::"))
    return false;
  S.consume_front("__1::"); // libc++'s inline namespace
  for (StringRef Name : Names)
    if (S == Name)
      return true;
  return false;
}

// The standard library's engine templates (std::mt19937, std::default_random_engine, ...
// are specialisations of these).
bool isEngine(QualType T) {
  const auto* RD = T.isNull() ? nullptr : T.getNonReferenceType()->getAsCXXRecordDecl();
  if (const auto* Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(RD))
    RD = Spec->getSpecializedTemplate()->getTemplatedDecl();
  return isStdRecord(RD, {"mersenne_twister_engine", "linear_congruential_engine",
                          "subtract_with_carry_engine", "discard_block_engine",
                          "independent_bits_engine", "shuffle_order_engine"});
}

bool isRandomDevice(QualType T) {
  return !T.isNull() &&
         isStdRecord(T.getNonReferenceType()->getAsCXXRecordDecl(), {"random_device"});
}

bool isShuffle(const std::string& Name) {
  StringRef N(Name);
  return N == "std::shuffle" || N == "std::sample" || N == "std::random_shuffle" ||
         N == "std::ranges::shuffle" || N == "std::ranges::sample";
}

// Whether Call is `seed()`, `accelerator.shared_seed(x)` or any other call named Name.
bool isMemberNamed(const Expr* E, StringRef Name) {
  const auto* Call = dyn_cast_or_null<CallExpr>(ignoreImplicit(E));
  MemberCall M;
  return Call && getMemberCall(Call, M) && M.Name == Name;
}

class SeedFinder {
 public:
  SeedFinder(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info), PP(Ctx) {}
  void collect();
  void decide();

 private:
  void collectEngineSeeds();
  void collectCalls();
  void collectUses();
  void addConstruct(Engine& E, const Expr* Init);
  Use classify(const Expr* Ref);
  const char* perBatchPlace(const Stmt* S);
  std::string unevenPlace(const Expr* Seed);
  void share(const Engine& E, const Expr* Seed);

  MigrationContext& Ctx;
  const RuleInfo& Info;
  PerProcessValues PP;
  std::map<const void*, Engine> Engines; // by declaration; the C generator under &Info
  std::vector<Engine> Temporaries;
};

void SeedFinder::addConstruct(Engine& E, const Expr* Init) {
  const auto* CE = dyn_cast_or_null<CXXConstructExpr>(ignoreImplicit(Init));
  if (!CE) // `auto g = std::mt19937(seed)` is a functional cast around the construction
    if (const auto* FC = dyn_cast_or_null<CXXFunctionalCastExpr>(ignoreImplicit(Init)))
      CE = dyn_cast<CXXConstructExpr>(ignoreImplicit(FC->getSubExpr()));
  if (!CE || CE->getNumArgs() == 0 || isEngine(ignoreImplicit(CE->getArg(0))->getType()))
    return; // default seed (the same everywhere) or a copy of another engine
  E.Seeds.push_back(CE->getArg(0));
}

// Engines that are variables or members, and the seeds they are constructed with.
void SeedFinder::collectEngineSeeds() {
  for (const VarDecl* V : userVars(Ctx))
    if (isEngine(V->getType()) && !V->getType()->isReferenceType()) {
      Engine& E = Engines[V];
      E.Name = V->getNameAsString();
      addConstruct(E, V->getInit());
    }
  auto Ctors = cxxConstructorDecl(isDefinition(), unless(isInstantiated())).bind("c");
  for (const auto& M : match(Ctors, Ctx.AST))
    for (const CXXCtorInitializer* I : M.getNodeAs<CXXConstructorDecl>("c")->inits())
      if (const FieldDecl* F = I->getMember(); F && I->isWritten() && isEngine(F->getType())) {
        Engine& E = Engines[F];
        E.Name = F->getNameAsString();
        addConstruct(E, I->getInit());
      }
  for (const auto& M : match(fieldDecl(unless(isInstantiated())).bind("f"), Ctx.AST)) {
    const auto* F = M.getNodeAs<FieldDecl>("f");
    if (!isEngine(F->getType()))
      continue;
    Engine& E = Engines[F];
    E.Name = F->getNameAsString();
    if (F->hasInClassInitializer())
      addConstruct(E, F->getInClassInitializer());
  }
}

// Seeds given later (`gen.seed(x)`, `srand(x)`), engines made as temporaries, the C
// generator's uses, and a random_device used as the engine itself.
void SeedFinder::collectCalls() {
  for (const CallExpr* Call : userCalls(Ctx)) {
    std::string N = calleeName(Call);
    MemberCall M;
    if (getMemberCall(Call, M) && M.Name == "seed" && isEngine(M.Object->getType()) &&
        Call->getNumArgs() == 1) {
      if (const ValueDecl* D = referencedDecl(M.Object); D && Engines.count(D))
        Engines[D].Seeds.push_back(Call->getArg(0));
    } else if ((N == "srand" || N == "std::srand") && Call->getNumArgs() == 1) {
      Engines[&Info].Name = "the C generator (srand)";
      Engines[&Info].Seeds.push_back(Call->getArg(0));
    } else if (N == "rand" || N == "std::rand") {
      const char* Where = perBatchPlace(Call);
      Engines[&Info].Uses.push_back({Where ? Use::PerSample : Use::Data, Call->getBeginLoc()});
    } else if (N == "std::random_shuffle" && Call->getNumArgs() == 2) {
      Engines[&Info].Uses.push_back({Use::Order, Call->getBeginLoc()});
    }
    if (!isShuffle(N))
      continue;
    for (const Expr* A : Call->arguments()) {
      A = ignoreImplicit(A);
      if (isRandomDevice(A->getType()) && Ctx.inMainFile(A->getBeginLoc())) {
        MigrationContext::Match Matched(Ctx, A->getBeginLoc());
        Ctx.warn(A->getBeginLoc(), Info.Id,
                 "a std::random_device used as the engine draws a different order on every "
                 "process; use an engine seeded with accelerator.shared_seed(device())");
      } else if (isEngine(A->getType()) && !referencedDecl(A)) {
        Engine T;
        T.Name = "a temporary engine";
        addConstruct(T, A);
        T.Uses.push_back({Use::Order, A->getBeginLoc()});
        Temporaries.push_back(std::move(T));
      }
    }
  }
}

// Why S runs once per batch or per sample, or nullptr: it is inside a dataset's get(), a
// module's forward(), or the body of a loop over a data loader or over hand-cut batches.
const char* SeedFinder::perBatchPlace(const Stmt* S) {
  auto Place = Ctx.walkAncestors(
      DynTypedNode::create(*S),
      [&](const DynTypedNode& P, const DynTypedNode& Below) -> std::optional<const char*> {
        if (const auto* MD = P.get<CXXMethodDecl>()) {
          if (!MD->getDeclName().isIdentifier())
            return nullptr;
          if (MD->getName() == "forward" && isModuleClass(MD->getParent()))
            return "a module's forward()";
          bool Get = MD->getName() == "get" && MD->getNumParams() == 1 &&
                     MD->getParamDecl(0)->getType()->isIntegerType();
          return Get ? "a dataset's get()" : nullptr;
        }
        if (P.get<Decl>())
          return nullptr;
        const Stmt* Child = Below.get<Stmt>();
        if (const auto* R = P.get<CXXForRangeStmt>(); R && Child == R->getBody()) {
          const CXXRecordDecl* RD = pointeeRecord(R->getRangeInit()->getType());
          if (RD && StringRef(RD->getNameAsString()).contains("DataLoader"))
            return "a loop over a data loader";
        }
        if (const auto* F = P.get<ForStmt>();
            F && Child == F->getBody() && Ctx.need<ShardedBatches>().Loops.count(F))
          return "a loop over hand-cut batches";
        return std::nullopt;
      });
  return Place.value_or(nullptr);
}

// What the engine use Ref (a name of the engine) does: it decides an order (an argument of
// std::shuffle/std::sample), draws (an argument of a distribution or called itself: per
// sample inside per-batch code, otherwise data or a split), or goes where the rule cannot
// follow.
Use SeedFinder::classify(const Expr* Ref) {
  DynTypedNode Cur = Ctx.writtenParent(DynTypedNode::create(*Ref));
  if (Cur.get<MemberExpr>()) // gen.seed(x), gen.discard(n), gen.min()
    return Use::PerSample;
  const auto* Call = Cur.get<CallExpr>();
  if (!Call)
    return Use::Unseen;
  if (isShuffle(calleeName(Call)))
    return Use::Order;
  const auto* Op = dyn_cast<CXXOperatorCallExpr>(Call);
  const auto* MD = Op ? dyn_cast_or_null<CXXMethodDecl>(Op->getCalleeDecl()) : nullptr;
  bool Draw = MD && Op->getOperator() == OO_Call &&
              (isEngine(Op->getArg(0)->getType()) ||
               StringRef(MD->getParent()->getQualifiedNameAsString()).starts_with("std::"));
  if (!Draw)
    return Use::Unseen;
  return perBatchPlace(Call) ? Use::PerSample : Use::Data;
}

void SeedFinder::collectUses() {
  if (Engines.empty())
    return;
  auto Refs =
      expr(ast_matchers::anyOf(declRefExpr(), memberExpr()), unless(isInTemplateInstantiation()))
          .bind("r");
  for (const auto& M : match(Refs, Ctx.AST)) {
    const auto* R = M.getNodeAs<Expr>("r");
    const ValueDecl* D = referencedDecl(R);
    auto It = D ? Engines.find(D) : Engines.end();
    if (It == Engines.end() || !Ctx.inMainFile(R->getBeginLoc()))
      continue;
    // Copies the compiler writes (a data set copied by map()) carry the engine's state
    // along; they decide nothing.
    if (const FunctionDecl* FD = Ctx.enclosingFunction(DynTypedNode::create(*R));
        FD && (FD->isImplicit() || FD->isDefaulted()))
      continue;
    It->second.Uses.push_back({classify(R), R->getBeginLoc()});
  }
}

void SeedFinder::collect() {
  collectEngineSeeds();
  collectCalls();
  collectUses();
}

bool namesProcess(const Stmt* Cond) {
  return anyOf(Cond, [](const Stmt* X) {
    const auto* C = dyn_cast<CallExpr>(X);
    MemberCall M;
    return C && getMemberCall(C, M) &&
           (M.Name == "is_main_process" || M.Name == "is_local_main_process" ||
            M.Name == "process_index" || M.Name == "local_process_index");
  });
}

// Why not every process may evaluate Seed the same number of times, or "".
std::string SeedFinder::unevenPlace(const Expr* Seed) {
  if (Ctx.runsBeforeMain(Seed))
    return "it runs before main (static initialisation), when no Accelerator exists";
  if (const char* Where = perBatchPlace(Seed))
    return std::string("it runs in ") + Where + ", once per batch of this process";
  // Returns whether the walk ends at P: outside the function, or under such a condition.
  auto Uneven = [&](const DynTypedNode& P, const DynTypedNode& Child) {
    if (P.get<Decl>() && !P.get<VarDecl>())
      return true;
    const Expr* Cond = nullptr;
    if (const auto* If = P.get<IfStmt>(); If && Child.get<Stmt>() != If->getCond())
      Cond = If->getCond();
    else if (const auto* W = P.get<WhileStmt>())
      Cond = W->getCond();
    else if (const auto* F = P.get<ForStmt>())
      Cond = F->getCond();
    else if (const auto* CO = P.get<ConditionalOperator>();
             CO && Child.get<Stmt>() != CO->getCond())
      Cond = CO->getCond();
    return Cond && (namesProcess(Cond) || PP.perProcess(Cond));
  };
  DynTypedNode At = Ctx.findAncestor(DynTypedNode::create(*Seed), Uneven);
  if (At.getNodeKind().isNone() || At.get<Decl>())
    return "";
  return "it runs under a condition that can differ between processes";
}

void SeedFinder::share(const Engine& E, const Expr* Seed) {
  SourceLocation Loc = Seed->getBeginLoc();
  if (Seed->isValueDependent() || Seed->isEvaluatable(Ctx.AST) ||
      isMemberNamed(Seed, "shared_seed") || !Ctx.inMainFile(Loc))
    return; // a constant is the same everywhere; an already shared seed needs nothing
  MigrationContext::Match Matched(Ctx, Loc);
  if (!Seed->getType()->isIntegerType()) {
    Ctx.warn(Loc, Info.Id,
             E.Name + " decides the data order but is seeded from a " +
                 Seed->getType().getAsString() +
                 ": fill it from accelerator.shared_seed(value) so that every process draws "
                 "the same order");
    return;
  }
  if (std::string Why = unevenPlace(Seed); !Why.empty()) {
    Ctx.warn(Loc, Info.Id,
             E.Name + " decides the data order, but its seed cannot be shared here: " + Why +
                 " (shared_seed is a collective every process must reach equally often); "
                 "seed it from accelerator.shared_seed(seed) where every process runs");
    return;
  }
  Change C(Info.Id, Loc);
  C.insertBefore(Loc, Ctx.accel(Seed, C) + ".shared_seed(");
  C.insertAfter(Seed->getEndLoc(), ")");
  Ctx.commit(C);
}

void SeedFinder::decide() {
  std::vector<const Engine*> All;
  for (const auto& [Key, E] : Engines)
    All.push_back(&E);
  for (const Engine& T : Temporaries)
    All.push_back(&T);
  for (const Engine* E : All) {
    Use Strongest = Use::PerSample;
    SourceLocation Where;
    for (const auto& [U, Loc] : E->Uses)
      if (U >= Strongest)
        Strongest = U, Where = Loc;
    if (Strongest >= Use::Data) {
      for (const Expr* Seed : E->Seeds)
        share(*E, Seed);
      continue;
    }
    if (Strongest != Use::Unseen)
      continue; // per-sample noise only: each process may draw its own
    for (const Expr* Seed : E->Seeds)
      if (!Seed->isValueDependent() && !Seed->isEvaluatable(Ctx.AST) &&
          !isMemberNamed(Seed, "shared_seed") && Ctx.inMainFile(Seed->getBeginLoc())) {
        MigrationContext::Match Matched(Ctx, Seed->getBeginLoc());
        Ctx.warn(Seed->getBeginLoc(), Info.Id,
                 E->Name +
                     " is seeded differently on every process and used where the tool "
                     "cannot see what it decides (line " +
                     std::to_string(Ctx.SM.getExpansionLineNumber(Where)) +
                     "); if it orders or splits the data, seed it from "
                     "accelerator.shared_seed(seed)");
      }
  }
}

} // namespace

void runSharedRandomSeed(MigrationContext& Ctx, const RuleInfo& Info) {
  SeedFinder F(Ctx, Info);
  F.collect();
  F.decide();
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule SharedRandomSeedRuleEntry({
    SharedRandomSeedInfo,
    runSharedRandomSeed,
    /*Needs=*/{AnalysisId::PreparedLoaders, AnalysisId::ReducedMetrics, AnalysisId::ShardedBatches},
    /*Provides=*/{AnalysisId::AcceleratorRequests},
    /*Rank=*/160,
});

} // namespace accel
