#pragma once
// Recognising LibTorch's types and calls: by the canonical names of the real headers
// (torch::Device is c10::Device, torch::Tensor is at::Tensor, ...), and by spelling where
// the code is a template pattern whose types are dependent.

#include <clang/AST/DeclCXX.h>
#include <clang/AST/Expr.h>
#include <clang/AST/ExprCXX.h>
#include <clang/Basic/SourceManager.h>
#include <llvm/ADT/StringRef.h>

#include <string>

namespace accel {

// Whether L (after macro expansion) is in a system header or in LibTorch's own headers,
// whichever way they were included: a build may pass LibTorch's directory with -I instead
// of as a system directory, and its inline code must still not count as the program's.
bool inLibraryCode(const clang::SourceManager& SM, clang::SourceLocation L);

bool isTensor(clang::QualType T);
bool isDevice(clang::QualType T);         // c10::Device
bool isDeviceTypeEnum(clang::QualType T); // c10::DeviceType
bool isTensorOptions(clang::QualType T);
bool isModuleClass(const clang::CXXRecordDecl* RD); // torch::nn::Module or derived
bool isModuleHolderClass(const clang::CXXRecordDecl* RD);
bool isOptimizerClass(const clang::CXXRecordDecl* RD);
bool isSchedulerClass(const clang::CXXRecordDecl* RD);

enum class ObjectKind { None, Model, Optimizer, Scheduler };
// Classifies a variable's type for accelerator.prepare(): a ModuleHolder (Net, Sequential),
// a module by value, or a shared_ptr / unique_ptr / raw pointer to a module; likewise for
// optimizers and LR schedulers.
ObjectKind classifyPreparable(clang::QualType T);

// The record behind T after references, smart pointers and raw pointers are looked through.
const clang::CXXRecordDecl* pointeeRecord(clang::QualType T);

// A member call in any form (resolved, dependent, unresolved): name, object and arrow.
struct MemberCall {
  llvm::StringRef Name;
  const clang::Expr* Object = nullptr;
  bool IsArrow = false;
  clang::SourceLocation MemberLoc;   // the member name
  clang::SourceLocation OperatorLoc; // '.' or '->'
};
bool getMemberCall(const clang::CallExpr* Call, MemberCall& Out);

// Qualified name of the callee of a free-function call ("" if unknown); for unresolved
// calls in templates, the name as written with its qualifier.
std::string calleeName(const clang::CallExpr* Call);

// True for expressions that name CUDA as a device: torch::kCUDA / c10::kCUDA,
// DeviceType::CUDA, torch::cuda::is_available() and "cuda..." string literals.
bool mentionsCuda(const clang::Stmt* S);
bool isCudaSelector(const clang::Stmt* S);

const clang::Expr* ignoreImplicit(const clang::Expr* E);
// The variable an expression names (through parens, implicit casts, `*`, `->`/operator*).
const clang::ValueDecl* referencedDecl(const clang::Expr* E);

} // namespace accel
