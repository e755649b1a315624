#pragma once
// Umbrella header: everything a training program needs.
#include <accelerate/accelerator.h>
#include <accelerate/error.h>
#include <accelerate/logging.h>
#include <accelerate/metrics.h>
#include <accelerate/options.h>
#include <accelerate/process_share.h>
#include <accelerate/progress.h>
#include <accelerate/sync_batch_norm.h>
#if __has_include(<accelerate/data_loader.h>)
#include <accelerate/data_loader.h>
#include <accelerate/deferred_loader.h>
#endif
#include <accelerate/version.h>
