#pragma once
// What a prepared loader publishes while it is iterated (data room): the Accelerator's
// backward() and gather_for_metrics() read it. Included by accelerator.h and data_loader.h.

#include <cstdint>

namespace accelerate {

// Where the current epoch of the active prepared loader stands. The loader writes it,
// gather_for_metrics reads it to drop the samples that even_batches padding duplicated.
// It also says what the batch being processed holds (BatchShare, data_split.h): backward()
// weights the loss by num_processes() * batch_real / step_real, so that a short last step
// gives the one-process gradient (docs/data-loader.md "Short last batches").
struct LoaderState {
  bool active = false;             // a prepared loader is being iterated
  bool end_of_dataloader = false;  // the batch being processed is the loader's last
  int64_t remainder = -1;          // real samples in the last global batch round; -1 = none padded
  int64_t batch_real = -1;         // real samples in the batch being processed; -1 = not known
  int64_t batch_padded = 0;        // repeated samples in it (even_batches padding)
  int64_t step_real = -1;          // real samples in all processes' batches of this step
  // Totals over every prepared loader of this Accelerator (the work report, ACCELERATE_WORK_REPORT).
  int64_t samples = 0;
  int64_t padded_samples = 0;
};

}  // namespace accelerate
