// accelerate-include: `#include <accelerate/accelerate.h>` once, after the last LibTorch
// include of the file (or its last include), when the migrated code uses the runtime.

#include "analyses/RuleSupport.h"

using namespace clang;

namespace accel {

const RuleInfo IncludeInfo = {"accelerate-include", "include <accelerate/accelerate.h>",
                              "the migrated code uses the Accelerate runtime's API",
                              /*RunsWithoutLibTorch=*/true};

static bool isTorchHeader(StringRef Name) {
  return Name.starts_with("torch/") || Name.starts_with("ATen/") || Name.starts_with("c10/");
}

// A file without includes (a header that relies on its includer, say): the include goes
// after its `#pragma once` or `#ifndef X` / `#define X` guard, else at the top.
static unsigned afterHeaderGuard(StringRef Buf) {
  unsigned Pos = 0, After = 0;
  bool SawIfndef = false;
  while (Pos < Buf.size()) {
    size_t End = Buf.find('\n', Pos);
    End = End == StringRef::npos ? Buf.size() : End + 1;
    StringRef Line = Buf.slice(Pos, End).trim();
    Pos = End;
    if (Line.empty() || Line.starts_with("//"))
      continue;
    std::string Directive = Line.drop_front(Line.starts_with("#") ? 1 : 0).ltrim().str();
    if (!Line.starts_with("#"))
      break;
    if (StringRef(Directive).starts_with("pragma once")) {
      After = Pos;
    } else if (StringRef(Directive).starts_with("ifndef")) {
      SawIfndef = true;
    } else if (SawIfndef && StringRef(Directive).starts_with("define")) {
      After = Pos;
      break;
    } else {
      break;
    }
  }
  return After;
}

bool insertInclude(MigrationContext& Ctx, const char* RuleId, StringRef Header) {
  const IncludeSite* After = nullptr;
  for (const auto& I : Ctx.Includes)
    if (isTorchHeader(I.Name))
      After = &I;
  if (!After && !Ctx.Includes.empty())
    After = &Ctx.Includes.back();
  Change C(RuleId, After ? After->HashLoc : SourceLocation());
  std::string Line = "#include <" + Header.str() + ">\n";
  if (After) {
    // After the end of the directive's line.
    StringRef Buf = Ctx.SM.getBufferData(Ctx.Target);
    unsigned Off = Ctx.SM.getFileOffset(Ctx.SM.getExpansionLoc(After->EndLoc));
    while (Off < Buf.size() && Buf[Off] != '\n')
      ++Off;
    if (Off < Buf.size())
      ++Off;
    SourceLocation L = Ctx.SM.getLocForStartOfFile(Ctx.Target).getLocWithOffset(Off);
    C.replace(CharSourceRange::getCharRange(L, L), Line);
  } else {
    SourceLocation L = Ctx.SM.getLocForStartOfFile(Ctx.Target)
                           .getLocWithOffset(afterHeaderGuard(Ctx.SM.getBufferData(Ctx.Target)));
    C.replace(CharSourceRange::getCharRange(L, L), Line);
  }
  return Ctx.commit(C);
}

void runInclude(MigrationContext& Ctx, const RuleInfo& Info) {
  if (!Ctx.need<AcceleratorDecision>().UsesRuntime)
    return;
  for (const auto& I : Ctx.Includes)
    if (StringRef(I.Name).starts_with("accelerate/"))
      return; // already there (or the user includes part of the runtime)
  insertInclude(Ctx, Info.Id, "accelerate/accelerate.h");
}

// The rule's entry in the rule table (RegisterRule.h).
static const RegisterRule IncludeRuleEntry({
    IncludeInfo,
    runInclude,
    /*Needs=*/{AnalysisId::AcceleratorDecision},
    /*Provides=*/{},
    /*Rank=*/190,
});

} // namespace accel
