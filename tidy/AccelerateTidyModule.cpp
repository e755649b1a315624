// The clang-tidy module: one check per accel-migrate rule id, loaded with
// `clang-tidy-16 --load=<libdir>/accelerate/libaccelerate-tidy.so`.

#include "MigrationCheck.h"

#include <accel/rewriters/engine/Rule.h>

#include <clang-tidy/ClangTidyModule.h>
#include <clang-tidy/ClangTidyModuleRegistry.h>

namespace accel::tidy {

class AccelerateTidyModule : public clang::tidy::ClangTidyModule {
 public:
  void addCheckFactories(clang::tidy::ClangTidyCheckFactories& Factories) override {
    for (const RuleInfo& Info : fileRuleInfos())
      Factories.registerCheck<MigrationCheck>(Info.Id);
  }
};

} // namespace accel::tidy

static clang::tidy::ClangTidyModuleRegistry::Add<accel::tidy::AccelerateTidyModule>
    AccelerateModule("accelerate-module",
                     "accel-migrate's rules: LibTorch training code to Accelerate for LibTorch");
