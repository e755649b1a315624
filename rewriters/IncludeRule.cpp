// accelerate-include: `#include <accelerate/accelerate.h>` once, after the last LibTorch
// include of the file (or its last include), when the migrated code uses the runtime.

#include "RuleSupport.h"

using namespace clang;

namespace accel {

const RuleInfo IncludeInfo = {"accelerate-include", "include <accelerate/accelerate.h>",
                              "the migrated code uses the Accelerate runtime's API"};

static bool isTorchHeader(StringRef Name) {
  return Name.starts_with("torch/") || Name.starts_with("ATen/") || Name.starts_with("c10/");
}

void runInclude(MigrationContext& Ctx, const RuleInfo& Info) {
  if (!Ctx.NeedsRuntime)
    return;
  const IncludeSite* After = nullptr;
  for (const auto& I : Ctx.Includes) {
    if (StringRef(I.Name).starts_with("accelerate/"))
      return;  // already there (or the user includes part of the runtime)
    if (isTorchHeader(I.Name))
      After = &I;
  }
  if (!After && !Ctx.Includes.empty())
    After = &Ctx.Includes.back();
  Change C(Info.Id, After ? After->HashLoc : SourceLocation());
  if (After) {
    // After the end of the directive's line.
    StringRef Buf = Ctx.SM.getBufferData(Ctx.SM.getMainFileID());
    unsigned Off = Ctx.SM.getFileOffset(Ctx.SM.getExpansionLoc(After->EndLoc));
    while (Off < Buf.size() && Buf[Off] != '\n')
      ++Off;
    if (Off < Buf.size())
      ++Off;
    SourceLocation L = Ctx.SM.getLocForStartOfFile(Ctx.SM.getMainFileID()).getLocWithOffset(Off);
    C.replace(CharSourceRange::getCharRange(L, L), "#include <accelerate/accelerate.h>\n");
  } else {
    SourceLocation L = Ctx.SM.getLocForStartOfFile(Ctx.SM.getMainFileID());
    C.replace(CharSourceRange::getCharRange(L, L), "#include <accelerate/accelerate.h>\n");
  }
  Ctx.commit(C);
}

}  // namespace accel
