#pragma once
// Umbrella header: everything a training program needs.
#include <accelerate/accelerator/accelerator.h>
#include <accelerate/core/error.h>
#include <accelerate/core/options.h>
#include <accelerate/core/version.h>
#include <accelerate/data/data_loader.h>
#include <accelerate/data/deferred_loader.h>
#include <accelerate/helpers/metrics.h>
#include <accelerate/helpers/process_share.h>
#include <accelerate/helpers/progress.h>
#include <accelerate/helpers/sync_batch_norm.h>
#include <accelerate/log/logging.h>
