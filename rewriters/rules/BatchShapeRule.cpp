// accelerate-batch-shape: the batch size a loader was made with, written again where a
// batch is shaped (`batch.data.view({batch_size, -1})`, `torch::zeros({batch_size, 10})`,
// `for (i = 0; i < batch_size; ++i)` over its rows), becomes the batch's own size,
// `batch.data.size(0)` (issue #29, item 3). Under `--split_batches` a process gets its share
// of every batch, and the last batch of a data set that is not a multiple of the batch size
// is short; the constant then no longer describes the batch and the program aborts in the
// view (or, where the numbers happen to divide, reshapes rows into each other). On every
// full batch the batch's own size IS the constant, so the original's numbers do not change.
//
// The batch size is followed from the loader's creation (make_data_loader, or
// prepare_data_loader on a second run) through the argument: a variable or constant, a
// struct field, `DataLoaderOptions(x)`, `DataLoaderOptions().batch_size(x)`, an options
// variable (its initialiser and its `.batch_size(x)` calls), and variables initialised
// from one of those. Only uses inside the body of a range-for over that loader are
// rewritten, where the batch is known by name; elsewhere (a module's forward(), a helper,
// a tensor not made from the batch) the rule cannot tell which batch the shape is for, and
// warns with the place.

#include "analyses/RuleSupport.h"

#include <map>
#include <optional>
#include <set>

using namespace clang;

namespace accel {

const RuleInfo BatchShapeInfo = {
    "accelerate-batch-shape",
    "a loader's batch size shaping its batch -> the batch's own size (batch.data.size(0))",
    "with --split_batches each process gets a share of every batch, and a data set that is "
    "not a multiple of the batch size ends with a short batch: shape a batch by its own size "
    "(batch.data.size(0), tensor.size(0)), not by the loader's batch size"};

namespace {

bool isOptionsType(QualType T) {
  const CXXRecordDecl* RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return RD && RD->getQualifiedNameAsString() == "torch::data::DataLoaderOptions";
}

bool isIntegral(QualType T) { return T.getNonReferenceType()->isIntegerType(); }

// How a loader's batch size is written: the declarations that hold it (a variable, a
// constant, a field, and the variables copied from them) or a number.
struct BatchSize {
  llvm::SmallPtrSet<const ValueDecl*, 4> Decls;
  std::optional<llvm::APSInt> Literal;
};

class SizeTracer {
 public:
  explicit SizeTracer(MigrationContext& Ctx) : Ctx(Ctx) {}
  BatchSize ofLoaderCall(const CallExpr* Call);

 private:
  void trace(const Expr* E, BatchSize& Out, unsigned Depth);
  void traceVar(const VarDecl* V, BatchSize& Out, unsigned Depth);
  MigrationContext& Ctx;
};

// Casts, temporaries and the copy or conversion into DataLoaderOptions are passed through.
const Expr* strip(const Expr* E) {
  while (E) {
    const Expr* Next = ignoreImplicit(E);
    if (const auto* EC = dyn_cast<ExplicitCastExpr>(Next))
      Next = EC->getSubExpr();
    if (const auto* CE = dyn_cast<CXXConstructExpr>(Next))
      if (writtenArgs(CE) == 1)
        Next = CE->getArg(0);
    if (Next == E)
      return E;
    E = Next;
  }
  return E;
}

void SizeTracer::trace(const Expr* E, BatchSize& Out, unsigned Depth) {
  E = strip(E);
  if (!E || Depth > 8)
    return;
  if (const auto* IL = dyn_cast<IntegerLiteral>(E)) {
    Out.Literal = llvm::APSInt(IL->getValue(), /*isUnsigned=*/false);
    return;
  }
  if (const auto* Call = dyn_cast<CallExpr>(E)) {
    MemberCall M;
    if (!getMemberCall(Call, M) || !isOptionsType(M.Object->getType()))
      return;
    // The outermost `.batch_size(x)` of a chain is the one that counts.
    if (M.Name == "batch_size" && writtenArgs(Call) == 1)
      return trace(Call->getArg(Call->getNumArgs() - 1), Out, Depth + 1);
    return trace(M.Object, Out, Depth + 1); // .workers(2), .drop_last(true), ...
  }
  if (const auto* ME = dyn_cast<MemberExpr>(E)) {
    if (isa<FieldDecl>(ME->getMemberDecl()) && isIntegral(ME->getType()))
      Out.Decls.insert(ME->getMemberDecl());
    return;
  }
  if (const auto* DR = dyn_cast<DeclRefExpr>(E))
    if (const auto* V = dyn_cast<VarDecl>(DR->getDecl()))
      traceVar(V, Out, Depth);
}

// An integer variable holds the size itself (and whatever it was copied from); an options
// variable holds it in its initialiser or in a later `options.batch_size(x)`.
void SizeTracer::traceVar(const VarDecl* V, BatchSize& Out, unsigned Depth) {
  if (isIntegral(V->getType())) {
    Out.Decls.insert(V);
    if (const Expr* Init = V->getInit())
      if (isa<DeclRefExpr, MemberExpr>(strip(Init)))
        trace(Init, Out, Depth + 1);
    return;
  }
  if (!isOptionsType(V->getType()))
    return;
  if (const Expr* Init = V->getInit())
    trace(Init, Out, Depth + 1);
  for (const CallExpr* Call : userCalls(Ctx)) {
    MemberCall M;
    if (getMemberCall(Call, M) && M.Name == "batch_size" && writtenArgs(Call) == 1 &&
        referencedDecl(M.Object) == V)
      trace(Call->getArg(Call->getNumArgs() - 1), Out, Depth + 1);
  }
}

// The batch size argument: the last written one that is an integer or DataLoaderOptions
// (the dataset comes first, a sampler may come between).
BatchSize SizeTracer::ofLoaderCall(const CallExpr* Call) {
  BatchSize Out;
  for (unsigned I = Call->getNumArgs(); I-- > 0;) {
    const Expr* A = Call->getArg(I);
    if (isa<CXXDefaultArgExpr>(A))
      continue;
    if (isIntegral(A->getType()) || isOptionsType(A->getType())) {
      trace(A, Out, 0);
      break;
    }
  }
  return Out;
}

bool isLoaderCall(const CallExpr* Call) {
  if (StringRef(calleeName(Call)).ends_with("make_data_loader"))
    return true;
  MemberCall M;
  return getMemberCall(Call, M) && M.Name == "prepare_data_loader";
}

// Where a use of the batch size sits: in the shape of a tensor call, or in the condition of
// a loop that counts rows.
enum class UseKind { None, Shape, Bound };

struct Use {
  const Expr* Ref; // the DeclRefExpr / MemberExpr / literal
  UseKind Kind = UseKind::None;
  const Expr* Object = nullptr; // a tensor method's object (`batch.data` in `.view(...)`)
};

bool isTensorCall(const CallExpr* Call, const Expr** Object) {
  if (!isTensor(Call->getType()))
    return false;
  MemberCall M;
  if (getMemberCall(Call, M)) {
    *Object = M.Object;
    return isTensor(M.Object->getType());
  }
  // A std::string, not a StringRef: calleeName returns its name by value (clang's
  // -Wdangling-gsl found the StringRef pointing into the destroyed temporary).
  const std::string N = calleeName(Call);
  return StringRef(N).starts_with("torch::") || StringRef(N).starts_with("at::");
}

class Rewriter {
 public:
  Rewriter(MigrationContext& Ctx, const RuleInfo& Info) : Ctx(Ctx), Info(Info) {}
  void collectLoaders();
  void rewriteLoops();
  void warnElsewhere();

 private:
  Use classify(const Expr* Ref, const Stmt* Stop) const;
  bool isSizeRef(const Expr* E, const BatchSize& S) const;
  bool firstInList(const Expr* E) const;
  void rewriteLoop(const CXXForRangeStmt* Loop, const BatchSize& S);
  void collectDerived(const Stmt* Body, llvm::SmallPtrSet<const ValueDecl*, 8>& Derived) const;
  void handle(const Use& U, const VarDecl* Batch,
              const llvm::SmallPtrSet<const ValueDecl*, 8>& Derived);
  void cannotTell(const Expr* Ref, StringRef Why);

  MigrationContext& Ctx;
  const RuleInfo& Info;
  std::map<const ValueDecl*, BatchSize> Loaders;
  // Uses inside loader loops, by place: an initializer list's syntactic and semantic forms
  // hold different nodes for the same written name.
  std::set<SourceLocation> Handled;
};

void Rewriter::collectLoaders() {
  SizeTracer T(Ctx);
  const auto& Prepared = Ctx.need<PreparedLoaders>().Vars;
  for (const CallExpr* Call : userCalls(Ctx)) {
    if (!isLoaderCall(Call))
      continue;
    const ValueDecl* D = declHolding(Ctx, Call);
    if (!D || !Prepared.count(D))
      continue;
    BatchSize S = T.ofLoaderCall(Call);
    BatchSize& Into = Loaders[D];
    Into.Decls.insert(S.Decls.begin(), S.Decls.end());
    if (S.Literal)
      Into.Literal = S.Literal;
  }
}

bool Rewriter::isSizeRef(const Expr* E, const BatchSize& S) const {
  if (const auto* DR = dyn_cast<DeclRefExpr>(E))
    return S.Decls.count(DR->getDecl());
  if (const auto* ME = dyn_cast<MemberExpr>(E))
    return S.Decls.count(ME->getMemberDecl());
  if (const auto* IL = dyn_cast<IntegerLiteral>(E))
    return S.Literal && llvm::APSInt::isSameValue(*S.Literal, llvm::APSInt(IL->getValue(), false));
  return false;
}

// Up from Ref through casts and braced lists to a tensor call that takes it (a shape), or
// through a relational operator to a for loop's condition (a row count). Stops at Stop.
Use Rewriter::classify(const Expr* Ref, const Stmt* Stop) const {
  Use U{Ref};
  bool ThroughList = false;
  // Returns whether the walk ends at P (it does at anything but a wrapper).
  auto Visit = [&](const DynTypedNode& P, const DynTypedNode& Child) {
    const auto* S = P.get<Stmt>();
    if (!S || S == Stop)
      return true;
    if (isa<InitListExpr, CXXStdInitializerListExpr, CXXConstructExpr>(S) ||
        isa<ImplicitCastExpr, ParenExpr>(S)) {
      ThroughList = ThroughList || isa<InitListExpr>(S);
      return false;
    }
    if (const auto* Call = dyn_cast<CallExpr>(S)) {
      const Expr* Object = nullptr;
      if (isTensorCall(Call, &Object) && Object != Child.get<Expr>()) {
        U.Kind = UseKind::Shape;
        U.Object = Object;
      }
    } else if (const auto* BO = dyn_cast<BinaryOperator>(S);
               BO && !ThroughList && BO->isComparisonOp()) {
      const auto* For = Ctx.writtenParent(P).get<ForStmt>();
      if (For && For->getCond() == BO)
        U.Kind = UseKind::Bound;
    }
    return true;
  };
  // Its own cap, as before: a use wrapped in more than a few casts and braces is no shape.
  Ctx.findAncestor(DynTypedNode::create(*Ref), Visit, MigrationContext::Ascent::Written,
                   /*MaxDepth=*/8);
  return U;
}

// The batch variable and every local of the loop body made from it, in source order
// (`auto data = batch.data.to(device)`, `auto x = data.view(...)`).
void Rewriter::collectDerived(const Stmt* Body,
                              llvm::SmallPtrSet<const ValueDecl*, 8>& Derived) const {
  anyOf(Body, [&](const Stmt* X) {
    if (const auto* DS = dyn_cast<DeclStmt>(X))
      for (const Decl* D : DS->decls())
        if (const auto* V = dyn_cast<VarDecl>(D))
          if (const Expr* Init = V->getInit())
            for (const ValueDecl* From : Derived)
              if (refersTo(Init, From)) {
                Derived.insert(V);
                break;
              }
    return false;
  });
}

void Rewriter::cannotTell(const Expr* Ref, StringRef Why) {
  MigrationContext::Match Matched(Ctx, Ref->getBeginLoc());
  Ctx.warn(Ref->getBeginLoc(), Info.Id,
           ("the loader's batch size shapes a tensor here, but " + Why +
            ": under --split_batches and on a short last batch a batch has fewer rows; use the "
            "batch's own size (tensor.size(0))")
               .str());
}

void Rewriter::handle(const Use& U, const VarDecl* Batch,
                      const llvm::SmallPtrSet<const ValueDecl*, 8>& Derived) {
  if (U.Kind == UseKind::Shape && U.Object) {
    bool FromBatch = false;
    for (const ValueDecl* D : Derived)
      FromBatch = FromBatch || refersTo(U.Object, D);
    if (!FromBatch)
      return cannotTell(U.Ref, "the tensor it shapes is not made from the loop's batch");
  }
  if (isa<IntegerLiteral>(U.Ref))
    return cannotTell(U.Ref, "a number equal to the batch size may mean something else");
  MigrationContext::Match Matched(Ctx, U.Ref->getBeginLoc());
  std::string Size = Batch->getName().str() + ".data.size(0)";
  std::string Was = Ctx.text(U.Ref->getSourceRange());
  Change C(Info.Id, U.Ref->getBeginLoc());
  C.replace(U.Ref->getSourceRange(), Size);
  if (!Ctx.commit(C))
    return Ctx.warn(U.Ref->getBeginLoc(), Info.Id,
                    "the loader's batch size shapes the batch here (in a macro, or another "
                    "rule's edit): replace it by " +
                        Size + " by hand");
  Ctx.note(U.Ref->getBeginLoc(), Info.Id,
           "`" + Was + "`, the loader's batch size, is now " + Size +
               " (the same on every full batch; right on a process's share of a batch and on "
               "a short last batch)");
}

// A number counts as the batch size only as the first extent of a shape (`{64, -1}`).
bool Rewriter::firstInList(const Expr* E) const {
  const auto* List = Ctx.writtenParentAs<InitListExpr>(E);
  return List && List->getNumInits() > 0 && ignoreImplicit(List->getInit(0)) == E;
}

// A batch whose rows can be counted by name: LibTorch's Example (after Stack<>).
bool hasDataMember(const VarDecl* Batch) {
  const CXXRecordDecl* RD = Batch->getType().getNonReferenceType()->getAsCXXRecordDecl();
  if (!RD || !RD->hasDefinition())
    return false;
  for (const FieldDecl* F : RD->getDefinition()->fields())
    if (F->getName() == "data" && isTensor(F->getType()))
      return true;
  return false;
}

void Rewriter::rewriteLoop(const CXXForRangeStmt* Loop, const BatchSize& S) {
  const VarDecl* Batch = Loop->getLoopVariable();
  llvm::SmallPtrSet<const ValueDecl*, 8> Derived;
  Derived.insert(Batch);
  collectDerived(Loop->getBody(), Derived);
  std::vector<Use> Uses;
  anyOf(Loop->getBody(), [&](const Stmt* X) {
    const auto* E = dyn_cast<Expr>(X);
    if (E && isSizeRef(E, S) && (!isa<IntegerLiteral>(E) || firstInList(E)))
      if (Use U = classify(E, Loop); U.Kind != UseKind::None)
        Uses.push_back(U);
    return false;
  });
  for (const Use& U : Uses) {
    Handled.insert(U.Ref->getBeginLoc());
    if (!hasDataMember(Batch))
      cannotTell(U.Ref, "the batch is not an Example with a `data` tensor");
    else
      handle(U, Batch, Derived);
  }
}

void Rewriter::rewriteLoops() {
  using namespace clang::ast_matchers;
  auto Loops = match(cxxForRangeStmt(unless(isInTemplateInstantiation())).bind("l"), Ctx.AST);
  for (const auto& N : Loops) {
    const auto* Loop = N.getNodeAs<CXXForRangeStmt>("l");
    if (!Ctx.inMainFile(Loop->getBeginLoc()) || !Loop->getLoopVariable())
      continue;
    auto It = Loaders.find(referencedDecl(Loop->getRangeInit()));
    if (It != Loaders.end())
      rewriteLoop(Loop, It->second);
  }
}

// Shapes made from a tracked batch size outside the loops over its loader (a module's
// forward(), a helper, a loop over another loader): which batch they are for is not
// visible here. Literals are left alone outside loader loops: a number is not evidence.
void Rewriter::warnElsewhere() {
  BatchSize All;
  for (const auto& [D, S] : Loaders)
    All.Decls.insert(S.Decls.begin(), S.Decls.end());
  if (All.Decls.empty())
    return;
  using namespace clang::ast_matchers;
  auto Refs = match(
      expr(ast_matchers::anyOf(declRefExpr(), memberExpr()), unless(isInTemplateInstantiation()))
          .bind("r"),
      Ctx.AST);
  for (const auto& N : Refs) {
    const auto* E = N.getNodeAs<Expr>("r");
    if (!Ctx.inMainFile(E->getBeginLoc()) || Handled.count(E->getBeginLoc()) || !isSizeRef(E, All))
      continue;
    if (classify(E, nullptr).Kind == UseKind::Shape)
      cannotTell(E, "not in a loop over the loader it sizes");
  }
}

} // namespace

void runBatchShape(MigrationContext& Ctx, const RuleInfo& Info) {
  Rewriter R(Ctx, Info);
  R.collectLoaders();
  R.rewriteLoops();
  R.warnElsewhere();
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule BatchShapeRuleEntry({
    BatchShapeInfo,
    runBatchShape,
    /*Needs=*/{AnalysisId::PreparedLoaders},
    /*Provides=*/{},
    /*Rank=*/150,
});

} // namespace accel
