// accelerate-unprepared-loader: range-for loops over a LibTorch data loader that this file
// did not create with make_data_loader (so the tool could not prepare it), and training
// loops whose data nothing splits. The warnings are written by accelerate-manual-batching
// (ManualBatchingRule.cpp), which knows which loops it split; this id runs nothing itself.

#include "rules/UnpreparedLoaderRule.h"

#include "analyses/RuleSupport.h"

namespace accel {

const RuleInfo UnpreparedLoaderInfo = {
    "accelerate-unprepared-loader", "a loader the tool cannot prepare",
    "this data loader is not created by torch::data::make_data_loader in this file, so "
    "every process would see the whole dataset; create it with "
    "accelerator.prepare_data_loader(...)"};

// The id's entry in the rule table (RegisterRule.h): no run function, no analyses; ranked
// next to accelerate-data-loader, whose loaders its warnings are about.
static const RegisterRule UnpreparedLoaderEntry({
    UnpreparedLoaderInfo,
    nullptr,
    /*Needs=*/{},
    /*Provides=*/{},
    /*Rank=*/20,
});

} // namespace accel
