#pragma once
// What accelerate-device (rules/DeviceRule.cpp) finds before it edits: the device variables
// and members a program selects and the assignments to them, hard-coded CUDA devices passed
// as arguments, "CUDA or exit" checks, and calls of device logic the tool leaves alone. Only
// the AST is read here; the rule decides what depends on its own edits (which code an
// earlier edit of the rule covers already) and writes every edit and warning.
// Not part of the library's interface.

#include "analyses/RuleSupport.h"

#include <llvm/ADT/SmallPtrSet.h>

#include <vector>

namespace accel {

// A torch::Device or c10::DeviceType value (not a reference or a pointer).
bool isDeviceLike(clang::QualType T);
// A variable's initialiser or a member's default initialiser; nullptr for anything else.
const clang::Expr* deviceInitOf(const clang::ValueDecl* D);
// The initialisers of F written in its class's constructors.
std::vector<const clang::Expr*> ctorInitsOf(const clang::FieldDecl* F);
// The initialiser as the user wrote it (implicit conversions and elided copies removed).
const clang::Expr* writtenInit(const clang::Expr* E);
// E asks an Accelerator for its device already (`accelerator.device()`: a second run).
bool alreadyAccelerated(const clang::Expr* E);

// The file's device variables and members (candidates) and those the program selects: CUDA
// is named in the initialiser or in an assignment, or the value is computed from a selected
// variable (`Device device(device_type)`).
class DeviceSelection {
 public:
  // `d = expr` for a candidate d: RHS, and the assignment (At).
  struct Assignment {
    const clang::ValueDecl* D;
    const clang::Expr* RHS;
    const clang::Expr* At;
  };
  explicit DeviceSelection(MigrationContext& Ctx);
  const llvm::SmallPtrSet<const clang::ValueDecl*, 8>& selected() const { return Selected; }
  const std::vector<Assignment>& assignments() const { return Assignments; }
  // A value computed from device constants only (kCUDA, kCPU, DeviceType::X,
  // is_available(), literals, other selected device variables).
  bool isConstantDeviceExpr(const clang::Expr* E) const;

 private:
  void collectCandidates();
  void selectVariables();

  MigrationContext& Ctx;
  llvm::SmallPtrSet<const clang::ValueDecl*, 8> Candidates, Selected;
  std::vector<Assignment> Assignments;
};

// A hard-coded CUDA device passed where a Device or TensorOptions is expected:
// `.to(torch::kCUDA)`, `torch::ones(.., torch::Device(torch::kCUDA, 0))`,
// `TensorOptions().device(torch::kCUDA)`; not a model's `.to` (accelerate-placement removes
// it) nor an Accelerator's. Selector: the kCUDA / "cuda" itself; Written: the outermost
// written device construction around it; ComputedIndex: the device's index is not a
// constant (custom multi-GPU logic). In the order of the file's selectors.
struct CudaArgument {
  const clang::Expr* Selector;
  const clang::Expr* Written;
  bool ComputedIndex;
};
std::vector<CudaArgument> cudaArguments(MigrationContext& Ctx);

// A program's "CUDA or exit" check: the torch::cuda::is_available() call (Call, at the
// editable location Loc) in the condition Cond of an `if` whose branch taken without CUDA
// leaves the program (a throw, a noreturn call such as TORCH_CHECK's failure, a return from
// main).
struct CudaRequirement {
  const clang::Expr* Cond;
  const clang::CallExpr* Call;
  clang::SourceLocation Loc;
};
std::vector<CudaRequirement> cudaRequirements(MigrationContext& Ctx);

// Calls of device logic the launcher's device assignment conflicts with (device counts,
// set_device), in the file's order.
std::vector<const clang::CallExpr*> customDeviceCalls(MigrationContext& Ctx);

} // namespace accel
