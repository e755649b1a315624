#include "app.h"
#include "train.h"

int run_app(int argc, char** argv) {
  Config config;
  config.steps = argc > 1 ? 5 : 3;
  return train(config);
}
