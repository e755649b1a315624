// What accelerate-manual-batching finds before it edits (TrainingBatches.h): the batches
// of counted loops and of loops on whole tensors, and the training loops whose data nothing
// splits.

#include "analyses/TrainingBatches.h"

#include "analyses/MetricMeasure.h"

#include <algorithm>

using namespace clang;
using namespace clang::ast_matchers;

namespace accel {

namespace {

bool isSliceCall(const CallExpr* C, const VarDecl* Counter) {
  MemberCall M;
  if (!getMemberCall(C, M))
    return false;
  if (M.Name != "slice" && M.Name != "narrow" && M.Name != "index_select")
    return false;
  if (!(isTensor(M.Object->getType()) || M.Object->isTypeDependent()))
    return false;
  for (const Expr* A : C->arguments())
    if (refersTo(A, Counter))
      return true;
  return false;
}

bool isProcessShare(const CallExpr* C) {
  return C && StringRef(calleeName(C)).ends_with("process_share");
}

bool declaredIn(MigrationContext& Ctx, const Stmt* S, const ValueDecl* D) {
  SourceLocation L = D->getLocation();
  return Ctx.SM.isBeforeInTranslationUnit(S->getBeginLoc(), L) &&
         Ctx.SM.isBeforeInTranslationUnit(L, S->getEndLoc());
}

// An in-place method (`copy_`, `fill_`) or an assignment writes into the slice: splitting
// it would leave the other processes' rows unwritten.
bool writtenTo(MigrationContext& Ctx, const Expr* E) {
  DynTypedNode Below;
  DynTypedNode P = Ctx.parentPast<MaterializeTemporaryExpr, ImplicitCastExpr, CXXBindTemporaryExpr>(
      DynTypedNode::create(*E), &Below);
  if (const auto* ME = P.get<MemberExpr>())
    return ME->getMemberDecl()->getName().ends_with("_");
  if (const auto* Op = P.get<CXXOperatorCallExpr>())
    return Op->isAssignmentOp() && Op->getArg(0)->IgnoreImplicit() == Below.get<Expr>();
  return false;
}

// The loop's batches: slices of tensors declared outside it, and tensors stacked in it from
// a vector range (`torch::stack(...)` of what the loop collected). Unsafe: a slice along
// another dimension, of a loop local, or written to.
bool batchesOf(MigrationContext& Ctx, const ForStmt* F, const VarDecl* Counter,
               std::vector<const Expr*>& Out, bool& Unsafe) {
  bool Shared = false;
  anyOf(F->getBody(), [&](const Stmt* X) {
    const auto* C = dyn_cast<CallExpr>(X);
    if (!C)
      return false;
    if (isSliceCall(C, Counter)) {
      MemberCall M;
      getMemberCall(C, M);
      const auto* Dim =
          C->getNumArgs() ? dyn_cast<IntegerLiteral>(C->getArg(0)->IgnoreParenImpCasts()) : nullptr;
      bool Local = anyOf(M.Object, [&](const Stmt* Y) {
        const auto* DR = dyn_cast<DeclRefExpr>(Y);
        return DR && declaredIn(Ctx, F, DR->getDecl());
      });
      if (!Dim || Dim->getValue() != 0 || Local || writtenTo(Ctx, C))
        Unsafe = true;
      if (isProcessShare(Ctx.writtenParentAs<CallExpr>(C)))
        Shared = true;
      else
        Out.push_back(C);
      return false;
    }
    std::string N = calleeName(C);
    if ((N == "torch::stack" || N == "at::stack" || N == "torch::cat" || N == "at::cat") &&
        C->getNumArgs() >= 1) {
      const auto* V = Ctx.writtenParentAs<VarDecl>(C);
      bool InitOfLocal = V && declaredIn(Ctx, F->getBody(), V);
      bool FromLoop = anyOf(C->getArg(0), [&](const Stmt* Y) {
        const auto* DR = dyn_cast<DeclRefExpr>(Y);
        return DR && (DR->getDecl() == Counter || declaredIn(Ctx, F->getBody(), DR->getDecl()));
      });
      if (InitOfLocal && FromLoop) {
        if (isProcessShare(Ctx.writtenParentAs<CallExpr>(C)))
          Shared = true;
        else
          Out.push_back(C);
      }
    }
    return false;
  });
  return Shared;
}

} // namespace

// S runs inside a loop over a prepared loader or over hand-cut batches already split.
bool insideShardedLoop(MigrationContext& Ctx, const Stmt* S) {
  auto Inside = Ctx.walkAncestors(
      DynTypedNode::create(*S),
      [&](const DynTypedNode& P, const DynTypedNode&) -> std::optional<bool> {
        if (P.get<FunctionDecl>())
          return false;
        if (const auto* R = P.get<CXXForRangeStmt>()) {
          const ValueDecl* L = referencedDecl(R->getRangeInit());
          if (L && Ctx.need<PreparedLoaders>().Vars.count(L))
            return true;
        }
        if (const auto* St = P.get<Stmt>(); St && Ctx.need<ShardedBatches>().Loops.count(St))
          return true;
        return std::nullopt;
      });
  return Inside.value_or(false);
}

std::optional<HandCutLoop> handCutBatches(MigrationContext& Ctx, const ForStmt* F) {
  const auto* DS = dyn_cast_or_null<DeclStmt>(F->getInit());
  if (!DS || !DS->isSingleDecl())
    return std::nullopt;
  const auto* I = dyn_cast<VarDecl>(DS->getSingleDecl());
  if (!I || !I->getType()->isIntegerType())
    return std::nullopt;
  HandCutLoop Out;
  Out.Shared = batchesOf(Ctx, F, I, Out.Batches, Out.Unsafe);
  Out.Slices = anyOf(F->getBody(), [I](const Stmt* S) {
    const auto* C = dyn_cast<CallExpr>(S);
    return C && isSliceCall(C, I);
  });
  return Out;
}

namespace {

// The input of a call that runs a model (not a loss module): `model->forward(x)`,
// `model.forward(x)`, `model(x)` (a ModuleHolder's operator()); nullptr for other calls.
const Expr* modelInput(const CallExpr* C) {
  const Expr* In = nullptr;
  const Expr* Obj = moduleCallObject(C, &In);
  if (!Obj || !In || isLossCall(C))
    return nullptr;
  const CXXRecordDecl* RD = pointeeRecord(Obj->getType());
  return RD && (isModuleClass(RD) || isModuleHolderClass(RD)) ? In : nullptr;
}

const Expr* initOf(const ValueDecl* D) {
  if (const auto* B = dyn_cast<BindingDecl>(D))
    D = B->getDecomposedDecl();
  const auto* V = dyn_cast_or_null<VarDecl>(D);
  return V ? V->getInit() : nullptr;
}

// The loop that trains on the same tensors at every step (the whole data set) or on a batch
// it draws itself; Batches: the variables whose uses in the loop are split between the
// processes. Only a loss made by a loss function from the model's output and such variables
// qualifies: anything else could mix a share with a whole tensor.
class WholeBatches {
 public:
  WholeBatches(MigrationContext& Ctx, const Stmt* Loop) : Ctx(Ctx), Loop(Loop) {}
  WholeBatchSplit find(const CallExpr* Backward);

 private:
  bool fromModel(const Stmt* E, int Depth = 0) const;
  bool modelInputs(const Stmt* E, int Depth = 0);
  bool written(const ValueDecl* D) const;
  bool addBatch(const Expr* E);
  const CallExpr* lossCall(const Expr* E, int Depth = 0) const;
  bool callsOwnMutator() const;

  MigrationContext& Ctx;
  const Stmt* Loop;
  llvm::SmallVector<const ValueDecl*, 4> Batches;
  bool Shared = false; // process_share calls already there (a second run)
};

// E computes from the model's output (or from something the tool cannot follow).
bool WholeBatches::fromModel(const Stmt* E, int Depth) const {
  if (Depth > 8)
    return true;
  return anyOf(E, [&](const Stmt* X) {
    const auto* C = dyn_cast<CallExpr>(X);
    if (C && modelInput(C))
      return true;
    const auto* DR = dyn_cast<DeclRefExpr>(X);
    if (!DR || !declaredIn(Ctx, Loop, DR->getDecl()))
      return false;
    const Expr* Init = initOf(DR->getDecl());
    return !Init || fromModel(Init, Depth + 1);
  });
}

// D is assigned or changed in place in the loop: not the same tensor at every step.
bool WholeBatches::written(const ValueDecl* D) const {
  return anyOf(loopBody(Loop), [D](const Stmt* X) {
    if (const auto* B = dyn_cast<BinaryOperator>(X); B && B->isAssignmentOp())
      return referencedDecl(B->getLHS()) == D;
    if (const auto* Op = dyn_cast<CXXOperatorCallExpr>(X); Op && Op->isAssignmentOp())
      return referencedDecl(Op->getArg(0)) == D;
    MemberCall M;
    const auto* C = dyn_cast<CallExpr>(X);
    return C && getMemberCall(C, M) && M.Name.ends_with("_") && M.Object &&
           referencedDecl(M.Object) == D;
  });
}

// `x` or `this->x`: a field of the object whose method this is.
bool ownMember(const MemberExpr* ME) {
  return isa<FieldDecl>(ME->getMemberDecl()) && isa<CXXThisExpr>(ME->getBase()->IgnoreImplicit());
}

// The loop calls a non-const method of its own class (`this->reshuffle()`), which may write
// the class's tensors between steps.
bool WholeBatches::callsOwnMutator() const {
  return anyOf(loopBody(Loop), [](const Stmt* X) {
    const auto* MC = dyn_cast<CXXMemberCallExpr>(X);
    const CXXMethodDecl* MD = MC ? MC->getMethodDecl() : nullptr;
    const Expr* Obj = MC ? MC->getImplicitObjectArgument() : nullptr;
    return MD && !MD->isConst() && Obj && isa<CXXThisExpr>(Obj->IgnoreImplicit());
  });
}

// A batch argument (of the model or the loss): a tensor variable, maybe converted
// (`x.to(device)`, `.float()`), that is the same at every step or drawn in the loop
// without the model. False for anything else.
bool WholeBatches::addBatch(const Expr* E) {
  E = ignoreImplicit(E);
  for (int Depth = 0; Depth < 4; ++Depth) {
    const auto* C = dyn_cast<CallExpr>(E);
    if (!C)
      break;
    if (isProcessShare(C)) {
      Shared = true;
      return true;
    }
    MemberCall M;
    static const StringRef Keeps[] = {"to",     "toType",     "type",   "float",
                                      "double", "contiguous", "detach", "clone"};
    if (!getMemberCall(C, M) || !M.Object || !llvm::is_contained(Keeps, M.Name))
      return false;
    E = ignoreImplicit(M.Object);
  }
  const auto* DR = dyn_cast<DeclRefExpr>(E);
  const ValueDecl* D = DR ? DR->getDecl() : nullptr;
  if (const auto* ME = dyn_cast<MemberExpr>(E); ME && ownMember(ME)) {
    // A tensor member of the class whose method trains (`xTrain` of a Trainer set in its
    // constructor): the same at every step unless the loop writes it, directly or through
    // a method of the class that may (a non-const one).
    if (!isTensor(ME->getType()) || written(ME->getMemberDecl()) || callsOwnMutator())
      return false;
    D = ME->getMemberDecl();
  } else if (!D || !(isa<VarDecl>(D) || isa<BindingDecl>(D)) || !isTensor(DR->getType()) ||
             (declaredIn(Ctx, Loop, D) ? fromModel(DR) : written(D))) {
    return false;
  }
  if (!llvm::is_contained(Batches, D))
    Batches.push_back(D);
  return true;
}

// The loss function call that E (the loss passed to backward) is, through loop locals.
const CallExpr* WholeBatches::lossCall(const Expr* E, int Depth) const {
  E = E ? ignoreImplicit(E)->IgnoreParenImpCasts() : nullptr;
  if (!E || Depth > 4)
    return nullptr;
  if (const auto* C = dyn_cast<CallExpr>(E))
    return isLossCall(C) ? C : nullptr;
  const auto* DR = dyn_cast<DeclRefExpr>(E);
  if (!DR || !declaredIn(Ctx, Loop, DR->getDecl()))
    return nullptr;
  return lossCall(initOf(DR->getDecl()), Depth + 1);
}

// The model calls that E computes from (through loop locals): each input is a batch or
// the output of another model. False when one is neither.
bool WholeBatches::modelInputs(const Stmt* E, int Depth) {
  if (Depth > 8)
    return false;
  return !anyOf(E, [&](const Stmt* X) {
    if (const auto* C = dyn_cast<CallExpr>(X))
      if (const Expr* In = modelInput(C))
        return !fromModel(In) && !addBatch(In);
    const auto* DR = dyn_cast<DeclRefExpr>(X);
    if (!DR || !declaredIn(Ctx, Loop, DR->getDecl()))
      return false;
    const Expr* Init = initOf(DR->getDecl());
    return Init && fromModel(Init) && !modelInputs(Init, Depth + 1);
  });
}

// How a use of a batch variable writes it: not at all, as the target of an assignment or of
// std::tie (the batch as drawn), or through another non-const reference (`&x`, a function
// taking `torch::Tensor&`), which may read it too.
enum class WriteKind { None, Drawn, Other };
WriteKind writeKind(MigrationContext& Ctx, const Expr* Ref) {
  DynTypedNode Below;
  DynTypedNode P = Ctx.parentPast<MaterializeTemporaryExpr, ImplicitCastExpr, CXXBindTemporaryExpr>(
      DynTypedNode::create(*Ref), &Below);
  const Expr* Use = Below.get<Expr>();
  if (const auto* Op = P.get<CXXOperatorCallExpr>(); Op && Op->isAssignmentOp())
    return Op->getArg(0)->IgnoreImplicit() == Use ? WriteKind::Drawn : WriteKind::None;
  if (const auto* B = P.get<BinaryOperator>(); B && B->isAssignmentOp())
    return B->getLHS()->IgnoreImplicit() == Use ? WriteKind::Drawn : WriteKind::None;
  if (const auto* U = P.get<UnaryOperator>(); U && U->getOpcode() == UO_AddrOf)
    return WriteKind::Other;
  const auto* Call = P.get<CallExpr>();
  const FunctionDecl* FD = Call ? Call->getDirectCallee() : nullptr;
  if (!FD)
    return WriteKind::None;
  const FunctionDecl* Pattern = FD->getTemplateInstantiationPattern();
  for (unsigned I = 0; I < Call->getNumArgs() && I < FD->getNumParams(); ++I) {
    QualType T = FD->getParamDecl(I)->getType();
    if (Call->getArg(I)->IgnoreImplicit() != Use || !T->isLValueReferenceType() ||
        T->getPointeeType().isConstQualified())
      continue;
    // A forwarding reference (`Sequential::forward(Inputs&&...)`) passes the batch on to be
    // read: a use like any other. Its pattern's parameter (a pack's, past the end) is T&&.
    unsigned N = Pattern ? Pattern->getNumParams() : 0;
    QualType P = N ? Pattern->getParamDecl(std::min(I, N - 1))->getType() : QualType();
    if (const auto* Pack = P.isNull() ? nullptr : P->getAs<PackExpansionType>())
      P = Pack->getPattern();
    if (!P.isNull() && P->isRValueReferenceType())
      return WriteKind::None;
    return FD->getQualifiedNameAsString() == "std::tie" ? WriteKind::Drawn : WriteKind::Other;
  }
  return WriteKind::None;
}

WholeBatchSplit WholeBatches::find(const CallExpr* Backward) {
  MemberCall M;
  if (!getMemberCall(Backward, M) || !M.Object)
    return {};
  // `loss.backward()`, or `accelerator.backward(loss)` after an earlier run.
  const Expr* Loss = isTensor(M.Object->getType()) ? M.Object
                     : Backward->getNumArgs() > 0  ? Backward->getArg(0)
                                                   : nullptr;
  const CallExpr* LC = lossCall(Loss);
  if (!LC)
    return {};
  unsigned First = isa<CXXOperatorCallExpr>(LC) ? 1 : 0; // a loss module's operator()
  for (unsigned I = First; I < LC->getNumArgs(); ++I) {
    const Expr* A = LC->getArg(I);
    bool Ok = fromModel(A) ? modelInputs(A) : addBatch(A) || !isTensor(A->getType());
    if (!Ok)
      return {};
  }
  if (Shared) // a second run
    return {WholeBatchSplit::Shared, {}, {}};
  if (Batches.empty() || !fromModel(LC))
    return {};
  // Where the batch is drawn (`std::tie(x, y) = get_batch(n)`, `x = ...`) it stays whole:
  // every process draws it alike, and its share is taken where it is read. Any other
  // non-const reference could read it as well as write it: left to the warning.
  std::vector<const Expr*> Uses;
  bool Unsure = false;
  anyOf(loopBody(Loop), [&](const Stmt* X) {
    const auto* DR = dyn_cast<DeclRefExpr>(X);
    const auto* ME = dyn_cast<MemberExpr>(X);
    const ValueDecl* D = DR ? DR->getDecl() : ME && ownMember(ME) ? ME->getMemberDecl() : nullptr;
    if (!D || !llvm::is_contained(Batches, D))
      return false;
    WriteKind W = writeKind(Ctx, cast<Expr>(X));
    Unsure |= W == WriteKind::Other;
    if (W == WriteKind::None)
      Uses.push_back(cast<Expr>(X));
    return false;
  });
  if (Unsure)
    return {};
  return {WholeBatchSplit::Split, {Batches.begin(), Batches.end()}, Uses};
}

} // namespace

WholeBatchSplit wholeBatches(MigrationContext& Ctx, const Stmt* Loop, const CallExpr* Backward) {
  return WholeBatches(Ctx, Loop).find(Backward);
}

// The innermost loop around a backward call, in its own function; nullptr if none.
const Stmt* trainingLoop(MigrationContext& Ctx, const CallExpr* Backward) {
  const Stmt* Loop = nullptr;
  Ctx.findAncestor(DynTypedNode::create(*Backward),
                   [&](const DynTypedNode& P, const DynTypedNode&) {
                     if (P.get<FunctionDecl>() || P.get<LambdaExpr>())
                       return true;
                     if (const Stmt* S = P.get<Stmt>(); S && isLoop(S))
                       Loop = S;
                     return Loop != nullptr;
                   });
  return Loop;
}

bool hasRecurrentModules(MigrationContext& Ctx) {
  StringRef Text = Ctx.SM.getBufferData(Ctx.SM.getMainFileID());
  for (const char* R : {"nn::LSTM", "nn::GRU", "nn::RNN"})
    if (Text.contains(R))
      return true;
  return false;
}

namespace {

// A range-for over a data loader: prepared (its batches are this process's), passed in
// (prepared by the caller), or LibTorch's own (warned about in runManualBatching).
bool loaderLoop(MigrationContext& Ctx, const CXXForRangeStmt* R) {
  const ValueDecl* L = referencedDecl(R->getRangeInit());
  if (L && (Ctx.need<PreparedLoaders>().Vars.count(L) || isa<ParmVarDecl>(L)))
    return true;
  QualType T = R->getRangeInit()->getType();
  const CXXRecordDecl* RD = T.isNull() ? nullptr : T->getAsCXXRecordDecl();
  return RD && StringRef(RD->getQualifiedNameAsString()).contains("Loader");
}

// The loop splits its data itself: it names a prepared loader (an iterator loop) or asks
// for the process's place (`process_index()`, `num_processes()`, `process_share`).
bool splitsItself(MigrationContext& Ctx, const Stmt* Loop) {
  return anyOf(Loop, [&](const Stmt* X) {
    if (const auto* DR = dyn_cast<DeclRefExpr>(X)) {
      const auto* FD = dyn_cast<FunctionDecl>(DR->getDecl());
      return Ctx.need<PreparedLoaders>().Vars.count(DR->getDecl()) ||
             (FD && FD->getName() == "process_share");
    }
    if (const auto* ME = dyn_cast<MemberExpr>(X)) {
      StringRef N = ME->getMemberDecl()->getName();
      return Ctx.need<PreparedLoaders>().Vars.count(ME->getMemberDecl()) || N == "process_index" ||
             N == "num_processes";
    }
    return false;
  });
}

} // namespace

// The outermost loop around a backward call in its function when nothing splits its data:
// no loop around it is split here, iterates a loader, splits by itself or was warned about
// already. nullptr when its data is split (or it is in no loop).
const Stmt* unsplitTraining(MigrationContext& Ctx, const CallExpr* Backward,
                            const llvm::SmallPtrSetImpl<const Stmt*>& Warned) {
  const Stmt* Outer = nullptr;
  bool Split = false;
  Ctx.findAncestor(DynTypedNode::create(*Backward),
                   [&](const DynTypedNode& P, const DynTypedNode&) {
                     if (P.get<FunctionDecl>() || P.get<LambdaExpr>())
                       return true;
                     const Stmt* S = P.get<Stmt>();
                     if (!S || !isLoop(S))
                       return false;
                     const auto* R = dyn_cast<CXXForRangeStmt>(S);
                     Split = Ctx.need<ShardedBatches>().Loops.count(S) || Warned.count(S) ||
                             (R && loaderLoop(Ctx, R)) || splitsItself(Ctx, S);
                     Outer = S;
                     return Split;
                   });
  return Split ? nullptr : Outer;
}

std::vector<const CXXForRangeStmt*> unpreparedLoaderLoops(MigrationContext& Ctx) {
  std::vector<const CXXForRangeStmt*> Out;
  for (const auto& N :
       match(cxxForRangeStmt(unless(isInTemplateInstantiation())).bind("f"), Ctx.AST)) {
    const auto* F = N.getNodeAs<CXXForRangeStmt>("f");
    if (!Ctx.inMainFile(F->getBeginLoc()))
      continue;
    const Expr* Range = F->getRangeInit();
    QualType T = Range->getType();
    const CXXRecordDecl* RD = T.isNull() ? nullptr : T->getAsCXXRecordDecl();
    if (!RD)
      continue;
    std::string Name = RD->getQualifiedNameAsString();
    if (Name != "torch::data::StatelessDataLoader" && Name != "torch::data::StatefulDataLoader" &&
        Name != "torch::data::DataLoaderBase")
      continue;
    const ValueDecl* D = referencedDecl(Range);
    if (D && (Ctx.need<PreparedLoaders>().Vars.count(D) || isa<ParmVarDecl>(D)))
      continue;
    Out.push_back(F);
  }
  return Out;
}

} // namespace accel
