#pragma once
// No LibTorch here: main.cpp sees none.
int report();
