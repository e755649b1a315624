// accelerate-autograd-backward: torch::autograd::backward({loss}, {grad}, retain, create)
// becomes accelerator.backward(loss, grad, retain, create). Left as it is, the call would
// still synchronise gradients (the runtime hooks autograd itself), but it would bypass the
// loss scaling of gradient accumulation and fp16, as loss.backward() would: see
// accelerate-backward.

#include "analyses/RuleSupport.h"

using namespace clang;

namespace accel {

const RuleInfo AutogradBackwardInfo = {
    "accelerate-autograd-backward",
    "torch::autograd::backward({loss}) -> accelerator.backward(loss)",
    "accelerator.backward(loss) scales the loss for gradient accumulation and fp16 loss "
    "scaling; torch::autograd::backward bypasses both"};

namespace {

// The elements of a braced list written as a variable_list argument (`{loss}`), or
// nullptr when the argument is something else (a vector variable, say).
const InitListExpr* bracedList(const Expr* Arg) {
  const Expr* E = Arg->IgnoreImplicit();
  if (const auto* Construct = dyn_cast<CXXConstructExpr>(E)) {
    if (!Construct->isListInitialization())
      return nullptr;
    if (Construct->getNumArgs() == 0) // `{}`: the empty list
      return dyn_cast<InitListExpr>(E);
    E = Construct->getArg(0)->IgnoreImplicit();
  }
  if (const auto* List = dyn_cast<CXXStdInitializerListExpr>(E))
    E = List->getSubExpr()->IgnoreImplicit();
  return dyn_cast<InitListExpr>(E);
}

// The only element of a one-element braced list, else nullptr.
const Expr* onlyElement(const Expr* Arg) {
  const InitListExpr* L = bracedList(Arg);
  return L && L->getNumInits() == 1 ? L->getInit(0) : nullptr;
}

// `{}` (or nothing written): no tensors.
bool emptyList(const Expr* Arg) {
  if (isa<CXXDefaultArgExpr>(Arg))
    return true;
  const auto* Construct = dyn_cast<CXXConstructExpr>(Arg->IgnoreImplicit());
  const InitListExpr* L = bracedList(Arg);
  return (Construct && Construct->getNumArgs() == 0 && Construct->isListInitialization()) ||
         (L && L->getNumInits() == 0);
}

} // namespace

void runAutogradBackward(MigrationContext& Ctx, const RuleInfo& Info) {
  for (const CallExpr* Call : userCalls(Ctx)) {
    if (calleeName(Call) != "torch::autograd::backward" || Call->getNumArgs() < 1)
      continue;
    MigrationContext::Match Matched(Ctx, Call->getBeginLoc());
    const unsigned Written = writtenArgs(Call);
    const Expr* Loss = onlyElement(Call->getArg(0));
    if (!Loss) {
      Ctx.warn(Call->getBeginLoc(), Info.Id,
               "backward of several tensors at once (or of a list the tool cannot see): call "
               "accelerator.backward(loss) for each, or on their sum");
      continue;
    }
    if (Written >= 5 && !emptyList(Call->getArg(4))) {
      Ctx.warn(Call->getBeginLoc(), Info.Id,
               "backward with `inputs` (gradients of some leaves only) has no accelerator "
               "equivalent: the loss is not scaled here; keep it only without fp16 and "
               "gradient accumulation");
      continue;
    }
    const Expr* Grad = Written >= 2 ? onlyElement(Call->getArg(1)) : nullptr;
    if (Written >= 2 && !Grad && !emptyList(Call->getArg(1))) {
      Ctx.warn(Call->getBeginLoc(), Info.Id,
               "backward with several gradient tensors: call accelerator.backward(loss, grad) "
               "for each loss");
      continue;
    }
    std::string Args = Ctx.text(Loss->getSourceRange());
    if (Written >= 2)
      Args += ", " + (Grad ? Ctx.text(Grad->getSourceRange()) : std::string("{}"));
    if (Written >= 3) {
      // retain_graph and create_graph as written, comments included: from after the comma
      // that ends the gradients to the end of the last of them.
      const LangOptions& LO = Ctx.AST.getLangOpts();
      SourceLocation Comma = nextTokenLoc(Ctx, Call->getArg(1)->getEndLoc(), tok::comma);
      SourceLocation Last = Call->getArg(std::min(Written, 4u) - 1)->getEndLoc();
      if (Comma.isInvalid() || editableLoc(Ctx, Last).isInvalid()) {
        Ctx.warn(Call->getBeginLoc(), Info.Id, "not rewritten: the arguments come from a macro");
        continue;
      }
      CharSourceRange Flags = CharSourceRange::getCharRange(
          Lexer::getLocForEndOfToken(Comma, 0, Ctx.SM, LO),
          Lexer::getLocForEndOfToken(editableLoc(Ctx, Last), 0, Ctx.SM, LO));
      Args += ", " + Lexer::getSourceText(Flags, Ctx.SM, LO).trim().str();
    }
    Change C(Info.Id, Call->getBeginLoc());
    C.replace(Call->getSourceRange(), Ctx.accel(Call, C) + ".backward(" + Args + ")");
    Ctx.commit(C);
  }
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule AutogradBackwardRuleEntry({
    AutogradBackwardInfo,
    runAutogradBackward,
    /*Needs=*/{},
    /*Provides=*/{AnalysisId::AcceleratorRequests},
    /*Rank=*/130,
});

} // namespace accel
