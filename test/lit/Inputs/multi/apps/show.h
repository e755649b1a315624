#pragma once
#include <torch/torch.h>
#include <iostream>

inline void show(torch::Tensor t) { std::cout << t.sum().item<float>() << "\n"; }
